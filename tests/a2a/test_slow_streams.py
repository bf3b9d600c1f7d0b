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
