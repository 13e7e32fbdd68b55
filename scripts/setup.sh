#!/usr/bin/env bash
# From a fresh clone: create .venv in the repository root, install docket into it, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
exec .venv/bin/docket demo
