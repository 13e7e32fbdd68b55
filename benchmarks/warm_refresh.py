"""How long a warm SQLite index takes to follow another process's write (issue 11 §5).

A reader process keeps its search index warm; a second connection writes one document version
at a time (a new document, a new version superseding an old one, a delete), as a concurrent
`docket index` does. After each write the reader's next search pays the refresh. Printed: the
refresh applied from the change log (what docket does) against reloading the whole index (what it
did before), per kind of write, median and p95 over the writes, and the same search with no write.

    .venv/bin/python benchmarks/warm_refresh.py --chunks 100000 [--writes 30] [--plot out.png]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_load import build  # noqa: E402

from docket.embed import HashEmbedder  # noqa: E402
from docket.model import Chunk  # noqa: E402
from docket.store.protocol import DocumentVersion, Filters  # noqa: E402
from docket.store.sqlite import SQLiteStore  # noqa: E402

EMB = HashEmbedder(256)


def one_version(doc: str, v: int, texts: list[str]) -> DocumentVersion:
    chunks = [Chunk(id=f"{doc}-v{v}-{i}", doc=doc, text=t, version=v, position=i, title=doc) for i, t in enumerate(texts)]
    return DocumentVersion(doc=doc, version=v, status="current", date=None, effective_to=None, title=doc,
                           source=f"bench:{doc}", chunks=chunks, vectors=EMB.embed(texts),
                           tokens=[len(t.split()) for t in texts])


def timed_search(s: SQLiteStore, q: np.ndarray) -> float:
    t = time.perf_counter()
    s.search_dense(q, 50, Filters())
    s.search_bm25("river capital country", 50, Filters())
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--writes", type=int, default=30)
    ap.add_argument("--db", help="reuse (or build) this store file")
    args = ap.parse_args()
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "refresh.db"
    if not db.exists():
        t = time.perf_counter()
        build(str(db), args.chunks)
        print(f"built {db} ({args.chunks:,} chunks) in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    reader, writer = SQLiteStore(db), SQLiteStore(db)
    q = EMB.embed(["Which river flows through the capital of the country?"])[0]
    timed_search(reader, q)  # warm
    idle = [timed_search(reader, q) for _ in range(args.writes)]
    docs = writer.documents()
    rows: dict[str, list[float]] = {"new document": [], "new version": [], "delete": []}
    full: list[float] = []
    for i in range(args.writes):
        kind = list(rows)[i % 3]
        if kind == "new document":
            writer.write_version(one_version(f"bench-{i}", 1, [f"river capital country note {i} {j}" for j in range(4)]))
        elif kind == "new version":
            doc = docs[i * 7 % len(docs)]
            top = max((v.version for v in writer.stored_versions(doc)), default=0)
            writer.write_version(one_version(doc, top + 1, [f"revised text {i} river {j}" for j in range(4)]))
        else:
            writer.delete(docs[(i * 11 + 3) % len(docs)])
        rows[kind].append(timed_search(reader, q))
        if i < 5:  # what a full reload costs on the same store now
            t = time.perf_counter()
            with reader._lock, reader.snapshot():
                reader._load_index(reader._generation())
            full.append((time.perf_counter() - t) * 1000)

    def fmt(xs: list[float]) -> str:
        return f"{statistics.median(xs):9.1f} | {np.percentile(xs, 95):9.1f}"

    m = reader._index
    print(f"\n{reader.count():,} chunks; index rows {len(m.ids):,} (loaded {m.base_rows:,})\n")
    print("| search after … | median ms | p95 ms |\n|---|---|---|")
    print(f"| no write (warm) | {fmt(idle)} |")
    for kind, xs in rows.items():
        print(f"| a {kind} (refresh from the change log) | {fmt(xs)} |")
    print(f"| any write, full reload (before) | {fmt(full)} |")


if __name__ == "__main__":
    main()
