"""Answerability on data the model never saw: the reader against the plain floor, in one run.

    .venv/bin/python benchmarks/answerability.py [--sets squad-dev,hotpotqa,musique] [--json]

Per set, the balanced accuracy of "not found" (mean of answerable kept and unanswerable caught)
for: the plain floor (the shipped 0.48 on the best MiniLM cosine); the best floor for that set
(in-sample: an upper bound for any floor); docket's rule gate (the floor, plus exact identifiers
and keyword cover above the noise floor: docket.answerable); and the reader (docket.reader), held
out. Held out means: SQuAD 2.0 dev (Normans, Rhine) is never trained on, the model is the one
benchmarks/train_reader.py builds; HotpotQA and MuSiQue are judged by 5-fold cross-validation
grouped by question (a question's answerable and gold-removed copies share a fold), each fold's
model trained on the other folds and the other training sets. Also: the false "not found" rate
on answerable questions, the AUC, and the reader's size, load time and latency on a 50-candidate
pool. Reads ../shared/data; embeddings are cached in .docket-cache/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_reader as T  # noqa: E402

NOISE_FLOOR = 0.40  # MiniLM's (data/presets.toml)


def _auc(p: np.ndarray, y: np.ndarray) -> float:
    pos, neg = p[y], p[~y]
    if not len(pos) or not len(neg):
        return float("nan")
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def rule_gate(prepared: list) -> np.ndarray:  # noqa: ANN001
    """docket.answerable's rule on each pool: True = found."""
    from docket.answerable import KEYWORD_COVER, evidence
    from docket.policy import NOT_FOUND_FLOOR

    out = []
    for p in prepared:
        ranked = list(p.query.ranked)
        scores = [c.score for c in ranked]
        best = max(scores, default=-1.0)
        if best < NOISE_FLOOR:
            out.append(bool(evidence(p.item.question, [c.chunk for c in ranked], scores).exact))
            continue
        ev = evidence(p.item.question, [c.chunk for c in ranked], scores)
        out.append(best >= NOT_FOUND_FLOOR or bool(ev.exact) or (ev.keyword >= KEYWORD_COVER and ev.keyword_score >= NOISE_FLOOR))
    return np.asarray(out, dtype=bool)


def held_out_reader(test: T.Examples, train: list[T.Examples], k: int = 5) -> np.ndarray:
    """P(answerable) for every question of `test`, from models that never saw its group."""
    fid = T.folds_of(test.groups, k)
    out = np.zeros(len(test.y))
    for f in range(k):
        tr = [T.Examples(test.name, test.X[fid != f], test.y[fid != f], []), *train]
        arr = T.fit(np.concatenate([s.X for s in tr]), np.concatenate([s.y for s in tr]), T.sample_weights(tr))
        out[fid == f] = T.reader_of(arr, "").probability(test.X[fid == f])
    return out


def latency(prepared: list, reader, runs: int = 200) -> dict:  # noqa: ANN001
    """features + probability on 50-candidate pools (SQuAD articles' paragraphs, topped up)."""
    from docket.reader import features

    pools = []
    texts_all = [f"{c.chunk.title or ''}\n{c.chunk.text}" for p in prepared[:1] for c in p.query.ranked]
    for p in prepared[:runs]:
        ranked = list(p.query.ranked)
        texts = [f"{c.chunk.title or ''}\n{c.chunk.text}" for c in ranked]
        cos = [c.score for c in ranked]
        while len(texts) < 50:
            texts.append(texts_all[len(texts) % len(texts_all)])
            cos.append(0.1)
        pools.append((p.item.question, texts[:50], cos[:50]))
    from docket import reader as R

    out: dict = {"pools": len(pools)}
    for kind in ("cold", "warm"):  # cold: no passage read before; warm: the pool's chunks seen by an earlier question
        ms = []
        for q, texts, cos in pools:
            if kind == "cold":
                R._bag.cache_clear()
            t0 = time.perf_counter()
            reader.probability(features(q, texts, cos))
            ms.append(1000 * (time.perf_counter() - t0))
        out[kind] = {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="squad-dev,hotpotqa")
    ap.add_argument("--train", default="squad-train,hotpotqa,hotpotqa-offtopic")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from docket.answerable import evidence
    from docket.policy import NOT_FOUND_FLOOR
    from docket.reader import shipped

    t0 = time.perf_counter()
    shipped.cache_clear()
    reader = shipped()
    load_ms = 1000 * (time.perf_counter() - t0)
    if reader is None:
        raise SystemExit("no shipped reader: run benchmarks/train_reader.py --write first")
    names = list(dict.fromkeys(args.sets.split(",") + args.train.split(",")))
    data = {n: T.examples(n) for n in names}
    train_names = args.train.split(",")
    rows = {}
    for n in args.sets.split(","):
        ex, prepared = data[n]
        y = ex.y
        top = ex.X[:, 0]
        if n in train_names:  # cross-validated, the other training sets always in
            p = held_out_reader(ex, [data[m][0] for m in train_names if m != n])
            how = "5-fold by question, other sets in training"
        else:
            p = reader.probability(ex.X)
            how = "never trained on (the shipped reader)"
        exact = np.asarray([bool(evidence(pp.item.question, [c.chunk for c in pp.query.ranked],
                                          [c.score for c in pp.query.ranked]).exact) for pp in prepared])
        # as the assembler decides: with the reader in charge the best candidate always reaches it
        reader_found = (p >= reader.threshold) | exact
        floor_found = top >= NOT_FOUND_FLOOR
        rule_found = rule_gate(prepared)
        either = rule_found | reader_found  # the reader only rescuing what the rule gate refuses
        grid = np.arange(0.2, 0.8, 0.005)
        best_floor = max(grid, key=lambda f: T.balanced(top, y, f))

        def ba(found: np.ndarray, y: np.ndarray = y) -> float:
            return (float(np.mean(found[y])) + float(np.mean(~found[~y]))) / 2

        def fnf(found: np.ndarray, y: np.ndarray = y) -> float:
            return float(np.mean(~found[y]))

        rows[n] = {"questions": len(y), "unanswerable": int((~y).sum()), "held_out": how,
                   "floor_0.48": {"balanced": round(ba(floor_found), 4), "false_nf": round(fnf(floor_found), 4)},
                   "best_floor_in_sample": {"floor": round(float(best_floor), 3),
                                            "balanced": round(T.balanced(top, y, best_floor), 4)},
                   "rule_gate": {"balanced": round(ba(rule_found), 4), "false_nf": round(fnf(rule_found), 4)},
                   "reader": {"balanced": round(ba(reader_found), 4), "false_nf": round(fnf(reader_found), 4),
                              "auc": round(_auc(p, y), 4), "threshold": reader.threshold,
                              "best_threshold_balanced": round(max(T.balanced(p, y, t) for t in np.arange(0.05, 0.95, 0.01)), 4)},
                   "rule_or_reader": {"balanced": round(ba(either), 4), "false_nf": round(fnf(either), 4)},
                   "auc_top_cosine": round(_auc(top, y), 4)}
    size = (T.OUT_FILE.stat().st_size if T.OUT_FILE.exists() else 0)
    report = {"sets": rows, "reader_file_bytes": size, "reader_load_ms": round(load_ms, 2),
              "latency_50_candidates": latency(data[args.sets.split(",")[0]][1], reader)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("| set | questions (unanswerable) | floor 0.48: balanced acc. / false NF | best floor, in-sample | "
          "rule gate: balanced / false NF | reader, held out: balanced / false NF (AUC) | reader at its best threshold | "
          "rule or reader |")
    print("|---|---|---|---|---|---|---|---|")
    for n, r in rows.items():
        print(f"| {n} | {r['questions']} ({r['unanswerable']}) | {r['floor_0.48']['balanced']:.3f} / "
              f"{100 * r['floor_0.48']['false_nf']:.1f}% | {r['best_floor_in_sample']['balanced']:.3f} "
              f"({r['best_floor_in_sample']['floor']}) | {r['rule_gate']['balanced']:.3f} / "
              f"{100 * r['rule_gate']['false_nf']:.1f}% | {r['reader']['balanced']:.3f} / "
              f"{100 * r['reader']['false_nf']:.1f}% ({r['reader']['auc']:.3f}) | "
              f"{r['reader']['best_threshold_balanced']:.3f} | {r['rule_or_reader']['balanced']:.3f} / "
              f"{100 * r['rule_or_reader']['false_nf']:.1f}% |")
    lat = report["latency_50_candidates"]
    print(f"\nreader: {size:,} bytes, loaded in {report['reader_load_ms']:.1f} ms; 50-candidate pool "
          f"({lat['pools']} pools): cold p50 {lat['cold']['p50_ms']} ms / p95 {lat['cold']['p95_ms']} ms, warm p50 "
          f"{lat['warm']['p50_ms']} ms / p95 {lat['warm']['p95_ms']} ms; threshold {reader.threshold}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
