#!/usr/bin/env bash
# The whole test suite, as CI runs it: generated code up to date, lint, format, types,
# then pytest (warnings are errors, markers strict, branch coverage reported).
# Run from anywhere with the project's virtual environment active.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "generated code is up to date"
spec="${INTERLINK_SPEC_DIR:-$(cd .. && pwd)/shared/spec}"
if [ ! -d "$spec" ]; then
  echo "no spec at $spec: the generators read shared/spec beside the repository" \
    "(or set INTERLINK_SPEC_DIR)" >&2
  exit 1
fi
python tools/gen_acp.py --check
python tools/gen_a2a.py --check

step "ruff check"
ruff check src tests bench tools examples

step "ruff format --check"
ruff format --check src tests bench tools examples

step "mypy --strict"
mypy --strict

step "pytest"
python -m pytest "$@"
