"""The README's ACP client snippet runs as written (from the repository root)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def readme_snippet(marker: str) -> str:
    blocks: list[str] = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"one README python block with {marker!r}"
    return found[0]


def test_the_spawn_agent_snippet_runs_as_written() -> None:
    code = readme_snippet("spawn_agent(")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert "hi there" in done.stdout
    assert "end_turn" in done.stdout
