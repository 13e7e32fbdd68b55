"""Structured answers against free text with the same model on the same briefs (issue 13 §6).

    .venv/bin/python benchmarks/structured_answers.py --llm URL [--squad 20] [--hotpot 40] [--json out.json]

SQuAD 2.0 (a seeded sample of `--squad` answerable and `--squad` unanswerable questions, Normans
and Rhine) and HotpotQA dev250 (the first `--hotpot` questions, all answerable). Each question's
brief is assembled once (MiniLM cosine ranking, re-scoring on, budget 500, floor off so the model
is asked every question: the refusal measured is the model's, not docket's floor) and answered
twice: free text (the brief as is, `[S1]` markers in prose) and structured (the same messages plus
the JSON instruction, the schema sent to the endpoint: a llama.cpp grammar for `--llm local`).
The two calls are made back to back, so a llama.cpp server reuses the shared prompt prefix.
Every call is cached in .docket-cache/generations.sqlite: a re-run calls the model for nothing.

Figures per set and mode:
  refusal rate on unanswerable  answers that refuse (free: the refusal sentence or a refusal
                                phrase; structured: the typed refusal with no sentences)
  false refusals                answerable questions refused
  unknown-label rate            answers citing a label the brief does not have
  uncited-sentence rate         factual sentences without a citation, of all factual sentences
  malformed                     structured replies that are not valid JSON of the schema
  accuracy                      answerable questions whose reference answer appears in the answer
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))


def pick_squad(lset: Any, n: int, seed: int = 13) -> list[Any]:
    """`n` answerable and `n` unanswerable questions, each half from its own seeded generator, so
    a smaller `n` picks a prefix of a larger one's sample (a quick run's answers stay cached)."""
    yes = [it for it in lset.items if it.answerable]
    no = [it for it in lset.items if not it.answerable]
    return random.Random(seed).sample(yes, min(n, len(yes))) + random.Random(seed + 1).sample(no, min(n, len(no)))


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def rate(num: int, den: int) -> float | None:
        return round(num / den, 4) if den else None

    unans = [r for r in rows if not r["answerable"]]
    ans = [r for r in rows if r["answerable"]]
    answered = [r for r in rows if not r["refused"]]
    claims = sum(r["claims"] for r in rows)
    return {
        "n": len(rows),
        "refusal_rate_unanswerable": rate(sum(r["refused"] for r in unans), len(unans)),
        "n_unanswerable": len(unans),
        "false_refusals": rate(sum(r["refused"] for r in ans), len(ans)),
        "n_answerable": len(ans),
        "unknown_label_rate": rate(sum(bool(r["unknown"]) for r in answered), len(answered)),
        "uncited_sentence_rate": rate(sum(r["uncited"] for r in rows), claims),
        "claims": claims,
        "malformed": rate(sum(r["malformed"] for r in rows), len(rows)),
        "accuracy": rate(sum(r["correct"] for r in ans), len(ans)),
        "partial": sum(r["partial"] for r in rows),
        "seconds_per_answer": round(sum(r["seconds"] for r in rows) / max(1, len(rows)), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--model", default=None)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per model call (a loaded CPU is slow)")
    ap.add_argument("--squad", type=int, default=20, help="answerable and as many unanswerable SQuAD 2.0 questions")
    ap.add_argument("--hotpot", type=int, default=40, help="HotpotQA questions")
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--json", type=Path, default=None, help="write every answer and the figures here")
    args = ap.parse_args()

    from rich.console import Console
    from rich.progress import Progress

    from docket.assemble import assemble
    from docket.check import check_answer, check_structured
    from docket.eval import metrics as M
    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.generation import make_generator
    from docket.eval.runner import prepare
    from docket.llm.answer import generate_structured
    from docket.llm.structured import ParsedReply, parse_reply
    from docket.policy import Policy
    from docket.tokens import default_counter

    console = Console(stderr=True)
    gen = make_generator(args.llm, args.model, timeout=args.timeout)
    embedder = eval_embedder()
    counter = default_counter()
    policy = Policy().updated(pack={"floor": -1.0}, render={"fields": ["title"]})
    squad = load_set(SHARED / "squad-v2" / "dev-v2.0.subset.json")
    squad.items = pick_squad(squad, args.squad)
    hotpot = load_set(SHARED / "hotpotqa" / "dev250.jsonl").limit(args.hotpot)
    sets = {"squad-v2": squad, "hotpotqa": hotpot}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {s: {"free": [], "structured": []} for s in sets}
    records: list[dict[str, Any]] = []
    for set_name, lset in sets.items():
        prepared = prepare(lset, embedder)
        with Progress(console=console, transient=True) as prog:
            task = prog.add_task(f"{set_name}: free + structured", total=len(prepared))
            for p in prepared:
                it = p.item
                b = assemble(it.question, p.query.ranked, store=lset.store_for(it), policy=policy, counter=counter,
                             embedder=embedder, budget=args.budget)
                t0 = time.perf_counter()
                text = gen.generate(b.messages, max_tokens=args.max_tokens)
                free_s = time.perf_counter() - t0
                free = check_answer(text, b)
                t0 = time.perf_counter()
                ans = generate_structured(gen, b, max_tokens=args.max_tokens)
                st_s = time.perf_counter() - t0
                got = ans.structured or {}
                parsed = parse_reply(json.dumps(got)) if "sentences" in got else ParsedReply(
                    raw=str(got.get("raw", "")), error=str(got.get("error")))
                st = check_structured(parsed, b)
                for mode, rep, answer_text, secs in (("free", free, text, free_s), ("structured", st, ans.text, st_s)):
                    malformed = mode == "structured" and parsed.reply is None
                    refused = (M.is_refusal(answer_text, b.refusal) if mode == "free"
                               else bool(parsed.reply and parsed.reply.refused))
                    row = {
                        "id": it.id, "answerable": it.answerable, "refused": refused, "malformed": malformed,
                        "unknown": list(rep.unknown_labels),
                        "uncited": len(rep.uncited_sentences),
                        "claims": sum(1 for s in rep.sentences if s.kind == "claim"),
                        "partial": bool(mode == "structured" and parsed.reply and parsed.reply.partial),
                        "correct": bool(it.answerable and it.answers and M.answer_matches(answer_text, it.answers)),
                        "seconds": secs,
                    }
                    rows[set_name][mode].append(row)
                    records.append({"set": set_name, "mode": mode, "question": it.question, "answers": it.answers,
                                    "answer": answer_text, "structured": got if mode == "structured" else None, **row})
                prog.advance(task)
    result = {"model": gen.name, "budget": args.budget, "calls": gen.calls, "cache_hits": gen.hits,
              "figures": {s: {m: tally(r) for m, r in by.items()} for s, by in rows.items()}}
    print_table(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "answers": records}, indent=1, ensure_ascii=False))
    return 0


def print_table(result: dict[str, Any]) -> None:
    def pct(v: Any) -> str:
        return "–" if v is None else f"{100 * v:.1f}%"

    print(f"model {result['model']}, budget {result['budget']}, {result['calls']} calls, {result['cache_hits']} from cache")
    print("| set | mode | refusal rate (unanswerable) | false refusals | unknown-label rate | uncited-sentence rate | "
          "malformed | accuracy |")
    print("|---|---|---|---|---|---|---|---|")
    for s, by in result["figures"].items():
        for m, f in by.items():
            print(f"| {s} ({f['n']}) | {m} | {pct(f['refusal_rate_unanswerable'])} of {f['n_unanswerable']} | "
                  f"{pct(f['false_refusals'])} of {f['n_answerable']} | {pct(f['unknown_label_rate'])} | "
                  f"{pct(f['uncited_sentence_rate'])} of {f['claims']} | {pct(f['malformed'])} | {pct(f['accuracy'])} |")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
