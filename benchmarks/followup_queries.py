"""Chat follow-ups: gold-in-prompt when the search uses the last message alone vs the query built
from the conversation (docket.followup).

    PYTHONPATH=src .venv/bin/python benchmarks/followup_queries.py [--llm URL] [--budget 1000] [--misses]

benchmarks/data/followup_corpus.jsonl (35 chunks: per diems and hotel caps per city, refund rules
per plan, leave types, equipment per role, IT, approvals) and followup_conversations.jsonl (36
conversations: one question, its answer, then a follow-up whose gold chunk is named; kinds: a name
swapped, a phrase swapped, a pronoun, an appended condition, a stand-alone question, one
unanswerable) were written for issue 24. Each conversation runs through `Session.ask` over a
fresh SQLite store twice: "before" searches the follow-up as asked (as docket did before the
rewrite), "after" searches the rewritten query (the deterministic carry, or the generator's
rewrite with --llm). Prints gold-in-prompt and found per kind.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "data"


def run(convs: list[dict[str, Any]], corpus: list[dict[str, Any]], rewrite: bool, llm: str | None,
        budget: int) -> list[dict[str, Any]]:
    import docket
    import docket.api as api

    original = api.searched_query
    if not rewrite:
        api.searched_query = lambda question, history, generator, trace: question  # type: ignore[assignment]
    try:
        gen = docket.generator_from_url(llm) if llm else None
        with tempfile.TemporaryDirectory() as tmp, docket.Session.open(Path(tmp) / "f.db", create=True,
                                                                        generator=gen) as s:
            s.index(records=corpus)
            out = []
            for c in convs:
                res = s.ask(c["question"], history=c["history"], budget=budget)
                shown = {cid for src in res.brief.sources.values() for cid in src.chunks}
                query = next((e.numbers.get("query") for e in res.brief.trace if e.move == "followup"), c["question"])
                out.append({"kind": c["kind"], "gold": c["gold"], "found": res.brief.found, "query": query,
                            "question": c["question"], "hit": bool(c["gold"]) and all(g in shown for g in c["gold"])})
            return out
    finally:
        api.searched_query = original


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", default=None, help="a generator URL (docket.generator_from_url) for the rewrite")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--misses", action="store_true", help="print the follow-ups whose gold missed the prompt")
    ap.add_argument("--conversations", default=str(HERE / "followup_conversations.jsonl"),
                    help="the set (followup_conversations_holdout.jsonl: 12 written after the rewrite's code)")
    args = ap.parse_args()
    corpus = [json.loads(x) for x in (HERE / "followup_corpus.jsonl").read_text().splitlines() if x.strip()]
    convs = [json.loads(x) for x in Path(args.conversations).read_text().splitlines() if x.strip()]
    rows = {name: run(convs, corpus, rewrite, args.llm, args.budget) for name, rewrite in (("before", False), ("after", True))}
    print(f"\n{len(convs)} follow-up conversations, budget {args.budget}, rewrite by "
          f"{args.llm or 'the deterministic carry'}\n")
    print("| kind | n | gold-in-prompt before | after | found before | after |")
    print("|---|---|---|---|---|---|")
    kinds: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows["after"]):
        kinds[r["kind"]].append(i)
    answerable = [i for i, r in enumerate(rows["after"]) if r["gold"]]

    def pct(name: str, idx: list[int], key: str) -> str:
        sel = [rows[name][i][key] for i in idx]
        return f"{sum(sel)}/{len(sel)}" if sel else "–"

    for k, idx in sorted(kinds.items()):
        print(f"| {k} | {len(idx)} | {pct('before', idx, 'hit')} | {pct('after', idx, 'hit')} | "
              f"{pct('before', idx, 'found')} | {pct('after', idx, 'found')} |")
    print(f"| **answerable** | {len(answerable)} | **{pct('before', answerable, 'hit')}** | "
          f"**{pct('after', answerable, 'hit')}** | {pct('before', answerable, 'found')} | {pct('after', answerable, 'found')} |")
    if args.misses:
        for name in ("before", "after"):
            for r in rows[name]:
                if r["gold"] and not r["hit"]:
                    print(f"- {name} miss ({r['kind']}): {r['question']!r} searched as {r['query']!r}, gold {r['gold']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
