"""The example agent with a card whose first interface answers nothing (port 1 of
loopback refuses) and whose second is the server itself, for the fallback cases of
`tests/cli/test_a2a_cli.py`."""

from __future__ import annotations

import msgspec

from interlink.a2a import create_app
from interlink.a2a import types as t
from tests.cli.a2a_auth_app import example

DEAD = "http://127.0.0.1:1/"
_executor, _card = example()
_interfaces = [
    t.AgentInterface(url=DEAD, protocol_binding="JSONRPC", protocol_version="1.0"),
    t.AgentInterface(url="/", protocol_binding="JSONRPC", protocol_version="1.0"),
    t.AgentInterface(url="/", protocol_binding="WEBSOCKET", protocol_version="1.0"),
]
app = create_app(_executor, msgspec.structs.replace(_card, supported_interfaces=_interfaces))
