"""Counts from the red-team suites, collected by `scripts/redteam.sh`.

A red-team test (named `test_redteam_*`, marked `slow`) tries many hostile inputs of one class and
calls `record(...)` with what it tried and how many got through. The counts go to the JSON lines
file named by `DOCKET_REDTEAM_LOG` (the script sets it); without it nothing is written, so the
tests run the same under plain pytest. A test still fails on any escape or leak: the log is for
the closing note's table, not a substitute for the assertion.

Each row also names the test that wrote it (pytest's `PYTEST_CURRENT_TEST`), so the script can
tell a suite that passed without recording anything from one that recorded. `tests/
test_redteam_registry.py` checks statically that every `test_redteam_*` is slow and records.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

#: "area/what", lower case: `fence/xml`, `acl/bm25-stats-postgres`, `bad-input/index/files`
CLASS_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)+")


def current_test() -> str:
    """The node id of the running test ("" outside pytest)."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


def record(cls: str, tried: int, escaped: int = 0, leaked: int = 0, note: str = "") -> None:
    """Append one row: `cls` names the class (e.g. "fence/xml", "acl/bm25-stats"), `tried` the
    cases run, `escaped` the ones that broke a fence or a check, `leaked` how many restricted items
    were exposed (a case may expose several). A malformed class name or a negative count is a bug in the suite: it raises
    even without the log, so the default run's smoke tests catch it too."""
    if not CLASS_NAME.fullmatch(cls):
        raise ValueError(f"red-team class {cls!r} must look like 'area/what' (lower case, digits, '-', '_')")
    counts = {"tried": int(tried), "escaped": int(escaped), "leaked": int(leaked)}
    if min(counts.values()) < 0 or counts["escaped"] > counts["tried"]:
        raise ValueError(f"red-team class {cls!r}: impossible counts {counts}")
    path = os.environ.get("DOCKET_REDTEAM_LOG")
    if not path:
        return
    row = {"class": cls, **counts, "note": note, "test": current_test()}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")


# --- the table (run by scripts/redteam.sh after pytest) -----------------------------------------


def load_rows(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def junit_id(node_id: str) -> str:
    """A pytest node id in the form a JUnit report names a test case: `classname::name`."""
    parts = node_id.split("::")
    module = parts[0].removesuffix(".py").replace("/", ".")
    return ".".join([module, *parts[1:-1]]) + "::" + parts[-1]


def load_outcomes(junit_xml: str) -> dict[str, tuple[str, str]]:
    """Test case -> (passed | failed | error | skipped, message), from pytest's --junitxml."""
    import xml.etree.ElementTree as ET

    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("error", "failure", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = (el.get("message") or "").splitlines()[0] if el.get("message") else ""
                break
        out[key] = (outcome, message)
    return out


def summarize(rows: list[dict[str, Any]], outcomes: dict[str, tuple[str, str]],
              allow_skips: bool = False) -> tuple[list[str], list[str]]:
    """The per-class table and the problems that make the run fail: a class that let something
    through, a class that tried nothing, a suite that passed without recording, a suite that
    failed or (unless allowed) was skipped, and a run with no suite at all."""
    agg: dict[str, list[int]] = {}
    notes: dict[str, str] = {}
    recorded: set[str] = set()
    for r in rows:
        a = agg.setdefault(r["class"], [0, 0, 0])
        a[0] += r["tried"]
        a[1] += r["escaped"]
        a[2] += r["leaked"]
        if r.get("note"):
            notes[r["class"]] = r["note"]
        if r.get("test"):
            recorded.add(junit_id(r["test"]))
    problems: list[str] = []
    w = max([len(k) for k in agg] + [5])
    lines = [f"{'class':<{w}}  {'tried':>9}  {'escaped':>8}  {'leaked':>7}  verdict"]
    for k in sorted(agg):
        t, e, leak = agg[k]
        verdict = "ok" if t and not e and not leak else ("NOTHING TRIED" if not t else "FAIL")
        if verdict != "ok":
            problems.append(f"class {k}: {verdict.lower()} ({t} tried, {e} escaped, {leak} leaked)")
        lines.append(f"{k:<{w}}  {t:>9,}  {e:>8,}  {leak:>7,}  {verdict}")
    tot = [sum(v[i] for v in agg.values()) for i in range(3)]
    lines.append(f"{'total':<{w}}  {tot[0]:>9,}  {tot[1]:>8,}  {tot[2]:>7,}")
    by = {o: sorted(k for k, (oc, _) in outcomes.items() if oc == o) for o in ("passed", "failed", "error", "skipped")}
    lines.append("")
    lines.append(f"suites: {len(by['passed'])} passed, {len(by['failed'])} failed, {len(by['error'])} errors, "
                 f"{len(by['skipped'])} skipped")
    if not outcomes:
        problems.append("no red-team suite ran (nothing collected: check the selection)")
    for k in by["failed"] + by["error"]:
        problems.append(f"suite {k} {outcomes[k][0]}: {outcomes[k][1][:200]}")
    for k in by["skipped"]:
        msg = f"suite {k} skipped, its classes are not in the table: {outcomes[k][1][:200]}"
        if allow_skips:
            lines.append("not measured: " + msg)
        else:
            problems.append(msg + " (DOCKET_REDTEAM_ALLOW_SKIPS=1 to accept)")
    for k in by["passed"]:
        if k not in recorded:
            problems.append(f"suite {k} passed but recorded nothing (call redteam_log.record)")
    if notes:
        lines.append("")
        lines += [f"{k}: {v[:240]}" for k, v in sorted(notes.items())]
    return lines, problems


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Print the red-team table from a record log and a JUnit report.")
    ap.add_argument("log")
    ap.add_argument("junit")
    ap.add_argument("--header", default="", help="a line printed above the table (date, machine, sizes)")
    args = ap.parse_args(argv)
    rows = load_rows(args.log)
    outcomes = load_outcomes(args.junit) if os.path.getsize(args.junit) else {}
    lines, problems = summarize(rows, outcomes, allow_skips=os.environ.get("DOCKET_REDTEAM_ALLOW_SKIPS") == "1")
    print("\n" + (args.header + "\n" if args.header else "") + "\n".join(lines))
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
