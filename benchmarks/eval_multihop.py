"""Gold in prompt against evidence tokens: docket beside LangChain, LlamaIndex, Haystack, naive
top-k and greedy packing, on HotpotQA dev250 and MuSiQue (the shared public sets).

    .venv/bin/python benchmarks/eval_multihop.py [--limit N] [--sets hotpotqa,musique]

Writes benchmarks/out/<set>.md, .json and the PNG plot, and prints the Markdown. Same as
`docket eval PATH --budgets 250,500,1000,2000 --policy benchmarks/out/eval_policy.toml --ablate
--compare all --report benchmarks/out`. The policy used for docket (written next to the report):

    [render] fields = ["title"]   # the header shows the title only (these sets have no dates,
                                  # versions or statuses; an empty field would only cost tokens)
    [pack]   floor = -1.0         # every question here is answerable: no floor, for any system
                                  # (setting pack.floor also replaces the not-found floor)
    [rescore] enabled = true      # title, BM25 over the pool, title links (docket.rescore)

Every system gets the same MiniLM cosine ranking of the same candidates and the same o200k_base
counter. Needs `pip install -e '.[peers]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "benchmarks" / "out"
SETS = {"hotpotqa": SHARED / "hotpotqa" / "dev250.jsonl", "musique": SHARED / "musique" / "musique_train.json"}
POLICY = """# the policy benchmarks/eval_multihop.py runs docket with
[render]
fields = ["title"]

[pack]
floor = -1.0

[rescore]
enabled = true
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--sets", default="hotpotqa,musique")
    ap.add_argument("--no-ablate", action="store_true")
    args = ap.parse_args()

    from rich.console import Console

    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.report import markdown, write_report
    from docket.eval.runner import ALL_SYSTEMS, EvalConfig, evaluate
    from docket.policy import load_policy
    from docket.tokens import default_counter

    OUT.mkdir(parents=True, exist_ok=True)
    pol_path = OUT / "eval_policy.toml"
    pol_path.write_text(POLICY, encoding="utf-8")
    policy = load_policy(pol_path)
    console = Console(stderr=True)
    for name in args.sets.split(","):
        lset = load_set(SETS[name]).limit(args.limit)
        lset.name = name
        t0 = time.perf_counter()
        result = evaluate(
            lset,
            EvalConfig(budgets=(250, 500, 1000, 2000), policy=policy, ablate=not args.no_ablate, compare=ALL_SYSTEMS,
                       price=3.0),
            embedder=eval_embedder(), counter=default_counter(), console=console,
        )
        result["seconds"] = round(time.perf_counter() - t0, 1)
        write_report(result, OUT)
        (OUT / f"{name}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
        sys.stdout.write(markdown(result, f"{name}-gold-vs-tokens.png") + f"\n({result['seconds']} s)\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
