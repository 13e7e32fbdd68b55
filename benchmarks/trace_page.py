"""Render time of the HTML trace page (docket.trace_html.render_trace), CPU seconds, best of N.

Four briefs: the demo brief (small, clean), 4,000 candidates, 20,000 decisions and 1 MB of clean
prompt text (ASCII with markup characters, so it is escaped but has nothing to box), and 1 MB of
hostile text (a bidi override every 12 characters). Run it from two worktrees to compare:

    PYTHONPATH=src python benchmarks/trace_page.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from docket.assemble import assemble, rank_by_cosine
from docket.demo import REFUND_QUESTION, nimbus_chunks
from docket.embed import HashEmbedder
from docket.store.base import MemoryStore
from docket.trace_html import render_trace


def base() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    emb = HashEmbedder(64)
    chunks = nimbus_chunks()
    ranked = rank_by_cosine(REFUND_QUESTION, chunks, emb)
    brief = assemble(REFUND_QUESTION, ranked, store=MemoryStore(chunks), embedder=emb, floor=-1.0, budget=600)
    cands = [{"id": c.chunk.id, "doc": c.chunk.doc, "rank": c.rank, "score": c.score} for c in ranked]
    return json.loads(json.dumps(brief.to_json())), cands


def big(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    b, _ = base()
    b["sources"]["S1"]["text"] = b["messages"][-1]["content"] = text
    b["trace"] = [{"move": "floor", "action": "drop", "chunks": [f"c{i}"], "reason": "below the floor (S1)",
                   "numbers": {"s": i}} for i in range(20_000)]
    return b, [{"id": f"c{i}", "doc": "refund-policy", "rank": i, "score": 0.1} for i in range(4000)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cases = {"demo": base(), "big-clean": big('<p class="x">S1 & "q" \'a\'</p>\n' * 30_000),
             "big-hostile": big("<S1 &\u202e\"'>" * 83_000)}
    for name, (b, c) in cases.items():
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            render_trace(b, c)
            best = min(best, time.process_time() - t0)
        print(f"{name}\t{best * 1000:.2f} ms")


if __name__ == "__main__":
    main()
