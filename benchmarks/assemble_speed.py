"""Assembly time per query, no retrieval and no LLM: the cost docket adds between reranker and model.

    .venv/bin/python benchmarks/assemble_speed.py [--pool 50] [--budget 1000] [--repeat 20]

Pools are real HotpotQA paragraphs (../shared/data/hotpotqa/dev250.jsonl) with MiniLM vectors
computed once; each question's pool is its own 10 paragraphs plus others' up to --pool, ranked by
cosine. Prints p50/p95 milliseconds per `assemble` call over the questions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from docket.assemble import assemble, rank_by_cosine
from docket.embed import default_embedder
from docket.model import parse_chunk
from docket.store.base import MemoryStore

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hotpotqa" / "dev250.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=int, default=50)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = [json.loads(line) for line in DATA.open()][: max(args.questions, args.pool // 10 + 1)]
    chunks = [parse_chunk({"id": f"{r['question_id']}-{c['id']}", "doc": f"{r['question_id']}-{c['id']}",
                           "title": c["title"], "text": c["paragraph_text"]}) for r in rows for c in r["contexts"]]
    emb = default_embedder()
    vecs = emb.embed([c.text for c in chunks])
    chunks = [c.model_copy(update={"vector": tuple(float(x) for x in v)}) for c, v in zip(chunks, vecs, strict=True)]
    store = MemoryStore(chunks)
    times: list[float] = []
    for r in rows[: args.questions]:
        q = r["question_text"]
        cands = rank_by_cosine(q, chunks, emb)[: args.pool]
        assemble(q, cands, store=store, budget=args.budget, floor=0.0)  # warm caches (question vector, tokens)
        for _ in range(args.repeat):
            t = time.perf_counter()
            assemble(q, cands, store=store, budget=args.budget, floor=0.0)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    print(f"| pool | budget | calls | assemble p50 ms | p95 ms |\n|---|---|---|---|---|\n"
          f"| {args.pool} | {args.budget} | {len(times)} | {statistics.median(times):.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
