"""Where the specs lie (`$INTERLINK_SPEC_DIR`, else `shared/spec` beside the repository),
for the tests that read them.

A fresh clone without the spec beside it runs every other test: those that need the
spec are skipped, all with one reason naming the path. Under `CI=true` the spec is
required, and the same tests fail with that reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC = Path(os.environ.get("INTERLINK_SPEC_DIR") or REPO.parent / "shared" / "spec")


def have_spec() -> bool:
    return SPEC.is_dir()


def unavailable(why: str) -> NoReturn:
    """Something a test needs is not on this machine: skip it, saying `why`; under
    CI=true (where everything must be there) fail it instead."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; CI=true requires it", pytrace=False)
    pytest.skip(why)


def spec_dir(*parts: str) -> Path:
    """`SPEC / parts`, or the test is skipped (failed under CI=true) when it is missing."""
    if not SPEC.is_dir():
        unavailable(
            f"no spec at {SPEC}: the generator checks read shared/spec beside the repository "
            "(or set INTERLINK_SPEC_DIR)"
        )
    return SPEC.joinpath(*parts)
