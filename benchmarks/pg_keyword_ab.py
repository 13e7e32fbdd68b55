"""PostgreSQL BM25 at `ask`'s depth (k = 100) on a store kept by `pg_scale.py --keep DIR`: the store's
default keyword search (search_bm25: term_df, 64 MB sorts) against main's statement before term_df
(df counted from the postings, the session's work_mem), per question and principal, which one runs
first alternating (the second finds the pages cached). Results are checked identical.

    .venv/bin/python benchmarks/pg_keyword_ab.py /tmp/pg1m --queries 60
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import import_speed  # noqa: E402
import pg_keywords  # noqa: E402

from docket.store.access import Principal  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.store.protocol import Filters, fts_terms  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("keep", type=Path, help="the data directory pg_scale.py --keep built")
    ap.add_argument("--queries", type=int, default=60)
    a = ap.parse_args()
    import pgserver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(a.keep, cleanup_mode="stop")
    s = open_store(import_speed._store_url(server.get_uri(), "scale"))
    qs = [" ".join(fts_terms(q)) for q in pg_keywords.questions()[: a.queries]]
    askers = [Filters(), Filters(principal=Principal("ann", frozenset({"finance"}))), Filters(unrestricted=True)]
    new: list[float] = []
    old: list[float] = []
    same = 0
    for i, (f, q) in enumerate((f, q) for f in askers for q in qs):
        got = {}
        for side in ("new", "old") if i % 2 else ("old", "new"):
            t = time.perf_counter()
            got[side] = s.search_bm25(q, 100, f) if side == "new" else pg_keywords.exact(s, q, 100, f)
            (new if side == "new" else old).append(time.perf_counter() - t)
        same += got["new"] == got["old"]
    p95 = lambda xs: 1000 * statistics.quantiles(xs, n=20)[18]  # noqa: E731
    print(f"{len(new)} queries, identical {same}; default p50 {1000 * statistics.median(new):.1f} p95 {p95(new):.1f} ms; "
          f"main's statement p50 {1000 * statistics.median(old):.1f} p95 {p95(old):.1f} ms; "
          f"ratio p50 {statistics.median(old) / statistics.median(new):.2f}x; load {os.getloadavg()}")
    s.close()
    server.cleanup()


if __name__ == "__main__":
    main()
