"""Request bookkeeping: ids, the pending table, batch replies."""

from __future__ import annotations

from interlink.jsonrpc import BatchReply, PendingRequests, RpcError, SuccessResponse


def test_ids_are_allocated_in_order_and_resolved_once() -> None:
    pending: PendingRequests[str] = PendingRequests()
    first = pending.add("a")
    second = pending.add("b")
    assert (first, second) == (1, 2)
    assert len(pending) == 2
    assert first in pending
    assert pending.pop(first) == "a"
    assert pending.pop(first) is None  # a duplicate response is reported, not raised
    assert pending.pop(None) is None
    assert pending.pop("never-sent") is None
    assert pending.forget(second)
    assert not pending.forget(second)
    assert len(pending) == 0


def test_drain_returns_every_waiter() -> None:
    pending: PendingRequests[int] = PendingRequests()
    for value in range(3):
        pending.add(value)
    assert pending.drain() == [0, 1, 2]
    assert len(pending) == 0
    assert pending.add(9) == 4  # ids are never reused


def test_batch_reply_completes_at_the_expected_count() -> None:
    reply = BatchReply(2)
    assert not reply.add(SuccessResponse(id=1, result=None))
    assert reply.add(RpcError.method_not_found("m").to_response(2))
    assert [r.id for r in reply.responses] == [1, 2]
