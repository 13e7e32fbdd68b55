"""Import throughput: `docket import` of a Parquet file with vectors into SQLite and PostgreSQL,
against the per-version write path (`write_version`, what `docket index` does once vectors exist)
measured in the same run.

    .venv/bin/python benchmarks/import_speed.py --rows 100000            # both backends
    .venv/bin/python benchmarks/import_speed.py --rows 20000 --backends sqlite

The rows are the 4,413 real paragraphs of ../shared/data (hotpotqa, musique, squad-v2) repeated
with their sentences rotated (benchmarks/_corpus.variant), four chunks a document, 10 % readable
by a group and 5 % by one user. Their vectors are derived from real ones: the MiniLM vector of the
row's paragraph (cached under benchmarks/out/) plus a little noise, re-normalised. That is enough
for throughput (the import's cost does not depend on what the numbers are); recall figures use
plain MiniLM vectors of the real paragraphs (benchmarks/pg_keywords.py, store_speed.py).

Reported: rows/s of the whole import (read + check + write + the indexes built after the load:
HNSW and the keyword indexes on PostgreSQL, the in-memory search index on SQLite), its stages,
and the write path's rows/s on a small sample, with the ratio.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpus  # noqa: E402

from docket.embed import default_embedder  # noqa: E402


def base_vectors() -> tuple[list[tuple[str, str]], np.ndarray]:
    paras = _corpus.paragraphs()
    return paras, _corpus.cached_embed(default_embedder(), [t for _, t in paras], "paragraphs")


def rows_table(n: int, seed: int = 0) -> object:
    """The benchmark's rows as a pyarrow table (vectors derived from real MiniLM ones, see above)."""
    import pyarrow as pa

    paras, vecs = base_vectors()
    p = len(paras)
    rng = np.random.default_rng(seed)
    idx = np.arange(n) % p
    v = vecs[idx] + rng.normal(scale=0.01, size=(n, vecs.shape[1])).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    acl: list[list[str] | None] = [None] * n
    for i in range(n):
        r = (i * 2654435761) % 100
        acl[i] = ["group:finance"] if r < 10 else ["user:ann"] if r < 15 else None
    texts = [_corpus.variant(paras[i % p][1], i // p) for i in range(n)]
    flat = pa.array(v.reshape(-1), type=pa.float32())
    return pa.table({
        "id": [f"c{i}" for i in range(n)], "doc": [f"d{i // 4}" for i in range(n)],
        "position": pa.array([i % 4 for i in range(n)], type=pa.int32()),
        "title": [paras[i % p][0] for i in range(n)], "text": texts, "acl": acl,
        "vector": pa.FixedSizeListArray.from_arrays(flat, vecs.shape[1]),
    })


def write_parquet(path: Path, n: int) -> Path:
    import pyarrow.parquet as pq

    if not path.exists():
        pq.write_table(rows_table(n), path)  # type: ignore[arg-type]
    return path


@contextmanager
def pg_server() -> Iterator[str]:
    """A throw-away PostgreSQL 16 + pgvector (pgserver), default durability settings."""
    import pgserver

    parent = tempfile.mkdtemp(prefix="docket-bench-pg-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(parent + "/data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


def _fresh_pg(uri: str, name: str) -> str:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    sep = "&" if "?" in uri else "?"
    return f"{uri}{sep}options=-csearch_path%3D{name}%2Cpublic"


def import_into(location: str, path: Path, dim: int, stages: dict[str, float] | None = None) -> tuple[int, float]:
    from docket.store.bulk import import_file
    from docket.store.factory import open_store

    with open_store(location) as s:  # type: ignore[attr-defined]
        t = time.perf_counter()
        rep = import_file(s, path, embedder=(default_embedder().name, dim), stages=stages)
        return rep.rows, time.perf_counter() - t


def write_path(location: str, path: Path, n: int) -> float:
    """rows/s of write_version (one transaction a document version), vectors given."""
    import pyarrow.parquet as pq

    from docket.model import Chunk
    from docket.store.factory import open_store
    from docket.store.protocol import DocumentVersion
    from docket.tokens import default_counter

    t = pq.read_table(path).slice(0, n).to_pylist()
    count = default_counter().count
    with open_store(location) as s:  # type: ignore[attr-defined]
        s.set_meta({"embedder": default_embedder().name, "dim": str(len(t[0]["vector"]))})
        started = time.perf_counter()
        for at in range(0, n, 4):
            part = t[at : at + 4]
            chunks = [Chunk(**{k: v for k, v in r.items() if k != "vector"}) for r in part]
            s.write_version(DocumentVersion(doc=chunks[0].doc, version=1, status="current", date=None,
                                            effective_to=None, title=chunks[0].title, source="bench", chunks=chunks,
                                            vectors=np.asarray([r["vector"] for r in part], dtype=np.float32),
                                            tokens=[count(c.text) for c in chunks]))
        return n / (time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--sample", type=int, default=2000, help="rows written by the per-version path (baseline)")
    a = ap.parse_args()
    out = _corpus.OUT
    out.mkdir(parents=True, exist_ok=True)
    path = write_parquet(out / f"import-{a.rows}.parquet", a.rows)
    sample = write_parquet(out / f"import-{a.sample}.parquet", a.sample)
    dim = int(base_vectors()[1].shape[1])
    print(f"{'backend':10} {'rows':>9} {'import s':>9} {'import rows/s':>14} {'write_version rows/s':>21} {'ratio':>6}")
    for backend in a.backends.split(","):
        tmp = Path(tempfile.mkdtemp(prefix="docket-bench-"))
        try:
            stages: dict[str, float] = {}
            if backend == "sqlite":
                n, secs = import_into(str(tmp / "imp.db"), path, dim, stages)
                base = write_path(str(tmp / "base.db"), sample, a.sample)
            else:
                with pg_server() as uri:
                    n, secs = import_into(_fresh_pg(uri, "imp"), path, dim, stages)
                    base = write_path(_fresh_pg(uri, "base"), sample, a.sample)
            print(f"{backend:10} {n:>9} {secs:>9.1f} {n / secs:>14.0f} {base:>21.0f} {n / secs / base:>6.1f}")
            print("   stages: " + ", ".join(f"{k} {v:.1f} s ({100 * v / secs:.0f} %)" for k, v in stages.items()))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
