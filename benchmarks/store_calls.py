"""The SQLite store's share of a repeated `ask`: each store call it makes, timed warm, in one process.

    PYTHONPATH=src .venv/bin/python benchmarks/store_calls.py --store s100k.db [--queries 20] [--rounds 10]
    PYTHONPATH=/other/checkout/src .venv/bin/python benchmarks/store_calls.py --store s100k.db   # then alternate

`store_speed.py --store` times whole asks, whose MiniLM embedding and assembly swing by a factor
of two on a shared two-core machine; the store's calls are a few milliseconds of them. This asks
HotpotQA dev questions (`--queries`, after the first 20, as `stage_profile` does) once to warm
the store, then times, per question and `--rounds` times: `search_dense` and `search_bm25`
(k 100, anonymous: what `retrieve` asks), `get_many` of the 50 fused candidates, the versions a
scoped view lists for their documents (`readable_versions_of`) and `chunks_of` of five of them
(Move 3's neighbours), and prints each call's p50 in ms. The question vectors are embedded before
timing. Run it with each checkout's `src` on the same store, alternated (issue 22, session 34).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_speed import questions  # noqa: E402

from docket.embed import default_embedder  # noqa: E402
from docket.retrieve import rrf  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.store.protocol import Filters  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    store = open_store(args.store, read_only=True)
    model = default_embedder().inner  # type: ignore[attr-defined]
    qs = questions(20 + args.queries)[20:]
    vecs = {q: model.embed([q])[0] for q in qs}
    anyone = Filters()
    asked: dict[str, tuple[list[str], list[str]]] = {}
    for q in qs:  # the warm-up: what each question fetches and lists
        dense = [c for c, _ in store.search_dense(vecs[q], 100, anyone)]
        words = [c for c, _ in store.search_bm25(q, 100, anyone)]
        order = [c for c, _ in rrf([dense, words])][:50]
        docs = sorted({c.doc for c in store.get_many(order).values()})
        store.readable_versions_of(docs, None)  # type: ignore[attr-defined]
        asked[q] = (order, docs)
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> None:
        t0 = time.perf_counter()
        fn()
        times.setdefault(name, []).append((time.perf_counter() - t0) * 1000)

    for _ in range(args.rounds):
        for q in qs:
            order, docs = asked[q]
            timed("dense", lambda: store.search_dense(vecs[q], 100, anyone))  # noqa: B023
            timed("bm25", lambda: store.search_bm25(q, 100, anyone))  # noqa: B023
            timed("fetch", lambda: store.get_many(order))  # noqa: B023
            timed("versions", lambda: store.readable_versions_of(docs, None))  # type: ignore[attr-defined]  # noqa: B023
            timed("chunks_of x5", lambda: [store.chunks_of(d, 1) for d in docs[:5]])  # noqa: B023
    row = {k: round(statistics.median(v), 3) for k, v in times.items()}
    print(json.dumps({**row, "store_calls_ms": round(sum(row.values()), 3), "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
