"""Precision and recall of the `no_retrieve` routing decision on docket's labelled requests.

    python benchmarks/route_eval.py                      # the rules, on both labelled sets
    python benchmarks/route_eval.py --llm local --mode always   # a model router too (llm.route)

The sets are tests/data/route_requests.jsonl (84 requests, written with the rules; half need the
corpus, with hard negatives such as "what is 15% of my refund under your policy?") and
tests/data/route_requests_holdout.jsonl (24 requests written afterwards and first run blind).
Precision of no_retrieve is the share of requests routed past retrieval that really need no
documents (a miss there loses the answer); recall is the share of those requests caught.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from docket.modes import route
from docket.policy import RoutePolicy

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {"labelled": DATA / "route_requests.jsonl", "holdout": DATA / "route_requests_holdout.jsonl"}


def load(path: Path) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for i, r in enumerate(rows, 1):
        if r.get("label") not in (route.RETRIEVE, route.NO_RETRIEVE) or not r.get("request"):
            raise SystemExit(f"{path}:{i}: needs 'request' and 'label' retrieve|no_retrieve")
    return rows


def score(rows: list[dict[str, str]], decide) -> dict[str, object]:  # type: ignore[no-untyped-def]
    tp = fp = fn = tn = 0
    misses: list[str] = []
    by_kind: Counter[str] = Counter()
    for r in rows:
        got = decide(r["request"]).action
        want = r["label"]
        if got == route.NO_RETRIEVE and want == route.NO_RETRIEVE:
            tp += 1
        elif got == route.NO_RETRIEVE:
            fp += 1
        elif want == route.NO_RETRIEVE:
            fn += 1
        else:
            tn += 1
        if got != want:
            misses.append(f"{want:>11} <- {got:<11} [{r.get('kind', '')}] {r['request']}")
            by_kind[r.get("kind", "")] += 1
    return {"n": len(rows), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
            "misses": misses}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", help="also score a model router (a --llm URL: local, http://host:port/v1, ...)")
    ap.add_argument("--model", help="model name for --llm")
    ap.add_argument("--mode", choices=("unsure", "always"), default="unsure", help="when the model is asked")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    routers = {"rules": lambda q: route.rules(q)}
    if args.llm:
        from docket.llm import generator_from_url

        gen = generator_from_url(args.llm, args.model)
        pol = RoutePolicy(enabled=True, llm=args.mode)
        routers[f"rules+llm ({args.mode})"] = lambda q: route.decide(q, pol, gen)
    results = {f"{name} / {set_name}": score(load(path), fn)
               for set_name, path in SETS.items() for name, fn in routers.items()}
    if args.json:
        print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "misses"} for k, v in results.items()}, indent=2))
        return 0
    print(f"{'router / set':<34}{'n':>5}{'TP':>5}{'FP':>5}{'FN':>5}{'precision':>11}{'recall':>8}")
    for name, r in results.items():
        print(f"{name:<34}{r['n']:>5}{r['tp']:>5}{r['fp']:>5}{r['fn']:>5}{r['precision']:>11.3f}{r['recall']:>8.3f}")
    for name, r in results.items():
        for m in r["misses"]:  # type: ignore[attr-defined]
            print(f"  miss ({name}): {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
