"""Per-query overhead of docket's LangChain, LlamaIndex and Haystack integrations over calling
docket directly, on the same pools in the same run (no retrieval, no LLM: only the step between).

    .venv/bin/python benchmarks/integration_overhead.py [--questions 100] [--rounds 5] [--json out.json]

Pools: the spec's Nimbus example (8 chunks, a store with versions and neighbours) and the first
--questions HotpotQA dev250 pools (10 paragraphs each, ../shared/data), every candidate scored by
MiniLM cosine to its question. One store holds every chunk: a MemoryStore for the direct call,
the framework's own for the integrations (a list of LangChain Documents, LlamaIndex's
SimpleDocumentStore, Haystack's InMemoryDocumentStore), each measured with and without it.

Each integration gets the framework's objects built beforehand ((Document, score) pairs,
NodeWithScore, scored Haystack Documents), so the time is what the integration adds: mapping the
fields, scoring, the store look-ups, building the framework's output. The direct call gets the
same candidates with the same scores. Every call's prompt is compared with the direct call's
(byte-identical expected; the table counts mismatches). Time per (system, query) is the minimum
over --rounds interleaved rounds (the machine is shared; the minimum is the least noisy
estimate); overhead = integration - direct per query, reported as the median and p95 over queries.
A second, steadier figure splits each integration call itself: the time spent outside docket's
`assemble` (mapping, scoring, building the framework's output), measured in the same call. The
store adapters' look-ups run inside `assemble`, so only the first figure includes them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docket.assemble import assemble, rank_by_cosine
from docket.demo import REFUND_QUESTION, nimbus_chunks
from docket.embed import default_embedder
from docket.integrations.common import chat_messages
from docket.model import Candidate, Chunk, parse_chunk
from docket.policy import Policy
from docket.store.base import MemoryStore

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hotpotqa" / "dev250.jsonl"
BUDGET = 1000


def hotpot(n: int) -> list[tuple[str, list[Chunk]]]:
    rows = [json.loads(line) for line in DATA.open()][:n]
    return [(r["question_text"], [parse_chunk({"id": f"{r['question_id']}-{c['id']}", "doc": f"{r['question_id']}-{c['id']}",
                                               "title": c["title"], "text": c["paragraph_text"]}) for c in r["contexts"]])
            for r in rows]


def meta_of(c: Chunk) -> dict[str, Any]:
    return {k: v for k, v in c.to_record().items() if k not in ("id", "text")}


#: seconds spent inside docket.assemble by the integration call being timed
INNER = [0.0]


def instrument() -> None:
    """Time the integrations' calls to assemble (the benchmark's only patch)."""
    import docket.integrations.common as common

    inner = common.assemble

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            INNER[0] += time.perf_counter() - t

    common.assemble = timed  # type: ignore[assignment]


def systems(all_chunks: list[Chunk]) -> dict[str, Callable[[str, list[Candidate]], Callable[[], str]]]:
    """name -> (question, candidates) -> a zero-argument call returning the prompt's user message.
    Framework objects are built outside the returned call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from haystack import Document as HDocument
        from haystack.document_stores.in_memory import InMemoryDocumentStore
        from langchain_core.documents import Document as LDocument
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.core.storage.docstore import SimpleDocumentStore

        from docket.integrations.haystack import DocketAssembler
        from docket.integrations.langchain import DocketCompressor, DocketPrompt
        from docket.integrations.llamaindex import DocketPostprocessor

    store = MemoryStore(all_chunks)
    lc_docs = {c.id: LDocument(id=c.id, page_content=c.text, metadata=meta_of(c)) for c in all_chunks}
    li_nodes = {c.id: TextNode(id_=c.id, text=c.text, metadata=meta_of(c)) for c in all_chunks}
    li_store = SimpleDocumentStore()
    li_store.add_documents(list(li_nodes.values()))
    hs_docs = {c.id: HDocument(id=c.id, content=c.text, meta=meta_of(c)) for c in all_chunks}
    hs_store = InMemoryDocumentStore()
    hs_store.write_documents(list(hs_docs.values()))

    lc = {False: DocketPrompt(budget=BUDGET), True: DocketPrompt(budget=BUDGET, docstore=list(lc_docs.values()))}
    lcc = {False: DocketCompressor(budget=BUDGET), True: DocketCompressor(budget=BUDGET, docstore=list(lc_docs.values()))}
    li = {False: DocketPostprocessor(budget=BUDGET), True: DocketPostprocessor(budget=BUDGET, docstore=li_store)}
    hs = {False: DocketAssembler(budget=BUDGET), True: DocketAssembler(budget=BUDGET, document_store=hs_store)}

    def direct(q: str, cands: list[Candidate]) -> Callable[[], str]:
        return lambda: assemble(q, cands, store=store, budget=BUDGET).user

    def langchain(with_store: bool) -> Callable[[str, list[Candidate]], Callable[[], str]]:
        def make(q: str, cands: list[Candidate]) -> Callable[[], str]:
            pairs = [(lc_docs[c.chunk.id], c.score) for c in cands]
            return lambda: lc[with_store].invoke({"question": q, "documents": pairs}).messages[-1].content
        return make

    def compressor(with_store: bool) -> Callable[[str, list[Candidate]], Callable[[], str]]:
        def make(q: str, cands: list[Candidate]) -> Callable[[], str]:
            docs = [lc_docs[c.chunk.id].model_copy(update={"metadata": {**lc_docs[c.chunk.id].metadata, "score": c.score}})
                    for c in cands]
            return lambda: "\n".join(d.page_content for d in lcc[with_store].compress_documents(docs, q))
        return make

    def llamaindex(with_store: bool) -> Callable[[str, list[Candidate]], Callable[[], str]]:
        def make(q: str, cands: list[Candidate]) -> Callable[[], str]:
            nodes = [NodeWithScore(node=li_nodes[c.chunk.id], score=c.score) for c in cands]

            def call() -> str:
                out = li[with_store].postprocess_nodes(nodes, query_str=q)
                return out[0].node.metadata["docket_brief"]["messages"][-1]["content"] if out else ""
            return call
        return make

    def haystack(with_store: bool) -> Callable[[str, list[Candidate]], Callable[[], str]]:
        def make(q: str, cands: list[Candidate]) -> Callable[[], str]:
            docs = [HDocument(id=c.chunk.id, content=c.chunk.text, meta=meta_of(c.chunk), score=c.score) for c in cands]
            return lambda: hs[with_store].run(query=q, documents=docs)["prompt"][-1].text
        return make

    out: dict[str, Callable[[str, list[Candidate]], Callable[[], str]]] = {"docket (direct)": direct}
    for with_store in (False, True):
        tag = "with store" if with_store else "no store"
        out[f"LangChain DocketPrompt, {tag}"] = langchain(with_store)
        out[f"LangChain DocketCompressor, {tag}"] = compressor(with_store)
        out[f"LlamaIndex DocketPostprocessor, {tag}"] = llamaindex(with_store)
        out[f"Haystack DocketAssembler, {tag}"] = haystack(with_store)
    return out



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100, help="HotpotQA pools (besides Nimbus)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="write the per-system figures here")
    args = ap.parse_args()

    emb = default_embedder()
    pools = [(REFUND_QUESTION, nimbus_chunks())] + hotpot(args.questions)
    all_chunks = [c for _, chunks in pools for c in chunks]
    queries = [(q, rank_by_cosine(q, chunks, emb)) for q, chunks in pools]
    table = systems(all_chunks)
    calls = {name: [make(q, cands) for q, cands in queries] for name, make in table.items()}
    names = list(calls)
    direct = "docket (direct)"
    briefs = [assemble(q, cands, store=MemoryStore(all_chunks), budget=BUDGET) for q, cands in queries]  # warms caches
    mismatches = {name: 0 for name in names}
    for name in names:
        for i, f in enumerate(calls[name]):
            # with nothing found the direct brief has no messages, while the integrations that return
            # chat messages send the refusal prompt (by design: a chain's shape never changes)
            if "Compressor" in name:
                want = "\n".join(s["text"] for s in briefs[i].sources.values())
            elif "DocketPrompt" in name or "DocketAssembler" in name:
                want = chat_messages(briefs[i], Policy())[-1]["content"]
            else:
                want = briefs[i].user
            mismatches[name] += 0 if f() == want else 1
    instrument()
    best = {name: [float("inf")] * len(queries) for name in names}
    outside = {name: [float("inf")] * len(queries) for name in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for i in range(len(queries)):
            for name in order:
                INNER[0] = 0.0
                t = time.perf_counter()
                calls[name][i]()
                total = (time.perf_counter() - t) * 1000
                best[name][i] = min(best[name][i], total)
                outside[name][i] = min(outside[name][i], total - INNER[0] * 1000)

    base = best[direct]
    rows = []
    for name in names:
        over = sorted(b - d for b, d in zip(best[name], base))
        p95 = over[min(len(over) - 1, int(0.95 * len(over)))]
        rows.append({"system": name, "median_ms": statistics.median(best[name]),
                     "overhead_median_ms": statistics.median(over), "overhead_p95_ms": p95,
                     "overhead_pct": 100 * statistics.median(over) / statistics.median(base),
                     "outside_assemble_median_ms": statistics.median(outside[name]),
                     "outside_assemble_p95_ms": sorted(outside[name])[min(len(over) - 1, int(0.95 * len(over)))],
                     "prompt_mismatches": mismatches[name], "queries": len(queries)})
    print(f"{len(queries)} queries (Nimbus + {args.questions} HotpotQA pools), budget {BUDGET}, "
          f"min of {args.rounds} rounds per query\n")
    print("| system | median ms / query | overhead vs direct: median ms | p95 ms | % of direct | "
          "outside assemble: median ms | p95 ms | prompts ≠ direct |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        d = row["system"] == direct
        cells = ["—"] * 5 if d else [f"{row['overhead_median_ms']:+.2f}", f"{row['overhead_p95_ms']:+.2f}",
                                     f"{row['overhead_pct']:+.1f}%", f"{row['outside_assemble_median_ms']:.2f}",
                                     f"{row['outside_assemble_p95_ms']:.2f}"]
        print(f"| {row['system']} | {row['median_ms']:.2f} | {' | '.join(cells)} | {row['prompt_mismatches']} "
              f"of {row['queries']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
