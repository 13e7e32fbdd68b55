#!/usr/bin/env bash
# From a fresh clone: create .venv in the repository root, install docket with what the README's
# examples use, check that those imports work, run the demo.
#
#   scripts/setup.sh            docket + server (docket serve), files (--file PDF/Word), llm (--llm)
#   scripts/setup.sh --all      also the framework integrations and PostgreSQL (large downloads)
#   DOCKET_EXTRAS=server scripts/setup.sh    exactly the extras you name (comma-separated)
set -euo pipefail
cd "$(dirname "$0")/.."
# the extras the README's examples need; kept in one line so tests/test_setup_script.py reads it
DEFAULT_EXTRAS="server,files,llm"
ALL_EXTRAS="server,files,llm,langchain,llamaindex,haystack,postgres"
EXTRAS="${DOCKET_EXTRAS:-$DEFAULT_EXTRAS}"
if [ "${1:-}" = "--all" ]; then
  EXTRAS="$ALL_EXTRAS"
elif [ -n "${1:-}" ]; then
  echo "setup.sh: unknown option '$1' (use --all, or set DOCKET_EXTRAS=server,files,...)" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
# one import per extra: a missing one is named here, not at the first `docket serve`
.venv/bin/python - "$EXTRAS" <<'PY'
import importlib.util, sys
needs = {"server": ["fastapi", "uvicorn", "prometheus_client", "httpx"], "files": ["pypdf", "docx"],
         "llm": ["openai", "anthropic"], "langchain": ["langchain_core"], "llamaindex": ["llama_index.core"],
         "haystack": ["haystack"], "postgres": ["psycopg", "pgvector"]}
missing = [f"{extra}: {mod}" for extra in sys.argv[1].split(",") for mod in needs.get(extra, [])
           if importlib.util.find_spec(mod.split(".")[0]) is None]
if missing:
    sys.exit("setup.sh: installed, but these imports are missing: " + "; ".join(missing))
print(f"docket installed in .venv with extras [{sys.argv[1]}]; `.venv/bin/docket serve --db docket.db` is ready")
PY
exec .venv/bin/docket demo
