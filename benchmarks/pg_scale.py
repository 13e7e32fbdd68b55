"""The PostgreSQL run at scale (issue 22): a store of N chunks built by `docket import` of a
Parquet file with vectors, then `ask` latency on it and the keyword path's agreement with exact BM25.

    .venv/bin/python benchmarks/pg_scale.py --rows 1000000
    .venv/bin/python benchmarks/pg_scale.py --rows 300000 --queries 50 --bm25-queries 50

Rows: benchmarks/import_speed.py's (real paragraphs of ../shared/data, rotated copies past 4,413,
four chunks a document, 10 % readable by group finance, 5 % by user ann; vectors the paragraph's
MiniLM vector plus a little noise). The server is a throw-away pgserver (PostgreSQL 16 + pgvector
0.6) with `maintenance_work_mem` raised to `--maintenance-work-mem` (what a DBA sets before
building a large HNSW index: pgvector builds the graph in memory while it fits, and a graph that
spills builds far slower); everything else is the server's default (shared_buffers 128 MB).

Reported, each with the machine's load average:

- the import: rows/s of the whole load, its stages (the HNSW build and VACUUM apart), and the CPU
  seconds of this process, its worker processes and the server (the wall clock of a shared
  machine says as much about its other users);
- `ask` warm p50 / p95 over HotpotQA dev questions, with the MiniLM question embedding inside the
  timed call (benchmarks/store_speed.py's measure), first with keyword search reading every
  posting (the store's default), then with the top-M statement (`keyword_m` =
  pg_keywords.first_m(k)); and the p50 of each retrieve part (embedding, dense, BM25, fetch);
- BM25 top-k agreement of the top-M statement with reading every posting at `ask`'s depth
  (k = 100) over `--bm25-queries` real questions x 3 principals (benchmarks/pg_keywords.compare).

`--keep DIR --build-only` imports into a data directory that outlives the run; `--keep DIR` again
measures that store without importing it (the search code of the later run is what is measured).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpus  # noqa: E402
import import_speed  # noqa: E402
import pg_keywords  # noqa: E402
import store_speed  # noqa: E402

from docket.embed import default_embedder  # noqa: E402
from docket.store import pg_keywords as kw  # noqa: E402
from docket.store.factory import open_store  # noqa: E402


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


class QuestionEmbedder:
    """MiniLM, uncached (every timed call pays the question's embedding), named as the store's."""

    def __init__(self) -> None:
        outer = default_embedder()
        self.inner = outer.inner  # type: ignore[attr-defined]
        self.name, self.dim = outer.name, outer.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.inner.embed(texts), dtype=np.float32)


@contextmanager
def _server(keep: Path | None) -> Iterator[str]:
    """A throw-away server, or with `keep` one whose data directory outlives the run (stopped at its end)."""
    if keep is None:
        with import_speed.pg_server() as uri:
            yield uri
        return
    import pgserver

    keep.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(keep, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100, help="HotpotQA questions for the ask latency")
    ap.add_argument("--bm25-queries", type=int, default=100, help="questions (x 3 principals) for BM25 agreement")
    ap.add_argument("--maintenance-work-mem", default="4GB")
    ap.add_argument("--keep", type=Path, help="a PostgreSQL data directory kept after the run: the store is "
                    "imported into it once, and a later run with the same --keep measures it without importing")
    ap.add_argument("--build-only", action="store_true", help="import (into --keep), measure nothing")
    a = ap.parse_args()
    _corpus.OUT.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    path = import_speed.write_parquet(_corpus.OUT / f"import-{a.rows}.parquet", a.rows)
    print(f"# parquet {path.name}: {time.perf_counter() - t:.0f} s; {load()}", flush=True)
    dim = int(import_speed.base_vectors()[1].shape[1])
    with _server(a.keep) as uri:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{a.maintenance_work_mem}'")
            conn.execute("SELECT pg_reload_conf()")
            built = conn.execute("SELECT to_regclass('scale.versions') IS NOT NULL").fetchone()[0]
        if built and a.keep:
            loc = import_speed._store_url(uri, "scale")
            with open_store(loc) as s:  # type: ignore[attr-defined]
                n = s.count()
            print(f"# the store in {a.keep} ({n} chunks), imported before; {load()}", flush=True)
        else:
            loc = import_speed._fresh_pg(uri, "scale")
            stages: dict[str, float] = {}
            before = import_speed.server_cpu(uri)
            n, secs = import_speed.import_into(loc, path, dim, stages)
            stages["cpu: server"] = import_speed.server_cpu(uri) - before
            print(f"import: {n} rows in {secs:.1f} s = {n / secs:.0f} rows/s; {load()}")
            print("   stages: " + import_speed._stages(stages, secs), flush=True)
        if a.build_only:
            return
        qs = store_speed.questions(a.queries)
        emb = QuestionEmbedder()
        from docket.store.protocol import Filters

        with open_store(loc) as s:  # type: ignore[attr-defined]
            for label, m in (("every posting", None), (f"top M = {kw.first_m(100)}", kw.first_m(100))):
                s.keyword_m = m
                for q in qs[:5]:  # warm: the buffers, the embedder's session
                    store_speed.ask(s, q, filters=Filters(), embedder=emb, budget=1000, floor=0.0)
                lat = store_speed.measure(s, emb, qs)
                parts = store_speed.search_parts(s, emb, qs[: min(30, len(qs))])
                print(f"ask, keyword search {label}: p50 {lat['ask_p50_ms']:.1f} ms, p95 {lat['ask_p95_ms']:.1f} ms "
                      f"(retrieve p50 {lat['retrieve_p50_ms']:.1f}); parts p50: embed {parts['embed_p50_ms']:.1f}, "
                      f"dense {parts['dense_p50_ms']:.1f}, bm25 {parts['bm25_p50_ms']:.1f}, fetch "
                      f"{parts['fetch_p50_ms']:.1f} ms; {load()}", flush=True)
        bq = pg_keywords.questions()[: a.bm25_queries]
        print(f"{'chunks':>8} {'k':>4} {'M':>15} {'agree':>7} {'rbo':>7} {'m1':>6} {'m2':>6} {'exact':>6} "
              f"{'p50 ms':>8} {'p95 ms':>8} {'all p50':>9} {'all p95':>9} {'x p50':>6}")
        pg_keywords.compare(loc, n, [None], bq, ks=(100,))
        print(f"# {load()}")


if __name__ == "__main__":
    main()
