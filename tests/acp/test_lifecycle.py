"""The ACP connection lifecycle table (`acp/_lifecycle.py`), with no connection: every
(state, event) pair is allowed, waits, or is refused with its precise error; a walk of
random events never reaches a state the table does not name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.acp._lifecycle import (
    REFUSALS,
    TRANSITIONS,
    WAITS,
    Dropped,
    Event,
    LifecycleError,
    State,
    Waits,
    initialize_failed,
    step,
)
from interlink.jsonrpc import RpcError

S, E = State, Event

#: the errors the wire answers with, as before the table (code, message, data)
FIRST = (-32600, "Invalid request", {"detail": "initialize first"})
AGAIN = (-32600, "Invalid request", {"detail": "the connection is already initialized"})
BUSY = (-32600, "Invalid request", {"detail": "an initialize is already being handled"})
AUTH = (-32000, "Authentication required", {"detail": "authenticate first"})
EXPECTED: dict[tuple[State, Event], tuple[int, str, object] | None] = {
    (S.NEW, E.REQUEST): FIRST,
    (S.NEW, E.GUARDED_REQUEST): FIRST,
    (S.NEW, E.NOTIFICATION): None,  # dropped
    (S.INITIALIZING, E.INITIALIZE): BUSY,
    (S.READY, E.INITIALIZE): AGAIN,
    (S.AUTHENTICATED, E.INITIALIZE): AGAIN,
    (S.READY, E.GUARDED_REQUEST): AUTH,
}
#: what arrives from the peer (the rest are outcomes of our own handling)
ARRIVING = {E.INITIALIZE, E.REQUEST, E.GUARDED_REQUEST, E.NOTIFICATION}
PAIRS = [(state, event) for state in State for event in Event]


def outcome(state: State, event: Event) -> object:
    """What `step` does with a pair: the next state, "waits", "dropped", the error's
    (code, message, data), or "impossible"."""
    try:
        return step(state, event)
    except Waits:
        return "waits"
    except Dropped:
        return "dropped"
    except RpcError as exc:
        return (exc.code, exc.message, exc.data)
    except LifecycleError:
        return "impossible"


def test_the_tables_do_not_overlap() -> None:
    assert not (set(TRANSITIONS) & WAITS)
    assert not (set(TRANSITIONS) & set(REFUSALS))
    assert not (WAITS & set(REFUSALS))


@given(st.sampled_from(PAIRS))
def test_every_pair_is_served_waits_or_refused_precisely(pair: tuple[State, Event]) -> None:
    state, event = pair
    got = outcome(state, event)
    if pair in TRANSITIONS:
        assert got is TRANSITIONS[pair]
    elif pair in WAITS:
        assert got == "waits"
        assert state is S.INITIALIZING
    elif pair in EXPECTED:
        assert got == ("dropped" if EXPECTED[pair] is None else EXPECTED[pair])
    else:  # only our own outcomes can be out of place, never what the peer sends
        assert got == "impossible"
        assert event not in ARRIVING


def test_everything_the_peer_sends_has_an_answer_in_every_state() -> None:
    for state in State:
        for event in ARRIVING:
            assert outcome(state, event) != "impossible", (state, event)


def test_the_refusals_are_the_expected_ones() -> None:
    assert set(REFUSALS) == set(EXPECTED)


def test_a_request_that_waited_for_a_failed_initialize() -> None:
    error = initialize_failed()
    assert (error.code, error.data) == (
        -32600,
        {"detail": "the initialize before this request failed"},
    )


@pytest.mark.parametrize("event", [E.REQUEST, E.NOTIFICATION, E.AUTHENTICATED, E.LOGGED_OUT])
def test_nothing_but_initialize_leaves_new(event: Event) -> None:
    assert outcome(S.NEW, event) in ("impossible", "dropped", FIRST)


@given(st.lists(st.sampled_from(sorted(ARRIVING | {E.INITIALIZED, E.INITIALIZE_FAILED}))))
def test_a_walk_of_events_follows_the_table(events: list[Event]) -> None:
    """From a new connection, a run of events (outcomes where they can happen): each
    state reached is one the table names, and a failed initialize returns to NEW."""
    state = S.NEW
    for event in events:
        if event in (E.INITIALIZED, E.INITIALIZE_FAILED) and state is not S.INITIALIZING:
            continue  # (an initialize's outcome comes only while it is handled)
        got = outcome(state, event)
        if isinstance(got, State):
            assert (state, event) in TRANSITIONS
            if event is E.INITIALIZE_FAILED:
                assert got is S.NEW
            state = got
        else:
            assert got != "impossible"
    assert state in State


def test_authentication_opens_the_guarded_requests_and_logout_closes_them() -> None:
    state = step(step(step(S.NEW, E.INITIALIZE), E.INITIALIZED), E.REQUEST)
    assert outcome(state, E.GUARDED_REQUEST) == AUTH
    state = step(state, E.AUTHENTICATED)
    assert step(state, E.GUARDED_REQUEST) is S.AUTHENTICATED
    assert outcome(step(state, E.LOGGED_OUT), E.GUARDED_REQUEST) == AUTH
