#!/usr/bin/env bash
# The whole test suite, as CI runs it: generated code up to date, lint, format, types,
# then pytest (warnings are errors, markers strict, branch coverage reported).
# Arguments go to pytest: `bash tools/check.sh tests/a2a/test_types.py -x`.
# Run from anywhere with the project's virtual environment active.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "generated code is up to date"
# The generators read the specs in shared/spec beside the repository (or
# $INTERLINK_SPEC_DIR). A clone without them skips this check, and pytest skips the
# tests that read them, each saying why; under CI=true the spec is required.
spec="${INTERLINK_SPEC_DIR:-$(cd .. && pwd)/shared/spec}"
if [ -d "$spec" ]; then
  python tools/gen_acp.py --check
  python tools/gen_a2a.py --check
  python tools/gen_a2a_v03.py --check
  python tools/gen_a2a_grpc.py --check
elif [ "${CI:-}" = "true" ]; then
  echo "no spec at $spec: the generators read shared/spec beside the repository" \
    "(or set INTERLINK_SPEC_DIR); CI=true requires it" >&2
  exit 1
else
  echo "skipped: no spec at $spec: the generators read shared/spec beside the" \
    "repository (or set INTERLINK_SPEC_DIR); CI=true requires it"
fi

step "ruff check"
ruff check src tests bench tools examples

step "ruff format --check"
ruff format --check src tests bench tools examples

step "mypy --strict"
mypy --strict

step "pytest"
python -m pytest "$@"
