"""PostgreSQL keyword search through each term's top M postings (docket.store.pg_keywords)
against reading every posting (the statement it replaced), on a bulk-imported store.

    .venv/bin/python benchmarks/pg_keywords.py --sizes 10000,100000
    .venv/bin/python benchmarks/pg_keywords.py --sizes 100000 --m 100,400,1600

Store: benchmarks/import_speed.py's rows (real paragraphs, rotated copies past 4,413, 10 % of the
chunks readable by group finance, 5 % by user ann), loaded with `docket import`. Queries: the 250
HotpotQA dev questions and the 706 SQuAD v2 subset questions (real questions, 956 in all), asked
as three principals (anonymous: public chunks only; ann in finance: everything; unrestricted) at
k = 10 and k = 100 (`ask` asks BM25 for max(2k, 100)).

Per size and M: top-k agreement (the same ids in the same order as the exact statement, which
counts each term's df from its postings as before term_df), rank-biased overlap (p = 0.9,
extrapolated), the share of queries answered from the first top M ("m1"), from the second read
down to impact thresholds ("m2"), or by the exact statement ("exact"), and p50 / p95 latency of
both (warm, same run, same queries: the ratio is the figure to read).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpus  # noqa: E402
import import_speed  # noqa: E402

from docket.store import pg_keywords  # noqa: E402
from docket.store import postgres as pg  # noqa: E402
from docket.store.access import Principal  # noqa: E402
from docket.store.protocol import Filters, fts_terms  # noqa: E402


def questions() -> list[str]:
    out = []
    with (_corpus.DATA / "hotpotqa" / "dev250.jsonl").open() as fh:
        out += [json.loads(line)["question_text"] for line in fh if line.strip()]
    squad = json.loads((_corpus.DATA / "squad-v2" / "dev-v2.0.subset.json").read_text())
    out += [q["question"] for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
    return out


def rbo(s: list[str], t: list[str], p: float = 0.9) -> float:
    """Rank-biased overlap (Webber et al. 2010), extrapolated to the depth of the shorter list."""
    k = min(len(s), len(t))
    if k == 0:
        return 1.0 if len(s) == len(t) else 0.0
    total, seen_s, seen_t, x = 0.0, set(), set(), 0
    for d in range(1, k + 1):
        a, b = s[d - 1], t[d - 1]
        x += (a == b) + (a in seen_t) + (b in seen_s)
        seen_s.add(a)
        seen_t.add(b)
        total += x / d * p ** d
    return x / k * p ** k + (1 - p) / p * total


def exact(store: Any, text: str, k: int, f: Filters) -> list[tuple[str, float]]:
    readable, acl_args = pg._readable_sql(f)
    where, args = pg._where_sql(f, acl=False)
    params = [*acl_args, text, *acl_args, *acl_args, *args, k]
    return [(r["id"], float(r["score"])) for r in store._conn.execute(pg_keywords.exact_sql(readable, where, counted=True), params)]


def run_size(uri: str, n: int, ms: list[int | None], qs: list[str]) -> list[dict[str, Any]]:
    path = import_speed.write_parquet(_corpus.OUT / f"import-{n}.parquet", n)
    loc = import_speed._fresh_pg(uri, f"kw{n}")
    dim = int(import_speed.base_vectors()[1].shape[1])
    rows, secs = import_speed.import_into(loc, path, dim)
    print(f"# {n} chunks imported in {secs:.1f} s ({rows / secs:.0f}/s)", flush=True)
    return compare(loc, n, ms, qs)


def compare(loc: str, n: int, ms: list[int | None], qs: list[str], ks: tuple[int, ...] = (10, 100)) -> list[dict[str, Any]]:
    """Agreement and latency of the top-M statement against reading every posting, on the store
    at `loc` (`n` chunks), per k and M (a row each, printed as it is measured)."""
    from docket.store.factory import open_store

    askers = {"anonymous": Filters(), "ann+finance": Filters(principal=Principal("ann", frozenset({"finance"}))),
              "unrestricted": Filters(unrestricted=True)}
    out = []
    with open_store(loc) as s:  # type: ignore[attr-defined]
        texts = [" ".join(fts_terms(q)) for q in qs]
        for text in texts[:20]:  # warm the buffers
            exact(s, text, 100, Filters())
        for k in ks:
            ref: dict[tuple[str, int], list[tuple[str, float]]] = {}
            t_exact = []
            for name, f in askers.items():
                for i, text in enumerate(texts):
                    t = time.perf_counter()
                    ref[(name, i)] = exact(s, text, k, f)
                    t_exact.append(time.perf_counter() - t)
            for m in ms:
                s.keyword_m, s.keyword_stats = m or pg_keywords.first_m(k), {}
                same, overlaps, t_imp = 0, [], []
                for name, f in askers.items():
                    for i, text in enumerate(texts):
                        t = time.perf_counter()
                        got = s.search_bm25(text, k, f)
                        t_imp.append(time.perf_counter() - t)
                        want = ref[(name, i)]
                        same += got == want
                        overlaps.append(rbo([c for c, _ in got], [c for c, _ in want]))
                total = len(t_imp)
                st = s.keyword_stats
                out.append({"chunks": n, "k": k, "M": m if m else f"{pg_keywords.first_m(k)} (default)",
                            "agree": same / total, "rbo": statistics.fmean(overlaps),
                            "m1": st.get("m1", 0) / total, "m2": st.get("m2", 0) / total,
                            "exact": st.get("exact", 0) / total,
                            "p50_ms": 1000 * statistics.median(t_imp),
                            "p95_ms": 1000 * statistics.quantiles(t_imp, n=20)[18],
                            "exact_p50_ms": 1000 * statistics.median(t_exact),
                            "exact_p95_ms": 1000 * statistics.quantiles(t_exact, n=20)[18]})
                r = out[-1]
                print(f"{n:>8} {k:>4} {r['M']!s:>15} {r['agree']:>7.4f} {r['rbo']:>7.4f} {r['m1']:>6.3f} {r['m2']:>6.3f} "
                      f"{r['exact']:>6.3f} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['exact_p50_ms']:>9.1f} "
                      f"{r['exact_p95_ms']:>9.1f} {r['exact_p50_ms'] / r['p50_ms']:>6.2f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--m", default="default", help="comma-separated M values ('default' = pg_keywords.first_m(k), "
                    "the M suggested for k; the store's own default reads every posting)")
    ap.add_argument("--queries", type=int, default=0, help="use only the first N questions (0 = all)")
    ap.add_argument("--json", type=Path, help="write the rows here too")
    a = ap.parse_args()
    ms: list[int | None] = [None if x == "default" else int(x) for x in a.m.split(",")]
    qs = questions()
    qs = qs[: a.queries] if a.queries else qs
    print(f"{len(qs)} questions x 3 principals; agreement = identical top-k ids and order as reading every posting")
    print(f"{'chunks':>8} {'k':>4} {'M':>15} {'agree':>7} {'rbo':>7} {'m1':>6} {'m2':>6} {'exact':>6} "
          f"{'p50 ms':>8} {'p95 ms':>8} {'all p50':>9} {'all p95':>9} {'x p50':>6}")
    rows: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="docket-kw-"))
    try:
        with import_speed.pg_server() as uri:
            for n in (int(x) for x in a.sizes.split(",")):
                rows += run_size(uri, n, ms, qs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
