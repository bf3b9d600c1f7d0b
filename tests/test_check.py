"""`tools/check.sh` in a fresh clone with no `shared/spec` beside it: the generator check
is skipped with one line saying why and everything else runs; under CI=true the spec is
required."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def fresh_clone(into: Path) -> Path:
    """The repository's tracked files, as they are in the working tree, in `into`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=30
    ).stdout
    for name in listed.decode().split("\0"):
        source = REPO / name
        if name and source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def check(clone: Path, tools: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CI", "INTERLINK_SPEC_DIR", "PYTEST_ADDOPTS") and not k.startswith("COV_")
    }
    base["PATH"] = f"{tools}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{base['PATH']}"
    base["PYTHONPATH"] = str(clone / "src")
    args = ["tests/a2a/test_types.py", "-p", "no:cacheprovider", "--no-cov", "-q"]
    return subprocess.run(
        ["bash", "tools/check.sh", *args],
        cwd=clone,
        env={**base, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


@pytest.mark.timeout(300)
def test_check_sh_in_a_fresh_clone_without_the_spec(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the repository's git checkout")
    clone = fresh_clone(tmp_path / "interlink")
    assert not (tmp_path / "shared").exists()
    # mypy --strict of the whole project is CI's own step; here it would only take time
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "mypy").write_text("#!/bin/sh\nexit 0\n")
    (tools / "mypy").chmod(stat.S_IRWXU)

    done = check(clone, tools)
    assert done.returncode == 0, done.stdout + done.stderr
    missing = str(tmp_path / "shared" / "spec")
    said = [line for line in done.stdout.splitlines() if "no spec at" in line]
    assert len(said) == 2, done.stdout  # check.sh's line, and pytest's one summary line
    assert said[0] == (
        f"skipped: no spec at {missing}: the generators read shared/spec beside the "
        "repository (or set INTERLINK_SPEC_DIR); CI=true requires it"
    )
    assert said[1].startswith("SKIPPED [")  # every test that reads the spec, one reason
    assert " passed, " in done.stdout.splitlines()[-1]
    assert "failed" not in done.stdout.splitlines()[-1]

    under_ci = check(clone, tools, CI="true")
    assert under_ci.returncode == 1
    assert f"no spec at {missing}" in under_ci.stderr
    assert "CI=true requires it" in under_ci.stderr
    assert "== ruff check" not in under_ci.stdout  # it stopped there
