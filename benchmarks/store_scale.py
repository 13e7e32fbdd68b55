"""Issue 22 at scale: `ask` on pre-built SQLite stores (10k to 1M chunks), each stage timed.

    python benchmarks/store_speed.py --sizes 1000000 --write-parquet /tmp/bench-1000000.parquet
    docket import /tmp/bench-1000000.parquet --db /tmp/bench-1000000.db --embedder minilm
    python benchmarks/store_speed.py --store /tmp/bench-10000.db,/tmp/bench-1000000.db --recall --plot out.png

Writing 1M chunks through `docket index` takes most of an hour on a small machine; `docket import`
of a Parquet file with vectors takes minutes. `store_speed.py --write-parquet` writes the bench
corpus (store_speed.corpus, four chunks a document) with `real_vectors` (MiniLM-derived, so the
recall against MiniLM questions means something); `--store` measures stores that already exist
(`prebuilt_run`): a new process's first `ask`, warm `retrieve` and `ask`, every stage of `ask`
(`stage_profile`: the searches, the fetch, the embedding and each move, through one Session,
first sight and repeat), the dense recall against exact, and each stage's growth per 10x chunks
(`print_stage_growth`, `plot_stages`). Called from store_speed.py's main (the CLI lives there).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from store_speed import (
    PER_DOC,
    QuestionEmbedder,
    ask,
    cold_in_new_process,
    corpus,
    dense_recall,
    measure,
    pct,
    question_vectors,
    real_vectors,
    search_parts,
)

from docket.api import Session
from docket.embed import Embedder, default_embedder
from docket.store.factory import open_store
from docket.store.protocol import Filters, Store


def write_parquet(path: Path, n: int) -> Path:
    """The bench corpus of `n` chunks (four a document, ids c0.., public) with `real_vectors(n)`
    (MiniLM vectors of real text) as a Parquet file for `docket import --embedder minilm`
    (`--write-parquet`): the way to a 1M-chunk store in minutes, whose recall against the MiniLM
    questions means something."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    items = corpus(n)
    vecs = real_vectors(n)
    schema = pa.schema([("id", pa.string()), ("doc", pa.string()), ("position", pa.int32()), ("title", pa.string()),
                        ("text", pa.string()), ("vector", pa.list_(pa.float32(), vecs.shape[1]))])
    with pq.ParquetWriter(path, schema) as out:
        for start in range(0, n, 100_000):
            stop = min(n, start + 100_000)
            flat = pa.array(vecs[start:stop].reshape(-1), type=pa.float32())
            out.write_table(pa.table({
                "id": [f"c{i}" for i in range(start, stop)], "doc": [f"d{i // PER_DOC}" for i in range(start, stop)],
                "position": pa.array([i % PER_DOC for i in range(start, stop)], type=pa.int32()),
                "title": [t for t, _ in items[start:stop]], "text": [t for _, t in items[start:stop]],
                "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1])}, schema=schema))
    return path


#: the stages of one `ask`, in order: what `stage_profile` times (the moves by
#: benchmarks/assemble_stages.py's wrappers)
ASK_STAGES = ("embed", "dense", "keyword", "fetch", "retrieve", "rescore", "versions (Move 1)", "  of which conflicts",
              "dedup (Move 2)", "expand (Move 3)", "pack (Move 4)", "order (Move 5)", "brief (Moves 7-8)", "assemble",
              "ask")


def stage_profile(store: Store, embedder: Embedder, qs: list[str], repeat: bool = True) -> dict[str, dict[str, float]]:
    """p50 ms of each stage of `ask` through one Session (as `docket serve` keeps one), per pass:
    "first" (each question once: its chunks mostly new to the process, their features read from
    the store's records or computed) and, with `repeat`, "repeat" (the same questions again:
    features in memory). Stages: the question's embedding, dense search, keyword (BM25) search,
    the fetch of the candidates, retrieve (all of these, with fusion), each move, assemble."""
    import importlib
    from collections import defaultdict

    import assemble_stages

    times: dict[str, list[float]] = defaultdict(list)
    originals = {(m, n): getattr(m, n) for m, n in
                 ((importlib.import_module(mod), name) for mod, name, _ in assemble_stages.STAGES)}
    assemble_stages.instrument(times)
    try:
        session = Session(store, embedder=embedder)
        for name, label in (("search_dense", "dense"), ("search_bm25", "keyword"), ("get_many", "fetch")):
            setattr(store, name, assemble_stages._timed(times, label, getattr(store, name)))
        embed = embedder.embed
        embedder.embed = assemble_stages._timed(times, "embed", embed)  # type: ignore[method-assign]
        session.ask(qs[0], budget=1000, floor=0.0)
        out: dict[str, dict[str, float]] = {}
        for label in ("first", "repeat") if repeat else ("first",):
            times.clear()
            for q in qs[1:]:
                t0 = time.perf_counter()
                r = session.ask(q, budget=1000, floor=0.0)
                times["ask"].append((time.perf_counter() - t0) * 1000)
                times["retrieve"].append(r.timings["retrieve"])
                times["assemble"].append(r.timings["assemble"])
            out[label] = {k: statistics.median(v) for k, v in times.items()}
            out[label]["ask_p90"] = pct(times["ask"], 90)
            out[label]["ask_p95"] = pct(times["ask"], 95)
        return out
    finally:
        for name in ("search_dense", "search_bm25", "get_many"):
            store.__dict__.pop(name, None)
        embedder.__dict__.pop("embed", None)
        for (module, name), fn in originals.items():  # the moves unwrapped
            setattr(module, name, fn)


def prebuilt_run(location: str, qs: list[str], recall_k: int | None) -> dict[str, object]:
    """One pre-built SQLite store (`--store`, e.g. from `docket import` of `--write-parquet`):
    cold first `ask` in a new process (index snapshot mapped, `FILE.ann` read), the first `ask` of
    this process, warm retrieve / ask p50 and p95, each stage's p50 (`stage_profile`: first sight
    and repeat), and with `recall_k` the dense search's recall@k against exact (store vectors from
    MiniLM only: the questions are MiniLM's)."""

    from docket.embed import MiniLMEmbedder

    store = open_store(location, read_only=True)
    meta, size = store.meta(), store.count()
    store.close()
    minilm = meta.get("embedder") == MiniLMEmbedder.name
    embedder: Embedder = default_embedder().inner if minilm else QuestionEmbedder(int(meta.get("dim", "384")))  # type: ignore[attr-defined]
    start_ms, cold_ms = cold_in_new_process(location, qs[2], "auto", "minilm" if minilm else "hash")
    load_cold = os.getloadavg()[0]
    t0 = time.perf_counter()
    store = open_store(location, read_only=True)
    half = len(qs) // 2  # two halves, so that both see chunks new to the process first
    ask(store, qs[half], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
    first_ms = (time.perf_counter() - t0) * 1000
    prof = stage_profile(store, embedder, qs[half:])
    lat = measure(store, embedder, qs[:half])
    parts = search_parts(store, embedder, qs[: min(30, half)])
    mode = getattr(store, "last_dense", "")  # how the timed searches ran (the recall below ends exact)
    rec: dict[str, float] = {}
    if recall_k and minilm:
        docs = tuple(f"d{i}" for i in range(0, size // PER_DOC, 10))
        rec = dense_recall(store, question_vectors(qs[: min(len(qs), 100)]), recall_k, docs)
    store.close()
    row: dict[str, object] = {"backend": "sqlite", "chunks": size, "store": location, "cold_ask_ms": cold_ms,
                              "cold_start_process_ms": start_ms, "cold_load_avg": load_cold, "first_ask_ms": first_ms,
                              "dense_mode": mode, **lat, **parts, **rec,
                              "assemble_p50_ms": lat["ask_p50_ms"] - lat["retrieve_p50_ms"],
                              "stages": prof, "load_avg": os.getloadavg()[0]}
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items() if k != "stages"}), flush=True)
    return row


#: the stages of the growth table (`stage_profile`'s names) and how they are shown
GROWTH_STAGES = (("embed", "embed"), ("dense", "dense"), ("keyword", "keyword (BM25)"), ("fetch", "fetch"),
                 ("retrieve", "retrieve (all of the above, fused)"), ("assemble", "assemble"), ("ask", "ask"))


def print_stage_growth(rows: list[dict[str, object]]) -> None:
    """p50 ms of each stage of `ask` per store size, first sight and repeat, and its growth per
    10x chunks (from the smallest to the largest size)."""
    rows = sorted((r for r in rows if r.get("stages")), key=lambda r: int(r["chunks"]))  # type: ignore[arg-type]
    if not rows:
        return
    for label in ("first", "repeat"):
        print()
        print(f"stages of a warm `ask`, p50 ms, {label} sight ({'chunks new to the process' if label == 'first' else 'same questions again'}):")
        print("| stage | " + " | ".join(f"{int(r['chunks']):,} chunks" for r in rows)  # type: ignore[call-overload]
              + " | growth per 10x chunks |")
        print("|---|" + "---|" * (len(rows) + 1))
        names = dict(GROWTH_STAGES)
        for key in ASK_STAGES:  # the moves too (assemble_stages.py's names), between retrieve and assemble
            name = names.get(key, key)
            vals = [float(r["stages"][label].get(key, float("nan"))) for r in rows]  # type: ignore[index]
            n0, n1 = int(rows[0]["chunks"]), int(rows[-1]["chunks"])  # type: ignore[call-overload]
            g = f"x{(vals[-1] / vals[0]) ** (1 / np.log10(n1 / n0)):.2f}" if n1 > n0 and vals[0] > 0 else "-"
            print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in vals) + f" | {g} |")


def plot_stages(rows: list[dict[str, object]], path: Path) -> None:
    """Each stage's first-sight p50 against chunks (log-log), one line a stage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted((r for r in rows if r.get("stages")), key=lambda r: int(r["chunks"]))  # type: ignore[arg-type]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    xs = [int(r["chunks"]) for r in rows]  # type: ignore[call-overload]
    for key, name in GROWTH_STAGES:
        ax.plot(xs, [float(r["stages"]["first"][key]) for r in rows], marker="o", label=name)  # type: ignore[index]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the store")
    ax.set_ylabel("warm p50 ms (first sight)")
    ax.set_title("docket ask on SQLite: each stage against store size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
