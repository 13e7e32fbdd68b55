"""Fit the policy's numbers on your own labelled data.

- duplicate threshold: from pairs labelled same / different (cosines of their vectors); the
  threshold goes in the gap between the most similar "different" pair and the least similar
  "same" pair, or, when they overlap, where balanced accuracy is best.
- score floor: from answerable and unanswerable questions, the cut on the top candidate's score
  with the best balanced accuracy.
- margin (relative floor): from answerable questions with gold chunks, the gap below the best
  candidate's (re-scored) score within which a chosen share of the gold chunks lies; the curve
  shows what each margin keeps of the gold and of the pool.
- answerability model: a logistic regression over docket.answerable's signals, evaluated by
  grouped cross-validation (no question is scored by a model that saw its group), and switched
  on only when, held out, floor + model beat the plain floor (`gate_decision`).

The floor is the not-found floor (`answerable.floor`): fitted on the best candidate's ranker
score, which is what the assembler compares it with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docket import answerable as A
from docket.embed import Embedder
from docket.errors import InputError
from docket.eval import metrics as M
from docket.eval.dataset import LabelledSet

# --- pairs -> duplicate threshold ----------------------------------------------------------------


@dataclass
class Pair:
    a: str
    b: str
    same: bool


def load_pairs(path: str | Path) -> list[Pair]:
    """JSONL lines {"a": text, "b": text, "same": true|false}."""
    from docket.safeio import iter_jsonl

    out = []
    for n, rec in iter_jsonl(path):
        if not isinstance(rec, dict) or not {"a", "b", "same"} <= rec.keys():
            raise InputError('needs "a", "b" (texts) and "same" (true/false)', where=f"{path}:{n}")
        for k in ("a", "b"):
            if not isinstance(rec[k], str) or not rec[k].strip():
                raise InputError("must be a non-empty text", where=f"{path}:{n}", field=k)
        if not isinstance(rec["same"], bool):
            raise InputError(f"must be true or false, got {rec['same']!r}", where=f"{path}:{n}", field="same")
        out.append(Pair(rec["a"], rec["b"], rec["same"]))
    if not out:
        raise InputError('holds no pairs; give one {"a", "b", "same"} record per line', where=str(path))
    return out


def derive_pairs(lset: LabelledSet, embedder: Embedder, per_item: int = 1) -> list[Pair]:
    """Pairs from a labelled set: each pool's most similar pair of *different* texts is a
    "different" pair (the hardest negatives); texts that are equal after normalising case,
    punctuation and spaces are "same" pairs. Label a few dozen real near-copies to do better."""
    from docket.moves.dedup import normalize

    pairs: list[Pair] = []
    for it in lset.items:
        texts = list(dict.fromkeys(c.text for c in it.chunks))
        if len(texts) < 2:
            continue
        norm: dict[str, str] = {}
        for t in texts:
            k = normalize(t)
            if k in norm:
                pairs.append(Pair(norm[k], t, True))
            else:
                norm[k] = t
        distinct = list(norm.values())
        if len(distinct) < 2:
            continue
        v = embedder.embed(distinct)
        sims = v @ v.T
        np.fill_diagonal(sims, -2)
        flat = np.argsort(-sims, axis=None)
        seen = 0
        for idx in flat[: 2 * per_item : 2]:
            i, j = divmod(int(idx), len(distinct))
            pairs.append(Pair(distinct[i], distinct[j], False))
            seen += 1
    return pairs


def fit_duplicate_threshold(pairs: Sequence[Pair], embedder: Embedder) -> dict[str, Any]:
    if not pairs:
        raise InputError("no pairs to calibrate on")
    texts = list(dict.fromkeys([p.a for p in pairs] + [p.b for p in pairs]))
    vec = dict(zip(texts, embedder.embed(texts)))
    cos = [float(vec[p.a] @ vec[p.b]) for p in pairs]
    same = [c for c, p in zip(cos, pairs) if p.same]
    diff = [c for c, p in zip(cos, pairs) if not p.same]
    out: dict[str, Any] = {"pairs": len(pairs), "same": len(same), "different": len(diff)}
    if diff:
        out["max_different"] = max(diff)
    if same:
        out["min_same"] = min(same)
    if same and diff and min(same) > max(diff):
        out["threshold"] = round((min(same) + max(diff)) / 2, 4)
        out["gap"] = round(min(same) - max(diff), 4)
        out["method"] = "midpoint of the gap between labelled same and different pairs"
    elif same and diff:
        t, b = M.best_threshold(cos, [p.same for p in pairs])
        out["threshold"] = round(t, 4)
        out["balanced_accuracy"] = round(b, 4)
        out["method"] = "same and different pairs overlap: the cut with the best balanced accuracy"
    else:
        # no labelled copies: nothing to fit, but show how close different texts come
        ds = sorted(diff) if diff else [0.0]
        out["threshold"] = None
        out["different_quantiles"] = {q: round(M.percentile(ds, q), 4) for q in (50, 90, 99, 100)}
        out["different_at_or_above_0.95"] = round(sum(d >= 0.95 for d in ds) / len(ds), 4)
        out["method"] = ("no 'same' pairs: nothing to fit. The quantiles show how similar different texts get; "
                         "a threshold must sit above them (label real copies with --pairs)")
    return out


# --- floor ------------------------------------------------------------------------------------


def floor_curve(top_scores: Sequence[float], answerable: Sequence[bool], steps: int = 11) -> list[dict[str, float]]:
    """The trade-off: for cuts across the score range, precision / recall of "not found"."""
    lo, hi = min(top_scores), max(top_scores)
    rows = []
    for t in np.linspace(lo, hi, steps):
        cm = M.confusion([s < t for s in top_scores], [not a for a in answerable])
        rows.append({"floor": round(float(t), 4), "not_found_precision": cm.precision or 0.0,
                     "not_found_recall": cm.recall or 0.0, "balanced_accuracy": cm.balanced_accuracy or 0.0})
    return rows


def fit_floor(top_scores: Sequence[float], answerable: Sequence[bool]) -> dict[str, Any]:
    """The floor (midway between two observed scores) whose "not found below it" rule has the
    best balanced accuracy."""
    neg = [not a for a in answerable]
    vals = sorted(set(top_scores))
    cuts = [vals[0] - 0.01] + [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [vals[-1] + 0.01]
    best_floor, best_b = cuts[0], -1.0
    for f in cuts:
        b = M.confusion([s < f for s in top_scores], neg).balanced_accuracy or 0.0
        if b > best_b:
            best_floor, best_b = f, b
    floor = round(best_floor, 4)
    cm = M.confusion([s < floor for s in top_scores], neg)
    return {"floor": floor, "balanced_accuracy": round(cm.balanced_accuracy or 0.0, 4),
            "auc": round(M.auc([-s for s in top_scores], neg) or 0.0, 4), "accuracy": round(cm.accuracy or 0.0, 4),
            "not_found": cm.to_json()}


def cv_floor_predictions(top_scores: Sequence[float], answerable: Sequence[bool], groups: Sequence[str],
                         folds: int = 5) -> list[bool]:
    """Held-out "not found" predictions of the floor: fit on the training folds, judge the test fold."""
    pred = [False] * len(top_scores)
    for test in group_folds(groups, folds):
        tset = set(test.tolist())
        train = [i for i in range(len(top_scores)) if i not in tset]
        f = fit_floor([top_scores[i] for i in train], [answerable[i] for i in train])["floor"]
        for i in test:
            pred[int(i)] = top_scores[int(i)] < f
    return pred


def cv_floor(top_scores: Sequence[float], answerable: Sequence[bool], groups: Sequence[str], folds: int = 5) -> dict[str, Any]:
    """The floor alone, held out: fit on the training folds, judge the test fold."""
    pred = cv_floor_predictions(top_scores, answerable, groups, folds)
    cm = M.confusion(pred, [not a for a in answerable])
    return {"folds": len(group_folds(groups, folds)), **cm.to_json()}


# --- margin (relative floor) -----------------------------------------------------------------------


def gold_gaps(scores: Sequence[float], is_gold: Sequence[bool]) -> tuple[float | None, list[float]]:
    """For one pool: how far the weakest gold candidate sits below the best score (None without
    gold), and every candidate's gap (for the share of the pool a margin keeps)."""
    if not scores:
        return None, []
    best = max(scores)
    gaps = [best - s for s in scores]
    gold = [g for g, y in zip(gaps, is_gold) if y]
    return (max(gold) if gold else None), gaps


def margin_inputs(prepared: Sequence[Any], policy: Any, counter: Any, embedder: Embedder) -> tuple[list[float], list[list[float]]]:
    """Per answerable question with gold in its pool: the weakest gold's gap below the best score,
    on the scores the assembler compares with the margin (after re-scoring, when it is on)."""
    from docket.context import Context
    from docket.rescore import rescore

    q_gaps: list[float] = []
    pools: list[list[float]] = []
    for p in prepared:
        if not p.item.answerable or not p.item.gold or not p.query.ranked:
            continue
        ranked = list(p.query.ranked)
        if policy.rescore.enabled:
            ctx = Context(question=p.item.question, store=None, policy=policy, counter=counter, embedder=embedder)  # type: ignore[arg-type]
            ranked = rescore(ranked, ctx)
        gold = set(p.item.gold)
        g, gaps = gold_gaps([c.score for c in ranked], [c.chunk.id in gold for c in ranked])
        if g is not None:
            q_gaps.append(g)
            pools.append(gaps)
    return q_gaps, pools


def fit_margin(question_gaps: Sequence[float], pool_gaps: Sequence[Sequence[float]], keep: float = 0.99,
               steps: Sequence[float] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5)) -> dict[str, Any]:
    """The smallest margin (rounded up to 0.01) that keeps every gold chunk of `keep` of the
    questions, and the trade-off curve: per margin, the share of questions with all gold kept and
    the share of candidates kept (what the margin saves before the budget is even consulted)."""
    if not question_gaps:
        raise InputError("has no answerable questions with gold chunks in their pools; the margin needs some")
    if not 0 < keep <= 1:
        raise InputError("must be in (0, 1]", field="--margin-keep")
    q = np.asarray(question_gaps, dtype=float)
    flat = np.asarray([g for pool in pool_gaps for g in pool], dtype=float)
    # the smallest gap that covers ceil(keep * n) questions, rounded up to 0.01, plus 0.01 of slack
    need = float(np.sort(q)[max(0, math.ceil(round(keep * len(q), 9)) - 1)])
    margin = round(math.ceil(round(need * 100, 6)) / 100 + 0.01, 2)

    def row(m: float) -> dict[str, float]:
        return {"margin": m, "gold_kept": round(float(np.mean(q <= m)), 4),
                "candidates_kept": round(float(np.mean(flat <= m)), 4) if len(flat) else 0.0}

    return {"margin": margin, "keep": keep, "questions": len(q), **{k: v for k, v in row(margin).items() if k != "margin"},
            "curve": [row(m) for m in sorted(set(steps) | {margin})]}


# --- logistic regression (numpy, L2, Newton) -----------------------------------------------------


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> tuple[np.ndarray, float]:
    """Weights and bias on the raw features (standardised inside, folded back)."""
    mu = X.mean(0)
    sd = X.std(0)
    sd[sd == 0] = 1.0
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = np.eye(Z.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(Z @ w, -50, 50)))
        g = Z.T @ (p - y) + reg @ w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + reg + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    coef = w[:-1] / sd
    bias = float(w[-1] - (w[:-1] * mu / sd).sum())
    return coef, bias


def _predict(X: np.ndarray, coef: np.ndarray, bias: float) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(X @ coef + bias, -50, 50)))


def signal_matrix(lset: LabelledSet, embedder: Embedder, top_n: int = 3, names: Sequence[str] = A.SIGNALS) -> np.ndarray:
    from docket.eval.runner import prepare

    rows = []
    for p in prepare(lset, embedder):
        sig = A.features(p.query.ranked, p.item.question, top_n=top_n,
                         embedder=embedder if "sent_cos" in names else None, qvec=p.query.qvec)
        rows.append([sig[n] for n in names])
    return np.asarray(rows, dtype=float)


def group_folds(groups: Sequence[str], k: int) -> list[np.ndarray]:
    """Test-index arrays: whole groups per fold (round robin over the sorted group names)."""
    names = sorted(set(groups))
    k = max(2, min(k, len(names)))
    assign = {g: i % k for i, g in enumerate(names)}
    return [np.array([i for i, g in enumerate(groups) if assign[g] == f]) for f in range(k)]


def cv_answerable(X: np.ndarray, y: Sequence[bool], groups: Sequence[str], folds: int = 5,
                  l2: float = 1.0) -> tuple[np.ndarray, list[bool]]:
    """Held-out scores (shifted so 0.5 is each fold's own threshold) and "not found" predictions:
    every question is judged by a model fit on the other groups' folds."""
    yv = np.asarray(y, dtype=float)
    probs = np.zeros(len(yv))
    for test in group_folds(groups, folds):
        train = np.setdiff1d(np.arange(len(yv)), test)
        coef, bias = fit_logistic(X[train], yv[train], l2)
        # the threshold is chosen on the training folds too (balanced accuracy)
        t, _ = M.best_threshold(list(_predict(X[train], coef, bias)), [bool(v) for v in yv[train]])
        probs[test] = _predict(X[test], coef, bias) - t + 0.5
    return probs, [bool(p < 0.5) for p in probs]


def fit_answerable(
    X: np.ndarray, y: Sequence[bool], groups: Sequence[str], names: Sequence[str] = A.SIGNALS, folds: int = 5,
    l2: float = 1.0,
) -> dict[str, Any]:
    """Cross-validated figures (grouped folds) and the final model fit on everything."""
    yv = np.asarray(y, dtype=float)
    probs, pred_nf = cv_answerable(X, y, groups, folds, l2)
    cm = M.confusion(pred_nf, [not bool(v) for v in yv])
    coef, bias = fit_logistic(X, yv, l2)
    t, _ = M.best_threshold(list(_predict(X, coef, bias)), [bool(v) for v in yv])
    return {
        "cv": {"folds": len(group_folds(groups, folds)), **cm.to_json(),
               "auc": M.auc(list(probs), [bool(v) for v in yv])},
        "weights": {n: round(float(c), 5) for n, c in zip(names, coef)},
        "bias": round(bias, 5),
        "threshold": round(float(min(1.0, max(0.0, t))), 4),
    }


def gate_decision(y: Sequence[bool], floor_nf: Sequence[bool], model_nf: Sequence[bool],
                  min_gain: float = 0.01) -> dict[str, Any]:
    """Whether to switch the answerability model on: only when, held out, the decision the
    assembler would then make ("not found" below the floor OR when the model says so) beats the
    plain floor's balanced accuracy by at least `min_gain` (a tenth of a point on a few hundred
    questions is noise, not a reason to run a model). A model at or below the floor, or at or
    below chance, stays off."""
    truth = [not a for a in y]
    floor_ba = M.confusion(list(floor_nf), truth).balanced_accuracy or 0.0
    combined = [f or m for f, m in zip(floor_nf, model_nf)]
    combined_ba = M.confusion(combined, truth).balanced_accuracy or 0.0
    model_ba = M.confusion(list(model_nf), truth).balanced_accuracy or 0.0
    enable = combined_ba >= floor_ba + min_gain and combined_ba > 0.5
    if enable:
        why = (f"switched on: held out, floor + model reach {100 * combined_ba:.1f}% balanced accuracy against "
               f"{100 * floor_ba:.1f}% for the floor alone")
    else:
        why = (f"left off: held out, floor + model reach {100 * combined_ba:.1f}% balanced accuracy (the model alone "
               f"{100 * model_ba:.1f}%), which does not beat the plain floor's {100 * floor_ba:.1f}% by "
               f"{100 * min_gain:g} point(s)")
    return {"enabled": enable, "min_gain": min_gain, "floor_balanced_accuracy": round(floor_ba, 4),
            "model_balanced_accuracy": round(model_ba, 4), "combined_balanced_accuracy": round(combined_ba, 4),
            "reason": why}


def floor_scores(prepared: Sequence[Any]) -> list[float]:
    """Per question, the score the not-found floor is compared with in the assembler: the best
    candidate's score as the ranker gave it (re-scoring's bonuses depend on the pool and are not
    used for "not found")."""
    return [max((c.score for c in p.query.ranked), default=-1.0) for p in prepared]


# --- writing the policy ---------------------------------------------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("cannot write a non-finite number to TOML")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if hasattr(v, "isoformat"):
        return v.isoformat()
    raise ValueError(f"cannot write {type(v).__name__} to TOML")


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def dumps_toml(data: dict[str, Any]) -> str:
    """A small TOML writer for policy files (top-level scalars, then one table per section)."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict) and v is not None]
    for k, v in data.items():
        if isinstance(v, dict):
            if lines:
                lines.append("")
            lines.append(f"[{_toml_key(k)}]")
            lines.extend(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None)
    return "\n".join(lines) + "\n"


def write_policy_values(path: str | Path, updates: dict[str, dict[str, Any]]) -> None:
    """Merge section values into a policy TOML (created if missing), validating the result."""
    from docket.policy import load_policy_dict
    from docket.safeio import load_toml, write_text_atomic

    p = Path(path)
    data: dict[str, Any] = load_toml(p) if p.exists() or p.is_symlink() else {}
    for section, values in updates.items():
        data.setdefault(section, {}).update(values)
    load_policy_dict(data, where=str(p))  # refuse to write an invalid policy
    write_text_atomic(p, "# written by `docket calibrate`; edit freely\n" + dumps_toml(data))


# --- a store without labels -> probe questions -> the not-found floor for its embedder ------------


@dataclass
class Probe:
    """A question sampled from one chunk: with its document the pool answers it, without it
    (every version of that document removed) only other documents remain."""

    question: str
    doc: str
    chunk: str


def make_probes(chunks: Sequence[Any], n: int = 200, seed: int = 0, words_max: int = 8) -> list[Probe]:
    """Up to `n` probes, one per sampled chunk: every other content word of one of its sentences
    (a keyword question, so the cosine to its own chunk is far from the 1.0 of a copied sentence)."""
    from docket.text import content_words

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(chunks)).tolist()
    out: list[Probe] = []
    seen: set[str] = set()
    for i in order:
        c = chunks[i]
        sents = [s for s in A.sentences(c.text) if len(content_words(s)) >= 6]
        if not sents:
            continue
        cw = content_words(sents[int(rng.integers(len(sents)))])
        q = " ".join(cw[::2][:words_max])
        if q in seen:
            continue
        seen.add(q)
        out.append(Probe(q, c.doc, c.id))
        if len(out) >= n:
            break
    return out


def probe_scores(store: Any, embedder: Embedder, probes: Sequence[Probe], depth: int = 50) -> tuple[list[float], list[bool]]:
    """For each probe: the best cosine with its own document in the pool (answerable) and the
    best without any version of it (unanswerable). Searches the whole store (an administrator's
    calibration, not an answer: no principal)."""
    from docket.store.protocol import Filters

    tops: list[float] = []
    labels: list[bool] = []
    everything = Filters(unrestricted=True)
    qvecs = embedder.embed([p.question for p in probes]) if probes else np.zeros((0, embedder.dim), np.float32)
    for p, qv in zip(probes, qvecs):
        hits = store.search_dense(qv, depth, everything)
        if not hits:
            continue
        docs = {cid: c.doc for cid, c in store.get_many([cid for cid, _ in hits]).items()}
        others = [s for cid, s in hits if docs.get(cid) not in (None, p.doc)]
        if not others:
            continue  # every hit is the probe's own document: no unanswerable copy to judge
        tops += [float(hits[0][1]), float(others[0])]
        labels += [True, False]
    return tops, labels


def store_chunks(store: Any, docs_max: int = 400, seed: int = 0) -> list[Any]:
    """The chunks of up to `docs_max` documents sampled from the store (current versions first)."""
    docs = sorted(store.documents())
    rng = np.random.default_rng(seed)
    pick = set(rng.permutation(docs).tolist()[:docs_max]) if docs else set()
    out: list[Any] = []
    done: set[str] = set()
    for dv in store.export():
        if dv.doc in pick and dv.doc not in done and dv.status != "superseded":
            out.extend(dv.chunks)
            done.add(dv.doc)
            if len(done) == len(pick):
                break
    return out


def fit_store_floor(store: Any, embedder: Embedder, n: int = 200, seed: int = 0, folds: int = 5) -> dict[str, Any]:
    """The not-found floor for the store's embedder, fitted on probes sampled from the store."""
    probes = make_probes(store_chunks(store, seed=seed), n=n, seed=seed)
    tops, y = probe_scores(store, embedder, probes)
    if len(tops) < 20:
        raise InputError(f"gives only {len(tops) // 2} usable probe question(s) (at least 10 needed: documents "
                         "with sentences of six or more content words, and at least two documents); "
                         "calibrate on a labelled set instead (docket calibrate SET.jsonl)", where=str(store.location))
    fl = fit_floor(tops, y)
    fl["curve"] = floor_curve(tops, y)
    groups = [str(i // 2) for i in range(len(tops))]  # a probe's two copies share a fold
    fl["held_out"] = cv_floor(tops, y, groups, folds)
    fl["probes"] = len(tops) // 2
    fl["embedder"] = embedder.name
    return fl
