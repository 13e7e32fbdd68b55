"""Counts from the red-team suites, collected by `scripts/redteam.sh`.

A red-team test (named `test_redteam_*`, marked `slow`) tries many hostile inputs of one class and
calls `record(...)` once with what it tried and how many got through. The counts go to the JSON
lines file named by `DOCKET_REDTEAM_LOG` (the script sets it); without it nothing is written, so
the tests run the same under plain pytest. A test still fails on any escape or leak: the log is
for the closing note's table, not a substitute for the assertion.
"""

from __future__ import annotations

import json
import os


def record(cls: str, tried: int, escaped: int = 0, leaked: int = 0, note: str = "") -> None:
    """Append one row: `cls` names the class (e.g. "fence/xml", "acl/bm25-stats"), `tried` the
    cases run, `escaped` the ones that broke a fence or a check, `leaked` the ones that exposed
    restricted data."""
    path = os.environ.get("DOCKET_REDTEAM_LOG")
    if not path:
        return
    row = {"class": cls, "tried": int(tried), "escaped": int(escaped), "leaked": int(leaked), "note": note}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
