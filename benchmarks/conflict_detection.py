"""Precision and recall of Move 1's conflict detection on docket's labelled pairs.

    .venv/bin/python benchmarks/conflict_detection.py [--pairs FILE] [--mistakes] [--gate 0.55]

The pairs (tests/data/conflict_pairs.jsonl: the set the rules were written against, with
tables, number words and currencies added for issue 24; tests/data/conflict_pairs_holdout.jsonl:
written after the rules were frozen; tests/data/conflict_pairs_holdout2.jsonl: tables, number
words and currencies written after issue 24's code, never tuned on) label two
passages as conflicting or not: the same statement with another value, reworded with another
value, reworded with the same value, different subjects with different numbers, negations,
encyclopaedia paragraphs about different entities or the same one, one sentence of a passage
differing, other languages. Each pair runs through the detector as the assembler runs it
(MiniLM passage cosine >= versions.conflict_similarity, then docket.claims statement by
statement). Prints precision / recall / F1 overall and per kind; the false-conflict rate on real
text is `docket eval ../shared/data/hotpotqa/dev250.jsonl ... --json` -> conflict_share.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = [ROOT / "tests" / "data" / name for name in
        ("conflict_pairs.jsonl", "conflict_pairs_holdout.jsonl", "conflict_pairs_holdout2.jsonl")]


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", action="append", default=None, help="pair file(s); default: docket's two sets")
    ap.add_argument("--mistakes", action="store_true", help="print every wrong decision with its reason")
    ap.add_argument("--gate", type=float, default=None, help="versions.conflict_similarity to use")
    args = ap.parse_args()

    from docket.embed import default_embedder
    from docket.eval.conflicts import load_conflict_pairs, measure
    from docket.policy import Policy

    policy = Policy() if args.gate is None else Policy().updated(versions={"conflict_similarity": args.gate})
    emb = default_embedder()
    for path in [Path(p) for p in args.pairs] if args.pairs else SETS:
        if not path.exists():
            continue
        r = measure(load_conflict_pairs(path), emb, policy)
        a = r["all"]
        print(f"\n### {path.name}: {a['pairs']} pairs (gate {policy.versions.conflict_similarity})\n")
        print("| kind | pairs | TP | FP | FN | precision | recall |")
        print("|---|---|---|---|---|---|---|")
        for k, v in r["by_kind"].items():
            print(f"| {k} | {v['pairs']} | {v['tp']} | {v['fp']} | {v['fn']} | {_pct(v['precision'])} | {_pct(v['recall'])} |")
        print(f"| **all** | {a['pairs']} | {a['tp']} | {a['fp']} | {a['fn']} | **{_pct(a['precision'])}** | **{_pct(a['recall'])}** |")
        if args.mistakes:
            for m in r["mistakes"]:
                tag = "missed" if m["expected"] else "false conflict"
                print(f"- {tag} ({m['kind']}): {m['a']!r} / {m['b']!r}" + (f" -> {m['reason']}" if m["reason"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
