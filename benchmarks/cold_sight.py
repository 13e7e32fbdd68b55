"""First sight alone: the cold path of benchmarks/assemble_speed.py (pools of chunks docket has
never seen: the feature cache, the pair verdicts and the memos cleared before each call, a fresh
o200k counter), more calls than `--quick` gives it and no peer in between, for a same-minute A/B
of two versions of docket.

    .venv/bin/python benchmarks/cold_sight.py [--questions 16] [--repeat 2] [--pools 50,200,1000]
    PYTHONPATH=/path/to/other/checkout/src .venv/bin/python benchmarks/cold_sight.py   # the other version

Run the two alternately (A B A B ...) and read the ratio of each pair: the machine's speed moves
between minutes. Printed: per pool size, the median thread-CPU and wall milliseconds of one cold
call, the number of calls, and the load average; `--json` prints the same as one JSON line.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before numpy is imported
    for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_v, "1")

import argparse
import json
import statistics
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assemble_speed as speed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2, help="cold calls per question and pool size")
    ap.add_argument("--pools", default="50,200,1000")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sizes = speed.checked_sizes(ap, args)

    from docket.eval.cache import eval_embedder
    from docket.tokens import O200kCounter

    qs, chunks, mat = speed.load_pool_data(args.questions)
    embedder = eval_embedder()
    out: dict[str, dict[str, float]] = {}
    for n in sizes:
        for q in qs:  # imports and the question's own caches, as the benchmark's warm phase does
            speed.prepare_docket(q, speed.pool_of(q, chunks, mat, n), [c.model_copy() for c in chunks], mat,
                                 O200kCounter(), embedder)()
        cpu, wall = [], []
        for _ in range(args.repeat):
            for q in qs:
                fn = speed.prepare_docket(q, speed.pool_of(q, chunks, mat, n), [c.model_copy() for c in chunks], mat,
                                          O200kCounter(), embedder)
                speed.forget_memos()
                c, t = time.thread_time(), time.perf_counter()
                fn()
                cpu.append((time.thread_time() - c) * 1000)
                wall.append((time.perf_counter() - t) * 1000)
        out[str(n)] = {"cpu_ms": statistics.median(cpu), "wall_ms": statistics.median(wall), "calls": len(cpu)}
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"load": load, **out}))
        return 0
    print(f"load average {load:.1f}; first sight, median of one cold call")
    print("| pool | cpu ms | wall ms | calls |")
    print("|---|---|---|---|")
    for n, r in out.items():
        print(f"| {n} | {r['cpu_ms']:.1f} | {r['wall_ms']:.1f} | {int(r['calls'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
