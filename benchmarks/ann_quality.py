"""Retrieval quality with approximate dense search against exact, in one store of 100k+ chunks
(issue 22: `retrieve` recall within 0.5 points of exact).

    .venv/bin/python benchmarks/store_speed.py --sizes 100000 --write-parquet /tmp/bench-100000.parquet
    docket import /tmp/bench-100000.parquet --db /tmp/bench-100000.db --embedder minilm
    .venv/bin/python benchmarks/ann_quality.py /tmp/bench-100000.db [--limit N]

The store is the bench corpus (store_speed.py: every distinct paragraph of ../shared/data, then
sentence-rotated copies up to the size, MiniLM-derived vectors), so it is over the ANN threshold
(50,000 rows) and `retrieve` searches its IVF index; `Filters(exact=True)` searches the same
store exactly. The questions are HotpotQA dev250's. A gold paragraph counts as found when any
copy of it (the paragraph itself or a rotation: chunk id `c{i}` is paragraph i mod the number of
distinct paragraphs) is among the first k. Prints recall@5/10/50 and p50 ms per mode (fused, as
`ask` uses, and dense alone), ANN and exact, and ANN minus exact in points. retrieval_quality.py's
own stores hold a few thousand chunks, under the threshold, so they always search exactly.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import hotpot_questions, paragraphs  # noqa: E402

from docket.embed import default_embedder  # noqa: E402
from docket.retrieve import retrieve  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.store.protocol import Filters  # noqa: E402

KS = (5, 10, 50)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", help="a SQLite store of the bench corpus (see above)")
    ap.add_argument("--limit", type=int, default=None, help="first N HotpotQA questions (default: all 250)")
    args = ap.parse_args()
    base = paragraphs()
    index = {p: i for i, p in enumerate(base)}
    corpus, questions = hotpot_questions(args.limit)
    store = open_store(args.store, create=False)
    if store.count() < 50_000:  # type: ignore[attr-defined]
        raise SystemExit(f"{args.store}: {store.count():,} chunks; under 50,000 the search is exact anyway")  # type: ignore[attr-defined]
    embedder = default_embedder()
    rows: dict[tuple[str, bool], list[float]] = {}
    print("| mode | search | recall@5 | recall@10 | recall@50 | p50 ms |\n|---|---|---|---|---|---|")
    for mode in ("fused", "dense"):
        for exact in (False, True):
            found = dict.fromkeys(KS, 0.0)
            ms = []
            for question, gold_rows in questions:
                gold = {index[corpus[i]] for i in gold_rows if corpus[i] in index}
                t0 = time.perf_counter()
                cands = retrieve(store, question, k=max(KS), mode=mode, filters=Filters(exact=exact), embedder=embedder)
                ms.append(1000 * (time.perf_counter() - t0))
                got = [int(c.chunk.id[1:]) % len(base) for c in cands]
                for k in KS:
                    found[k] += len(gold & set(got[:k])) / max(1, len(gold))
            rows[(mode, exact)] = [found[k] / len(questions) for k in KS]
            print(f"| {mode} | {'exact' if exact else 'approximate'} | "
                  + " | ".join(f"{r:.4f}" for r in rows[(mode, exact)]) + f" | {statistics.median(ms):.1f} |", flush=True)
    print()
    for mode in ("fused", "dense"):
        diff = [100 * (a - e) for a, e in zip(rows[(mode, False)], rows[(mode, True)])]
        print(f"{mode}: approximate minus exact, points: " + ", ".join(f"@{k} {d:+.2f}" for k, d in zip(KS, diff)))


if __name__ == "__main__":
    main()
