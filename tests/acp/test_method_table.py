"""The generated method table is what dispatch reads: each method's handler is a method
of `Agent` or `Client`, its flags are the protocol's, and `methods.X` is its entry."""

from __future__ import annotations

from interlink.acp import Agent, Client, methods
from interlink.acp import _methods as stable
from interlink.acp import _methods_unstable as unstable

SCOPED = {"session/prompt", "session/set_mode", "session/set_config_option", "session/close"}


def test_every_stable_method_has_its_handler_on_its_side() -> None:
    for table, side in ((stable.AGENT_METHODS, Agent), (stable.CLIENT_METHODS, Client)):
        for spec in table.values():
            assert callable(getattr(side, spec.handler, None)), spec.name


def test_unstable_only_methods_are_named_after_their_wire_name() -> None:
    for table in (unstable.AGENT_METHODS, unstable.CLIENT_METHODS):
        for spec in table.values():
            if spec.stable:
                assert spec.handler == stable.__dict__[spec.handler.upper()].handler
            else:
                assert spec.handler == spec.name.replace("/", "_")


def test_session_scope_and_authentication_flags() -> None:
    for table in (unstable.AGENT_METHODS, unstable.CLIENT_METHODS):
        for spec in table.values():
            assert spec.session_scoped == (spec.name in SCOPED)
            needs_auth = spec.handled_by == "agent" and spec.kind == "request"
            assert spec.needs_auth == (needs_auth and spec.name.startswith("session/"))
    assert not stable.AGENT_METHODS["initialize"].needs_auth
    assert not stable.AGENT_METHODS["authenticate"].needs_auth


def test_the_public_descriptors_are_the_table_entries() -> None:
    entries = {**stable.AGENT_METHODS, **stable.CLIENT_METHODS}
    assert {getattr(methods, name).name for name in methods.__all__} == set(entries)
    for name in methods.__all__:
        spec = getattr(methods, name)
        assert entries[spec.name] is spec
    assert methods.PROMPT.handler == "prompt"
    assert methods.SESSION_UPDATE.handler == "session_update"
