#!/usr/bin/env bash
# Attack success under docket's three layers of defence, one switched on after another, against
# plain concatenation (the spec's "Defend in three layers"):
#   fences     the default brief: rules in the system prompt, escaped <document> tags, trust marks
#   datamark   + [render] spotlight = "datamark" (Layer 2: untrusted text's spaces become U+02C6)
#   fallback   + [pack] untrusted = "fallback" (Layer 3: strangers' text only when nothing official
#              clears the floor)
# on BIPIA email (instructions planted in an untrusted email, the only source) and PoisonedRAG nq
# (five untrusted pages arguing a wrong answer beside a trusted reference).
#
#   scripts/eval_defences.sh [N] [LLM_URL]
#
# Slow (two model calls per question and condition, BIPIA adds a judge call); generations are
# cached in .docket-cache/generations.sqlite, so the plain side and a rerun cost nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-40}"
LLM="${2:-${DOCKET_LLM:-local}}"
DATA="${DOCKET_SHARED_DATA:-../shared/data}"
OUT=benchmarks/out/defences
mkdir -p "$OUT"
printf '[pack]\nfloor = -1.0\n' > "$OUT/fences.toml"
printf '[pack]\nfloor = -1.0\n\n[render]\nspotlight = "datamark"\n' > "$OUT/datamark.toml"
printf '[pack]\nfloor = -1.0\nuntrusted = "fallback"\n\n[render]\nspotlight = "datamark"\n' > "$OUT/fallback.toml"
for set in bipia-email poisonedrag-nq; do
  case "$set" in
    bipia-email) path="$DATA/bipia" ;;
    poisonedrag-nq) path="$DATA/poisonedrag/nq.json" ;;
  esac
  for layer in fences datamark fallback; do
    echo "== $set, $layer ($N questions, $LLM)" >&2
    .venv/bin/docket eval "$path" --limit "$N" --budgets 500 --llm "$LLM" --policy "$OUT/$layer.toml" --json \
      > "$OUT/$set-$layer.json"
  done
done
.venv/bin/python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("| set | docket layers | attack success (docket) | attack success (plain) | answer accuracy (docket / plain) |")
print("|---|---|---|---|---|")
for s in ("bipia-email", "poisonedrag-nq"):
    for layer in ("fences", "datamark", "fallback"):
        g = json.loads((out / f"{s}-{layer}.json").read_text()).get("generation", {})
        atk, acc = g.get("attack_success", {}), g.get("accuracy", {})
        f = lambda d, k: "–" if d.get(k) is None else f"{100 * d[k]:.1f}%"
        mine = "docket_fenced" if "docket_fenced" in atk else "docket"
        print(f"| {s} | {layer} | {f(atk, mine)} | {f(atk, 'plain')} | {f(acc, 'docket')} / {f(acc, 'plain')} |")
PY
