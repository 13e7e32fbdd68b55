"""MiniLM embedding cost, and its vectors bit for bit, for whichever docket is on PYTHONPATH.

    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/embed_speed.py            # timing table
    PYTHONPATH=$PWD/src      .venv/bin/python benchmarks/embed_speed.py
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/embed_speed.py --dump /tmp/old.npz --passages 3000
    PYTHONPATH=$PWD/src      .venv/bin/python benchmarks/embed_speed.py --dump /tmp/new.npz --passages 3000
    .venv/bin/python benchmarks/embed_speed.py --compare /tmp/old.npz /tmp/new.npz

Timing: p50 / p90 of embedding one question (`ask` embeds one), wall and CPU (process time, all
threads), over the questions of ../shared/data; then of a call with 32 paragraphs (indexing).
Dump: every question one at a time, `--passages` paragraphs one at a time and in one call (the
embedder's own batches of 32, mixed lengths), and the edge texts (empty, a lone surrogate, longer
than the model's 256 tokens) alone and in a mixed call. Compare: `np.array_equal` of every array,
the stores hold vectors made by this code, so a change must give the same bits.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA, paragraphs  # noqa: E402

from docket.embed import MiniLMEmbedder  # noqa: E402

EDGE_TEXTS = ["", "\ud800", "a", "caf\u00e9 \U0001f600 \u0000 x", "word " * 400, "Paris. " * 40]


def questions() -> list[str]:
    """Every question of hotpotqa, musique and squad-v2, in file order."""
    out = [json.loads(line)["question_text"] for line in (DATA / "hotpotqa" / "dev250.jsonl").open()]
    out += [q["question"] for q in json.loads((DATA / "musique" / "musique_train.json").read_text())]
    squad = json.loads((DATA / "squad-v2" / "dev-v2.0.subset.json").read_text())
    out += [qa["question"] for art in squad["data"] for p in art["paragraphs"] for qa in p["qas"]]
    return out


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q))


def timing(model: MiniLMEmbedder, qs: list[str], paras: list[str], rounds: int) -> dict[str, float]:
    """p50 / p90 ms of one question and of a 32-paragraph call, wall and CPU."""
    for q in qs[:10]:
        model.embed([q])
    model.embed(paras[:32])
    one_w, one_c, batch_w, batch_c = [], [], [], []
    for _ in range(rounds):
        for q in qs:
            w, c = time.perf_counter(), time.process_time()
            model.embed([q])
            one_w.append(time.perf_counter() - w)
            one_c.append(time.process_time() - c)
    for start in range(0, len(paras) - 31, 32):
        w, c = time.perf_counter(), time.process_time()
        model.embed(paras[start : start + 32])
        batch_w.append(time.perf_counter() - w)
        batch_c.append(time.process_time() - c)
    ms = 1e3
    return {"one_wall_p50": statistics.median(one_w) * ms, "one_wall_p90": _pct(one_w, 90) * ms,
            "one_cpu_p50": statistics.median(one_c) * ms, "one_cpu_p90": _pct(one_c, 90) * ms,
            "b32_wall_p50": statistics.median(batch_w) * ms, "b32_cpu_p50": statistics.median(batch_c) * ms,
            "b32_calls": len(batch_w), "questions": len(qs), "load_avg": os.getloadavg()[0]}


def dump(model: MiniLMEmbedder, qs: list[str], paras: list[str], path: str) -> None:
    arrays = {
        "questions_one_by_one": np.concatenate([model.embed([q]) for q in qs]),
        "passages_one_by_one": np.concatenate([model.embed([p]) for p in paras[:300]]),
        "passages_batched": model.embed(paras),
        "questions_batched": model.embed(qs),
        "edge_one_by_one": np.concatenate([model.embed([t]) for t in EDGE_TEXTS]),
        "edge_mixed": model.embed(EDGE_TEXTS + qs[:20] + paras[:20]),
    }
    np.savez(path, **arrays)
    print(json.dumps({k: list(v.shape) for k, v in arrays.items()}))


def compare(a_path: str, b_path: str) -> int:
    a, b = np.load(a_path), np.load(b_path)
    bad = 0
    for key in sorted(set(a.files) | set(b.files)):
        if key not in a.files or key not in b.files:
            print(f"{key}: only in one file")
            bad += 1
            continue
        x, y = a[key], b[key]
        same = x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        diff = float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.shape == y.shape else float("nan")
        print(f"{key:24s} {str(x.shape):12s} bit-identical={same} max|diff|={diff:.3g}")
        bad += not same
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=640, help="paragraphs to use (timing: calls of 32)")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the questions when timing")
    ap.add_argument("--questions", type=int, default=300, help="questions to time (dump uses all)")
    ap.add_argument("--dump", metavar="NPZ", help="write the vectors of the texts above to NPZ")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="are two dumps bit-identical")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    qs = questions()
    paras = [text for _, text in paragraphs()][: args.passages]
    w = time.perf_counter()
    model = MiniLMEmbedder()
    model.embed(["warm up"])
    load_ms = (time.perf_counter() - w) * 1e3
    if args.dump:
        dump(model, qs, paras, args.dump)
        return 0
    row = timing(model, qs[: args.questions], paras, args.rounds)
    row["load_and_first_ms"] = load_ms
    print(json.dumps({k: round(v, 3) for k, v in row.items()}))
    print("| one question p50 / p90 wall ms | CPU ms | 32 paragraphs p50 wall ms | CPU ms | load + first ms | load avg |")
    print("|---|---|---|---|---|---|")
    print(f"| {row['one_wall_p50']:.2f} / {row['one_wall_p90']:.2f} | {row['one_cpu_p50']:.2f} / {row['one_cpu_p90']:.2f} "
          f"| {row['b32_wall_p50']:.0f} | {row['b32_cpu_p50']:.0f} | {load_ms:.0f} | {row['load_avg']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
