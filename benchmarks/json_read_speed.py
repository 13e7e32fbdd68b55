"""Reading a large JSONL through docket.safeio: what refusing a key given twice costs.

    .venv/bin/python benchmarks/json_read_speed.py --baseline-src /tmp/base/src        # A/B, 3 pairs
    .venv/bin/python benchmarks/json_read_speed.py --rows 50000 --pairs 5 --vectors 384 --baseline-src ...

The file is `--rows` chunk records built from the real paragraphs of ../shared/data (hotpotqa,
musique, squad-v2; benchmarks/_corpus), sentences rotated for the repeats: id, doc, title, text,
version, status, date, source_type, an acl for one row in ten, a small metadata object, and with
`--vectors N` an N-float vector a row (what a JSONL with vectors holds). Each run is a fresh
process reading the whole file with `safeio.iter_jsonl` (UTF-8, JSON, the checks), the value
kept only until the next line. A (the baseline `src`) and B (this checkout) alternate, A B A B
..., so a change of load on a shared machine falls on both; reported per run: wall and CPU
seconds of the read, then the CPU seconds of the JSON parse alone over the same lines (json.loads
on a baseline without `safeio.decode_json`, decode_json here), the medians, the ratio B/A and the
load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def build(path: Path, rows: int, dims: int) -> None:
    sys.path.insert(0, str(HERE))
    import _corpus

    paras = _corpus.paragraphs()
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for i in range(rows):
            title, text = paras[i % len(paras)]
            rec: dict[str, object] = {
                "id": f"p{i}", "doc": f"d{i // 4}", "title": title, "text": _corpus.variant(text, i // len(paras)),
                "version": 1 + i % 3, "status": "current", "date": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "source_type": "reference", "metadata": {"source": "hotpotqa", "row": i, "tags": ["wiki", title[:12]]},
            }
            if i % 10 == 0:
                rec["acl"] = ["group:hr", f"user:u{i % 7}"]
            if dims:
                rec["vector"] = [round(((i * 7919 + k * 104729) % 20011) / 20011 - 0.5, 6) for k in range(dims)]
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(path)


def child(src: str, path: str) -> None:
    sys.path.insert(0, src)
    from docket import safeio

    assert Path(safeio.__file__).resolve().is_relative_to(Path(src).resolve()), safeio.__file__
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for _, _rec in safeio.iter_jsonl(path):
        n += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # the JSON parse alone, the part this change touches: json.loads on main, decode_json here
    parse = getattr(safeio, "decode_json", json.loads)
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    c0 = time.process_time()
    for line in lines:
        if line:
            parse(line)
    print(json.dumps({"rows": n, "wall": wall, "cpu": cpu, "parse": time.process_time() - c0}))


def run(src: str, path: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, __file__, "--child", src, str(path)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--vectors", type=int, default=0, help="floats in each row's vector (0: no vector)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--baseline-src", required="--child" not in sys.argv, help="the `src` folder of the A side")
    ap.add_argument("--child", nargs=2, metavar=("SRC", "FILE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    path = HERE / "out" / f"json_read_{a.rows}_{a.vectors}.jsonl"
    path.parent.mkdir(exist_ok=True)
    if not path.exists():
        build(path, a.rows, a.vectors)
    print(f"file: {path.name}, {path.stat().st_size / 2**20:.1f} MiB, {a.rows:,} rows; load before "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sides = {"A": str(Path(a.baseline_src).resolve()), "B": str(ROOT / "src")}
    got: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for i in range(a.pairs):
        for side in ("A", "B"):
            r = run(sides[side], path)
            got[side].append(r)
            print(f"pair {i + 1} {side}: wall {r['wall']:.3f} s, cpu {r['cpu']:.3f} s, parse alone cpu {r['parse']:.3f} s")
    for what in ("wall", "cpu", "parse"):
        med = {s: statistics.median(r[what] for r in got[s]) for s in got}
        print(f"median {what}: A {med['A']:.3f} s, B {med['B']:.3f} s, B/A {med['B'] / med['A']:.3f}")
    print(f"load after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
