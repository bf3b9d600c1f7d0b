"""`python -m bench a2a` runs end to end on each binding: every server starts, answers
each workload correctly (the bench checks every answer) and the report prints. Tiny
counts: this is whether the bench works, never how fast anything is."""

from __future__ import annotations

import importlib.util
import os

import pytest

from bench import a2a as bench_a2a


def _require(module: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        reason = f"{module} is not installed: {install}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
        pytest.skip(reason)


@pytest.mark.e2e
@pytest.mark.timeout(120)
@pytest.mark.parametrize("binding", ["jsonrpc", "rest", "grpc"])
async def test_the_bench_runs_on(binding: str, capsys: pytest.CaptureFixture[str]) -> None:
    _require("a2a", "pip install 'a2a-sdk[http-server,sqlite,grpc]==1.3.0'")
    if binding == "grpc":
        _require("grpc", "pip install 'a2a-sdk[grpc]==1.3.0'")
    args = bench_a2a.parse_args(
        [
            f"--binding={binding}",
            "--stores=memory,sqlite",
            "--duration=0.05",
            "--warmup=0",
            "--max-ops=4",
            "--chunks=3",
            "--timeout=20",
        ]
    )
    bench = await bench_a2a.run(args)
    assert not bench.failures
    assert not bench.missing
    expected = {
        (binding, impl, store, workload)
        for impl in ("interlink", "sdk", "floor")
        for store in (["memory"] if impl == "floor" else ["memory", "sqlite"])
        for workload in ("send1", "send16", "send64", "stream", "get")
    }
    assert set(bench.results) == expected
    wrong = {key: runs[0].first_error for key, runs in bench.results.items() if runs[0].errors}
    assert not wrong
    assert all(runs[0].ops for runs in bench.results.values())
    bench_a2a.report(bench)
    out = capsys.readouterr().out
    assert f"{bench_a2a._BINDING_NAMES[binding]}, tasks in memory:" in out
