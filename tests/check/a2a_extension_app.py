"""The example agent with a card that declares a required extension, for
`tests/check/test_a2a_check_offers.py`:
`interlink a2a serve tests/check/a2a_extension_app.py:app`."""

from __future__ import annotations

import msgspec

from interlink.a2a import create_app
from interlink.a2a import types as t
from tests.cli.a2a_auth_app import example

EXTENSION = "urn:interlink:test:required-extension:v1"

_executor, _card = example()
_required = t.AgentExtension(uri=EXTENSION, description="must be activated", required=True)
_capabilities = msgspec.structs.replace(_card.capabilities, extensions=[_required])
app = create_app(_executor, msgspec.structs.replace(_card, capabilities=_capabilities))
