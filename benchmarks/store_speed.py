"""Store speed: indexing throughput and `ask` latency (retrieve + assemble, no LLM) on SQLite
and PostgreSQL + pgvector, at 10k and 100k chunks of real text.

    .venv/bin/python benchmarks/store_speed.py --sizes 10000,100000 --embedder hash
    .venv/bin/python benchmarks/store_speed.py --sizes 10000 --embedder minilm

Chunks are paragraphs from ../shared/data (hotpotqa, musique, squad-v2), repeated with their
sentences rotated when more are needed; four consecutive chunks form one document. Vectors are
computed once and cached under benchmarks/out/ (MiniLM embeds ~65 sentences/s on two cores:
100k chunks take ~25 min, so `--embedder hash` exists for the latency part; every figure says
which embedder produced it). Indexing throughput is the store's own write rate (vectors given)
beside the embedder's sentences/s and their combination, what `docket index` achieves.
"""

from __future__ import annotations

import argparse
import json
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

from docket.embed import Embedder, HashEmbedder, default_embedder  # noqa: E402
from docket.ingest import IndexOptions, index_versions  # noqa: E402
from docket.model import Chunk  # noqa: E402
from docket.retrieve import ask, retrieve  # noqa: E402
from docket.store.protocol import DocumentVersion, Filters, Store, open_store  # noqa: E402
from docket.tokens import default_counter  # noqa: E402

PER_DOC = 4


def corpus(n: int) -> list[tuple[str, str]]:
    base = paragraphs()
    return [(base[i % len(base)][0], variant(base[i % len(base)][1], i // len(base))) for i in range(n)]


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


def measure(store: Store, embedder: Embedder, qs: list[str]) -> dict[str, float]:
    # warm-up: loads the matrix (SQLite) and the model
    ask(store, qs[0], filters=Filters(), embedder=embedder, budget=1000, floor=0.0)
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
            "ask_p50_ms": statistics.median(a_ms), "ask_p95_ms": pct(a_ms, 95)}


def run(backend: str, size: int, embedder: Embedder, vecs: np.ndarray, items: list[tuple[str, str]],
        tokens: list[int], qs: list[str], workdir: Path, pg_uri: str | None) -> dict[str, object]:
    if backend == "sqlite":
        location = str(workdir / f"bench-{size}.db")
    else:
        assert pg_uri is not None
        import psycopg

        schema = f"bench_{size}_{int(time.time())}"
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in pg_uri else "?"
        location = f"{pg_uri}{sep}options=-csearch_path%3D{schema}%2Cpublic"
    store = open_store(location)
    dvs = versions(items, vecs, tokens)
    t0 = time.perf_counter()
    report = index_versions(store, dvs, IndexOptions(embedder=embedder))
    write_s = time.perf_counter() - t0
    assert report.chunks_written == size, report.problems[:3]
    lat = measure(store, embedder, qs)
    store.close()
    return {"backend": backend, "chunks": size, "embedder": embedder.name, "write_chunks_per_s": size / write_s,
            **lat}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    embedder: Embedder = HashEmbedder(384) if args.embedder == "hash" else default_embedder()
    counter = default_counter()
    # the embedder's own speed, on 256 real paragraphs
    sample = [t for _, t in corpus(256)]
    t0 = time.perf_counter()
    (HashEmbedder(384) if args.embedder == "hash" else default_embedder().inner).embed(sample)  # type: ignore[attr-defined]
    emb_rate = len(sample) / (time.perf_counter() - t0)
    minilm_rate = emb_rate
    if args.embedder == "hash":
        m = default_embedder().inner  # type: ignore[attr-defined]
        m.embed(sample[:8])
        t0 = time.perf_counter()
        m.embed(sample[:128])
        minilm_rate = 128 / (time.perf_counter() - t0)
    print(f"embedder {embedder.name}: {emb_rate:,.0f} sentences/s; MiniLM int8: {minilm_rate:,.1f} sentences/s "
          f"(paragraphs from {DATA})", flush=True)
    raw = default_embedder().inner  # type: ignore[attr-defined]
    q_ms = []
    for q in questions(50):
        t0 = time.perf_counter()
        raw.embed([q])
        q_ms.append((time.perf_counter() - t0) * 1000)
    print(f"MiniLM question embedding: p50 {statistics.median(q_ms):.1f} ms, p95 {pct(q_ms, 95):.1f} ms "
          "(add to hash-embedder ask latencies for the real cost)", flush=True)
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
    qs = questions(args.queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="docket-bench-") as tmp:
        for size in sizes:
            items = corpus(size)
            t0 = time.perf_counter()
            vecs = cached_embed(embedder, [t for _, t in items], "speed")
            print(f"{size:,} chunks: vectors ready in {time.perf_counter() - t0:.1f}s (cache in {OUT})", flush=True)
            tokens = [counter.count(t) for _, t in items]
            for backend in backends:
                row = run(backend, size, embedder, vecs, items, tokens, qs, Path(tmp), pg_uri)
                rate = row["write_chunks_per_s"]
                assert isinstance(rate, float)
                row["index_chunks_per_s_with_minilm"] = 1 / (1 / rate + 1 / minilm_rate)
                rows.append(row)
                print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    print()
    print(f"| backend | chunks | embedder (latency) | store write chunks/s | index chunks/s incl. MiniLM ({minilm_rate:.0f}/s) "
          "| retrieve p50 / p95 ms | ask p50 / p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['backend']} | {r['chunks']:,} | {r['embedder']} | {r['write_chunks_per_s']:,.0f} | "
              f"{r['index_chunks_per_s_with_minilm']:,.1f} | {r['retrieve_p50_ms']:.1f} / {r['retrieve_p95_ms']:.1f} | "
              f"{r['ask_p50_ms']:.1f} / {r['ask_p95_ms']:.1f} |")
    if server is not None:
        server.cleanup()
        shutil.rmtree(pg_parent, ignore_errors=True)


if __name__ == "__main__":
    main()
