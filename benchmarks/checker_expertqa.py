"""How well does docket's citation checker find unsupported claims? ExpertQA's human labels say.

ExpertQA (rand_test.jsonl) splits system answers into claims, each with the evidence it cites and
a human judgement of support: Complete, Incomplete, Partial, Missing, None (N/A is skipped, and
so are claims that cite nothing: any checker flags those as uncited). Each claim becomes a tiny
brief (its evidence passages labelled S1..Sn, exactly as cited) and goes through `check_answer`.
"Positive" = the checker reports the claim unsupported. Two readings of the human label:

  any   : not supported = anything but Complete (Incomplete/Partial/Missing/None)
  partial: Partial against Complete only (Incomplete left out). In this file every claim labelled
           Missing cites no evidence, so "Missing/None" cannot be used as a stricter class.

Rows: the lexical check (numbers, dates, names), its variants, the LLM judge alone, and the
lexical check OR the judge. The judge runs on a seeded random sample (a local 0.5B/1.5B model
takes seconds per claim on 2 cores); its verdicts are cached in a JSONL file so a re-run is free.

Also two planted-error rows that need no labels: wrong numbers (n -> n+1) and negation flips
("is" -> "is not") in human-"Complete" claims; and benchmarks/data/check_flips.jsonl, negation
flips and answers that add or subtract two of the passage's numbers, labelled (issue 24).

    python benchmarks/checker_expertqa.py                         # lexical rows only, all claims
    python benchmarks/checker_expertqa.py --llm local --sample 200 # + the judge (docket llm serve-local)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docket.check import LLMJudge, Verdict, check_answer

DEFAULT_DATA = Path(os.environ.get("DOCKET_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")) / "expertqa" / "rand_test.jsonl"
NEGATIVE = {"Complete"}
STRICT_POSITIVE = {"Partial", "Missing", "None"}


@dataclass
class Claim:
    qid: int
    text: str  # with [Sn] labels
    sources: dict[str, dict[str, str]]
    support: str


skipped_url_only: list[str] = []


def load_claims(path: Path) -> list[Claim]:
    claims: list[Claim] = []
    with open(path, encoding="utf-8") as f:
        for qid, line in enumerate(f):
            row = json.loads(line)
            for ans in row["answers"].values():
                for c in ans.get("claims") or []:
                    support = str(c.get("support"))
                    evidence = c.get("evidence") or []
                    if support in ("N/A", "") or not evidence:
                        continue
                    sources: dict[str, dict[str, str]] = {}
                    for i, ev in enumerate(evidence, 1):
                        m = re.match(r"\s*\[(\d+)\]\s*(\S+)?\s*(?:\n+|$)", ev)
                        n = int(m.group(1)) if m else i
                        text = ev[m.end():] if m else ev
                        sources[f"S{n}"] = {"text": text, "title": "", "doc": (m.group(2) if m and m.group(2) else f"ev{n}")}
                    if all(len(s["text"].strip()) < 30 for s in sources.values()):
                        skipped_url_only.append(support)  # only a URL: the page text is not in the data
                        continue
                    text = re.sub(r"\[(\d+)\]", r"[S\1]", c["claim_string"])
                    if not re.search(r"\[S\d+\]", text):  # cites nothing in the text: attach all its evidence
                        text = text.rstrip() + " " + "".join(f"[{lab}]" for lab in sources)
                    claims.append(Claim(qid, text, sources, support))
    return claims


def flagged(claim: Claim, **kw: object) -> bool:
    """The checker's verdict on a claim: True = some sentence of it is unsupported."""
    brief = {"sources": claim.sources, "refusal": "I do not know from the provided sources."}
    report = check_answer(claim.text, brief, **kw)  # type: ignore[arg-type]
    return bool(report.unsupported)


def prf(pred: list[bool], gold: list[bool]) -> tuple[float, float, float, int]:
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum(g and not p for p, g in zip(pred, gold))
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1, sum(pred)


def table(rows: list[tuple[str, list[bool]]], claims: list[Claim], title: str) -> str:
    gold_any = [c.support not in NEGATIVE for c in claims]
    keep = [c.support in NEGATIVE or c.support in STRICT_POSITIVE for c in claims]
    gold_strict = [c.support in STRICT_POSITIVE for c, k in zip(claims, keep) if k]
    n_pos = sum(gold_any)
    out = [f"\n{title}: {len(claims)} claims, {n_pos} not Complete ({n_pos / max(1, len(claims)):.0%}); "
           f"partial: {len(gold_strict)} claims, {sum(gold_strict)} Partial/Missing/None",
           f"| {'check':<44} | flagged | P (any) | R (any) | F1 (any) | P (partial) | R (partial) |",
           f"|{'-' * 46}|---------|---------|---------|----------|-------------|-------------|"]
    for name, pred in rows:
        p, r, f1, n = prf(pred, gold_any)
        ps, rs, _, _ = prf([x for x, k in zip(pred, keep) if k], gold_strict)
        out.append(f"| {name:<44} | {n:>7} | {p:>7.2f} | {r:>7.2f} | {f1:>8.2f} | {ps:>11.2f} | {rs:>11.2f} |")
    base = sum(gold_any) / max(1, len(claims))
    out.append(f"| {'(flag everything)':<44} | {len(claims):>7} | {base:>7.2f} | {1:>7.2f} | "
               f"{2 * base / (1 + base):>8.2f} | {sum(gold_strict) / max(1, len(gold_strict)):>11.2f} | {1:>11.2f} |")
    return "\n".join(out)


class CachedJudge:
    """Wraps a judge; remembers verdicts by (model, claim, evidence) hash in a JSONL file."""

    def __init__(self, judge: LLMJudge, cache: Path) -> None:
        self.judge_impl = judge
        self.name = judge.name
        self.cache = cache
        self.seen: dict[str, bool | None] = {}
        if cache.exists():
            for line in cache.read_text().splitlines():
                d = json.loads(line)
                self.seen[d["k"]] = d["v"]
        self.calls = 0
        self.seconds = 0.0

    def judge(self, claim: str, evidence: dict[str, str]) -> Verdict:
        model = self.name.split("@")[0]  # the model, not the port it happened to be served on
        key = hashlib.sha1(json.dumps([model, claim, evidence], sort_keys=True).encode()).hexdigest()
        if key not in self.seen:
            t0 = time.perf_counter()
            v = self.judge_impl.judge(claim, evidence)
            self.seconds += time.perf_counter() - t0
            self.calls += 1
            self.seen[key] = v.supported
            with open(self.cache, "a") as f:
                f.write(json.dumps({"k": key, "v": v.supported}) + "\n")
        s = self.seen[key]
        return Verdict(s, "judge: no" if s is False else "")


_NUM = re.compile(r"(?<![\w.\[S])(\d+(?:\.\d+)?)(?![\w.]*\])")


def planted_numbers(claims: list[Claim]) -> str:
    """The error the lexical check is built for: a wrong number under a valid label.

    Every human-"Complete" claim with a number gets its first number changed (n -> n + 1); the
    check should flag the changed claim and leave the original alone.
    """
    orig_flags, planted_flags = [], []
    for c in claims:
        if c.support != "Complete":
            continue
        body = re.sub(r"\[S\d+\]", lambda m: "\0" * len(m.group(0)), c.text)  # keep labels out of reach
        m = _NUM.search(body)
        if not m:
            continue
        n = m.group(1)
        new = str(int(n) + 1) if n.isdigit() else f"{float(n) + 1:g}"
        mutated = c.text[: m.start(1)] + new + c.text[m.end(1):]
        orig_flags.append(flagged(c))
        planted_flags.append(flagged(Claim(c.qid, mutated, c.sources, "planted")))
    k = len(orig_flags)
    passing = [p for o, p in zip(orig_flags, planted_flags) if not o]
    return (f"\nplanted wrong numbers: {k} Complete claims with a number; the lexical check flags "
            f"{sum(planted_flags)}/{k} ({sum(planted_flags) / max(1, k):.0%}) after n -> n+1 and "
            f"{sum(orig_flags)}/{k} ({sum(orig_flags) / max(1, k):.0%}) of the originals (their evidence snippets lack "
            f"a number or name); of the {len(passing)} originals it passes, it flags {sum(passing)} "
            f"({sum(passing) / max(1, len(passing)):.0%}) once the number is changed")


_VERB = re.compile(r"\b(is|are|was|were|can|will|should|must|has|have|does|do)\b(?! not\b)")


def planted_negations(claims: list[Claim]) -> str:
    """A negation flip under a valid label: every human-"Complete" claim with an auxiliary verb
    gets "not" after its first one ("is" -> "is not"); the check should flag the flipped claim."""
    orig_flags, planted_flags = [], []
    for c in claims:
        if c.support != "Complete":
            continue
        m = _VERB.search(c.text)
        if not m:
            continue
        flipped = c.text[: m.end()] + " not" + c.text[m.end():]
        orig_flags.append(flagged(c))
        planted_flags.append(flagged(Claim(c.qid, flipped, c.sources, "planted")))
    k = len(orig_flags)
    passing = [p for o, p in zip(orig_flags, planted_flags) if not o]
    return (f"\nplanted negations: {k} Complete claims with an auxiliary verb; flagged {sum(planted_flags)}/{k} "
            f"({sum(planted_flags) / max(1, k):.0%}) after 'is' -> 'is not'; of the {len(passing)} originals the "
            f"check passes, it flags {sum(passing)} ({sum(passing) / max(1, len(passing)):.0%}) once negated")


FLIPS = Path(__file__).resolve().parent / "data" / "check_flips.jsonl"


def flip_set(path: Path = FLIPS) -> str:
    """benchmarks/data/check_flips.jsonl (written for issue 24): negation flips and answers that
    add or subtract two of the passage's numbers, each labelled supported or not."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = ["", f"flip set ({path.name}): {len(rows)} answers", "| kind | answers | unsupported flagged | supported flagged |",
           "|---|---|---|---|"]
    for kind in sorted({r["kind"] for r in rows}):
        sel = [r for r in rows if r["kind"] == kind]
        got = [(r["supported"], bool(check_answer(r["answer"], {"sources": {"S1": {"text": r["passage"]}}}).unsupported))
               for r in sel]
        bad = [f for sup, f in got if not sup]
        good = [f for sup, f in got if sup]
        out.append(f"| {kind} | {len(sel)} | {sum(bad)}/{len(bad)} | {sum(good)}/{len(good)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--llm", help="judge model URL (local, http://host:port/v1, ...); without it, lexical rows only")
    ap.add_argument("--model", default=None)
    ap.add_argument("--sample", type=int, default=200, help="claims judged by the LLM (seeded random sample)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/docket_checker_expertqa_judge.jsonl"))
    ap.add_argument("--max-evidence-chars", type=int, default=3000)
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    claims = load_claims(args.data)
    print(f"{len(claims)} claims with evidence text; skipped {len(skipped_url_only)} whose evidence is only a URL")

    t0 = time.perf_counter()
    variants: list[tuple[str, Callable[[Claim], bool]]] = [
        ("lexical: numbers + dates + names (default)", lambda c: flagged(c)),
        ("lexical: numbers + dates only", lambda c: flagged(c, names=False)),
        ("lexical + overlap < 0.5", lambda c: flagged(c, min_overlap=0.5)),
        ("lexical + overlap < 0.7", lambda c: flagged(c, min_overlap=0.7)),
    ]
    preds = {name: [fn(c) for c in claims] for name, fn in variants}
    secs = time.perf_counter() - t0
    print(table(list(preds.items()), claims, "ExpertQA rand_test, all claims with evidence"))
    print(f"\nlexical checks: {len(claims) * len(variants) / secs:,.0f} claims/s")
    print(planted_numbers(claims))
    print(planted_negations(claims))
    print(flip_set())

    if args.llm:
        from docket.llm import generator_from_url

        gen = generator_from_url(args.llm, model=args.model, timeout=300)
        getattr(gen, "model", None)  # resolve the served model's name now: it keys the verdict cache
        judge = CachedJudge(LLMJudge(gen, max_evidence_chars=args.max_evidence_chars), args.cache)
        order = list(claims)
        random.Random(args.seed).shuffle(order)  # a prefix of one shuffle: a larger --sample extends a smaller one
        sample = order[: args.sample]
        judged: list[bool] = []
        t0 = time.perf_counter()
        undecided = 0
        for i, c in enumerate(sample, 1):
            r = check_answer(c.text, {"sources": c.sources}, judge=judge, judge_all=True)
            judged.append(any(u["by"] == "judge" for u in r.unsupported))
            undecided += r.judge_undecided
            if i % 20 == 0:
                print(f"  judged {i}/{len(sample)} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        lex = [flagged(c) for c in sample]
        rows = [("lexical (default)", lex),
                (f"judge alone ({judge.name.split('@')[0]})", judged),
                ("lexical OR judge", [a or b for a, b in zip(lex, judged)])]
        print(table(rows, sample, f"LLM judge sample (seed {args.seed})"))
        if judge.calls:
            print(f"\njudge: {judge.calls} new calls, {judge.seconds / judge.calls:.1f} s per claim; undecided {undecided}")
        else:
            print(f"\njudge: all verdicts from the cache {args.cache}; undecided {undecided}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
