"""Answerability on data the model never saw: the reader against the plain floor, in one run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/answerability.py [--sets squad-dev,hotpotqa,musique] [--json]

Per set, the balanced accuracy (BA: mean of answerable kept and unanswerable caught), the false
"not found" rate on answerable questions and the AUC of: the plain floor (the shipped 0.48 on the
best MiniLM cosine); docket's rule gate (the floor, plus exact identifiers and keyword cover above
the noise floor: docket.answerable, `answerable.reader = false`); and the reader (docket.reader,
the default gate) at its default threshold and at its balanced one; plus the best floor for that
set (in-sample: an upper bound for any floor). Then the reader's operating curve (POINTS): BA and
false "not found" at the default threshold, at the previous default's rule, at the thresholds
that keep false "not found" on HotpotQA and MuSiQue within 1, 2 and 3%, and at the balanced one. Held out means: SQuAD 2.0 dev (Normans, Rhine) is
never trained on, the model and both thresholds are the shipped ones benchmarks/train_reader.py
builds; HotpotQA and MuSiQue are judged by 5-fold cross-validation grouped by question (a
question's answerable, gold-removed and off-topic copies share a fold), each fold's model trained
on the other folds and the other training sets, its thresholds chosen on those training folds
only (their out-of-fold predictions), never on the judged fold. Beside the shipped reader, in the
same run and on the same splits, the previous one (its first train_reader.V1_FEATURES features,
trained by the same script: what shipped before "antonym" and "comp_title"). Also the reader's
size, load time and latency on a 50-candidate pool, first sight and warm. Reads ../shared/data; embeddings are
cached in .docket-cache/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial
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


def strict_floor(sets: list[T.Examples], max_false_nf: float = 0.03) -> float:
    """The highest floor on the best cosine whose false "not found" rate is at most `max_false_nf`
    on every set's answerable questions: the rule gate made strict enough for the default's budget."""
    grid = np.round(np.arange(0.05, 0.8, 0.005), 3)
    ok = [f for f in grid if all(np.mean(s.X[s.y, 0] < f) <= max_false_nf for s in sets if s.y.any())]
    return float(max(ok)) if ok else float(grid[0])


#: the operating points printed per set, each a rule that picks a threshold from out-of-fold
#: predictions on the training sets: the shipped default's, the previous default's, the highest
#: threshold whose false "not found" on HotpotQA's and MuSiQue's answerable questions stays at
#: most 1, 2 or 3%, and the balanced one
POINTS = {
    "default": T.default_threshold,
    "every set 3% (previous default)": partial(T.choose_threshold, max_false_nf=0.03),
    **{f"false NF {r:.0%}": partial(T.choose_threshold, max_false_nf=r, judged=T.FALSE_NF_SETS) for r in (0.01, 0.02, 0.03)},
    "balanced": T.choose_balanced_threshold,
}


def thresholds(tr: list[T.Examples], oof: dict[str, np.ndarray]) -> dict[str, float]:
    """Every operating point's threshold, chosen on these training sets' out-of-fold predictions."""
    return {name: rule(tr, oof) for name, rule in POINTS.items()}


def held_out_reader(test: T.Examples, train: list[T.Examples],
                    k: int = 5) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """P(answerable) for every question of `test` from models that never saw its group, and per
    question every operating point's threshold (POINTS) and the strict floor, each chosen on that
    model's training folds only (out-of-fold predictions there), never on the judged fold. `train`
    holds the other sets; the test set's off-topic copy (same questions, another pool) is cut to
    the training folds' questions too."""
    fid = T.folds_of(test.groups, k)
    p, strict = np.zeros(len(test.y)), np.zeros(len(test.y))
    ts = {name: np.zeros(len(test.y)) for name in POINTS}
    for f in range(k):
        held = {g for g, m in zip(test.groups, fid == f) if m}
        tr = [T.Examples(test.name, test.X[fid != f], test.y[fid != f], [g for g, m in zip(test.groups, fid != f) if m])]
        for s in train:
            keep = np.asarray([g not in held for g in s.groups], dtype=bool) if s.name.startswith(test.name) else \
                np.ones(len(s.y), dtype=bool)
            tr.append(T.Examples(s.name, s.X[keep], s.y[keep], [g for g, m in zip(s.groups, keep) if m]))
        oof = T.out_of_fold(tr)
        arr = T.fit(np.concatenate([s.X for s in tr]), np.concatenate([s.y for s in tr]), T.sample_weights(tr))
        p[fid == f] = T.reader_of(arr, "").probability(test.X[fid == f])
        for name, t in thresholds(tr, oof).items():
            ts[name][fid == f] = t
        strict[fid == f] = strict_floor(tr)
    return p, ts, strict


def latency(prepared: list, reader, runs: int = 200) -> dict:  # noqa: ANN001
    """features + probability on 50-candidate pools (the set's pools, topped up to 50 with the
    first pool's passages at a low cosine)."""
    from docket import reader as R

    pools = []
    fill = [(c.chunk.title or "", c.chunk.text) for p in prepared[:1] for c in p.query.ranked]
    for p in prepared[:runs]:
        ranked = list(p.query.ranked)
        heads = [c.chunk.title or "" for c in ranked]
        texts = [f"{c.chunk.title or ''}\n{c.chunk.text}" for c in ranked]
        cos = [c.score for c in ranked]
        while len(texts) < 50:
            h, t = fill[len(texts) % len(fill)]
            heads.append(h)
            texts.append(f"{h}\n{t}")
            cos.append(0.1)
        pools.append((p.item.question, texts[:50], cos[:50], heads[:50]))
    out: dict = {"pools": len(pools)}
    for kind in ("cold", "warm"):  # cold: no passage read before; warm: the pool's chunks seen by an earlier question
        ms = []
        for q, texts, cos, heads in pools:
            if kind == "cold":
                R.forget()
            t0 = time.perf_counter()
            reader.probability(R.features(q, texts, cos, heads))
            ms.append(1000 * (time.perf_counter() - t0))
        out[kind] = {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}
    return out


def _ba(found: np.ndarray, y: np.ndarray) -> float:
    return (float(np.mean(found[y])) + float(np.mean(~found[~y]))) / 2


def _fnf(found: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(~found[y]))


def _cell(r: dict, auc: bool = False) -> str:
    return f"{r['balanced']:.3f} / {100 * r['false_nf']:.1f}%" + (f" / {r['auc']:.3f}" if auc else "")


def _art(r: dict, which: str) -> str:
    return f"{r[which]['balanced']:.3f} / {100 * r[which]['false_nf']:.1f}%"


def judge(name: str, data: dict, train_names: list[str], reader) -> dict:  # noqa: ANN001
    """One set's row: the plain floor, the rule gate and the reader at every operating point."""
    from docket.answerable import evidence
    from docket.policy import NOT_FOUND_FLOOR

    ex, prepared = data[name]
    y, top = ex.y, ex.X[:, 0]
    train = [data[m][0] for m in train_names]
    if name in train_names:  # cross-validated by question, the other training sets always in
        p, ts, strict = held_out_reader(ex, [s for s in train if s.name != name])
        how = "5-fold by question; thresholds chosen on the training folds"
    else:  # the shipped reader; its thresholds' rules applied to the training sets' out-of-fold predictions
        p = reader.probability(ex.X)
        ts = {n: np.full(len(y), t) for n, t in thresholds(train, T.out_of_fold(train)).items()}
        strict = np.full(len(y), strict_floor(train))
        how = "never trained on (the shipped reader; thresholds chosen on the training sets)"
    exact = np.asarray([bool(evidence(pp.item.question, [c.chunk for c in pp.query.ranked],
                                      [c.score for c in pp.query.ranked]).exact) for pp in prepared])
    rule = rule_gate(prepared)
    # as the assembler decides: an exact identifier in a candidate overrides the reader, and a
    # pool smaller than the reader's training pools goes to the rule gate
    small = np.asarray([len(pp.query.ranked) < reader.min_pool for pp in prepared], dtype=bool)
    found = {"floor": top >= NOT_FOUND_FLOOR, "rule": rule, "strict_floor": (top >= strict) | exact,
             **{f"reader@{n}": np.where(small, rule, (p >= t) | exact) for n, t in ts.items()}}
    grid = np.arange(0.2, 0.8, 0.005)
    best_floor = max(grid, key=lambda f: T.balanced(top, y, f))
    row = {"questions": len(y), "unanswerable": int((~y).sum()), "held_out": how,
           "best_floor_in_sample": {"floor": round(float(best_floor), 3), "balanced": round(T.balanced(top, y, best_floor), 4)},
           "thresholds": {**{n: sorted(set(np.round(t, 2).tolist())) for n, t in ts.items()},
                          "strict_floor": sorted(set(np.round(strict, 3).tolist()))}}
    for k, f in found.items():
        row[k] = {"balanced": round(_ba(f, y), 4), "false_nf": round(_fnf(f, y), 4)}
    row["reader"], row["reader_balanced"] = row["reader@default"], row["reader@balanced"]
    row["floor"]["auc"] = round(_auc(top, y), 4)
    row["reader"]["auc"] = round(_auc(p, y), 4)
    return row


def squad_by_article(data: dict, train_names: list[str]) -> dict:
    """SQuAD 2.0 held out by article: each of the four articles with unanswerable questions
    (train: Zelda, Spectre; dev: Normans, Rhine) judged by a model trained on the other three and
    the other training sets, its thresholds chosen on them (out of fold)."""
    sq = [data[n][0] for n in ("squad-train", "squad-dev")]
    X, y = np.concatenate([e.X for e in sq]), np.concatenate([e.y for e in sq])
    groups = [g for e in sq for g in e.groups]
    arts = np.asarray([g.split("#")[0] for g in groups])
    other = [data[n][0] for n in train_names if not n.startswith("squad")]
    out = {}
    for a in sorted(set(arts)):
        m = arts == a
        tr = [T.Examples("squad", X[~m], y[~m], [g for g, k in zip(groups, ~m) if k]), *other]
        oof = T.out_of_fold(tr)
        t, tb = T.default_threshold(tr, oof), T.choose_balanced_threshold(tr, oof)
        arr = T.fit(np.concatenate([e.X for e in tr]), np.concatenate([e.y for e in tr]), T.sample_weights(tr))
        p, ya = T.reader_of(arr, "").probability(X[m]), y[m]
        out[a] = {"questions": int(m.sum()), "auc": round(_auc(p, ya), 4), "auc_top_cosine": round(_auc(X[m, 0], ya), 4),
                  "default": {"threshold": t, "balanced": round(T.balanced(p, ya, t), 4),
                              "false_nf": round(float(np.mean(p[ya] < t)), 4)},
                  "balanced": {"threshold": tb, "balanced": round(T.balanced(p, ya, tb), 4),
                               "false_nf": round(float(np.mean(p[ya] < tb)), 4)}}
    return out


def previous(data: dict, train_names: list[str], names: list[str], reader):  # noqa: ANN001, ANN201
    """The previous reader (the first V1_FEATURES features), trained and judged as the shipped
    one: the same sets, folds and threshold rules."""
    cut = {n: (T.Examples(e.name, e.X[:, :T.V1_FEATURES], e.y, e.groups), prepared) for n, (e, prepared) in data.items()}
    sizes = [len(p.query.ranked) for n in train_names for p in cut[n][1]]
    v1 = T.build([cut[n][0] for n in train_names], sizes, reader.embedder)
    rows = {n: judge(n, cut, train_names, v1) for n in names}
    by_article = squad_by_article(cut, train_names) if {"squad-train", "squad-dev"} <= set(cut) else {}
    return v1, rows, by_article


def print_curve(rows: dict, reader) -> None:  # noqa: ANN001
    """The reader's operating curve per set: BA / false "not found" at each POINTS threshold, the
    threshold(s) beside it (one per fold where cross-validated), as the assembler decides."""
    print("\nThe reader's operating points (thresholds chosen on the training sets' out-of-fold predictions, never "
          f"on the judged questions; shipped: {reader.threshold} default, {reader.meta['balanced_threshold']} balanced). "
          "BA / false NF (threshold):\n")
    print("| set | AUC | " + " | ".join(POINTS) + " |")
    print("|---|---|" + "---|" * len(POINTS))
    for n, r in rows.items():
        cells = [f"{_cell(r[f'reader@{k}'])} ({', '.join(f'{t:g}' for t in r['thresholds'][k])})" for k in POINTS]
        print(f"| {n} | {r['reader']['auc']:.3f} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="squad-dev,hotpotqa,musique")
    ap.add_argument("--train", default=T.DEFAULT_SETS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from docket.reader import shipped

    t0 = time.perf_counter()
    shipped.cache_clear()
    reader = shipped()
    load_ms = 1000 * (time.perf_counter() - t0)
    if reader is None:
        raise SystemExit("no shipped reader: run benchmarks/train_reader.py --write first")
    names = list(dict.fromkeys(args.sets.split(",") + args.train.split(",")))
    data = {n: T.examples(n) for n in names}
    rows = {n: judge(n, data, args.train.split(","), reader) for n in args.sets.split(",")}
    size = (T.OUT_FILE.stat().st_size if T.OUT_FILE.exists() else 0)
    by_article = squad_by_article(data, args.train.split(",")) if {"squad-train", "squad-dev"} <= set(data) else {}
    v1, v1_rows, v1_by_article = previous(data, args.train.split(","), args.sets.split(","), reader)
    report = {"sets": rows, "squad_by_article": by_article, "reader_file_bytes": size, "reader_load_ms": round(load_ms, 2),
              "previous_reader": {"features": T.V1_FEATURES, "thresholds": [v1.threshold, v1.meta["balanced_threshold"]],
                                  "sets": v1_rows, "squad_by_article": v1_by_article},
              "latency_50_candidates": latency(data[args.sets.split(",")[0]][1], reader)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print("| set | questions (unanswerable) | plain floor 0.48: BA / false NF / AUC | rule gate (old default): BA / "
          "false NF | strict floor (false NF <= 3% on the training sets): BA / false NF | reader, default threshold: BA / false NF / AUC | reader, balanced threshold: BA / false NF | "
          "best floor, in-sample | held out |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, r in rows.items():
        f, g, d, b, sf = r["floor"], r["rule"], r["reader"], r["reader_balanced"], r["strict_floor"]
        print(f"| {n} | {r['questions']} ({r['unanswerable']}) | {f['balanced']:.3f} / {100 * f['false_nf']:.1f}% / "
              f"{f['auc']:.3f} | {g['balanced']:.3f} / {100 * g['false_nf']:.1f}% | {sf['balanced']:.3f} / "
              f"{100 * sf['false_nf']:.1f}% ({r['thresholds']['strict_floor']}) | {d['balanced']:.3f} / "
              f"{100 * d['false_nf']:.1f}% / {d['auc']:.3f} | {b['balanced']:.3f} / {100 * b['false_nf']:.1f}% | "
              f"{r['best_floor_in_sample']['balanced']:.3f} ({r['best_floor_in_sample']['floor']}) | {r['held_out']}, "
              f"thresholds {r['thresholds']['default']} / {r['thresholds']['balanced']} |")
    print_curve(rows, reader)
    if by_article:
        print("\nSQuAD 2.0 held out by article (trained on the other three articles and the other sets):\n")
        print("| article | questions | AUC (best cosine alone) | default threshold: BA / false NF | balanced: BA / false NF |")
        print("|---|---|---|---|---|")
        for a, r in by_article.items():
            d, b = r["default"], r["balanced"]
            print(f"| {a} | {r['questions']} | {r['auc']:.3f} ({r['auc_top_cosine']:.3f}) | {d['balanced']:.3f} / "
                  f"{100 * d['false_nf']:.1f}% ({d['threshold']}) | {b['balanced']:.3f} / {100 * b['false_nf']:.1f}% "
                  f"({b['threshold']}) |")
    print(f"\nThe previous reader (its first {T.V1_FEATURES} features, trained by the same script) beside the shipped "
          "one, same splits and threshold rules:\n")
    print("| set | previous: BA default / false NF / AUC | previous: BA balanced / false NF | shipped: BA default / "
          "false NF / AUC | shipped: BA balanced / false NF |")
    print("|---|---|---|---|---|")
    pairs = [(n, report["previous_reader"]["sets"][n], r) for n, r in rows.items()]
    for n, o, r in pairs:
        print(f"| {n} | {_cell(o['reader'], True)} | {_cell(o['reader_balanced'])} | {_cell(r['reader'], True)} | "
              f"{_cell(r['reader_balanced'])} |")
    for a, r in by_article.items():
        o = report["previous_reader"]["squad_by_article"][a]
        print(f"| SQuAD by article: {a} | {_art(o, 'default')} / {o['auc']:.3f} | {_art(o, 'balanced')} | "
              f"{_art(r, 'default')} / {r['auc']:.3f} | {_art(r, 'balanced')} |")
    lat = report["latency_50_candidates"]
    print(f"\nreader: {size:,} bytes, loaded in {report['reader_load_ms']:.1f} ms; 50-candidate pool "
          f"({lat['pools']} pools): first sight p50 {lat['cold']['p50_ms']} ms / p95 {lat['cold']['p95_ms']} ms, warm "
          f"p50 {lat['warm']['p50_ms']} ms / p95 {lat['warm']['p95_ms']} ms; thresholds {reader.threshold} (default), "
          f"{reader.meta['balanced_threshold']} (balanced)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
