"""Option C on MuSiQue: answer accuracy with a summary of the rest, against extractive compression
and against no compression (issue 13 §7).

    .venv/bin/python benchmarks/summary_musique.py --llm URL [--limit 15] [--budgets 1000,2000] [--json out.json]

The first `--limit` MuSiQue questions (2-4 hop, 20 paragraphs each, ranked by MiniLM cosine),
docket's defaults plus `[render] fields = ["title"]` and no floor (every question is
answerable), at each budget, three ways:

  none        packing only (the default)
  extractive  compress.enabled: Move 6's guarded sentence extraction for a needed passage that
              does not fit
  option_c    compress.summary: the best passages whole and a 200-token summary of the rest,
              written by the same model

Every brief carries the same ground rules (the derived-text rule is added to all three, so the
system prompt is identical and a llama.cpp server reuses the shared prefix), and the answer
format asks for one short sentence. The model answers each brief; accuracy = a reference answer
or alias appears in the answer (SQuAD normalisation). Also reported without a model: all gold
paragraphs whole in the prompt, and for option C, covered whole or by the summary. Every call is
cached in .docket-cache/generations.sqlite (summaries too), so a re-run calls the model for
nothing it has seen.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
MODES = ("none", "extractive", "option_c")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--model", default=None)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per model call (a loaded CPU is slow)")
    ap.add_argument("--limit", type=int, default=15)
    ap.add_argument("--budgets", default="1000,2000")
    ap.add_argument("--summary-tokens", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=60, help="answer length cap")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]

    from rich.console import Console
    from rich.progress import Progress

    from docket.assemble import assemble
    from docket.brief.layout import DERIVED_RULE
    from docket.eval import metrics as M
    from docket.eval.cache import cache_dir, eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.generation import make_generator
    from docket.eval.runner import prepare
    from docket.llm.cache import CachedGenerator
    from docket.policy import Policy
    from docket.tokens import default_counter

    console = Console(stderr=True)
    gen = make_generator(args.llm, args.model, timeout=args.timeout)
    assert isinstance(gen, CachedGenerator) and gen.path.parent == cache_dir()
    embedder = eval_embedder()
    counter = default_counter()
    base = Policy().updated(render={"fields": ["title"]}, pack={"floor": -1.0},
                            brief={"answer_format": "Answer in one short sentence.", "extra_rules": [DERIVED_RULE]})
    policies = {
        "none": base,
        "extractive": base.updated(compress={"enabled": True}),
        # the rule comes with the setting itself; no need to state it twice
        "option_c": base.updated(brief={"extra_rules": []},
                                 compress={"summary": True, "summary_tokens": args.summary_tokens}),
    }
    lset = load_set(SHARED / "musique" / "musique_train.json").limit(args.limit)
    prepared = prepare(lset, embedder)
    rows: list[dict[str, Any]] = []
    with Progress(console=console, transient=True) as prog:
        task = prog.add_task("musique: summaries, then answers", total=len(prepared))
        for p in prepared:
            it = p.item
            gold = set(it.gold)
            briefs: dict[tuple[str, int], Any] = {}
            # summaries first (one call per budget), then the answers in an order whose prompts
            # share the longest prefixes (none, option C, extractive at one budget, then the next)
            for b in budgets:
                briefs[("option_c", b)] = assemble(it.question, p.query.ranked, store=lset.store_for(it),
                                                   policy=policies["option_c"], counter=counter, embedder=embedder,
                                                   budget=b, generator=gen)
            for b in budgets:
                for mode in ("none", "extractive"):
                    briefs[(mode, b)] = assemble(it.question, p.query.ranked, store=lset.store_for(it),
                                                 policy=policies[mode], counter=counter, embedder=embedder, budget=b)
            for b in budgets:
                for mode in ("none", "option_c", "extractive"):
                    br = briefs[(mode, b)]
                    answer = gen.generate(br.messages, max_tokens=args.max_tokens) if br.found else br.refusal
                    whole = {c for s in br.sources.values() if not s.get("derived") for c in s["chunks"]}
                    summarised = {c for s in br.sources.values() for cov in s.get("covers", []) for c in cov["chunks"]}
                    summary = next((s for s in br.sources.values() if s.get("derived")), None)
                    rows.append({
                        "id": it.id, "mode": mode, "budget": b, "question": it.question, "answers": it.answers,
                        "answer": answer, "correct": M.answer_matches(answer, it.answers),
                        "gold_whole": gold <= whole, "gold_covered": gold <= (whole | summarised),
                        "tokens": br.tokens.get("documents", 0), "summary": summary["text"] if summary else None,
                        "compressed": sum(1 for s in br.sources.values() if s.get("compressed")),
                    })
            prog.advance(task)
    figures = tally(rows, budgets)
    result = {"model": gen.name, "questions": len(prepared), "budgets": budgets, "calls": gen.calls,
              "cache_hits": gen.hits, "figures": figures}
    print_table(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "rows": rows}, indent=1, ensure_ascii=False))
    return 0


def tally(rows: list[dict[str, Any]], budgets: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b in budgets:
        for mode in MODES:
            rs = [r for r in rows if r["budget"] == b and r["mode"] == mode]
            n = len(rs) or 1
            out[f"{mode}@{b}"] = {
                "n": len(rs),
                "accuracy": round(sum(r["correct"] for r in rs) / n, 4),
                "gold_whole": round(sum(r["gold_whole"] for r in rs) / n, 4),
                "gold_covered": round(sum(r["gold_covered"] for r in rs) / n, 4),
                "mean_tokens": round(sum(r["tokens"] for r in rs) / n, 1),
                "with_summary": sum(1 for r in rs if r["summary"]),
                "with_compressed": sum(1 for r in rs if r["compressed"]),
            }
    return out


def print_table(result: dict[str, Any]) -> None:
    def pct(v: float) -> str:
        return f"{100 * v:.1f}%"

    print(f"model {result['model']}, {result['questions']} MuSiQue questions, {result['calls']} calls, "
          f"{result['cache_hits']} from cache")
    print("| budget | mode | answer accuracy | all gold whole | all gold whole or summarised | mean evidence tokens | "
          "briefs with a summary / compressed passage |")
    print("|---|---|---|---|---|---|---|")
    for key, f in result["figures"].items():
        mode, b = key.split("@")
        print(f"| {b} | {mode} | {pct(f['accuracy'])} | {pct(f['gold_whole'])} | {pct(f['gold_covered'])} | "
              f"{f['mean_tokens']:,.0f} | {f['with_summary']} / {f['with_compressed']} |")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
