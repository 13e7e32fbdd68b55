"""Store speed: `ask` latency at scale (retrieve + assemble, no LLM), cold start, and indexing
throughput, on SQLite and PostgreSQL + pgvector HNSW.

    .venv/bin/python benchmarks/store_speed.py --sizes 10000,100000            # both backends
    .venv/bin/python benchmarks/store_speed.py --sizes 1000000 --backends sqlite --queries 50
    .venv/bin/python benchmarks/store_speed.py --index-only                    # indexing vs the embedder

Chunks are paragraphs from ../shared/data (hotpotqa, musique, squad-v2), repeated with their
sentences rotated when more are needed; four consecutive chunks form one document. Store vectors
come from the hash embedder at dim 384 (MiniLM would take hours at 1M; the cost of a search does
not depend on where the vectors came from) and are cached under benchmarks/out/; every question
is embedded by MiniLM inside the timed call, as `docket ask` does. Per size and backend:

- cold: a fresh process-like open of the store and its first `ask` (SQLite loads its vector matrix
  and postings; PostgreSQL warms its buffers), reported apart from the warm figures; for SQLite
  also the first `ask` of the next open, which maps the index snapshot the full load wrote (at
  20,000 chunks or more; docs/store.md);
- warm: p50 / p95 of `retrieve` and of `ask` (retrieve + full assembly at budget 1000, floor 0)
  over the HotpotQA dev questions, and of the question embedding alone;
- write: chunks/s of the store writing versions whose vectors are given.

`--distinct` measures `ask` where the pools are not clusters of rotated copies: a store of the
2,439 distinct HotpotQA dev250 paragraphs (one document each) with their MiniLM vectors, every
question asked twice: the first time most of its chunks are new to the process (their stored
features read and decoded, rendered for the first time), the second time they are warm. The
bench corpus above repeats each of its 4,413 paragraphs ~23 times at 100k, so its pools are
Move 1 and 2's worst case (many near-copies in different documents).

`--store A.db,B.db` measures stores built beforehand (issue 22: a 1M store from `docket import`
of a `--write-parquet` file in minutes), each stage of `ask` and its growth per 10x chunks:
benchmarks/store_scale.py.

`--index-only` times `docket index`'s pipeline with MiniLM on real paragraphs against MiniLM
embedding the same texts alone (the gap is everything that is not the model). `--plot PNG`
draws latency against corpus size. The last table prints each cost's growth per 10x chunks.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA, OUT, cached_embed, paragraphs, variant  # noqa: E402

from docket.api import Session  # noqa: E402
from docket.embed import Embedder, HashEmbedder, default_embedder  # noqa: E402
from docket.ingest import IndexOptions, index_versions  # noqa: E402
from docket.model import Chunk  # noqa: E402
from docket.retrieve import retrieve  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.store.protocol import DocumentVersion, Filters, Store  # noqa: E402
from docket.tokens import default_counter  # noqa: E402


def ask(store: Store, question: str, *, filters: Filters, embedder: Embedder, **options: object) -> object:
    """One `docket ask` as the library runs it: retrieve, then assemble (Session.ask)."""
    return Session(store, embedder=embedder).ask(question, filters=filters, **options)  # type: ignore[arg-type]


PER_DOC = 4


def corpus(n: int) -> list[tuple[str, str]]:
    base = paragraphs()
    return [(base[i % len(base)][0], variant(base[i % len(base)][1], i // len(base))) for i in range(n)]


def real_texts() -> tuple[list[str], list[str]]:
    """The distinct paragraphs (as `paragraphs()` gives them, in order) and their distinct
    sentences of five words or more (split as `variant` splits them)."""
    paras = [t for _, t in paragraphs()]
    sents = list(dict.fromkeys(s for t in paras for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 5))
    return paras, sents


def real_vectors(n: int, mix: str = "own") -> np.ndarray:
    """n unit vectors made from MiniLM vectors of real text, for `--vectors minilm`.

    Row i stands for chunk i of `corpus(n)`, a rotation of paragraph p = i mod P (P = 4,413).
    `mix` "own" (the default): a random convex combination (Dirichlet(1) weights, fixed seed) of
    p's MiniLM vector and the MiniLM vectors of p's own sentences, normalised: a text about p's
    topic, as a rotation or re-cut of p is, and no two rows alike. "other": p's vector plus the
    vector of one sentence of another paragraph (two unrelated topics in one chunk: a harder,
    less realistic spread). The 4,413 paragraphs and 16,929 sentences are embedded once and
    cached in benchmarks/out/."""
    from docket.embed import MiniLMEmbedder

    paras, sents = real_texts()
    model = MiniLMEmbedder()
    vp = cached_embed(model, paras, "paragraphs")
    vs = cached_embed(model, sents, "sentences")
    rng = np.random.default_rng(22)
    out = np.empty((n, vp.shape[1]), dtype=np.float32)
    if mix == "other":
        pick = rng.integers(0, len(sents), size=n)
        for start in range(0, n, 100_000):
            stop = min(n, start + 100_000)
            rows = vp[np.arange(start, stop) % len(paras)] + vs[pick[start:stop]]
            out[start:stop] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out
    at = {t: i for i, t in enumerate(sents)}
    own = [[at[x] for x in dict.fromkeys(re.split(r"(?<=[.!?])\s+", t)) if x in at] for t in paras]
    for p, members in enumerate(own):
        rows_p = np.arange(p, n, len(paras))
        if rows_p.size == 0:
            continue
        basis = np.vstack([vp[p : p + 1], vs[members]]) if members else vp[p : p + 1]
        w = rng.dirichlet(np.ones(basis.shape[0]), size=rows_p.size).astype(np.float32)
        mixed = w @ basis
        out[rows_p] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def versions(items: list[tuple[str, str]], vecs: np.ndarray, tokens: list[int]) -> list[DocumentVersion]:
    out = []
    for start in range(0, len(items), PER_DOC):
        doc = f"d{start // PER_DOC}"
        part = items[start : start + PER_DOC]
        chunks = [Chunk.model_construct(id=f"c{start + j}", doc=doc, text=t, version=1, status="current", date=None,
                                        effective_to=None, title=title, section="", position=j, source_type=None,
                                        trust=None, acl=None, metadata={}, vector=None)
                  for j, (title, t) in enumerate(part)]
        out.append(DocumentVersion(doc=doc, version=1, status="current", date=None, effective_to=None,
                                   title=part[0][0], source="bench", chunks=chunks,
                                   vectors=vecs[start : start + len(part)], tokens=tokens[start : start + len(part)]))
    return out


def questions(n: int = 100) -> list[str]:
    out = []
    with (DATA / "hotpotqa" / "dev250.jsonl").open() as fh:
        for line in fh:
            out.append(json.loads(line)["question_text"])
    return out[:n]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class QuestionEmbedder:
    """MiniLM for the question, named like the store's hash vectors (dim 384) so the store accepts
    it: the timed `ask` pays the real question embedding; chunk vectors come from the store."""

    def __init__(self, dim: int) -> None:
        self.inner = default_embedder().inner  # type: ignore[attr-defined]  # uncached: every call pays
        self.name = HashEmbedder.name
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.inner.embed(texts), dtype=np.float32)


def measure(store: Store, embedder: Embedder, qs: list[str]) -> dict[str, float]:
    r_ms, a_ms = [], []
    for q in qs:
        t0 = time.perf_counter()
        retrieve(store, q, k=50, filters=Filters(), embedder=embedder)
        t1 = time.perf_counter()
        ask(store, q, filters=Filters(), embedder=embedder, budget=1000, floor=0.0)  # floor 0: full assembly
        t2 = time.perf_counter()
        r_ms.append((t1 - t0) * 1000)
        a_ms.append((t2 - t1) * 1000)
    return {"retrieve_p50_ms": statistics.median(r_ms), "retrieve_p95_ms": pct(r_ms, 95),
            "ask_p50_ms": statistics.median(a_ms), "ask_p90_ms": pct(a_ms, 90), "ask_p95_ms": pct(a_ms, 95)}


def search_parts(store: Store, embedder: Embedder, qs: list[str]) -> dict[str, float]:
    """p50 of the pieces of retrieve: the question's embedding, dense search, BM25, and the fetch of 50 chunks."""
    d_ms, b_ms, f_ms, e_ms = [], [], [], []
    for q in qs:
        t0 = time.perf_counter()
        qv = embedder.embed([q])[0]
        e_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        hits = store.search_dense(qv, 100, Filters())
        t1 = time.perf_counter()
        store.search_bm25(q, 100, Filters())
        t2 = time.perf_counter()
        store.get_many([c for c, _ in hits[:50]])
        t3 = time.perf_counter()
        d_ms.append((t1 - t0) * 1000)
        b_ms.append((t2 - t1) * 1000)
        f_ms.append((t3 - t2) * 1000)
    return {"embed_p50_ms": statistics.median(e_ms), "dense_p50_ms": statistics.median(d_ms),
            "bm25_p50_ms": statistics.median(b_ms), "fetch_p50_ms": statistics.median(f_ms)}


def dense_recall(store: Store, qvecs: np.ndarray, k: int, docs: tuple[str, ...]) -> dict[str, float]:
    """recall@k of the store's dense search (approximate above its threshold) against
    `Filters(exact=True)`, unfiltered and restricted to `docs` (a filter through the bitmap).
    Both return exact scores (the store re-scores the index's candidates)."""
    out: dict[str, list[float]] = {"recall": [], "filtered_recall": []}
    for qv in qvecs:
        for key, f in (("recall", Filters()), ("filtered_recall", Filters(docs=docs))):
            got = store.search_dense(qv, k, f)
            want = store.search_dense(qv, k, Filters(**{**f.__dict__, "exact": True}))
            # tie-aware, as the sweep's: a row scoring at least the exact k-th counts (rows with equal
            # vectors tie exactly; exact search keeps the lowest rowids of them, the index any)
            kth = want[-1][1] if want else 0.0
            out[key].append(min(len(want), sum(1 for _, x in got if x >= kth - 1e-9)) / max(1, len(want)))
    return {"recall": float(np.mean(out["recall"])), "recall_min": float(np.min(out["recall"])),
            "filtered_recall": float(np.mean(out["filtered_recall"]))}


_COLD = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import store_speed as b
from store_speed import ask
from docket.store.factory import open_store
from docket.store.protocol import Filters
emb = b.QuestionEmbedder(384) if sys.argv[4] == "hash" else b.default_embedder().inner
emb.embed(["warm the model"])
import tempfile
from docket.api import Session
with tempfile.TemporaryDirectory() as d:  # the code of a first ask imported and warmed on a tiny store
    s = Session.open(d + "/w.db", create=True, new_store_embedder="hash")
    s.index(records=[{"id": "w", "doc": "w", "text": "warm up the code path"}])
    s.ask("warm up")
    s.close()
t1 = time.perf_counter()
store = open_store(sys.argv[2], read_only=True)
ask(store, sys.argv[3], filters=Filters(), embedder=emb, budget=1000, floor=0.0)
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1000:.0f} {(t2 - t1) * 1000:.0f}")
"""


def cold_in_new_process(location: str, question: str, dense: str, embedder: str = "hash") -> tuple[float, float]:
    """(imports, model load and a first ask on a tiny store; then open + first ask of this store)
    ms in a new Python process: the second figure is what the store's size costs a new process."""
    import os
    import subprocess

    env = {**os.environ, "DOCKET_DENSE_SEARCH": dense}
    out = subprocess.run([sys.executable, "-c", _COLD, str(Path(__file__).resolve().parent), location, question, embedder],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def sqlite_runs(location: str, size: int, write_s: float, embedder: Embedder, qs: list[str],
                qvecs: np.ndarray | None, k: int) -> list[dict[str, object]]:
    """The SQLite store measured twice on one file: dense search as configured (approximate from
    the threshold up) and exact (the baseline, same run). The first ask after indexing loads
    every row, writes the index snapshot and builds the IVF index; the cold ask is a new process
    mapping the snapshot and reading `FILE.ann`."""
    from docket.store.sqlite_ann import AnnSettings

    rows: list[dict[str, object]] = []
    for label, dense in (("sqlite", "auto"), ("sqlite-exact", "exact")):
        t0 = time.perf_counter()
        store = open_store(location)
        store.ann = AnnSettings.from_env() if dense == "auto" else AnnSettings(mode="exact")  # type: ignore[attr-defined]
        ask(store, qs[0], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
        first_ms = (time.perf_counter() - t0) * 1000
        store.close()
        start_ms, cold_ms = cold_in_new_process(location, qs[2], dense)
        store = open_store(location)
        store.ann = AnnSettings.from_env() if dense == "auto" else AnnSettings(mode="exact")  # type: ignore[attr-defined]
        ask(store, qs[1], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
        lat = measure(store, embedder, qs)
        parts = search_parts(store, embedder, qs[: min(30, len(qs))])
        mode = getattr(store, "last_dense", "")
        rec: dict[str, float] = {}
        if qvecs is not None and dense == "auto":
            docs = tuple(f"d{i}" for i in range(0, size // PER_DOC, 10))  # every 10th document: 10 %
            rec = dense_recall(store, qvecs, k, docs)
        store.close()
        rows.append({"backend": label, "chunks": size, "write_chunks_per_s": size / write_s, "write_s": write_s,
                     "first_ask_after_index_ms": first_ms, "cold_ask_ms": cold_ms, "cold_start_process_ms": start_ms,
                     "dense_mode": mode, **lat, **parts, **rec,
                     "assemble_p50_ms": lat["ask_p50_ms"] - lat["retrieve_p50_ms"]})
        print(json.dumps({k_: round(v, 3) if isinstance(v, float) else v for k_, v in rows[-1].items()}), flush=True)
    return rows


def _pg_location(pg_uri: str, schema: str) -> str:
    """A new schema on the benchmark's server, as a store URL."""
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{pg_uri}{'&' if '?' in pg_uri else '?'}options=-csearch_path%3D{schema}%2Cpublic"


def run(backend: str, size: int, embedder: Embedder, vecs: np.ndarray, items: list[tuple[str, str]],
        tokens: list[int], qs: list[str], workdir: Path, pg_uri: str | None, qvecs: np.ndarray | None = None,
        k: int = 100) -> list[dict[str, object]]:
    location = str(workdir / f"bench-{size}.db") if backend == "sqlite" else _pg_location(pg_uri or "", f"bench_{size}")
    store = open_store(location)
    dvs = versions(items, vecs, tokens)
    t0 = time.perf_counter()
    report = index_versions(store, dvs, IndexOptions(embedder=HashEmbedder(embedder.dim)))
    write_s = time.perf_counter() - t0
    assert report.chunks_written == size, report.problems[:3]
    store.close()
    if backend == "sqlite":
        return sqlite_runs(location, size, write_s, embedder, qs, qvecs, k)
    t0 = time.perf_counter()
    store = open_store(location)  # cold: a new connection, nothing loaded
    ask(store, qs[0], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
    cold_ms = (time.perf_counter() - t0) * 1000
    snapshot_ms = None
    if backend == "sqlite":  # the load above wrote the index snapshot (docs/store.md): what a later process pays
        store.close()
        t0 = time.perf_counter()
        store = open_store(location)
        ask(store, qs[2], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
        snapshot_ms = (time.perf_counter() - t0) * 1000
    ask(store, qs[1], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
    lat = measure(store, embedder, qs)
    parts = search_parts(store, embedder, qs[: min(30, len(qs))])
    store.close()
    return [{"backend": backend, "chunks": size, "write_chunks_per_s": size / write_s, "write_s": write_s,
             "cold_ask_ms": cold_ms, "cold_snapshot_ask_ms": snapshot_ms, **lat, **parts,
             "assemble_p50_ms": lat["ask_p50_ms"] - lat["retrieve_p50_ms"]}]


def index_throughput(n: int, pg_uri: str | None, backends: list[str], workdir: Path) -> list[dict[str, object]]:
    """`docket index`'s pipeline with MiniLM against MiniLM alone, on the same real paragraphs."""
    from docket.embed import MiniLMEmbedder

    texts = [t for _, t in corpus(n)]
    model = MiniLMEmbedder()
    model.embed(texts[:16])
    t0 = time.perf_counter()
    model.embed(texts)
    alone = n / (time.perf_counter() - t0)
    rows: list[dict[str, object]] = [{"what": "MiniLM alone", "chunks_per_s": alone}]
    for backend in backends:
        location = str(workdir / "index.db") if backend == "sqlite" else _pg_location(pg_uri or "", f"index_{n}")
        store = open_store(location)
        items = corpus(n)
        dvs = versions(items, np.zeros((n, model.dim), np.float32), [0] * n)
        for dv in dvs:
            dv.vectors, dv.tokens = None, None
            dv.chunks = [c.model_copy(update={"id": f"i{c.id}"}) for c in dv.chunks]
        t0 = time.perf_counter()
        report = index_versions(store, dvs, IndexOptions(embedder=model))
        rate = report.chunks_written / (time.perf_counter() - t0)
        store.close()
        rows.append({"what": f"docket index pipeline, {backend}", "chunks_per_s": rate, "share_of_model": rate / alone})
    return rows


class _QuestionMiniLM:
    """MiniLM under its own name (the store's vectors are MiniLM's too), uncached: every call pays."""

    def __init__(self) -> None:
        self.inner = default_embedder().inner  # type: ignore[attr-defined]
        self.name, self.dim = self.inner.name, self.inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.inner.embed(texts), dtype=np.float32)


def distinct_run(backends: list[str], n_questions: int, workdir: Path, pg_uri: str | None) -> list[dict[str, object]]:
    """`ask` on a store of distinct paragraphs with MiniLM vectors: first sight against repeat."""
    import assemble_speed

    qs, chunks, mat = assemble_speed.load_pool_data(n_questions + 3)
    questions_ = [q["question"] for q in qs]
    embedder = _QuestionMiniLM()
    rows: list[dict[str, object]] = []
    for backend in backends:
        location = str(workdir / "distinct.db") if backend == "sqlite" else _pg_location(pg_uri or "", "distinct_paragraphs")
        store = open_store(location)
        dvs = [DocumentVersion(doc=c.id, version=1, status="current", date=None, effective_to=None, title=c.title,
                               source="bench", chunks=[c.model_copy(update={"vector": None, "doc": c.id})],
                               vectors=mat[i : i + 1], tokens=None) for i, c in enumerate(chunks)]
        index_versions(store, dvs, IndexOptions(embedder=embedder))
        store.close()
        store = open_store(location)
        for q in questions_[:3]:  # the models, the matrix, the connection warm
            ask(store, q, filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
        timed = questions_[3:]
        seen = {"first": [], "repeat": [], "retrieve": []}  # type: dict[str, list[float]]
        for label in ("first", "repeat"):
            for q in timed:
                t0 = time.perf_counter()
                ask(store, q, filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
                seen[label].append((time.perf_counter() - t0) * 1000)
        for q in timed:
            t0 = time.perf_counter()
            retrieve(store, q, k=50, filters=Filters(), embedder=embedder)
            seen["retrieve"].append((time.perf_counter() - t0) * 1000)
        store.close()
        rows.append({"backend": backend, "chunks": len(chunks), "questions": len(timed),
                     **{f"{k}_p50_ms": statistics.median(v) for k, v in seen.items()},
                     **{f"{k}_p95_ms": pct(v, 95) for k, v in seen.items()}})
    return rows


def question_vectors(qs: list[str]) -> np.ndarray:
    """MiniLM vectors of the benchmark questions (cached like the store's)."""
    from docket.embed import MiniLMEmbedder

    return cached_embed(MiniLMEmbedder(), qs, "questions")


def _kth_scores(mat: np.ndarray, qv: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    """The exact k-th best score among `mat`'s rows (among `rows`) for each question vector."""
    sub = mat if rows is None else mat[rows]
    out = []
    for start in range(0, qv.shape[0], 16):
        scores = sub @ qv[start : start + 16].T
        out += [float(np.partition(scores[:, j], -k)[-k]) for j in range(scores.shape[1])]
    return np.asarray(out)


def _recall(mat: np.ndarray, q: np.ndarray, got: np.ndarray, kth: float, k: int) -> float:
    """Share of the exact top k found: rows of `got` scoring at least the exact k-th (tie-aware:
    equal scores at the boundary count whichever of them is returned)."""
    return float((mat[got[:k]] @ q >= kth - 1e-6).sum()) / k


def _flat_ivf(dim: int, nlist: int) -> object:
    """The float32 `IndexIVFFlat` the store used until its index moved to 8-bit codes (compared by
    `--index-kinds flat`)."""
    import faiss

    return faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)


def _reranked(mat: np.ndarray, q: np.ndarray, got: np.ndarray, k: int) -> np.ndarray:
    """The k best of the index's candidates `got` by their exact scores, as sqlite_dense ranks them."""
    return got[np.argsort(-(mat[got] @ q), kind="stable")[:k]]


def ann_sweep(size: int, qs: list[str], k: int, nlist_factors: list[float], nprobes: list[int],
              share: float = 0.1, mix: str = "own", kinds: tuple[str, ...] = ("sq8",)) -> list[dict[str, object]]:
    """recall@k of the IVF index against exact search, and its search time, per index kind (sq8:
    the store's 8-bit codes; flat: float32 vectors, before), nlist and nprobe, unfiltered and under
    a filter passing `share` of the rows (the IDSelectorBitmap path, probes scaled as sqlite_dense
    scales them), on `real_vectors(size)` and the MiniLM questions. Each search asks for the store's
    short list (2k) and re-ranks it by exact scores (inside the timed part), as the store does."""
    from docket.store.sqlite_ann import AnnIndex, bitmap_of, new_ivf, probes
    from docket.store.sqlite_dense import _shortlist

    mat = real_vectors(size, mix)
    qv = question_vectors(qs)
    rowids = np.arange(size, dtype=np.int64)
    kth = _kth_scores(mat, qv, k)
    kth10 = _kth_scores(mat, qv, 10)
    passing = np.sort(np.random.default_rng(7).choice(size, size=int(size * share), replace=False))
    kth_f = _kth_scores(mat, qv, k, passing)
    bitmap = bitmap_of(passing)
    mat @ qv[0]
    rows: list[dict[str, object]] = []
    for kind in kinds:
        for factor in nlist_factors:
            nlist = int(factor * np.sqrt(size))
            t0 = time.perf_counter()
            ann = AnnIndex.build(mat, rowids, 0, nlist, make=_flat_ivf if kind == "flat" else new_ivf)
            build_s = time.perf_counter() - t0
            for nprobe in nprobes:
                rec, rec10, rec_f, ms, ms_f = [], [], [], [], []
                for i in range(qv.shape[0]):
                    t0 = time.perf_counter()
                    got = _reranked(mat, qv[i], ann.search(qv[i], _shortlist(k), nprobe, None), k)
                    ms.append((time.perf_counter() - t0) * 1000)
                    rec.append(_recall(mat, qv[i], got, kth[i], k))
                    rec10.append(_recall(mat, qv[i], got, kth10[i], 10))
                    t0 = time.perf_counter()
                    got_f = _reranked(mat, qv[i], ann.search(qv[i], _shortlist(k), probes(nprobe, share), bitmap), k)
                    ms_f.append((time.perf_counter() - t0) * 1000)
                    rec_f.append(_recall(mat, qv[i], got_f, kth_f[i], k))
                rows.append({"chunks": size, "kind": kind, "nlist": nlist, "build_s": build_s, "nprobe": nprobe,
                             "recall": float(np.mean(rec)), "recall_min": float(np.min(rec)),
                             "recall10": float(np.mean(rec10)), "search_p50_ms": statistics.median(ms),
                             "filtered_recall": float(np.mean(rec_f)), "filtered_p50_ms": statistics.median(ms_f)})
                print(json.dumps({k_: round(v, 4) if isinstance(v, float) else v for k_, v in rows[-1].items()}),
                      flush=True)
            del ann
    t0 = time.perf_counter()
    for i in range(qv.shape[0]):
        np.argpartition(-(mat @ qv[i]), k)[:k]
    exact_ms = (time.perf_counter() - t0) * 1000 / qv.shape[0]
    print(f"exact numpy scan of {size:,} rows: {exact_ms:.2f} ms a question (mean)", flush=True)
    for r in rows:
        r["exact_ms"] = exact_ms
    return rows


def print_tables(rows: list[dict[str, object]], k: int) -> None:
    """The per-size table, recall where measured, and each stage's growth per 10x chunks."""
    def ms(r: dict[str, object], key: str, fmt: str = ".1f") -> str:
        v = r.get(key)
        return "-" if v is None else format(float(v), fmt)  # type: ignore[arg-type]

    print()
    print("| backend | chunks | dense | write chunks/s | first ask after indexing ms | cold first ask ms (new process) "
          "| retrieve p50 / p95 ms | ask p50 / p95 ms | embed / dense / BM25 / fetch / assemble p50 ms "
          f"| dense recall@{k} (min) / 10 %-filter |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rec = "-" if r.get("recall") is None else f"{ms(r, 'recall', '.4f')} ({ms(r, 'recall_min', '.2f')}) / " \
            f"{ms(r, 'filtered_recall', '.4f')}"
        print(f"| {r['backend']} | {r['chunks']:,} | {r.get('dense_mode', '-')} | {ms(r, 'write_chunks_per_s', ',.0f')} "
              f"| {ms(r, 'first_ask_after_index_ms', ',.0f')} | {ms(r, 'cold_ask_ms', ',.0f')} "
              f"| {ms(r, 'retrieve_p50_ms')} / {ms(r, 'retrieve_p95_ms')} | {ms(r, 'ask_p50_ms')} / {ms(r, 'ask_p95_ms')} "
              f"| {ms(r, 'embed_p50_ms')} / {ms(r, 'dense_p50_ms')} / {ms(r, 'bm25_p50_ms')} / {ms(r, 'fetch_p50_ms')} / "
              f"{ms(r, 'assemble_p50_ms')} | {rec} |")
    labels = list(dict.fromkeys(str(r["backend"]) for r in rows))
    if len({r["chunks"] for r in rows}) > 1:
        print()
        print("| backend | growth per 10x chunks: ask p50 | embed | dense | BM25 | fetch | assemble | cold start |")
        print("|---|---|---|---|---|---|---|---|")
        for b in labels:
            print(f"| {b} | " + " | ".join(growth(rows, key, b) for key in (
                "ask_p50_ms", "embed_p50_ms", "dense_p50_ms", "bm25_p50_ms", "fetch_p50_ms", "assemble_p50_ms",
                "cold_ask_ms")) + " |")


def growth(rows: list[dict[str, object]], key: str, backend: str) -> str:
    """How a cost grows per 10x chunks, from the smallest to the largest size measured."""
    pts = sorted((int(r["chunks"]), float(r[key])) for r in rows  # type: ignore[arg-type]
                 if r["backend"] == backend and r.get(key) is not None)
    if len(pts) < 2 or pts[0][1] <= 0:
        return "-"
    (n0, v0), (n1, v1) = pts[0], pts[-1]
    per10 = (v1 / v0) ** (1 / np.log10(n1 / n0))
    return f"x{per10:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--index-only", action="store_true", help="only indexing throughput against the embedder")
    ap.add_argument("--distinct", action="store_true",
                    help="only ask on a store of distinct HotpotQA paragraphs with MiniLM vectors, first sight vs repeat")
    ap.add_argument("--index-chunks", type=int, default=384)
    ap.add_argument("--vectors", default="hash", choices=["hash", "minilm"],
                    help="store vectors: hash (as before) or MiniLM of real text (real_vectors; needed for recall)")
    ap.add_argument("--sweep", action="store_true",
                    help="only the IVF recall@k / speed sweep over nlist and nprobe on real_vectors (no store)")
    ap.add_argument("--nprobes", default="4,8,16,24,32,48,64")
    ap.add_argument("--mix", default="own", choices=["own", "other"], help="how real_vectors mixes (its docstring)")
    ap.add_argument("--nlist-factors", default="2", help="nlist = factor x sqrt(chunks), comma-separated")
    ap.add_argument("--index-kinds", default="sq8",
                    help="with --sweep: sq8 (the store's 8-bit codes) and/or flat (float32 IndexIVFFlat, before)")
    ap.add_argument("--k", type=int, default=100, help="recall@k: k = the dense depth `ask` searches (100)")
    ap.add_argument("--plot", type=Path, default=None, help="PNG of warm ask and dense-search p50 against chunks")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    ap.add_argument("--store", default=None,
                    help="only measure these pre-built SQLite stores (comma-separated paths, e.g. from `docket import` "
                         "of --write-parquet files): cold, warm, each stage's p50 and its growth per 10x chunks")
    ap.add_argument("--recall", action="store_true", help="with --store: dense recall@k against exact (MiniLM stores)")
    ap.add_argument("--write-parquet", type=Path, default=None,
                    help="only write the bench corpus of --sizes' first size with MiniLM-derived vectors "
                         "(real_vectors) as Parquet for `docket import --embedder minilm`")
    args = ap.parse_args()
    if args.write_parquet:
        import store_scale

        n = int(args.sizes.split(",")[0])
        store_scale.write_parquet(args.write_parquet, n)
        print(f"wrote {n:,} chunks to {args.write_parquet}; next: docket import {args.write_parquet} --db STORE.db "
              "--embedder minilm")
        return
    if args.store:  # benchmarks/store_scale.py
        import store_scale

        qs = questions(args.queries + 2)
        rows = [store_scale.prebuilt_run(loc, qs, args.k if args.recall else None) for loc in args.store.split(",")]
        print_tables(rows, args.k)
        store_scale.print_stage_growth(rows)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        if args.plot:
            store_scale.plot_stages(rows, args.plot)
        return
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below (the PostgreSQL server)
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    dim = 384
    counter = default_counter()
    pg_uri = None
    server = None
    pg_parent = ""
    if "postgres" in backends:
        import pgserver
        import psycopg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg_parent = tempfile.mkdtemp(prefix="docket-bench-pg-")
            server = pgserver.get_server(pg_parent + "/data", cleanup_mode="delete")
        pg_uri = server.get_uri()
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("ALTER SYSTEM SET max_parallel_maintenance_workers = 2")
            conn.execute("SELECT pg_reload_conf()")
    try:
        with tempfile.TemporaryDirectory(prefix="docket-bench-") as tmp:
            if args.index_only:
                rows = index_throughput(args.index_chunks, pg_uri, backends, Path(tmp))
                print("| what | chunks/s | share of the model's own rate |")
                print("|---|---|---|")
                for r in rows:
                    share = r.get("share_of_model")
                    print(f"| {r['what']} | {float(r['chunks_per_s']):,.1f} | "  # type: ignore[arg-type]
                          f"{'' if share is None else f'{100 * float(share):.0f}%'} |")  # type: ignore[arg-type]
                return
            if args.sweep:
                rows = []
                for size in sizes:
                    rows += ann_sweep(size, questions(args.queries), args.k,
                                      [float(x) for x in args.nlist_factors.split(",")],
                                      [int(x) for x in args.nprobes.split(",")], mix=args.mix,
                                      kinds=tuple(args.index_kinds.split(",")))
                print(f"| chunks | index | nlist | build s | nprobe | recall@{args.k} (min) | recall@10 | search p50 ms "
                      f"| 10 %-filter recall@{args.k} | filtered p50 ms | exact scan ms |")
                print("|---|---|---|---|---|---|---|---|---|---|---|")
                for r in rows:
                    f = {k: float(v) for k, v in r.items() if k != "kind"}  # type: ignore[arg-type]
                    print(f"| {r['chunks']:,} | {r['kind']} | {r['nlist']} | {f['build_s']:.1f} | {r['nprobe']} | "
                          f"{f['recall']:.4f} "
                          f"({f['recall_min']:.2f}) | {f['recall10']:.4f} | {f['search_p50_ms']:.2f} | "
                          f"{f['filtered_recall']:.4f} | {f['filtered_p50_ms']:.2f} | {f['exact_ms']:.1f} |")
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=2))
                return
            if args.distinct:
                rows = distinct_run(backends, min(args.queries, 247), Path(tmp), pg_uri)
                print("| backend | chunks | questions | ask, first sight p50 / p95 ms | ask, repeated p50 / p95 ms "
                      "| retrieve p50 / p95 ms | assembly in ask, first / repeated (p50 difference) ms |")
                print("|---|---|---|---|---|---|---|")
                for r in rows:
                    f = {k: float(v) for k, v in r.items() if k.endswith("_ms")}  # type: ignore[arg-type]
                    print(f"| {r['backend']} | {r['chunks']:,} | {r['questions']} | {f['first_p50_ms']:.1f} / "
                          f"{f['first_p95_ms']:.1f} | {f['repeat_p50_ms']:.1f} / {f['repeat_p95_ms']:.1f} | "
                          f"{f['retrieve_p50_ms']:.1f} / {f['retrieve_p95_ms']:.1f} | "
                          f"{f['first_p50_ms'] - f['retrieve_p50_ms']:.1f} / {f['repeat_p50_ms'] - f['retrieve_p50_ms']:.1f} |")
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=2))
                return
            embedder = QuestionEmbedder(dim)
            qs = questions(args.queries + 2)
            embedder.embed(qs[:4])  # the model loaded
            q_ms = []
            for q in qs[:50]:
                t0 = time.perf_counter()
                embedder.embed([q])
                q_ms.append((time.perf_counter() - t0) * 1000)
            print(f"MiniLM question embedding: p50 {statistics.median(q_ms):.1f} ms, p95 {pct(q_ms, 95):.1f} ms "
                  "(inside every retrieve / ask figure below)", flush=True)
            rows = []
            qvecs = question_vectors(qs[:args.queries]) if args.vectors == "minilm" else None
            for size in sizes:
                items = corpus(size)
                t0 = time.perf_counter()
                vecs = (real_vectors(size) if args.vectors == "minilm"
                        else cached_embed(HashEmbedder(dim), [t for _, t in items], "speed"))
                tokens = [len(t) // 4 for _, t in items] if size > 200_000 else [counter.count(t) for _, t in items]
                print(f"{size:,} chunks: vectors ready in {time.perf_counter() - t0:.1f}s (cache in {OUT})", flush=True)
                for backend in backends:
                    got = run(backend, size, embedder, vecs, items, tokens, qs, Path(tmp), pg_uri, qvecs, args.k)
                    rows += got
                    for row in got:
                        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}),
                              flush=True)
                del vecs
    finally:
        if server is not None:
            server.cleanup()
            shutil.rmtree(pg_parent, ignore_errors=True)
    print_tables(rows, args.k)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for b in dict.fromkeys(str(r["backend"]) for r in rows):
            for key, style in (("ask_p50_ms", "-"), ("dense_p50_ms", "--")):
                pts = sorted((int(r["chunks"]), float(r[key])) for r in rows  # type: ignore[arg-type]
                             if r["backend"] == b and r.get(key) is not None)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                        label=f"{b} {key.removesuffix('_p50_ms')} p50")
        ax.set_xscale("log")
        ax.set_xlabel("chunks in the store")
        ax.set_ylabel("warm p50 (ms)")
        ax.set_yscale("log")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)


if __name__ == "__main__":
    main()
