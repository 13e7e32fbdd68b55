"""Assembly time per query beside the peers, in one run on the same pools: the cost docket adds
between the reranker and the model (no retrieval, no LLM).

    .venv/bin/python benchmarks/assemble_speed.py [--pools 50,200,1000] [--questions 20] [--repeat 5]
    .venv/bin/python benchmarks/assemble_speed.py --quick      # 4 questions x 3 calls (~1 min), a smoke run

Pools: real HotpotQA dev250 paragraphs (../shared/data), each distinct text once (2,4xx of them),
MiniLM vectors (all-MiniLM-L6-v2, cached under .docket-cache/) and o200k_base counts computed
before timing. A question's pool of N is its own 10 paragraphs plus the N - 10 paragraphs of the
other questions nearest to it by cosine, ranked by cosine (so a pool of 1,000 mixes paragraphs
from a few hundred questions, as a first-stage retriever over a shared corpus would return).

Systems, each timed from the same ranked candidates in the form its library takes them, built
before the clock starts (docket: Candidate objects; the peers: their Document/Node objects and
an embeddings adapter that hands back the precomputed vectors):

- docket: `assemble` with every default move (re-scoring, versions and conflicts, duplicates,
  expansion, packing to the budget, order, labels and fences, the brief with its trace), budget
  1000, floor 0. Per-chunk features are warm (each query run twice before timing: the normal state
  of a process that has seen its corpus, where a chunk's full re-scoring index is built on its
  second sight); "docket-cold" times the first query over unseen chunks.
  "docket-allpairs" and "docket-cold-allpairs" are the same with the reachable set switched off
  (docket.moves.reach: Moves 1-2 compare every pair, as before issue 21), the baseline in the same run.
- LangChain: EmbeddingsRedundantFilter(0.95) -> EmbeddingsFilter(k=10) -> LongContextReorder.
- LlamaIndex: SimilarityPostprocessor(0) -> LongContextReorder.
- Haystack: LostInTheMiddleRanker(word_count_threshold=750).
- numpy: the same vector work in one pass: query cosines, the pairwise matrix, sort, greedy
  packing by precomputed token counts, skipping any passage within 0.95 of one already kept.

Prints median and p95 milliseconds (wall clock) per pool size, docket ÷ numpy and LangChain ÷
docket (warm), docket-cold ÷ LangChain and ÷ numpy (first sight), and the peak Python memory
(tracemalloc, numpy included) of one call; writes benchmarks/out/assemble_speed.png (time against pool size, one line per system) and .json.
BLAS runs single-threaded (OPENBLAS_NUM_THREADS=1, the right setting for many small products
in a server; --blas-threads to change). Medians over many calls; on a shared machine the
figures move with the load (the script prints the load average before and after).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # before numpy is imported
    _bt = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--blas-threads=")), "1")
    for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_v, _bt)

import argparse
import gc
import json
import statistics
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "benchmarks" / "out"
BUDGET = 1000
DEDUP = 0.95
SYSTEMS = ("docket", "docket-cold", "docket-allpairs", "docket-cold-allpairs", "langchain", "llamaindex", "haystack",
           "numpy")


def load_pool_data(questions: int) -> tuple[list[dict[str, Any]], list[Any], np.ndarray]:
    """The questions, every distinct paragraph as a Chunk with its MiniLM vector, the matrix."""
    from docket.eval.cache import eval_embedder
    from docket.model import parse_chunk

    rows = [json.loads(line) for line in (DATA / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8")]
    first: dict[str, tuple[str, str]] = {}
    for r in rows:
        for c in r["contexts"]:
            first.setdefault(c["paragraph_text"], (f"{r['question_id']}-{c['id']}", c["title"]))
    texts = list(first)
    emb = eval_embedder()
    print(f"embedding {len(texts)} paragraphs and {questions} questions (cached after the first run)", file=sys.stderr)
    mat = emb.embed(texts)
    chunks = [parse_chunk({"id": cid, "doc": cid, "title": title, "text": t,
                           "vector": [float(x) for x in v]}) for t, (cid, title), v in zip(texts, first.values(), mat)]
    qs = []
    for r in rows[:questions]:
        own = {first[c["paragraph_text"]][0] for c in r["contexts"]}
        qs.append({"question": r["question_text"], "own": own, "qvec": emb.embed([r["question_text"]])[0]})
    return qs, chunks, np.asarray(mat, dtype=np.float32)


def pool_of(q: dict[str, Any], chunks: list[Any], mat: np.ndarray, size: int) -> list[int]:
    """Row indexes of the question's pool, best first: its own paragraphs, then the nearest."""
    sims = mat @ q["qvec"]
    ids = [c.id for c in chunks]
    order = sorted(range(len(chunks)), key=lambda i: (ids[i] not in q["own"], -float(sims[i]), ids[i]))[:size]
    return sorted(order, key=lambda i: (-float(sims[i]), ids[i]))


# --- one prepared query per system ---------------------------------------------------------------


def prepare_docket(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray, counter: Any,
                   embedder: Any) -> Callable[[], Any]:
    from docket.assemble import assemble
    from docket.model import Candidate
    from docket.store.base import MemoryStore

    sims = mat[rows] @ q["qvec"]
    cands = [Candidate(chunks[i], round(float(s), 6), r) for r, (i, s) in enumerate(zip(rows, sims), 1)]
    store = MemoryStore([chunks[i] for i in rows])
    question = q["question"]
    return lambda: assemble(question, cands, store=store, budget=BUDGET, floor=0.0, counter=counter, embedder=embedder)


class _Vectors:
    """text -> vector as a list of floats, built once: what the peers' embedding interfaces take."""

    def __init__(self, texts: list[str], vecs: np.ndarray, question: str, qvec: np.ndarray) -> None:
        self.by_text = {t: [float(x) for x in v] for t, v in zip(texts, vecs)}
        self.by_text[question] = [float(x) for x in qvec]

    def __call__(self, text: str) -> list[float]:
        return self.by_text[text]


def prepare_langchain(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray) -> Callable[[], Any]:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
        from langchain_classic.retrievers.document_compressors.embeddings_filter import EmbeddingsFilter
        from langchain_community.document_transformers import EmbeddingsRedundantFilter, LongContextReorder

    texts = [chunks[i].text for i in rows]
    table = _Vectors(texts, mat[rows], q["question"], q["qvec"])

    class Precomputed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [table(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return table(text)

    emb = Precomputed()
    pipeline = DocumentCompressorPipeline(transformers=[
        EmbeddingsRedundantFilter(embeddings=emb, similarity_threshold=DEDUP),
        EmbeddingsFilter(embeddings=emb, k=10, similarity_threshold=None),
        LongContextReorder(),
    ])
    docs = [Document(page_content=chunks[i].text, metadata={"id": chunks[i].id, "title": chunks[i].title}) for i in rows]
    question = q["question"]
    return lambda: pipeline.compress_documents(docs, question)


def prepare_llamaindex(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray) -> Callable[[], Any]:
    from llama_index.core.postprocessor import LongContextReorder, SimilarityPostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    sims = mat[rows] @ q["qvec"]
    nodes = [NodeWithScore(node=TextNode(text=chunks[i].text, id_=chunks[i].id, metadata={"title": chunks[i].title}),
                           score=float(s)) for i, s in zip(rows, sims)]
    bundle = QueryBundle(q["question"])
    sim, reorder = SimilarityPostprocessor(similarity_cutoff=0.0), LongContextReorder()
    return lambda: reorder.postprocess_nodes(sim.postprocess_nodes(nodes, query_bundle=bundle), query_bundle=bundle)


def prepare_haystack(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray) -> Callable[[], Any]:
    from haystack import Document
    from haystack.components.rankers import LostInTheMiddleRanker

    sims = mat[rows] @ q["qvec"]
    docs = [Document(content=chunks[i].text, id=chunks[i].id, score=float(s), meta={"title": chunks[i].title})
            for i, s in zip(rows, sims)]
    ranker = LostInTheMiddleRanker(word_count_threshold=int(BUDGET * 0.75))
    return lambda: ranker.run(documents=docs)


def prepare_numpy(q: dict[str, Any], rows: list[int], chunks: list[Any], mat: np.ndarray, counts: np.ndarray) -> Callable[[], Any]:
    vecs = np.ascontiguousarray(mat[rows])
    cost = counts[rows]
    qvec = q["qvec"]

    def run() -> list[int]:
        scores = vecs @ qvec
        pair = vecs @ vecs.T
        order = np.argsort(-scores, kind="stable")
        kept: list[int] = []
        used = 0
        for i in order.tolist():
            c = int(cost[i])
            if used + c > BUDGET or (kept and float(pair[i, kept].max()) >= DEDUP):
                continue
            kept.append(i)
            used += c
        return kept

    return run


def all_pairs(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn` with the reachable set switched off: Moves 1-2 compare every pair of the pool."""
    from docket.moves import reach

    def run() -> Any:
        real = reach.applies
        reach.applies = lambda *a: False  # type: ignore[assignment]
        try:
            return fn()
        finally:
            reach.applies = real  # type: ignore[assignment]

    return run


def forget_memos() -> None:
    """Everything docket remembers about chunks it has seen (features, similar pairs' verdicts,
    cleaned texts, title look-ups and title terms, the reachable set's word bounds), for the cold
    figure."""
    from docket import features
    from docket.brief import clean, render
    from docket.moves import versions

    features.default_cache().clear()
    pairs = getattr(versions, "_PAIR_MEMO", None)  # module-level before issue 19 §4 (an older tree)
    if pairs is None:
        from docket.caches import default_caches

        pairs = default_caches().pairs  # the process-wide caches of callers without a Session
    pairs.clear()
    memos = [versions._title_phrase, versions._names_title, versions._series, render.opens_with_title, clean.sanitize]
    if hasattr(features, "title_terms"):  # absent before issue 21 (so the script can time an older tree)
        memos.append(features.title_terms)
    for memo in memos:
        memo.cache_clear()
    from docket.moves import reach

    bounds = getattr(reach, "_BOUNDS", None)  # each text's word bound, in trees of issue 21 before session 35 (now with the features)
    if bounds is not None:
        bounds.clear()


# --- timing ------------------------------------------------------------------------------------


def peak_kib(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ratios(results: dict[str, dict[int, dict[str, Any]]], n: int) -> list[str]:
    """The ratios the issue's targets are stated in, wall clock (and CPU), for pool size n."""
    def ratio(a: str, b: str) -> str | None:
        ra, rb = results.get(a, {}).get(n), results.get(b, {}).get(n)
        if not ra or not rb:
            return None
        return (f"{a} / {b} = {ra['median_ms'] / rb['median_ms']:.2f}x "
                f"(cpu {ra['cpu_median_ms'] / max(rb['cpu_median_ms'], 1e-9):.2f}x)")

    pairs = [("docket", "numpy"), ("langchain", "docket"), ("docket-cold", "langchain"), ("docket-cold", "numpy"),
             ("docket-cold-allpairs", "docket-cold"), ("docket-allpairs", "docket")]
    return [r for r in (ratio(a, b) for a, b in pairs) if r]


def checked_sizes(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """The pool sizes of `--pools`, after `--questions` and `--repeat` are checked (a usage
    error from `ap` otherwise); this script's and cold_sight.py's options."""
    if args.questions < 1 or args.repeat < 1:
        ap.error("--questions and --repeat must be at least 1")
    try:
        sizes = [int(s) for s in args.pools.split(",")]
    except ValueError:
        ap.error(f"--pools must be comma-separated integers like 50,200,1000, got {args.pools!r}")
    if any(n < 10 for n in sizes):
        ap.error("--pools: every pool needs at least 10 candidates (a question's own paragraphs)")
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", default="50,200,1000")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per question, system and pool size")
    ap.add_argument("--blas-threads", default="1", help="BLAS threads (set before numpy loads; default 1)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a short run: 4 questions x 3 calls per pool size")
    args = ap.parse_args()
    if args.quick:
        args.questions, args.repeat = min(args.questions, 4), min(args.repeat, 3)
    sizes = checked_sizes(ap, args)
    systems = [s.strip() for s in args.systems.split(",")]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"--systems: unknown {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")

    from docket.eval.cache import eval_embedder
    from docket.tokens import O200kCounter, default_counter

    load0 = os.getloadavg()
    qs, chunks, mat = load_pool_data(args.questions)
    counter = default_counter()
    counts = np.asarray([counter.count(c.text) for c in chunks])
    embedder = eval_embedder()
    times: dict[str, dict[int, list[float]]] = {s: {n: [] for n in sizes} for s in systems}
    cpu: dict[str, dict[int, list[float]]] = {s: {n: [] for n in sizes} for s in systems}
    memory: dict[str, dict[int, float]] = {s: {} for s in systems}
    for n in sizes:
        print(f"pool {n}: preparing", file=sys.stderr)
        prepared: list[dict[str, Callable[[], Any]]] = []
        for q in qs:
            rows = pool_of(q, chunks, mat, n)
            fns: dict[str, Callable[[], Any]] = {}
            for s in systems:
                if s == "docket":
                    fns[s] = prepare_docket(q, rows, chunks, mat, counter, embedder)
                elif s == "docket-allpairs":
                    fns[s] = all_pairs(prepare_docket(q, rows, chunks, mat, counter, embedder))
                elif s == "langchain":
                    fns[s] = prepare_langchain(q, rows, chunks, mat)
                elif s == "llamaindex":
                    fns[s] = prepare_llamaindex(q, rows, chunks, mat)
                elif s == "haystack":
                    fns[s] = prepare_haystack(q, rows, chunks, mat)
                elif s == "numpy":
                    fns[s] = prepare_numpy(q, rows, chunks, mat, counts)
            prepared.append(fns)
        for _ in range(2):  # warm: imports, the feature cache, the counter's cache; twice, as a chunk's
            for fns in prepared:  # full re-scoring index is built when it is seen again (a first sight glances)
                for f in fns.values():
                    f()
        print(f"pool {n}: timing", file=sys.stderr)
        for _ in range(args.repeat):
            for fns in prepared:
                for s, f in fns.items():  # interleaved, so every system meets the same load
                    c = time.thread_time()
                    t = time.perf_counter()
                    f()
                    times[s][n].append((time.perf_counter() - t) * 1000)
                    cpu[s][n].append((time.thread_time() - c) * 1000)
        for s, f in prepared[0].items():  # warm peaks before the first-sight runs clear the caches
            memory[s][n] = peak_kib(f)
        for cold in ("docket-cold", "docket-cold-allpairs"):
            if cold not in systems:
                continue
            for k, q in enumerate(qs):  # first sight of the pool's chunks: features computed, counts not cached
                rows = pool_of(q, chunks, mat, n)
                fn = prepare_docket(q, rows, [c.model_copy() for c in chunks], mat, O200kCounter(), embedder)
                fn = all_pairs(fn) if cold == "docket-cold-allpairs" else fn
                forget_memos()
                if k == 0:  # the peak memory of one first-sight call (then it is timed on a fresh copy)
                    memory[cold][n] = peak_kib(fn)
                    fn = prepare_docket(q, rows, [c.model_copy() for c in chunks], mat, O200kCounter(), embedder)
                    fn = all_pairs(fn) if cold == "docket-cold-allpairs" else fn
                    forget_memos()
                c = time.thread_time()
                t = time.perf_counter()
                fn()
                times[cold][n].append((time.perf_counter() - t) * 1000)
                cpu[cold][n].append((time.thread_time() - c) * 1000)
    load1 = os.getloadavg()

    results = {s: {n: {"median_ms": statistics.median(v), "p95_ms": pct(v, 95), "calls": len(v),
                       "cpu_median_ms": statistics.median(cpu[s][n]), "peak_kib": memory[s].get(n)}
                   for n, v in times[s].items() if v} for s in systems}
    print(f"\nload average before {load0[0]:.1f}, after {load1[0]:.1f} (2 cores); BLAS threads "
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}; budget {BUDGET}; {args.questions} questions x {args.repeat} calls\n")
    head = "| system | " + " | ".join(f"{n}: median / p95 (cpu) ms" for n in sizes) + " | " + \
        " | ".join(f"peak KiB @{n}" for n in sizes) + " |"
    print(head)
    print("|" + "---|" * (1 + 2 * len(sizes)))
    for s in systems:
        r = results[s]
        cells = [f"{r[n]['median_ms']:.3f} / {r[n]['p95_ms']:.3f} ({r[n]['cpu_median_ms']:.3f})" if n in r else "-"
                 for n in sizes]
        mem = [f"{r[n]['peak_kib']:.0f}" if n in r and r[n]["peak_kib"] is not None else "-" for n in sizes]
        print(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(mem) + " |")
    print()
    for n in sizes:
        print("  ".join([f"pool {n}:", *ratios(results, n)]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "assemble_speed.json").write_text(json.dumps({"results": results, "load": [load0, load1],
                                                         "args": vars(args)}, indent=2), encoding="utf-8")
    if not args.no_plot and len(sizes) > 1:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for s in systems:
            xs = [n for n in sizes if n in results[s]]
            ax.plot(xs, [results[s][n]["median_ms"] for n in xs], marker="o", label=s)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("candidates in the pool")
        ax.set_ylabel("median ms per query (log)")
        ax.set_title(f"Assembly time per query, budget {BUDGET} (HotpotQA, MiniLM)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(OUT / "assemble_speed.png", dpi=120)
        print(f"\nwrote {OUT / 'assemble_speed.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
