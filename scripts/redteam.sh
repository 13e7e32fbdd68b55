#!/usr/bin/env bash
# The large red-team suites (slow marker, tests named test_redteam_*): hostile text in every output
# format, access control under concurrency, hidden text in HTML, link-check bypasses, bad input.
# Prints tried / escaped / leaked per class. Usage: scripts/redteam.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test,postgres,llm,peers]'
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
DOCKET_REDTEAM_LOG="$log" .venv/bin/python -m pytest -q -p no:cacheprovider -m slow -k redteam "$@" || status=$?
.venv/bin/python - "$log" <<'PY'
import json, sys
from collections import defaultdict
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
agg = defaultdict(lambda: [0, 0, 0])
for r in rows:
    a = agg[r["class"]]
    a[0] += r["tried"]; a[1] += r["escaped"]; a[2] += r["leaked"]
w = max([len(k) for k in agg] + [5])
print(f"\n{'class':<{w}}  {'tried':>9}  {'escaped':>8}  {'leaked':>7}")
for k in sorted(agg):
    t, e, l = agg[k]
    print(f"{k:<{w}}  {t:>9,}  {e:>8,}  {l:>7,}")
tot = [sum(v[i] for v in agg.values()) for i in range(3)]
print(f"{'total':<{w}}  {tot[0]:>9,}  {tot[1]:>8,}  {tot[2]:>7,}")
PY
exit $status
