"""`docket eval` and `docket calibrate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docket.cli import calibrating as cal
from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.markup import escape
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Console, escape

SET_FORMATS = cal.SET_FORMATS
GROUP_BY = cal.GROUP_BY


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
    path: cal.SetPath = None,
    pairs: cal.Pairs = None,
    derive_pairs: cal.DerivePairs = False,
    policy_out: cal.PolicyOut = None,
    fmt: cal.SetFormat = None,
    group_by: cal.GroupBy = "paragraph",
    folds: cal.Folds = 5,
    limit: cal.Limit = None,
    embedder_name: cal.EmbedderName = "minilm",
    policy_path: cal.MarginPolicy = None,
    margin_keep: cal.MarginKeep = 0.99,
    min_gain: cal.MinGain = 0.01,
    db: cal.StoreDb = None,
    probes: cal.Probes = 200,
    seed: cal.Seed = 0,
    as_json: cal.ResultJson = False,
) -> None:
    """Fit the duplicate threshold, the score floor, the margin and the answerability model; write them into a policy.

    With --db, the floor is fitted for the store's own embedder (a floor is one embedder's scale):
    on PATH's labelled set, or without one on questions sampled from the store's chunks."""
    out = cal.run_calibrate(cal.CalibrateArgs(**locals()))
    if as_json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    _print_calibration(terminal_console(), out, group_by)


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
