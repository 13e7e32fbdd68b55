"""Budget sweeps, ablations and side-by-side runs over a labelled set.

Every system sees the same ranked candidates (the set's scores, or cosine to the question with
the same embedder) and is measured with the same token counter. Docket's evidence tokens are
its documents block (tags and headers included); a peer's are its evidence text as it would
stuff it into its prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from docket.assemble import assemble
from docket.embed import Embedder
from docket.eval import metrics as M
from docket.eval.dataset import Item, LabelledSet
from docket.eval.peers import BASELINES, PEER_NAMES, TOPK_SYSTEMS, Query, SystemOutput, check_available, runner_for
from docket.model import Candidate
from docket.policy import MOVE_NAMES, Policy
from docket.store.access import may_read
from docket.tokens import TokenCounter

DEFAULT_BUDGETS = (250, 500, 1000, 2000)
ALL_SYSTEMS = PEER_NAMES + BASELINES


@dataclass
class Prepared:
    item: Item
    query: Query
    gold_texts: list[str]
    index: dict[str, int]  # chunk id -> row in query.vecs


@dataclass
class Row:
    """One system's output for one question at one setting."""

    gold_in: bool | None
    recall: float | None
    evidence_tokens: int
    total_tokens: int
    found: bool
    duplicate: bool
    answerable: bool
    extra: dict[str, Any] = field(default_factory=dict)


def prepare(lset: LabelledSet, embedder: Embedder, progress: Callable[[int], None] | None = None) -> list[Prepared]:
    """Embed every question and candidate once, rank by the set's scores or by cosine."""
    texts = list(dict.fromkeys([c.text for it in lset.items for c in it.chunks] + [it.question for it in lset.items]))
    hooked: Any = embedder  # DiskCachedEmbedder takes a progress callback; other embedders do not
    tracked = hasattr(hooked, "on_progress") and progress is not None
    if tracked:
        hooked.on_progress = progress
    try:
        vec_of = dict(zip(texts, embedder.embed(texts)))
    finally:  # later embeds (Move 1's sentence similarity) must not tick a progress task that is gone
        if tracked:
            hooked.on_progress = None
    out = []
    for it in lset.items:
        qvec = vec_of[it.question]
        vecs = np.stack([vec_of[c.text] for c in it.chunks]) if it.chunks else np.zeros((0, len(qvec)), np.float32)
        if it.scores is not None:
            scores = np.asarray(it.scores, dtype=float)
        else:
            scores = vecs @ qvec if len(vecs) else np.zeros(0)
        # the asker is anonymous: chunks with an acl are out of every system's pool (docket's and
        # the peers'), the same rule as `docket assemble` and `docket ask`
        pool = [i for i in range(len(it.chunks)) if may_read(None, it.chunks[i].acl)]
        order = sorted(pool, key=lambda i: (-float(scores[i]), it.chunks[i].id))
        ranked = [Candidate(chunk=it.chunks[i], score=round(float(scores[i]), 6), rank=r) for r, i in enumerate(order, 1)]
        rvecs = vecs[order] if order else vecs[:0]
        by_id = {c.id: c for c in it.chunks}
        gold_texts = [by_id[g].text for g in it.gold if g in by_id]
        out.append(Prepared(it, Query(it.question, ranked, qvec, rvecs), gold_texts, {c.chunk.id: i for i, c in enumerate(ranked)}))
    return out


def _row(p: Prepared, out: SystemOutput, threshold: float) -> Row:
    rows = [p.index[i] for i in dict.fromkeys(out.ids) if i in p.index]
    dup = M.has_duplicate_pair(p.query.vecs[rows], threshold) if len(rows) > 1 else False
    return Row(
        gold_in=M.gold_in_prompt(p.gold_texts, out.units) if p.item.answerable else None,
        recall=M.gold_recall(p.gold_texts, out.units) if p.item.answerable else None,
        evidence_tokens=out.evidence_tokens,
        total_tokens=out.total_tokens,
        found=out.found,
        duplicate=dup,
        answerable=p.item.answerable,
        extra=out.extra,
    )


def run_docket(p: Prepared, lset: LabelledSet, policy: Policy, budget: int, counter: TokenCounter, embedder: Embedder,
               generator: Any = None) -> SystemOutput:
    b = assemble(
        p.item.question, p.query.ranked, store=lset.store_for(p.item), policy=policy, counter=counter,
        embedder=embedder, budget=budget, as_of=p.item.as_of, generator=generator,
    )
    units = [ps.text for ps in b.passages] if b.found else []
    ids = [i for ps in b.passages for i in ps.ids] if b.found else []
    notes = sum(1 for c in b.conflicts if c.get("labels")) if b.found else 0
    return SystemOutput(units, ids, b.documents, b.tokens.get("documents", 0), b.tokens.get("total", 0), b.found,
                        {"passages": len(b.passages), "conflict_notes": notes})


def summarize(rows: Sequence[Row], price: float | None = None) -> dict[str, Any]:
    ans = [r for r in rows if r.answerable]
    ev = [r.evidence_tokens for r in rows if r.found]
    tot = [r.total_tokens for r in rows if r.found]
    out: dict[str, Any] = {
        "n": len(rows),
        "gold_in_prompt": M.mean(r.gold_in for r in ans),
        "gold_recall": M.mean(r.recall for r in ans),
        "evidence_tokens_mean": float(np.mean(ev)) if ev else 0.0,
        "tokens_p50": M.percentile(ev, 50) if ev else 0.0,
        "tokens_p95": M.percentile(ev, 95) if ev else 0.0,
        "total_tokens_mean": float(np.mean(tot)) if tot else 0.0,
        "total_tokens_p50": M.percentile(tot, 50) if tot else 0.0,
        "total_tokens_p95": M.percentile(tot, 95) if tot else 0.0,
        "duplicate_share": float(np.mean([r.duplicate for r in rows if r.found])) if ev else 0.0,
        "found_rate": float(np.mean([r.found for r in rows])) if rows else 0.0,
    }
    if price is not None:
        # prompts that are not sent (found false) cost nothing
        out["cost_per_1000_usd"] = M.cost_per_1000(sum(tot) / len(rows), price) if rows else 0.0
    if ans:
        # the gate's cost: answerable questions it sent to "not found" (docket.answerable)
        out["false_not_found"] = float(np.mean([not r.found for r in ans]))
    if any(not r.answerable for r in rows):
        cm = M.confusion([not r.found for r in rows], [not r.answerable for r in rows])
        out["not_found"] = cm.to_json()
    notes = [r.extra["conflict_notes"] for r in rows if r.found and "conflict_notes" in r.extra]
    if notes:
        # prompts that tell the model two sources disagree: worth watching, a false note misleads it
        out["conflict_share"] = float(np.mean([n > 0 for n in notes]))
    refine = [float(r.extra["refine_calls"]) for r in rows if "refine_calls" in r.extra]
    if refine:
        out["refine_calls_mean"] = float(np.mean(refine))
    return out


@dataclass
class EvalConfig:
    budgets: Sequence[int] = DEFAULT_BUDGETS
    policy: Policy = field(default_factory=Policy)
    ablate: bool = False
    compare: Sequence[str] = ()
    price: float | None = None
    show_progress: bool = True
    #: writes compress.summary's passage when the policy asks for one (`docket eval --llm`)
    generator: Any = None


def ablation_moves(policy: Policy) -> list[str]:
    """The moves that are on in the policy (switching off a move that is off changes nothing)."""
    return [m for m in MOVE_NAMES if getattr(policy, m).enabled and m != "pack"] + ["pack"]


def _choose_k(outputs_by_k: dict[int, list[SystemOutput]], budget: int) -> int:
    """The largest k whose mean evidence tokens stay within the budget (at least 1)."""
    best = 1
    for k in sorted(outputs_by_k):
        outs = outputs_by_k[k]
        if float(np.mean([o.evidence_tokens for o in outs])) <= budget:
            best = k
    return best


@dataclass
class _Sweep:
    """One evaluation run's fixed inputs, and `tick` to advance its progress bar."""

    lset: LabelledSet
    prepared: list[Prepared]
    config: EvalConfig
    counter: TokenCounter
    embedder: Embedder
    tick: Callable[[str], None]

    @property
    def threshold(self) -> float:
        return self.config.policy.dedup.threshold

    def docket_rows(self, policy: Policy, budget: int, what: str) -> dict[str, Any]:
        """docket under `policy` at `budget` over every question, summarised."""
        rows = []
        for p in self.prepared:
            rows.append(_row(p, run_docket(p, self.lset, policy, budget, self.counter, self.embedder,
                                           self.config.generator), self.threshold))
            self.tick(f"{what} @ {budget}")
        return summarize(rows, self.config.price)


def evaluate(
    lset: LabelledSet,
    config: EvalConfig,
    *,
    embedder: Embedder,
    counter: TokenCounter,
    console: Any = None,
) -> dict[str, Any]:
    """Run the sweep; returns the `--json` document."""
    check_available([s for s in config.compare if s in PEER_NAMES])
    unknown = [s for s in config.compare if s not in ALL_SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {unknown}; choose from {', '.join(ALL_SYSTEMS)}")
    policy = config.policy
    moves = ablation_moves(policy) if config.ablate else []
    n = len(lset.items)
    max_pool = max((len(it.chunks) for it in lset.items), default=1)
    steps = n * len(config.budgets) * (1 + len(moves))
    for s in config.compare:
        steps += n * (max_pool if s in TOPK_SYSTEMS else len(config.budgets))
    with _progress(config, console) as prog:
        if prog is not None:
            emb_task = prog.add_task("embedding", total=None)
            prepared = prepare(lset, embedder, lambda k: prog.advance(emb_task, k))
            prog.remove_task(emb_task)
            task = prog.add_task(f"{lset.name}", total=steps)
        else:
            prepared = prepare(lset, embedder)

        def tick(desc: str) -> None:
            if prog is not None:
                prog.update(task, advance=1, description=desc)

        sweep = _Sweep(lset, prepared, config, counter, embedder, tick)
        result: dict[str, Any] = {"set": lset.name, "format": lset.format, "n": n, "budgets": {},
                                  "settings": {"floor": policy.pack.floor, "duplicate_threshold": sweep.threshold,
                                               "rescore": policy.rescore.enabled, "answerable": policy.answerable.enabled,
                                               "counter": getattr(counter, "name", "?"),
                                               "embedder": getattr(embedder, "name", "?")}}
        for b in config.budgets:
            result["budgets"][str(b)] = sweep.docket_rows(policy, b, "docket")
            # the same answerable questions with the not-found gate off: what the gate costs in gold
            ungated = policy.updated(answerable={"gate": False})
            gold = [_row(p, run_docket(p, lset, ungated, b, counter, embedder, config.generator), sweep.threshold).gold_in
                    for p in prepared if p.item.answerable]
            result["budgets"][str(b)]["gold_in_prompt_ungated"] = M.mean(gold)
        if moves:
            result["ablation"] = {m: {str(b): sweep.docket_rows(policy.with_moves_off(m), b, f"without {m}")
                                      for b in config.budgets} for m in moves}
        if config.compare:
            result["compare"] = {s: _compare(sweep, s, max_pool) for s in config.compare}
    return result


def _progress(config: EvalConfig, console: Any) -> Any:
    """A transient progress bar (or nothing, without `show_progress`)."""
    if not config.show_progress:
        return nullcontext()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=console, transient=True)


def _compare(sweep: _Sweep, system: str, max_pool: int) -> dict[str, Any]:
    """A peer or baseline at every budget; a top-k system at the largest k whose mean evidence fits."""
    config = sweep.config
    fn = runner_for(system, sweep.counter, config.policy.pack.floor if system in PEER_NAMES else None)
    out: dict[str, Any] = {}
    if system in TOPK_SYSTEMS:
        by_k: dict[int, list[SystemOutput]] = {}
        for k in range(1, max_pool + 1):
            by_k[k] = []
            for p in sweep.prepared:
                by_k[k].append(fn(p.query, k))
                sweep.tick(f"{system} k={k}")
        for b in config.budgets:
            k = _choose_k(by_k, b)
            summary = summarize([_row(p, o, sweep.threshold) for p, o in zip(sweep.prepared, by_k[k])], config.price)
            summary["k"] = k
            out[str(b)] = summary
        return out
    for b in config.budgets:
        rows = []
        for p in sweep.prepared:
            rows.append(_row(p, fn(p.query, b), sweep.threshold))
            sweep.tick(f"{system} @ {b}")
        out[str(b)] = summarize(rows, config.price)
    return out
