#!/usr/bin/env bash
# The large red-team suites: every test named test_redteam_* (all marked slow; each records its
# counts through tests/redteam_log.py, which tests/test_red_team_registry.py checks in the default
# run). Hostile text in every output format, access control (random principals, BM25 statistics,
# ACL changes during `ask`) on SQLite and PostgreSQL, hidden text in HTML (and against Chromium),
# link-check bypasses, bad input to every command, and whatever suite is added next.
#
# Prints tried / escaped / leaked per class, then which suites passed, failed or were skipped.
# Exits non-zero when a suite fails, a class lets anything through or tried nothing, a suite
# passes without recording, or a suite is skipped (a class missing from the table; set
# DOCKET_REDTEAM_ALLOW_SKIPS=1 to accept that, e.g. without chromium).
#
# Usage: scripts/redteam.sh [pytest args]      e.g. scripts/redteam.sh tests/test_links.py -x
# Name files or node ids to run a subset; do not pass -k (it would replace the selection).
# Sizes (defaults in brackets; the table's `tried` column shows what ran):
#   DOCKET_REDTEAM_FENCE_N       hypothesis briefs, each read in every format       [10000]
#   DOCKET_REDTEAM_BAD_INPUT_N   random bad inputs per command and class            [100]
#   DOCKET_REDTEAM_SEED          seed of the bad-input generator                    [0]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test,postgres,llm,peers]'
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
: >"$work/log.jsonl"
: >"$work/junit.xml"
load_start="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
started="$(date -u +%Y-%m-%dT%H:%MZ)"
SECONDS=0
status=0
DOCKET_REDTEAM_LOG="$work/log.jsonl" .venv/bin/python -m pytest -q -p no:cacheprovider -m slow -k redteam \
  --junitxml="$work/junit.xml" -o junit_family=xunit2 "$@" || status=$?
sizes="$(env | grep -E '^DOCKET_REDTEAM_(FENCE_N|BAD_INPUT_N|SEED)=' | sort | tr '\n' ' ' | sed 's/ $//' || true)"
header="red team, started $started, ${SECONDS}s wall, $(nproc) cores, load average ${load_start} at start, \
$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the end; sizes: ${sizes:-defaults}"
summary=0
.venv/bin/python tests/redteam_log.py "$work/log.jsonl" "$work/junit.xml" --header "$header" || summary=$?
if [ "$status" -eq 0 ] && [ "$summary" -ne 0 ]; then
  status=1
fi
exit "$status"
