"""How low can warm assembly go in this design? Two floors the warm target (issue 21: ≤ 1 ms at
200 candidates, ≤ 5 ms at 1,000) is measured against, on the pools of benchmarks/assemble_speed.py
(HotpotQA dev250, MiniLM vectors, o200k counts, budget 1000, every default move, warm):

- **small pools**: the whole call on pools of 10 and 25 candidates, beside the full pool. What a
  warm call costs when there is almost nothing to screen: labels, fences, the brief, the trace
  and the per-call set-up. A target below this is below docket's fixed cost per call.
- **the reachable set only**: the candidates the reach scan (docket.moves.reach) keeps in R for
  the full pool, assembled alone. This is an optimistic estimate of what a columnar pool would
  reach (session-owned arrays screening the pool, `Passage` objects built only for R, the moves
  run on R): the screening itself is not timed. The prompts are NOT the same as the full pool's
  (re-scoring's BM25 and title statistics are pool-relative, so dropping candidates moves
  scores): the figure is a cost estimate, not a design.

    .venv/bin/python benchmarks/warm_floor.py [--pools 200,1000] [--questions 4] [--repeat 10]

Medians of wall-clock milliseconds; the same minutes for every row (calls alternate), so read the
ratios on a shared machine.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before numpy is imported
    for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_v, "1")

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _reach_spy() -> dict[str, list[str] | None]:
    """Record the chunk ids of the last R the scan found (None: the scan did not apply)."""
    from docket.moves import reach

    seen: dict[str, list[str] | None] = {}
    compute = reach._compute

    def spy(passages: list[Any], ctx: Any, authorities: Any) -> Any:
        got = compute(passages, ctx, authorities)
        seen["members"] = None if got is None else [passages[k].first.id for k in got.members]
        return got

    reach._compute = spy  # type: ignore[assignment]
    return seen


def _median_ms(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Each function's median over `repeat` rounds, the functions alternating within a round."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, f in enumerate(fns):
            t = time.perf_counter()
            f()
            times[k].append((time.perf_counter() - t) * 1000)
    return [statistics.median(ts) for ts in times]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", default="200,1000")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import assemble_speed as bench

    from docket.assemble import assemble
    from docket.eval.cache import eval_embedder
    from docket.model import Candidate
    from docket.store.base import MemoryStore
    from docket.tokens import default_counter

    qs, chunks, mat = bench.load_pool_data(args.questions)
    counter, emb = default_counter(), eval_embedder()
    seen = _reach_spy()
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores); budget {bench.BUDGET}; {len(qs)} questions x {args.repeat} calls")
    print("| pool | R (min-max) | small: 10 ms | small: 25 ms | full pool ms | R only ms | R only / full |")
    print("|---|---|---|---|---|---|---|")
    for size in (int(x) for x in args.pools.split(",")):
        row: list[list[float]] = [[], [], [], []]
        sizes: list[int] = []
        for q in qs:
            rows = bench.pool_of(q, chunks, mat, size)
            full = bench.prepare_docket(q, rows, chunks, mat, counter, emb)
            seen.clear()
            full()
            members = seen.get("members")
            if members is None:
                print(f"pool {size}: the reach scan did not apply to a question's pool; skipped")
                continue
            sizes.append(len(members))
            keep = set(members)
            sims = mat[rows] @ q["qvec"]
            cands = [Candidate(chunks[i], round(float(s), 6), r)
                     for r, (i, s) in enumerate(zip(rows, sims), 1) if chunks[i].id in keep]
            store = MemoryStore([chunks[i] for i in rows])
            question = q["question"]

            def only_r(cands: list[Any] = cands, store: Any = store, question: str = question) -> Any:
                return assemble(question, cands, store=store, budget=bench.BUDGET, floor=0.0, counter=counter, embedder=emb)

            small = [bench.prepare_docket(q, rows[:n], chunks, mat, counter, emb) for n in (10, 25)]
            fns = [*small, full, only_r]
            for f in fns:  # warm: every chunk's features and memo filled
                f()
                f()
            for k, m in enumerate(_median_ms(fns, args.repeat)):
                row[k].append(m)
        if not sizes:
            continue
        med = [statistics.median(v) for v in row]
        print(f"| {size} | {min(sizes)}-{max(sizes)} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.2f} | "
              f"{med[3] / med[2]:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
