"""`python -m bench bridge` runs end to end: both bridges, the agents they are compared
with and the floors start, every turn reads its events and the table prints. Tiny
counts: this is whether the bench works, never how fast anything is."""

from __future__ import annotations

import pytest

from bench import bridge as bench_bridge


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_the_bridge_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    bench_bridge.main(["--turns=2", "--rounds=1", "--words=3", "--long-turns=1", "--long-words=40"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    paths = [row.split("|")[1].strip() for row in rows[1:]]
    assert paths == [name for _ in ("short", "long") for name in bench_bridge.PATH_NAMES]
    bridged = [row for row in rows if "-> bridge" in row]
    assert all("+" in row.split("|")[-2] for row in bridged)  # the p50 each adds
