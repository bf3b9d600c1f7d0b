"""Streams whose clients never read (issue #11, point 10), on a real uvicorn server
process under both HTTP parsers: what they cost the server, whether that memory comes
back for reuse, and whether the clients that do read keep their cadence meanwhile.

The measurement is `python -m bench streams` (`bench/streams.py`) at a smaller scale;
the bench prints the full-size figures (120 streams of a 600 KB answer, 400 readers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.streams import measure
from interlink.a2a.server._http import _PIECE, _pieces
from interlink.a2a.server._stream import StreamItem

_KIB = 1024
_MIB = 1024 * 1024


@pytest.mark.e2e
@pytest.mark.timeout(150)
@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_streams_that_never_read_hold_one_write_each(http: str, tmp_path: Path) -> None:
    """40 subscribers of a 600 KB answer over sockets with a 4 KiB receive buffer that
    never read. Each may hold what the server has in hand for it: one write of at most
    64 KiB plus uvicorn's 64 KiB transport buffer; the bound is about twice that (the
    unfixed server held about 1.2 MB each: its own encoding of the snapshot, its own
    SSE copy of it, and all of it in the transport's buffer). A second round peaks
    where the first did (what closed streams gave back is reused), and 50 readers of a
    task that reports every second see no gap over 2.5 s."""
    figures = await measure(http, stuck=40, payload=600_000, readers=50, rounds=2, workdir=tmp_path)
    assert figures.per_stream <= 400 * _KIB, (
        f"{figures.per_stream / _KIB:.0f} KiB of RSS per stream that never reads"
    )
    growth = figures.peaks[0] - figures.before
    assert figures.second_round_growth <= max(growth // 4, 8 * _MIB), (
        f"the second round peaked {figures.second_round_growth / _MIB:.1f} MiB higher"
    )
    assert figures.updates > 0
    assert figures.worst_gap <= 2.5, f"a reader waited {figures.worst_gap:.2f} s for an update"


@pytest.mark.parametrize("id_size", [1, 70_000])
def test_events_go_out_in_pieces_that_join_to_the_stream(id_size: int) -> None:
    """Small events share a write, a large one is cut: no write much over 64 KiB (a
    request id longer than that goes out in a write of its own), and the writes
    together are exactly the SSE events."""
    id_json = b'"' + b"i" * id_size + b'"'
    batch: list[StreamItem] = [
        (None, b'{"task":{}}', None),
        (2, b'{"x":"' + b"y" * 300_000 + b'"}', None),
        (3, b"{}", None),
        (4, b"{}", None),
    ]
    around = (b'data: {"jsonrpc":"2.0","id":' + id_json + b',"result":', b"}\n\n")
    pieces = list(_pieces(batch, around))
    whole = b"".join(
        (b"" if seq is None else b"id: %d\n" % seq)
        + b'data: {"jsonrpc":"2.0","id":'
        + id_json
        + b',"result":'
        + payload
        + b"}\n\n"
        for seq, payload, _ in batch
    )
    assert b"".join(pieces) == whole
    assert all(len(piece) <= max(_PIECE, len(id_json) + 64) + 64 for piece in pieces)
    if id_size == 1:  # every write but the last full
        assert len(pieces) == len(whole) // _PIECE + 1


@pytest.mark.e2e
@pytest.mark.timeout(150)
@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_memory_of_closed_streams_goes_back(http: str, tmp_path: Path) -> None:
    """100 `SendStreamingMessage`s of tasks of their own that answer 600 KB each and
    complete, over sockets that never read: once they close, the server's RSS is back
    near where it was (it stayed at its peak: glibc kept the freed large buffers in a
    fragmented heap), and a second round peaks no higher than the first. (What each
    holds at the peak is its task's own answer and the encoding of it on its way to
    SQLite; the readers' cadence then depends on the store's write queue, so it is
    measured in the other test.)"""
    figures = await measure(
        http, stuck=100, payload=600_000, readers=10, rounds=2, own=True, workdir=tmp_path
    )
    growth = figures.peaks[0] - figures.before
    for after in figures.afters:
        assert after - figures.before <= growth // 4 + 8 * _MIB, (
            f"{(after - figures.before) / _MIB:.1f} MiB of {growth / _MIB:.1f} stayed"
        )
    assert figures.second_round_growth <= max(growth // 4, 8 * _MIB)
