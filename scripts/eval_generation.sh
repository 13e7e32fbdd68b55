#!/usr/bin/env bash
# End-to-end figures with a generator: answer accuracy, refusals, position sensitivity and attack
# success (docs/eval.md). Slow: one model call per question and condition, cached on disk.
#
#   scripts/eval_generation.sh [N] [LLM_URL]
#
# N questions per set (default 40). LLM_URL defaults to $DOCKET_LLM, else "local" (the server
# `docket llm serve-local` started; install it with scripts/install_local_llm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-40}"
LLM="${2:-${DOCKET_LLM:-local}}"
DATA="${DOCKET_SHARED_DATA:-../shared/data}"
OUT=benchmarks/out/generation
mkdir -p "$OUT"
DOCKET=.venv/bin/docket
POLICY=benchmarks/out/eval_policy.toml
if [ ! -f "$POLICY" ]; then
  printf '[render]\nfields = ["title"]\n\n[pack]\nfloor = -1.0\n\n[rescore]\nenabled = true\n' > "$POLICY"
fi
# attacks are measured with the planted text in the prompt: no floor (it is not what is tested)
ATTACK_POLICY=benchmarks/out/attack_policy.toml
printf '[pack]\nfloor = -1.0\n' > "$ATTACK_POLICY"
run() {  # name, set path, extra args...
  local name="$1" path="$2"; shift 2
  echo "== $name ($N questions, $LLM)" >&2
  "$DOCKET" eval "$path" --limit "$N" --budgets 500 --llm "$LLM" --json "$@" > "$OUT/$name.json"
  .venv/bin/python - "$OUT/$name.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1])).get("generation", {})
print(json.dumps({k: v for k, v in g.items() if k not in ("calls", "cache_hits")}, indent=1))
PY
}
run hotpotqa "$DATA/hotpotqa/dev250.jsonl" --policy "$POLICY"
run squad-v2 "$DATA/squad-v2/dev-v2.0.subset.json"
run poisonedrag-nq "$DATA/poisonedrag/nq.json" --policy "$ATTACK_POLICY"
run bipia-email "$DATA/bipia" --policy "$ATTACK_POLICY"
