"""SQLite keyword search with and without pruning (store.sqlite_bm25) on stores built beforehand:
latency of `search_bm25`, the postings each scores, and whether the results are identical.

    .venv/bin/python benchmarks/sqlite_bm25.py --store big.db[,bigger.db] [--queries 250] [--k 100] [--rounds 3]

Questions: HotpotQA dev250 (../shared/data), asked unrestricted and as an anonymous reader
(public chunks only), at k = `--k` (`ask` asks BM25 for max(2k, 100) = 100 by default). Both
ways run in one process on the same warm index, interleaved per question, `--rounds` times; the
table gives p50 / p95 of the per-question minimum, the ratio, the share of questions pruned and
the postings scored, and the number of questions whose (id, score) lists differ (must be 0).
Build a store with `store_speed.py --write-parquet` and `docket import` (docs/store.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA  # noqa: E402

from docket.store import sqlite_bm25  # noqa: E402
from docket.store.protocol import Filters  # noqa: E402
from docket.store.sqlite import SQLiteStore  # noqa: E402

NEVER = 1 << 62
#: the shipped threshold, restored after each way is timed
DEFAULT = sqlite_bm25.PRUNE_MIN_POSTINGS


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


class Counting:
    """Counts the postings `sqlite_bm25.scores` scores and whether it pruned, per call."""

    def __init__(self) -> None:
        self.real = sqlite_bm25.scores
        self.pruned = 0
        self.scored: list[int] = []

    def __call__(self, terms: list[sqlite_bm25.Term], lens, avg, rows, k, prune_from=None):  # type: ignore[no-untyped-def]
        least = sqlite_bm25.PRUNE_MIN_POSTINGS if prune_from is None else prune_from
        found = sqlite_bm25._contenders(terms, lens, avg, rows, k, least)
        self.pruned += found is not None
        self.scored.append(sum(int(at.shape[0] if found is None else found.mask[at].sum()) for at, _, _ in terms))
        return self.real(terms, lens, avg, rows, k, prune_from)


def measure(path: Path, questions: list[str], k: int, rounds: int) -> list[dict[str, object]]:
    store = SQLiteStore(path)
    askers = {"unrestricted": Filters(unrestricted=True), "anonymous": Filters()}
    out = []
    for name, f in askers.items():
        store.search_bm25(questions[0], k, f)  # the index loaded and warm
        best = {"pruned": [float("inf")] * len(questions), "every posting": [float("inf")] * len(questions)}
        differ = 0
        for _ in range(rounds):
            for i, q in enumerate(questions):
                got = {}
                for way, least in (("pruned", DEFAULT), ("every posting", NEVER)):
                    sqlite_bm25.PRUNE_MIN_POSTINGS = least
                    t = time.perf_counter()
                    got[way] = store.search_bm25(q, k, f)
                    best[way][i] = min(best[way][i], (time.perf_counter() - t) * 1000)
                differ += got["pruned"] != got["every posting"]
        sqlite_bm25.PRUNE_MIN_POSTINGS = DEFAULT
        counting = Counting()
        sqlite_bm25.scores = counting  # type: ignore[assignment]
        for q in questions:
            store.search_bm25(q, k, f)
        sqlite_bm25.scores = counting.real  # type: ignore[assignment]
        every = Counting()
        sqlite_bm25.PRUNE_MIN_POSTINGS = NEVER
        sqlite_bm25.scores = every  # type: ignore[assignment]
        for q in questions:
            store.search_bm25(q, k, f)
        sqlite_bm25.scores = every.real  # type: ignore[assignment]
        sqlite_bm25.PRUNE_MIN_POSTINGS = DEFAULT
        out.append({"store": path.name, "rows": store.count(), "asker": name,
                    "pruned_p50": statistics.median(best["pruned"]), "pruned_p95": pct(best["pruned"], 95),
                    "all_p50": statistics.median(best["every posting"]), "all_p95": pct(best["every posting"], 95),
                    "share_pruned": counting.pruned / len(questions),
                    "scored_p50": statistics.median(counting.scored), "postings_p50": statistics.median(every.scored),
                    "differ": differ // rounds})
    store.close()
    return out



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="comma-separated SQLite store files")
    ap.add_argument("--queries", type=int, default=250)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    paths = [Path(p) for p in args.store.split(",") if p]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        ap.error(f"--store: no such file {', '.join(missing)} (build one: store_speed.py --write-parquet, docket import)")
    if args.queries < 1 or args.k < 1 or args.rounds < 1:
        ap.error("--queries, --k and --rounds must be at least 1")
    with (DATA / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line)["question_text"] for line in fh][: args.queries]
    rows = [r for p in paths for r in measure(p, questions, args.k, args.rounds)]
    print(f"\nload average {os.getloadavg()[0]:.1f} (2 cores); {len(questions)} questions, k {args.k}, "
          f"minimum of {args.rounds} interleaved rounds\n")
    print("| store | chunks | asker | pruned p50 / p95 ms | every posting p50 / p95 ms | speed-up (p50) "
          "| questions pruned | postings scored p50: pruned / every | results differing |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['store']} | {r['rows']:,} | {r['asker']} | {r['pruned_p50']:.2f} / {r['pruned_p95']:.2f} "
              f"| {r['all_p50']:.2f} / {r['all_p95']:.2f} | {r['all_p50'] / r['pruned_p50']:.2f}x "  # type: ignore[operator]
              f"| {r['share_pruned']:.0%} | {r['scored_p50']:,.0f} / {r['postings_p50']:,.0f} | {r['differ']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
