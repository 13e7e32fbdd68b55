#!/usr/bin/env bash
# Figures for issue 13 §6-8 with the local model (docs: benchmarks/README.md):
#   6  structured answers against free text   (benchmarks/structured_answers.py)
#   7  Option C on MuSiQue at budgets 1000/2000 (benchmarks/summary_musique.py)
#   8  contextual retrieval, top-20 failure     (benchmarks/contextual_retrieval.py)
#
#   scripts/eval_llm_features.sh [6] [7] [8]          (default: all three)
#
# Sizes and models (environment): SQUAD=20 (answerable, and as many unanswerable) HOTPOT=40,
# MUSIQUE=15, CTX_HOTPOT=20 CTX_MUSIQUE=10 (questions whose paragraphs form the sub-corpora),
# MODEL6=1.5b MODEL7=1.5b MODEL8=0.5b. Slow on 2 shared cores (hours for all three); every call
# is cached in .docket-cache/generations.sqlite, so an interrupted run resumes where it stopped
# and a re-run is free. The local server is started per part and stopped at the end (also on
# Ctrl-C). Needs scripts/install_local_llm.sh all.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=benchmarks/out/llm_features
mkdir -p "$OUT"
PARTS=("$@")
[ ${#PARTS[@]} -eq 0 ] && PARTS=(6 7 8)
PID=""
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""; fi; }
trap stop EXIT INT TERM

serve() {  # model -> sets URL and PID
  local info
  info=$("$PY" -c "
import json, sys
from docket.llm import local
i = local.start_server(sys.argv[1], wait=600)
print(json.dumps({'url': i.url, 'pid': i.pid}))" "$1")
  URL=$("$PY" -c "import json,sys; print(json.loads(sys.argv[1])['url'])" "$info")
  PID=$("$PY" -c "import json,sys; print(json.loads(sys.argv[1])['pid'])" "$info")
  echo "== local model $1 at $URL (pid $PID)" >&2
}

for part in "${PARTS[@]}"; do
  case "$part" in
    6) serve "${MODEL6:-1.5b}"
       "$PY" benchmarks/structured_answers.py --llm "$URL" --squad "${SQUAD:-20}" --hotpot "${HOTPOT:-40}" \
         --json "$OUT/structured_answers.json" | tee "$OUT/structured_answers.md" ;;
    7) serve "${MODEL7:-1.5b}"
       "$PY" benchmarks/summary_musique.py --llm "$URL" --limit "${MUSIQUE:-15}" --budgets 1000,2000 \
         --json "$OUT/summary_musique.json" | tee "$OUT/summary_musique.md" ;;
    8) serve "${MODEL8:-0.5b}"
       "$PY" benchmarks/contextual_retrieval.py --llm "$URL" --hotpot "${CTX_HOTPOT:-20}" --musique "${CTX_MUSIQUE:-10}" \
         --json "$OUT/contextual_retrieval.json" | tee "$OUT/contextual_retrieval.md" ;;
    *) echo "unknown part '$part' (use 6, 7 or 8)" >&2; exit 2 ;;
  esac
  stop
done
