"""The example agent under another name, for `tests/cli/test_a2a_serve.py`: a second
agent whose default store is a file of its own."""

from __future__ import annotations

import msgspec

from interlink.a2a import create_app
from tests.cli.a2a_auth_app import example

_executor, _card = example()
app = create_app(_executor, msgspec.structs.replace(_card, name="Another Agent"))
