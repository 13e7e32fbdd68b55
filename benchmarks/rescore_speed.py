"""Re-scoring (`docket.rescore.rescore_order`) time per query: the vectorised path beside the
per-candidate loops it replaced (tests/rescore_reference.py at REFERENCE_REV, read from git history:
the tests now check decisions against recorded outputs, so the old code is no longer in the tree).

    .venv/bin/python benchmarks/rescore_speed.py [--pools 200,1000] [--questions 6] [--repeat 30]

Pools as in benchmarks/assemble_speed.py (HotpotQA dev250 paragraphs, MiniLM cosines, a question's
own paragraphs plus the nearest others); the inputs are the candidates and context `assemble`
hands to `rescore_order` (captured from one real assembly per question), with per-chunk features
warm. Each round runs reference, new, new, reference on one pool, then moves to the next pool, so
both see the same load and the same cache state (the pools are cycled, as successive queries
would be). Prints the median and p10 milliseconds of each and the median of the per-pool ratios;
the decisions are checked identical before timing. A shared machine is noisy: compare the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]


def capture(size: int, questions: int) -> list[tuple[list[Any], Any]]:
    """The (candidates, context) of `rescore_order` in one assembly per question."""
    import assemble_speed as speed

    from docket import rescore
    from docket.eval.cache import eval_embedder
    from docket.tokens import default_counter

    qs, chunks, mat = speed.load_pool_data(questions)
    counter, emb = default_counter(), eval_embedder()
    runs = [speed.prepare_docket(q, speed.pool_of(q, chunks, mat, size), chunks, mat, counter, emb) for q in qs]
    got: list[tuple[list[Any], Any]] = []
    real = rescore.rescore_order

    def keep(candidates: Any, ctx: Any) -> Any:
        got.append((list(candidates), ctx))
        return real(candidates, ctx)

    rescore.rescore_order = keep  # type: ignore[assignment]
    try:
        for run in runs:
            run()
    finally:
        rescore.rescore_order = real  # type: ignore[assignment]
    return got


#: the last revision that kept the old re-scoring loops in tests/rescore_reference.py
REFERENCE_REV = "729de25"


def reference_module():  # type: ignore[no-untyped-def]
    """The reference loops, loaded from `git show REFERENCE_REV:tests/rescore_reference.py`."""
    import subprocess
    import types

    here = os.path.dirname(os.path.abspath(__file__))
    code = subprocess.run(["git", "show", f"{REFERENCE_REV}:tests/rescore_reference.py"], cwd=here,
                          capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("rescore_reference")
    exec(compile(code, "rescore_reference.py", "exec"), mod.__dict__)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", default="200,1000")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    ref = reference_module()

    from docket import rescore

    print(f"{'pool':>5} {'reference ms':>13} {'(p10)':>7} {'new ms':>7} {'(p10)':>7} {'speed-up':>9}  load")
    for size in (int(x) for x in args.pools.split(",")):
        inputs = capture(size, args.questions)
        for cands, ctx in inputs:
            assert ref.rescore_order(cands, ctx) == rescore.rescore_order(cands, ctx), "decisions differ"
        old_t: list[float] = []
        new_t: list[float] = []
        ratio: list[float] = []
        for _ in range(args.repeat):
            for cands, ctx in inputs:
                t = []
                for f in (ref.rescore_order, rescore.rescore_order, rescore.rescore_order, ref.rescore_order):
                    t0 = time.perf_counter()
                    f(cands, ctx)
                    t.append(time.perf_counter() - t0)
                a, b = (t[0] + t[3]) / 2, (t[1] + t[2]) / 2
                old_t.append(a * 1e3)
                new_t.append(b * 1e3)
                ratio.append(a / b)

        def p10(v: list[float]) -> float:
            return sorted(v)[len(v) // 10]

        print(f"{size:>5} {statistics.median(old_t):>13.3f} {p10(old_t):>7.3f} {statistics.median(new_t):>7.3f} "
              f"{p10(new_t):>7.3f} {statistics.median(ratio):>8.2f}x  {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
