"""The ACP connection's lifecycle, as data: `(state, event) -> state`.

Theory of operation. The agent's connection holds one `State`. Each request and each
notification that arrives is an event, stepped as its handling starts and before its
params are decoded: `initialize` is `INITIALIZE`, a method that needs authentication
(for an agent that requires it) `GUARDED_REQUEST`, any other request `REQUEST`, any
notification `NOTIFICATION`. The outcomes of `initialize`, `authenticate` and `logout`
are events too (`INITIALIZED` or `INITIALIZE_FAILED`, `AUTHENTICATED`, `LOGGED_OUT`).

A pair in `TRANSITIONS` is allowed and gives the next state. A pair in `WAITS` (what
comes while `initialize` is being handled) waits for that one's outcome and is then
stepped again; if it failed, the request is refused (`initialize_failed`). Any other
pair is refused: `REFUSALS` holds the error it is answered with (None: a notification,
dropped). What is in none of the three is an outcome that cannot happen there, a bug
of ours (`LifecycleError`). Requests are stepped in the order they arrive (each runs
its first step in the order the connection started it), so a request sent before
`initialize` is refused and one sent after it waits, whatever the timing.

`initialize` failing (bad params, an error, a cancel) leaves the state as it was before
it: it may be sent again. Nothing leaves `READY` or `AUTHENTICATED` but authentication.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from interlink.jsonrpc import InvalidRequest, RpcError

__all__ = [
    "ARRIVALS",
    "SUCCESSES",
    "REFUSALS",
    "TRANSITIONS",
    "WAITS",
    "Dropped",
    "Event",
    "LifecycleError",
    "State",
    "Waits",
    "initialize_failed",
    "step",
]


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
    """The event waits for the outcome of the `initialize` being handled."""


class LifecycleError(RuntimeError):
    """An outcome stepped in a state it cannot happen in (a bug of ours)."""


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
