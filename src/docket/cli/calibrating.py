"""`docket calibrate`, behind its options: the options as one frozen `CalibrateArgs`, then each
fit in its own step (the store's floor, the duplicate threshold, the margin, the floor and the
answerability model) adding its result and its policy values. The command in docket.cli.evaluate
only declares the options."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docket.cli import options as opt
from docket.errors import InputError

if TYPE_CHECKING:
    from docket.eval.dataset import LabelledSet

#: docket.eval.dataset.FORMATS, spelt out so `docket --help` need not import the evaluation (a test keeps them equal)
SET_FORMATS = ("docket", "hotpotqa", "musique", "squad-v2", "bipia", "poisonedrag")

#: how `calibrate` groups questions for cross-validation
GROUP_BY = ("paragraph", "article", "item")

# --- the options only `docket calibrate` takes --------------------------------------------------
SetPath = Annotated[Path | None, typer.Argument(help="A labelled set with unanswerable questions (floor, answerability).",
                                                callback=opt.input_path)]
Pairs = Annotated[Path | None, typer.Option("--pairs", help='JSONL of {"a", "b", "same"} pairs for the duplicate threshold.',
                                            callback=opt.input_file)]
DerivePairs = Annotated[bool, typer.Option("--derive-pairs", help="Derive pairs from the set's pools (hardest different "
                                           "pairs, exact copies).")]
PolicyOut = Annotated[Path | None, typer.Option("--write", help="Write the fitted values into this policy TOML (merged).",
                                                callback=opt.output_file)]
SetFormat = Annotated[str | None, typer.Option("--set-format", help="Force the set's format.",
                                               callback=opt.choice(*SET_FORMATS))]
GroupBy = Annotated[str, typer.Option("--group-by", help="Cross-validation groups: paragraph, article (squad-v2 meta) "
                                      "or item.", callback=opt.choice(*GROUP_BY))]
Folds = Annotated[int, typer.Option("--folds", help="Cross-validation folds.", callback=opt.int_range(2, 1000))]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the first N questions.", callback=opt.positive)]
EmbedderName = Annotated[str, typer.Option("--embedder", help="minilm (default) or hash.",
                                           callback=opt.choice("minilm", "hash"))]
MarginPolicy = Annotated[Path | None, typer.Option("--policy", help="Policy whose re-scoring the margin is fitted under.",
                                                   callback=opt.input_file)]
MarginKeep = Annotated[float, typer.Option("--margin-keep", help="Share of questions whose gold the margin must keep.",
                                           callback=opt.finite(0.0, 1.0, lo_open=True))]
MinGain = Annotated[float, typer.Option("--min-gain", help="Held-out balanced accuracy the answerability model must "
                                        "add to the floor to be switched on.", callback=opt.finite(0.0, 0.5, hi_open=True))]
StoreDb = Annotated[str | None, typer.Option("--db", help="A store (SQLite file or postgresql:// URL): fit the not-found "
                                             "floor for its embedder, on questions sampled from it (or on PATH's set).",
                                             callback=opt.db_path)]
Probes = Annotated[int, typer.Option("--probes", help="With --db and no PATH: how many questions to sample.",
                                     callback=opt.int_range(10, 100000))]
Seed = Annotated[int, typer.Option("--seed", help="With --db: the sampling seed.")]
ResultJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


@dataclass(frozen=True)
class CalibrateArgs:
    """Every option of `docket calibrate`, as parsed (names as the command's parameters)."""

    path: Path | None = None
    pairs: Path | None = None
    derive_pairs: bool = False
    policy_out: Path | None = None
    fmt: str | None = None
    group_by: str = "paragraph"
    folds: int = 5
    limit: int | None = None
    embedder_name: str = "minilm"
    policy_path: Path | None = None
    margin_keep: float = 0.99
    min_gain: float = 0.01
    db: str | None = None
    probes: int = 200
    seed: int = 0
    as_json: bool = False


@dataclass
class Fitted:
    """What the fits found (`out`, printed or written as JSON) and the policy values they give."""

    out: dict[str, Any] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_calibrate(a: CalibrateArgs) -> dict[str, Any]:
    """Every fit the options ask for; the policy file written when --write is given."""
    from docket.eval import calibrate as C
    from docket.eval.dataset import load_set
    from docket.eval.runner import prepare

    _check(a)
    fitted = Fitted()
    embedder = _store_floor(a, fitted) if a.db is not None else _eval_embedder(a.embedder_name)
    lset = load_set(a.path, a.fmt).limit(a.limit) if a.path is not None else None
    pair_list = C.load_pairs(a.pairs) if a.pairs else []
    if a.derive_pairs and lset is not None:
        pair_list += C.derive_pairs(lset, embedder)
    if pair_list:
        dup = C.fit_duplicate_threshold(pair_list, embedder)
        fitted.out["duplicate_threshold"] = dup
        if dup["threshold"] is not None:
            fitted.updates["dedup"] = {"threshold": dup["threshold"]}
    prepared = prepare(lset, embedder) if lset is not None else []
    if lset is not None and any(it.answerable and it.gold for it in lset.items):
        _margin(a, fitted, prepared, embedder)
    if lset is not None and lset.has_unanswerable and any(it.answerable for it in lset.items):
        _floor_and_answerable(a, fitted, lset, prepared, embedder)
    elif lset is not None and not pair_list and "margin" not in fitted.out:
        raise InputError("has no unanswerable questions to fit the floor on and no gold chunks to fit the margin on; "
                         "add some or pass --pairs/--derive-pairs", where=str(a.path))
    if a.policy_out is not None:
        C.write_policy_values(a.policy_out, fitted.updates)
        fitted.out["written"] = str(a.policy_out)
    return fitted.out


def _check(a: CalibrateArgs) -> None:
    if a.path is None and a.pairs is None and a.db is None:
        raise InputError("give a labelled set (PATH), --pairs, or a store (--db) to sample questions from", field="PATH")
    if a.derive_pairs and a.path is None:
        raise InputError("needs a labelled set (PATH) to derive pairs from", field="--derive-pairs")
    if a.policy_out is not None and a.policy_out.exists():
        from docket.policy import load_policy

        load_policy(a.policy_out)  # merging into a broken policy would fail after all the fitting


def _eval_embedder(name: str) -> Any:
    from docket.eval.cache import eval_embedder

    return eval_embedder(name)


def _store_floor(a: CalibrateArgs, fitted: Fitted) -> Any:
    """--db: the store's own embedder; without a labelled set, the not-found floor fitted on
    questions sampled from the store."""
    from docket.eval import calibrate as C
    from docket.retrieve import embedder_for
    from docket.store.factory import open_store

    assert a.db is not None
    store = open_store(a.db, create=False)
    try:
        embedder: Any = embedder_for(store)
        if a.path is None:
            fl = C.fit_store_floor(store, embedder, n=a.probes, seed=a.seed, folds=a.folds)
            fitted.out["floor"] = fl
            fitted.updates["answerable"] = {"floor": fl["floor"], "embedder": embedder.name}
    finally:
        store.close()
    return embedder


def _margin(a: CalibrateArgs, fitted: Fitted, prepared: list[Any], embedder: Any) -> None:
    """The margin under the policy's re-scoring, keeping the gold of `margin_keep` of the questions."""
    from docket.eval import calibrate as C
    from docket.policy import Policy, load_policy
    from docket.tokens import default_counter

    pol = load_policy(a.policy_path) if a.policy_path is not None else Policy()
    q_gaps, pools = C.margin_inputs(prepared, pol, default_counter(), embedder)
    if q_gaps:
        mg = C.fit_margin(q_gaps, pools, keep=a.margin_keep)
        fitted.out["margin"] = mg
        fitted.updates.setdefault("pack", {})["margin"] = mg["margin"]


def _floor_and_answerable(a: CalibrateArgs, fitted: Fitted, lset: LabelledSet, prepared: list[Any],
                          embedder: Any) -> None:
    """The not-found floor on the top scores, and the answerability model, switched on only when
    it adds `min_gain` held-out balanced accuracy to the floor."""
    from docket import answerable as A
    from docket.eval import calibrate as C

    tops = C.floor_scores(prepared)
    y = [p.item.answerable for p in prepared]
    fl = C.fit_floor(tops, y)
    fl["curve"] = C.floor_curve(tops, y)
    groups = [group_of(p.item, a.group_by) for p in prepared]
    if len(set(groups)) < 2:
        groups = [p.item.id for p in prepared]
    floor_nf = C.cv_floor_predictions(tops, y, groups, a.folds)
    fl["held_out"] = C.cv_floor(tops, y, groups, a.folds)
    fitted.out["floor"] = fl
    # the "not found" floor (the best candidate must reach it), not pack.floor: as a cut on every
    # candidate a floor fitted on top scores would drop most of a good pool's evidence
    answerable = fitted.updates.setdefault("answerable", {})
    answerable.update({"floor": fl["floor"], "embedder": embedder.name})
    X = C.signal_matrix(lset, embedder)
    model = C.fit_answerable(X, y, groups, A.SIGNALS, folds=a.folds)
    _, model_nf = C.cv_answerable(X, y, groups, a.folds)
    gate = C.gate_decision(y, floor_nf, model_nf, a.min_gain)
    model["gate"] = gate
    fitted.out["answerable"] = model
    if gate["enabled"]:
        answerable.update({"enabled": True, "weights": model["weights"], "bias": model["bias"],
                           "threshold": model["threshold"]})
    else:
        answerable["enabled"] = False


def group_of(item: Any, by: str) -> str:
    """Questions on the same paragraph (or article) never straddle a training and a test fold."""
    if by == "item":
        return str(item.id)
    art = str(item.meta.get("article", ""))
    if by == "article":
        return art or str(item.id)
    para = item.meta.get("paragraph")
    return f"{art}#{para}" if para is not None else (",".join(item.gold) or str(item.id))


__all__ = ["CalibrateArgs", "GROUP_BY", "SET_FORMATS", "group_of", "run_calibrate"]
