"""How fast `docket features` fills an imported store's feature records, in-process and with workers.

    python benchmarks/store_speed.py --sizes 10000 --write-parquet /tmp/bench-10000.parquet
    docket import /tmp/bench-10000.parquet --db /tmp/bench-10000.db --embedder minilm
    python benchmarks/fill_records.py /tmp/bench-10000.db --workers 0,1,2,4 --rounds 2

Each run fills a fresh copy of the store (made beside it, removed after) with the records `docket
index` writes (docket.brief.sizer.feature_record), rounds interleaved so a busy minute hits every
setting alike; the table gives each setting's best and median records/s and its ratio to the
in-process rate of the same rounds. The first-sight `ask` before and after filling is
store_speed.py --store on the two stores, each in a process of its own (features computed from
one store stay in memory for the next store of the same process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path

from docket.brief.sizer import feature_record
from docket.store.factory import open_store
from docket.store.fill_records import fill_records


def fill_copy(store: Path, workers: int) -> float:
    """Records/s of filling a copy of `store` with `workers` worker processes."""
    copy = store.with_name(f"{store.name}.fill-{os.getpid()}-{workers}.db")
    shutil.copyfile(store, copy)
    try:
        s = open_store(str(copy), create=False)
        try:
            r = fill_records(s, feature_record, workers=workers)
        finally:
            s.close()
        assert r.written == r.missing and r.written > 0, r
        return r.written / r.seconds
    finally:
        for f in copy.parent.glob(copy.name + "*"):
            f.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("store", type=Path, help="a SQLite store without feature records (from `docket import`)")
    ap.add_argument("--workers", default="0,2", help="comma-separated worker counts (0: in-process)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    settings = [int(w) for w in args.workers.split(",")]
    rates: dict[int, list[float]] = {w: [] for w in settings}
    for _ in range(args.rounds):
        for w in settings:
            rates[w].append(fill_copy(args.store, w))
    base = statistics.median(rates[settings[0]])
    print(f"{args.store}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print("| workers | records/s best | records/s median | ratio to the first setting (median) |")
    print("|---|---|---|---|")
    for w in settings:
        print(f"| {w} | {max(rates[w]):,.0f} | {statistics.median(rates[w]):,.0f} | "
              f"x{statistics.median(rates[w]) / base:.2f} |")


if __name__ == "__main__":
    main()
