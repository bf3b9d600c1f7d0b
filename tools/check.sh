#!/usr/bin/env bash
# The whole test suite, as CI runs it: generated code up to date, lint, format, types,
# then pytest (warnings are errors, markers strict, branch coverage reported).
# Run from anywhere with the project's virtual environment active.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "generated code is up to date"
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
