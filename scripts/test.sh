#!/usr/bin/env bash
# The whole test suite. Creates .venv in the repository root (if missing), installs docket with
# its test, backend, LLM-client, peer, framework-integration, server and file-reader extras into it (and
# Chromium, for the HTML trace test) so every test runs, then runs lint, types and pytest (PostgreSQL tests start
# their own bundled server). Usage: scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,postgres,llm,peers,langchain,llamaindex,haystack,server,files,import,ann]'
# the HTML trace is checked in headless Chromium (Debian's package); without it that test skips loudly
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "scripts/test.sh: could not install chromium; tests/test_trace_html.py's browser test will skip"
fi
.venv/bin/ruff check src tests benchmarks
# the layers of docs/architecture.md: no upward import, no cycle (fails fast, before the long run)
.venv/bin/python -m pytest -q -p no:cacheprovider tests/test_layers.py
.venv/bin/mypy src/docket --no-error-summary || { echo "mypy failed"; exit 1; }
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
