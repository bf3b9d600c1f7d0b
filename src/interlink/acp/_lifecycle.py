"""The ACP connection's lifecycle, as data: `(state, event) -> state`.

Theory of operation. The agent's connection holds one `State`; each request and
notification is an event, stepped before its params are decoded (`initialize`:
`INITIALIZE`; a method that needs authentication, for an agent that requires it:
`GUARDED_REQUEST`; any other: `REQUEST` or `NOTIFICATION`), and so are the successes and
failures of `initialize`, `authenticate` and `logout`. A pair in `TRANSITIONS` gives the
next state. A pair in `WAITS` (what comes while `initialize` is being handled) waits for
that one's outcome and is stepped again (`initialize_failed` if it failed). Any other
pair is refused with its `REFUSALS` entry (None: a notification, dropped); a pair in
none of the three is an outcome that cannot happen there (`LifecycleError`, our bug).
Until initialized, requests are stepped as they arrive, in order: one sent before
`initialize` is refused, one sent after it waits. A failed `initialize` (bad params, an
error, a cancel) leaves the state as before: it may be sent again.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from interlink.jsonrpc import InvalidRequest, RpcError


class State(StrEnum):
    NEW = "new"  # only `initialize` is served
    INITIALIZING = "initializing"  # an `initialize` is being handled
    READY = "ready"  # initialized; not authenticated
    AUTHENTICATED = "authenticated"  # initialized and authenticated


class Event(StrEnum):
    INITIALIZE = "initialize"
    INITIALIZED = "initialize succeeded"
    INITIALIZE_FAILED = "initialize failed"
    REQUEST = "request"
    GUARDED_REQUEST = "request that needs authentication"
    NOTIFICATION = "notification"
    AUTHENTICATED = "authenticate succeeded"
    LOGGED_OUT = "logout succeeded"


_S, _E = State, Event
_SERVED = (_E.REQUEST, _E.NOTIFICATION)

TRANSITIONS: dict[tuple[State, Event], State] = {
    (_S.NEW, _E.INITIALIZE): _S.INITIALIZING,
    (_S.INITIALIZING, _E.INITIALIZED): _S.READY,
    (_S.INITIALIZING, _E.INITIALIZE_FAILED): _S.NEW,
    **{(_S.READY, event): _S.READY for event in _SERVED},
    **{(_S.AUTHENTICATED, event): _S.AUTHENTICATED for event in (*_SERVED, _E.GUARDED_REQUEST)},
    (_S.READY, _E.AUTHENTICATED): _S.AUTHENTICATED,
    (_S.AUTHENTICATED, _E.AUTHENTICATED): _S.AUTHENTICATED,
    (_S.READY, _E.LOGGED_OUT): _S.READY,
    (_S.AUTHENTICATED, _E.LOGGED_OUT): _S.READY,
}

WAITS = frozenset(
    (_S.INITIALIZING, event) for event in (_E.REQUEST, _E.GUARDED_REQUEST, _E.NOTIFICATION)
)


def _invalid(detail: str) -> Callable[[], RpcError]:
    return lambda: InvalidRequest(data={"detail": detail})


_FIRST = _invalid("initialize first")
_AGAIN = _invalid("the connection is already initialized")

REFUSALS: dict[tuple[State, Event], Callable[[], RpcError] | None] = {
    (_S.NEW, _E.REQUEST): _FIRST,
    (_S.NEW, _E.GUARDED_REQUEST): _FIRST,
    (_S.NEW, _E.NOTIFICATION): None,  # ignored
    (_S.INITIALIZING, _E.INITIALIZE): _invalid("an initialize is already being handled"),
    (_S.READY, _E.INITIALIZE): _AGAIN,
    (_S.AUTHENTICATED, _E.INITIALIZE): _AGAIN,
    (_S.READY, _E.GUARDED_REQUEST): lambda: RpcError.auth_required(
        {"detail": "authenticate first"}
    ),
}

#: the methods whose arrival or success is an event of its own
ARRIVALS = {"initialize": _E.INITIALIZE}
SUCCESSES = {"authenticate": _E.AUTHENTICATED, "logout": _E.LOGGED_OUT}

#: what a request that waited for a failed `initialize` is answered with
initialize_failed = _invalid("the initialize before this request failed")


class Dropped(Exception):
    """A notification the lifecycle ignores."""


class Waits(Exception):
    """What waits for the outcome of the `initialize` being handled."""


class LifecycleError(RuntimeError):
    """An outcome stepped where it cannot happen (a bug of ours)."""


def step(state: State, event: Event) -> State:
    """The state after `event`; raises its refusal, `Dropped` or `Waits`."""
    after = TRANSITIONS.get((state, event))
    if after is not None:
        return after
    if (state, event) in WAITS:
        raise Waits
    if (state, event) not in REFUSALS:
        raise LifecycleError(f"{event} cannot happen in state {state}")
    refuse = REFUSALS[state, event]
    if refuse is None:
        raise Dropped
    raise refuse()
