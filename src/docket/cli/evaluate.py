"""`docket eval` and `docket calibrate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.markup import escape
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Console, escape

#: docket.eval.dataset.FORMATS, spelt out so `docket --help` need not import the evaluation (a test keeps them equal)
SET_FORMATS = ("docket", "hotpotqa", "musique", "squad-v2", "bipia", "poisonedrag")

#: how `calibrate` groups questions for cross-validation
GROUP_BY = ("paragraph", "article", "item")


def _parse_budgets(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise InputError(f"must be comma-separated token counts like 250,500,1000, got {text!r}", field="--budgets") from None
    if not out or any(not 1 <= b <= opt.MAX_COUNT for b in out):
        raise InputError(f"must hold positive token counts like 250,500,1000, got {text!r}", field="--budgets")
    return list(dict.fromkeys(out))


def _parse_compare(text: str | None) -> list[str]:
    from docket.eval.runner import ALL_SYSTEMS

    if text is None:
        return []
    names = [x.strip().lower() for x in text.split(",") if x.strip()]
    if not names:  # "" or ",,," (an unset variable) would silently compare nothing
        raise InputError(f"holds no system name ({text!r}); give e.g. langchain,topk or all, or leave it out",
                         field="--compare")
    if names == ["all"]:
        return list(ALL_SYSTEMS)
    bad = [n for n in names if n not in ALL_SYSTEMS]
    if bad:
        raise InputError(f"unknown system(s) {', '.join(bad)}; choose from {', '.join(ALL_SYSTEMS)} or all", field="--compare")
    return names


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _print_tables(console: Console, result: dict[str, Any]) -> None:
    from rich.table import Table

    from docket.eval.report import systems

    budgets = list(result["budgets"])
    t = Table(title=f"{result['set']}: {result['n']} questions — gold in prompt · mean evidence tokens (p95)")
    t.add_column("system")
    for b in budgets:
        t.add_column(f"budget {b}", justify="right")
    for name, by_b in systems(result).items():
        cells = []
        for b in budgets:
            s = by_b.get(b)
            if s is None:
                cells.append("–")
                continue
            k = f" k={s['k']}" if "k" in s else ""
            cells.append(f"{_pct(s['gold_in_prompt'])} · {s['evidence_tokens_mean']:.0f} ({s['tokens_p95']:.0f}){k}")
        t.add_row(name, *cells)
    console.print(t)
    d = Table(title="docket: tokens, duplicates, cost")
    for c in ("budget", "gold recall", "evidence p50/p95", "total p50/p95", "dup. pairs", "conflict notes", "USD/1k q",
              "not found P/R"):
        d.add_column(c, justify="right")
    for b, s in result["budgets"].items():
        nf = s.get("not_found")
        d.add_row(b, _pct(s["gold_recall"]), f"{s['tokens_p50']:.0f}/{s['tokens_p95']:.0f}",
                  f"{s['total_tokens_p50']:.0f}/{s['total_tokens_p95']:.0f}", _pct(s["duplicate_share"]),
                  _pct(s.get("conflict_share")),
                  f"{s['cost_per_1000_usd']:.2f}" if "cost_per_1000_usd" in s else "–",
                  f"{_pct(nf['precision'])}/{_pct(nf['recall'])}" if nf else "–")
    console.print(d)
    _print_gate(console, result)
    if result.get("ablation"):
        a = Table(title="ablation: gold in prompt (Δ points) with one move off")
        a.add_column("move off")
        for b in budgets:
            a.add_column(f"budget {b}", justify="right")
        for move, by_b in result["ablation"].items():
            cells = []
            for b in budgets:
                g, g0 = by_b[b]["gold_in_prompt"], result["budgets"][b]["gold_in_prompt"]
                delta = "" if g is None or g0 is None else f" ({100 * (g - g0):+.1f})"
                cells.append(f"{_pct(g)}{delta} · {by_b[b]['evidence_tokens_mean']:.0f}")
            a.add_row(move, *cells)
        console.print(a)


def _print_gate(console: Console, result: dict[str, Any]) -> None:
    """The not-found gate's cost next to its gain: answerable questions it refused, the gold that
    reached the prompt with and without it, and the unanswerable ones it caught."""
    from rich.table import Table

    if not any("false_not_found" in s for s in result["budgets"].values()):
        return
    g = Table(title=f"{result['set']}: the not-found gate, cost and gain")
    for c in ("budget", "false not found (answerable)", "gold in prompt, gate on", "gate off", "unanswerable caught"):
        g.add_column(c, justify="right")
    for b, s in result["budgets"].items():
        on, off = s.get("gold_in_prompt"), s.get("gold_in_prompt_ungated")
        delta = "" if on is None or off is None else f" ({100 * (on - off):+.1f})"
        nf = s.get("not_found")
        g.add_row(b, _pct(s.get("false_not_found")), f"{_pct(on)}{delta}", _pct(off), _pct(nf["recall"]) if nf else "–")
    console.print(g)


@app.command("eval")
def eval_cmd(
    path: Annotated[Path, typer.Argument(help="A labelled set (JSONL, docs/eval.md) or a public set file/folder.",
                                         callback=opt.input_path)],
    budgets: Annotated[str, typer.Option("--budgets", help="Evidence budgets, comma-separated.")] = "250,500,1000,2000",
    policy_path: Annotated[Path | None, typer.Option("--policy", help="Policy TOML.", callback=opt.input_file)] = None,
    ablate: Annotated[bool, typer.Option("--ablate", help="Also run with each move switched off in turn.")] = False,
    compare: Annotated[str | None, typer.Option("--compare", help="langchain,llamaindex,haystack,topk,greedy or all.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N questions.", callback=opt.positive)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")] = False,
    report: Annotated[Path | None, typer.Option("--report", help="Write Markdown and PNG plots into this folder.",
                                                callback=opt.output_dir)] = None,
    price: Annotated[float | None, typer.Option("--price", help="USD per million input tokens, for cost per 1,000 queries.",
                                                callback=opt.finite(0.0))] = None,
    fmt: Annotated[str | None, typer.Option("--set-format", help="Force the set's format (docket, hotpotqa, musique, squad-v2, bipia, poisonedrag).",
                                            callback=opt.choice(*SET_FORMATS))] = None,
    embedder_name: Annotated[str, typer.Option("--embedder", help="minilm (default) or hash (fast, for smoke tests only).",
                                               callback=opt.choice("minilm", "hash"))] = "minilm",
    llm: Annotated[str | None, typer.Option("--llm", help="OpenAI-compatible base URL: also measure answers (slow).",
                                            callback=opt.llm_url)] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name for --llm.", callback=opt.name)] = None,
    generation_budget: Annotated[int, typer.Option("--generation-budget", help="Evidence budget for the answer runs.",
                                                   callback=opt.positive)] = 500,
) -> None:
    """Gold-in-prompt rate, tokens p50/p95, duplicates and "not found" per budget; ablations; peers."""
    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.runner import EvalConfig, evaluate
    from docket.policy import load_policy
    from docket.tokens import default_counter

    if limit is not None and limit < 1:
        raise InputError("must be at least 1", field="--limit")
    if embedder_name not in ("minilm", "hash"):
        raise InputError("must be 'minilm' or 'hash'", field="--embedder")
    opt.requires(model, llm, "--model", "--llm")
    opt.requires(generation_budget if generation_budget != 500 else None, llm, "--generation-budget", "--llm")
    config = EvalConfig(budgets=_parse_budgets(budgets), policy=load_policy(policy_path), ablate=ablate,
                        compare=_parse_compare(compare), price=price, show_progress=not as_json or sys.stderr.isatty())
    lset = load_set(path, fmt).limit(limit)
    if not lset.items:
        raise InputError("holds no questions", where=str(path))
    console = terminal_console(stderr=True)
    for w in lset.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
    embedder = eval_embedder(embedder_name)
    counter = default_counter()
    gen = None
    if llm:
        from docket.eval.generation import make_generator

        gen = make_generator(llm, model)
        if config.policy.compress.summary:  # Option C: the same model writes the summaries (cached)
            config.generator = gen
    result = evaluate(lset, config, embedder=embedder, counter=counter, console=console)
    if gen is not None:
        from docket.eval.generation import generation_eval

        result["generation"] = generation_eval(lset, gen, policy=config.policy, embedder=embedder, counter=counter,
                                               budget=generation_budget, console=console)
    if report is not None:
        from docket.eval.report import write_report
        from docket.safeio import write_text_atomic

        md = write_report(result, report)
        write_text_atomic(Path(report) / f"{result['set']}.json", json.dumps(result, indent=2))
        console.print(f"report written to {md}")
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    _print_tables(terminal_console(), result)


@app.command("calibrate")
def calibrate_cmd(
    path: Annotated[Path | None, typer.Argument(help="A labelled set with unanswerable questions (floor, answerability).",
                                                callback=opt.input_path)] = None,
    pairs: Annotated[Path | None, typer.Option("--pairs", help='JSONL of {"a", "b", "same"} pairs for the duplicate threshold.',
                                               callback=opt.input_file)] = None,
    derive_pairs: Annotated[bool, typer.Option("--derive-pairs", help="Derive pairs from the set's pools (hardest different pairs, exact copies).")] = False,
    policy_out: Annotated[Path | None, typer.Option("--write", help="Write the fitted values into this policy TOML (merged).",
                                                    callback=opt.output_file)] = None,
    fmt: Annotated[str | None, typer.Option("--set-format", help="Force the set's format.",
                                            callback=opt.choice(*SET_FORMATS))] = None,
    group_by: Annotated[str, typer.Option("--group-by", help="Cross-validation groups: paragraph, article (squad-v2 meta) or item.",
                                          callback=opt.choice(*GROUP_BY))] = "paragraph",
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds.", callback=opt.int_range(2, 1000))] = 5,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N questions.", callback=opt.positive)] = None,
    embedder_name: Annotated[str, typer.Option("--embedder", help="minilm (default) or hash.",
                                               callback=opt.choice("minilm", "hash"))] = "minilm",
    policy_path: Annotated[Path | None, typer.Option("--policy", help="Policy whose re-scoring the margin is fitted under.",
                                                     callback=opt.input_file)] = None,
    margin_keep: Annotated[float, typer.Option("--margin-keep", help="Share of questions whose gold the margin must keep.",
                                               callback=opt.finite(0.0, 1.0, lo_open=True))] = 0.99,
    min_gain: Annotated[float, typer.Option("--min-gain", help="Held-out balanced accuracy the answerability model must "
                                            "add to the floor to be switched on.", callback=opt.finite(0.0, 0.5, hi_open=True))] = 0.01,
    db: Annotated[str | None, typer.Option("--db", help="A store (SQLite file or postgresql:// URL): fit the not-found "
                                           "floor for its embedder, on questions sampled from it (or on PATH's set).",
                                           callback=opt.db_path)] = None,
    probes: Annotated[int, typer.Option("--probes", help="With --db and no PATH: how many questions to sample.",
                                        callback=opt.int_range(10, 100000))] = 200,
    seed: Annotated[int, typer.Option("--seed", help="With --db: the sampling seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Fit the duplicate threshold, the score floor, the margin and the answerability model; write them into a policy.

    With --db, the floor is fitted for the store's own embedder (a floor is one embedder's scale):
    on PATH's labelled set, or without one on questions sampled from the store's chunks."""
    from docket import answerable as A
    from docket.eval import calibrate as C
    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.runner import prepare

    if path is None and pairs is None and db is None:
        raise InputError("give a labelled set (PATH), --pairs, or a store (--db) to sample questions from", field="PATH")
    if derive_pairs and path is None:
        raise InputError("needs a labelled set (PATH) to derive pairs from", field="--derive-pairs")
    if policy_out is not None and policy_out.exists():
        from docket.policy import load_policy as _check_existing

        _check_existing(policy_out)  # merging into a broken policy would fail after all the fitting
    out: dict[str, Any] = {}
    updates: dict[str, dict[str, Any]] = {}
    if db is not None:
        from docket.retrieve import embedder_for
        from docket.store.factory import open_store

        store = open_store(db, create=False)
        embedder: Any = embedder_for(store)
        if path is None:
            fl = C.fit_store_floor(store, embedder, n=probes, seed=seed, folds=folds)
            out["floor"] = fl
            updates["answerable"] = {"floor": fl["floor"], "embedder": embedder.name}
    else:
        embedder = eval_embedder(embedder_name)
    lset = load_set(path, fmt).limit(limit) if path is not None else None
    pair_list = C.load_pairs(pairs) if pairs else []
    if derive_pairs and lset is not None:
        pair_list += C.derive_pairs(lset, embedder)
    if pair_list:
        dup = C.fit_duplicate_threshold(pair_list, embedder)
        out["duplicate_threshold"] = dup
        if dup["threshold"] is not None:
            updates["dedup"] = {"threshold": dup["threshold"]}
    prepared = prepare(lset, embedder) if lset is not None else []
    from docket.policy import Policy, load_policy
    from docket.tokens import default_counter

    pol = load_policy(policy_path) if policy_path is not None else Policy()
    if lset is not None and any(it.answerable and it.gold for it in lset.items):
        q_gaps, pools = C.margin_inputs(prepared, pol, default_counter(), embedder)
        if q_gaps:
            mg = C.fit_margin(q_gaps, pools, keep=margin_keep)
            out["margin"] = mg
            updates.setdefault("pack", {})["margin"] = mg["margin"]
    if lset is not None and lset.has_unanswerable and any(it.answerable for it in lset.items):
        tops = C.floor_scores(prepared)
        y = [p.item.answerable for p in prepared]
        fl = C.fit_floor(tops, y)
        fl["curve"] = C.floor_curve(tops, y)
        groups = [_group(p.item, group_by) for p in prepared]
        if len(set(groups)) < 2:
            groups = [p.item.id for p in prepared]
        floor_nf = C.cv_floor_predictions(tops, y, groups, folds)
        fl["held_out"] = C.cv_floor(tops, y, groups, folds)
        out["floor"] = fl
        # the "not found" floor (the best candidate must reach it), not pack.floor: as a cut on
        # every candidate a floor fitted on top scores would drop most of a good pool's evidence
        updates.setdefault("answerable", {}).update({"floor": fl["floor"], "embedder": embedder.name})
        X = C.signal_matrix(lset, embedder)
        model = C.fit_answerable(X, y, groups, A.SIGNALS, folds=folds)
        _, model_nf = C.cv_answerable(X, y, groups, folds)
        gate = C.gate_decision(y, floor_nf, model_nf, min_gain)
        model["gate"] = gate
        out["answerable"] = model
        if gate["enabled"]:
            updates["answerable"].update({"enabled": True, "weights": model["weights"], "bias": model["bias"],
                                          "threshold": model["threshold"]})
        else:
            updates["answerable"]["enabled"] = False
    elif lset is not None and not pair_list and "margin" not in out:
        raise InputError("has no unanswerable questions to fit the floor on and no gold chunks to fit the margin on; "
                         "add some or pass --pairs/--derive-pairs", where=str(path))
    if policy_out is not None:
        C.write_policy_values(policy_out, updates)
        out["written"] = str(policy_out)
    if as_json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    _print_calibration(terminal_console(), out, group_by)


def _group(item: Any, by: str) -> str:
    """Questions on the same paragraph (or article) never straddle a training and a test fold."""
    if by == "item":
        return item.id
    art = str(item.meta.get("article", ""))
    if by == "article":
        return art or item.id
    para = item.meta.get("paragraph")
    return f"{art}#{para}" if para is not None else (",".join(item.gold) or item.id)


def _print_calibration(console: Console, out: dict[str, Any], group_by: str = "paragraph") -> None:
    from rich.table import Table

    if "duplicate_threshold" in out:
        d = out["duplicate_threshold"]
        console.print(f"[bold]duplicate threshold[/bold] {d['threshold'] if d['threshold'] is not None else 'not fitted'}"
                      f"  ({d['method']}; {d['same']} same, {d['different']} different pairs; min same "
                      f"{d.get('min_same', '–')}, max different {d.get('max_different', '–')})")
        if "different_quantiles" in d:
            qs = d["different_quantiles"]
            console.print("  different pairs' cosine: " + ", ".join(f"p{k} {v:.3f}" for k, v in qs.items())
                          + f"; {100 * d['different_at_or_above_0.95']:.1f}% at or above 0.95")
    if "floor" in out:
        f = out["floor"]
        ho = f.get("held_out", {})
        if "probes" in f:
            console.print(f"{f['probes']} questions sampled from the store, each with and without its own document; "
                          f"embedder {f['embedder']}")
        console.print(f"[bold]not-found floor[/bold] (answerable.floor) {f['floor']}  (on the best candidate's ranker score: balanced accuracy "
                      f"{f['balanced_accuracy']:.3f} in-sample, {ho.get('balanced_accuracy') or 0:.3f} held out; accuracy "
                      f"{f['accuracy']:.3f}, AUC {f['auc']:.3f} of the top score alone)")
        t = Table(title="floor trade-off: 'not found' when the top score is below the floor")
        for c in ("floor", "not-found precision", "not-found recall", "balanced accuracy"):
            t.add_column(c, justify="right")
        for r in f["curve"]:
            t.add_row(f"{r['floor']:.3f}", _pct(r["not_found_precision"]), _pct(r["not_found_recall"]),
                      _pct(r["balanced_accuracy"]))
        console.print(t)
    if "margin" in out:
        m = out["margin"]
        console.print(f"[bold]margin[/bold] {m['margin']}  (keeps all gold of {_pct(m['gold_kept'])} of {m['questions']} "
                      f"questions and {_pct(m['candidates_kept'])} of the candidates; target {_pct(m['keep'])})")
        t = Table(title="margin trade-off: drop candidates more than the margin below the best")
        for c in ("margin", "questions with all gold kept", "candidates kept"):
            t.add_column(c, justify="right")
        for r in m["curve"]:
            t.add_row(f"{r['margin']:.2f}", _pct(r["gold_kept"]), _pct(r["candidates_kept"]))
        console.print(t)
    if "answerable" in out:
        a = out["answerable"]
        cv = a["cv"]
        console.print(f"[bold]answerability model[/bold] ({cv['folds']}-fold cross-validation, grouped by {group_by}): "
                      f"balanced accuracy {_pct(cv['balanced_accuracy'])}, not-found precision {_pct(cv['precision'])}, "
                      f"recall {_pct(cv['recall'])}, AUC {cv['auc']:.3f}")
        console.print("weights: " + ", ".join(f"{k} {v:+.3f}" for k, v in a["weights"].items()) + f"; bias {a['bias']:+.3f}")
        g = a["gate"]
        console.print(f"[bold]answerable.enabled = {'true' if g['enabled'] else 'false'}[/bold]: {g['reason']}",
                      soft_wrap=True)
    if "written" in out:
        console.print(f"values written to {out['written']}")
