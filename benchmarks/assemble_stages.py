"""Where an assembly's time goes: the median time of each move inside `assemble`, on the pools of
benchmarks/assemble_speed.py (HotpotQA dev250, MiniLM vectors, o200k counts, budget 1000, every
default move, warm), without cProfile's overhead.

    .venv/bin/python benchmarks/assemble_stages.py [--pools 200,1000] [--questions 6] [--repeat 15]

Each move is wrapped with a timer for the run; "assemble" is the whole call. To compare two
versions of docket in the same minutes, run this script alternately with each on PYTHONPATH
(e.g. `PYTHONPATH=/path/to/other/checkout/src`): the machine's speed moves between minutes, so a
same-minute A/B is the comparison to trust.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before numpy is imported
    for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_v, "1")

import argparse
import importlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: (module, function, label) of the timed stages, in pipeline order
STAGES = (
    ("docket.rescore", "rescore_order", "rescore"),
    ("docket.moves.versions", "resolve", "versions (Move 1)"),
    ("docket.moves.versions", "_find_conflicts", "  of which conflicts"),
    ("docket.moves.dedup", "collapse", "dedup (Move 2)"),
    ("docket.moves.expand", "restore", "expand (Move 3)"),
    ("docket.moves.pack", "pack", "pack (Move 4)"),
    ("docket.moves.order", "arrange", "order (Move 5)"),
    ("docket.assemble", "build_brief", "brief (Moves 7-8)"),
)


def _timed(times: dict[str, list[float]], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[label].append((time.perf_counter() - t) * 1000)

    return run


def instrument(times: dict[str, list[float]]) -> None:
    """Wrap every stage with a timer. The wiring calls each move as `module.function` and
    `build_brief` by its name in docket.assemble, so replacing those attributes is enough."""
    for module_name, name, label in STAGES:
        module = importlib.import_module(module_name)
        setattr(module, name, _timed(times, label, getattr(module, name)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", default="200,1000")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=15, help="timed calls per question and pool size")
    args = ap.parse_args()
    import assemble_speed as bench

    from docket.eval.cache import eval_embedder
    from docket.tokens import default_counter

    qs, chunks, mat = bench.load_pool_data(args.questions)
    counter, emb = default_counter(), eval_embedder()
    times: dict[str, list[float]] = defaultdict(list)
    instrument(times)
    for size in (int(x) for x in args.pools.split(",")):
        fns = [bench.prepare_docket(q, bench.pool_of(q, chunks, mat, size), chunks, mat, counter, emb) for q in qs]
        for f in fns:  # warm: every chunk's features and every memo filled once
            f()
            f()
        times.clear()
        total: list[float] = []
        for _ in range(args.repeat):
            for f in fns:
                t = time.perf_counter()
                f()
                total.append((time.perf_counter() - t) * 1000)
        print(f"\npool {size}: {len(total)} assemblies, load average {os.getloadavg()[0]:.2f}")
        print("| stage | median ms | p10 ms |")
        print("|---|---|---|")
        print(f"| assemble (whole call) | {statistics.median(total):.3f} | {sorted(total)[len(total) // 10]:.3f} |")
        for _, _, label in STAGES:
            v = times.get(label)
            if v:
                print(f"| {label} | {statistics.median(v):.3f} | {sorted(v)[len(v) // 10]:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
