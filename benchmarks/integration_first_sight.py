"""Each framework integration's first-sight call beside that framework's own post-retrieval chain,
on the same pools in the same run (issue 21: "each framework's first-sight call ≤ its own peer
chain").

    .venv/bin/python benchmarks/integration_first_sight.py [--pools 50,200] [--questions 4] [--repeat 3]

Pools are `assemble_speed.py`'s: HotpotQA dev250 questions, each with its own paragraphs and
then the nearest others by MiniLM cosine, up to the pool size. Every system gets the same
precomputed MiniLM vectors through its framework's embedding interface (a look-up, no model in
the timed call), the same scores and budget 1000 at floor 0, so the time is the step itself.

- "first sight": docket has never seen the pool's chunks: its per-chunk memos are cleared before
  every timed call (what a process pays for chunks new to it, the normal case behind a retriever).
- the peer chains are those of assemble_speed.py: LangChain EmbeddingsRedundantFilter ->
  EmbeddingsFilter -> LongContextReorder; LlamaIndex SimilarityPostprocessor -> LongContextReorder;
  Haystack LostInTheMiddleRanker. The last two compare no pairs and count no tokens: they are
  a floor for "doing almost nothing", not the same work.

Every integration's user message is compared with the direct call's (`mismatches` must be 0).
Times are medians of thread CPU and wall clock over questions x repeats, interleaved.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assemble_speed as speed  # noqa: E402

BUDGET = speed.BUDGET


class LookupEmbedder:
    """docket's `Embedder` over vectors computed beforehand (what the peers' embedding adapters get)."""

    def __init__(self, name: str, by_text: dict[str, np.ndarray]) -> None:
        self.name = name
        self.dim = len(next(iter(by_text.values())))
        self.by_text = by_text

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.by_text[t] for t in texts]).astype(np.float32, copy=False)


def integration_calls(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray,
                      embedder: LookupEmbedder) -> dict[str, Callable[[], str]]:
    """framework name -> a call of docket's integration for it, on the pool's framework objects
    (built here, outside the timed call), returning the prompt's user message."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from haystack import Document as HDocument
        from langchain_core.documents import Document as LDocument
        from llama_index.core.schema import NodeWithScore, TextNode

        from docket.integrations.haystack import DocketAssembler
        from docket.integrations.langchain import DocketPrompt
        from docket.integrations.llamaindex import DocketPostprocessor

    sims = mat[rows] @ q["qvec"]
    pool = [(chunks[i], round(float(s), 6)) for i, s in zip(rows, sims)]
    meta = [{"id": c.id, "doc": c.doc, "title": c.title} for c, _ in pool]
    question = q["question"]
    settings: dict[str, Any] = {"budget": BUDGET, "floor": 0.0, "embedder": embedder}

    lc = DocketPrompt(**settings)
    lc_pairs = [(LDocument(id=c.id, page_content=c.text, metadata=m), s) for (c, s), m in zip(pool, meta)]
    li = DocketPostprocessor(**settings)
    li_nodes = [NodeWithScore(node=TextNode(id_=c.id, text=c.text, metadata=m), score=s) for (c, s), m in zip(pool, meta)]
    hs = DocketAssembler(**settings)
    hs_docs = [HDocument(id=c.id, content=c.text, meta=m, score=s) for (c, s), m in zip(pool, meta)]

    def llamaindex() -> str:
        out = li.postprocess_nodes(li_nodes, query_str=question)
        return str(out[0].node.metadata["docket_brief"]["messages"][-1]["content"]) if out else ""

    return {
        "langchain": lambda: str(lc.invoke({"question": question, "documents": lc_pairs}).messages[-1].content),
        "llamaindex": llamaindex,
        "haystack": lambda: str(hs.run(query=question, documents=hs_docs)["prompt"][-1].text),
    }


def direct_call(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray,
                embedder: LookupEmbedder) -> Callable[[], str]:
    """docket's own `assemble` on the same pool, the chunks without vectors (as the integrations
    see them), for the prompt comparison."""
    from docket.assemble import assemble
    from docket.model import Candidate
    from docket.store.base import MemoryStore

    sims = mat[rows] @ q["qvec"]
    cands = [Candidate(chunks[i].model_copy(update={"vector": None}), round(float(s), 6), r)
             for r, (i, s) in enumerate(zip(rows, sims), 1)]
    store = MemoryStore([c.chunk for c in cands])
    return lambda: assemble(q["question"], cands, store=store, budget=BUDGET, floor=0.0, embedder=embedder).user


def peer_calls(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray) -> dict[str, Callable[[], Any]]:
    return {"langchain": speed.prepare_langchain(q, rows, chunks, mat),
            "llamaindex": speed.prepare_llamaindex(q, rows, chunks, mat),
            "haystack": speed.prepare_haystack(q, rows, chunks, mat)}


def timed(fn: Callable[[], Any], first_sight: bool) -> tuple[float, float, Any]:
    if first_sight:
        speed.forget_memos()
    c, t = time.thread_time(), time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, (time.thread_time() - c) * 1000, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", default="50,200")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.pools.split(",")]
    except ValueError:
        ap.error(f"--pools must be comma-separated integers like 50,200, got {args.pools!r}")
    if any(n < 10 for n in sizes) or args.questions < 1 or args.repeat < 1:
        ap.error("--pools needs at least 10 candidates each; --questions and --repeat at least 1")

    qs, chunks, mat = speed.load_pool_data(args.questions)
    from docket.eval.cache import eval_embedder

    by_text = {c.text: v for c, v in zip(chunks, mat)}
    by_text.update({q["question"]: np.asarray(q["qvec"], dtype=np.float32) for q in qs})
    embedder = LookupEmbedder(eval_embedder().name, by_text)
    frameworks = ("langchain", "llamaindex", "haystack")
    rows_out: list[tuple[int, str, float, float, float, float, int]] = []
    for n in sizes:
        print(f"pool {n}: timing", file=sys.stderr)
        wall: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        mismatches = dict.fromkeys(frameworks, 0)
        prepared = []
        for q in qs:
            rows = speed.pool_of(q, chunks, mat, n)
            prepared.append((integration_calls(q, rows, chunks, mat, embedder), peer_calls(q, rows, chunks, mat),
                             direct_call(q, rows, chunks, mat, embedder)))
        for ours, peers, direct in prepared:  # imports and first calls out of the way
            for f in (*ours.values(), *peers.values(), direct):
                f()
        for _ in range(args.repeat):
            for ours, peers, direct in prepared:
                _, _, want = timed(direct, True)
                for fw in frameworks:
                    w, c, got = timed(ours[fw], True)
                    wall.setdefault(f"{fw} docket", []).append(w)
                    cpu.setdefault(f"{fw} docket", []).append(c)
                    mismatches[fw] += got != want
                    w, c, _ = timed(peers[fw], False)
                    wall.setdefault(f"{fw} peer", []).append(w)
                    cpu.setdefault(f"{fw} peer", []).append(c)
        for fw in frameworks:
            ours_w, ours_c = statistics.median(wall[f"{fw} docket"]), statistics.median(cpu[f"{fw} docket"])
            peer_w, peer_c = statistics.median(wall[f"{fw} peer"]), statistics.median(cpu[f"{fw} peer"])
            rows_out.append((n, fw, ours_w, ours_c, peer_w, peer_c, mismatches[fw]))

    import os

    print(f"\nload average {os.getloadavg()[0]:.1f} (2 cores); budget {BUDGET}; {args.questions} questions x "
          f"{args.repeat} calls; docket's memos cleared before each integration call\n")
    print("| pool | framework | integration, first sight: median ms (cpu) | framework's own chain: median ms (cpu) "
          "| integration ÷ chain (cpu) | prompts differing from the direct call |")
    print("|---|---|---|---|---|---|")
    for n, fw, ow, oc, pw, pc, mm in rows_out:
        print(f"| {n} | {fw} | {ow:.2f} ({oc:.2f}) | {pw:.2f} ({pc:.2f}) | {ow / pw:.2f}x ({oc / max(pc, 1e-9):.2f}x) "
              f"| {mm} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
