"""Import throughput: `docket import` of a Parquet file with vectors into SQLite and PostgreSQL,
against the per-version write path (`write_version`, what `docket index` does once vectors exist)
measured in the same run.

    .venv/bin/python benchmarks/import_speed.py --rows 100000            # both backends
    .venv/bin/python benchmarks/import_speed.py --rows 20000 --backends sqlite
    git archive ced08bc src | tar -x -C /tmp/base                         # an older import ...
    .venv/bin/python benchmarks/import_speed.py --baseline-src /tmp/base/src   # ... run beside this one

The rows are the 4,413 real paragraphs of ../shared/data (hotpotqa, musique, squad-v2) repeated
with their sentences rotated (benchmarks/_corpus.variant), four chunks a document, 10 % readable
by a group and 5 % by one user. Their vectors are derived from real ones: the MiniLM vector of the
row's paragraph (cached under benchmarks/out/) plus a little noise, re-normalised. That is enough
for throughput (the import's cost does not depend on what the numbers are); recall figures use
plain MiniLM vectors of the real paragraphs (benchmarks/pg_keywords.py, store_speed.py).

Reported: rows/s of the whole import (read + check + write + the indexes built after the load:
HNSW and the keyword indexes on PostgreSQL, the in-memory search index on SQLite), its stages,
the CPU seconds of this process, of its main thread (the writer) and of its worker processes (a
shared machine's wall clock says as much about its other users), and the write path's rows/s on a small sample, with the
ratio. `--baseline-src` runs the same import with another checkout's `src` (in a subprocess,
right before this one, on the same file and a fresh server) for a same-minute before/after.
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


def server_cpu(uri: str) -> float:
    """CPU seconds used so far by the pgserver of `uri` (its socket directory is its data
    directory): the postmaster and every live child (backends, parallel workers, WAL writer,
    checkpointer), plus the children it has reaped. What the server did for a load, whatever the
    machine's other users did meanwhile; 0.0 where /proc cannot tell (not Linux)."""
    import os
    from urllib.parse import parse_qs, urlparse

    host = parse_qs(urlparse(uri).query).get("host", [""])[0]
    try:
        pid = int(Path(host, "postmaster.pid").read_text().split()[0])
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(d.name) == pid:  # utime, stime, cutime, cstime (fields 14-17)
                total += sum(map(int, f[11:15]))
            elif int(f[1]) == pid:
                total += int(f[11]) + int(f[12])
        return total / tick
    except (OSError, ValueError, IndexError):
        return 0.0


def _fresh_pg(uri: str, name: str) -> str:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return _store_url(uri, name)


def _store_url(uri: str, name: str) -> str:
    """The store in schema `name` of the server at `uri`."""
    sep = "&" if "?" in uri else "?"
    return f"{uri}{sep}options=-csearch_path%3D{name}%2Cpublic"


def import_into(location: str, path: Path, dim: int, stages: dict[str, float] | None = None) -> tuple[int, float]:
    import resource

    from docket.store.bulk import import_file
    from docket.store.factory import open_store

    def children() -> float:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return kids.ru_utime + kids.ru_stime

    # before the clocks: `docket import` never loads the model, and the baseline's fresh process
    # would load it (~0.6 s) inside them where this one has it loaded already
    name = default_embedder().name
    with open_store(location) as s:  # type: ignore[attr-defined]
        t, cpu, kids, main = time.perf_counter(), time.process_time(), children(), time.thread_time()
        loaded: list[float] = []
        search = getattr(s, "search_dense", None)
        if search is not None and stages is not None:  # SQLite builds its search index by a first search
            def first_search(*args: object, **kw: object) -> object:
                loaded.append(time.process_time())
                return search(*args, **kw)

            s.search_dense = first_search
        rep = import_file(s, path, embedder=(name, dim), stages=stages)
        if stages is not None:
            stages["cpu: this process"] = time.process_time() - cpu
            stages["cpu: main thread"] = time.thread_time() - main  # the writer (threads: ANN build, Parquet decode)
            if loaded:  # its load apart from the search index (faiss's threads spin on a busy machine)
                stages["cpu: this process, load"] = loaded[0] - cpu
            stages["cpu: workers"] = children() - kids  # PostgreSQL's server is not a child
        return rep.rows, time.perf_counter() - t


def import_once(backend: str, path: Path, dim: int) -> tuple[int, float, dict[str, float]]:
    """One import into a fresh store of `backend`, with its stages."""
    stages: dict[str, float] = {}
    tmp = Path(tempfile.mkdtemp(prefix="docket-bench-"))
    try:
        if backend == "sqlite":
            n, secs = import_into(str(tmp / "imp.db"), path, dim, stages)
        else:
            with pg_server() as uri:
                before = server_cpu(uri)
                n, secs = import_into(_fresh_pg(uri, "imp"), path, dim, stages)
                stages["cpu: server"] = server_cpu(uri) - before
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return n, secs, stages


def baseline(src: str, backend: str, path: Path, dim: int) -> tuple[int, float, dict[str, float]]:
    """`import_once` with another checkout's docket (a subprocess: its modules, not these)."""
    import json
    import os
    import subprocess

    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import import_speed as b; from pathlib import Path; "
            "print(json.dumps(b.import_once(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))))")
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent), backend, str(path),
                          str(dim)], env=env, capture_output=True, text=True, check=True).stdout
    n, secs, stages = json.loads(out.strip().splitlines()[-1])
    return n, secs, stages


def _stages(stages: dict[str, float], secs: float) -> str:
    return ", ".join(f"{k} {v:.1f} s" + ("" if k.startswith("cpu") else f" ({100 * v / secs:.0f} %)")
                     for k, v in stages.items())


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
    ap.add_argument("--sample", type=int, default=2000, help="rows written by the per-version path (0: skip)")
    ap.add_argument("--baseline-src", help="another checkout's src directory, imported the same way first")
    a = ap.parse_args()
    out = _corpus.OUT
    out.mkdir(parents=True, exist_ok=True)
    path = write_parquet(out / f"import-{a.rows}.parquet", a.rows)
    sample = write_parquet(out / f"import-{a.sample}.parquet", a.sample) if a.sample else None
    dim = int(base_vectors()[1].shape[1])
    print(f"{'backend':10} {'code':9} {'rows':>9} {'import s':>9} {'import rows/s':>14} {'write_version rows/s':>21} "
          f"{'ratio':>6}")
    for backend in a.backends.split(","):
        runs = [("baseline", *baseline(a.baseline_src, backend, path, dim))] if a.baseline_src else []
        runs.append(("this", *import_once(backend, path, dim)))
        base = _write_path_rate(backend, sample, a.sample) if sample is not None else float("nan")
        for code, n, secs, stages in runs:
            print(f"{backend:10} {code:9} {n:>9} {secs:>9.1f} {n / secs:>14.0f} {base:>21.0f} {n / secs / base:>6.1f}")
            print("   stages: " + _stages(stages, secs))
        if len(runs) == 2:
            print(f"   this / baseline rows/s: {runs[0][2] / runs[1][2]:.2f}x")


def _write_path_rate(backend: str, sample: Path, n: int) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="docket-bench-"))
    try:
        if backend == "sqlite":
            return write_path(str(tmp / "base.db"), sample, n)
        with pg_server() as uri:
            return write_path(_fresh_pg(uri, "base"), sample, n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
