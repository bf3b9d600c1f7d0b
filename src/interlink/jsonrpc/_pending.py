"""Request bookkeeping: id allocation, the pending-request table, batch replies.

Generic over what waits for an answer (a future in the asyncio driver, anything in a
test). A response whose id is not pending (late, duplicated, or never sent) is handed
back to the caller to report; it is never raised into the reader.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ._messages import ErrorResponse, RequestId, SuccessResponse

__all__ = ["BatchReply", "PendingRequests"]

W = TypeVar("W")


class PendingRequests(Generic[W]):
    """Outgoing requests that await their response, by id."""

    __slots__ = ("_next_id", "_waiting")

    def __init__(self) -> None:
        self._next_id = 0
        self._waiting: dict[RequestId, W] = {}

    def add(self, waiter: W) -> int:
        """Allocate the next id and register its waiter."""
        self._next_id += 1
        id = self._next_id
        self._waiting[id] = waiter
        return id

    def pop(self, id: RequestId | None) -> W | None:
        """The waiter for a response's id, forgotten; `None` when the id is not pending."""
        if id is None:
            return None
        return self._waiting.pop(id, None)

    def forget(self, id: RequestId) -> bool:
        """Stop waiting for `id` (the caller gave up); True when it was pending."""
        return self._waiting.pop(id, None) is not None

    def drain(self, keep: frozenset[RequestId | None] = frozenset()) -> list[W]:
        """Every waiter, forgotten (the connection is closing), but those of `keep`: ids
        whose answer has arrived and waits to be delivered in order."""
        waiting = self._waiting
        waiters = [w for id, w in waiting.items() if id not in keep]
        self._waiting = {id: w for id, w in waiting.items() if id in keep} if keep else {}
        return waiters

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, id: object) -> bool:
        return id in self._waiting


class BatchReply:
    """Collects the responses to one incoming batch; all of them go out in one array.

    `expected` counts the entries that get a response (requests and invalid entries;
    notifications get none). When it is zero nothing is sent.
    """

    __slots__ = ("_responses", "expected")

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self._responses: list[SuccessResponse[object] | ErrorResponse] = []

    def add(self, response: SuccessResponse[object] | ErrorResponse) -> bool:
        """Record one response; True when the batch is complete."""
        self._responses.append(response)
        return len(self._responses) >= self.expected

    @property
    def responses(self) -> list[SuccessResponse[object] | ErrorResponse]:
        return self._responses
