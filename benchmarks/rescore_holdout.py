"""Are the re-scoring weights tuned to the test sets? Choose them on one set, measure on the other.

    .venv/bin/python benchmarks/rescore_holdout.py [--limit N]

A 3 x 3 x 3 grid of (title_weight, lexical_weight, link_weight) runs docket with the eval policy
of benchmarks/eval_multihop.py on HotpotQA dev250 and MuSiQue at 250/500/1000/2000 tokens. The
weights that do best on one set (mean gold-in-prompt over the four budgets) are then reported on
the other set, beside the shipped defaults and the spread over the whole grid. Writes
benchmarks/out/rescore_holdout.json. About 4 minutes on two cores once embeddings are cached.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "benchmarks" / "out"
SETS = {"hotpotqa": SHARED / "hotpotqa" / "dev250.jsonl", "musique": SHARED / "musique" / "musique_train.json"}
BUDGETS = (250, 500, 1000, 2000)
GRID = {"title_weight": (0.2, 0.3, 0.4), "lexical_weight": (0.2, 0.3, 0.4), "link_weight": (0.3, 0.45, 0.6)}
BASE = {"render": {"fields": ["title"]}, "pack": {"floor": -1.0}, "rescore": {"enabled": True}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()

    from rich.progress import Progress

    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.runner import _row, prepare, run_docket
    from docket.policy import Policy, load_policy_dict
    from docket.tokens import default_counter

    emb, counter = eval_embedder(), default_counter()
    prepped = {}
    for name, path in SETS.items():
        lset = load_set(path).limit(args.limit)
        prepped[name] = (lset, prepare(lset, emb))
    defaults = Policy().rescore
    default_key = (defaults.title_weight, defaults.lexical_weight, defaults.link_weight)
    configs = list(itertools.product(*GRID.values()))
    if default_key not in configs:
        configs.append(default_key)
    results: dict[tuple[float, ...], dict[str, list[float]]] = {}
    with Progress(transient=True) as bar:
        task = bar.add_task("grid", total=len(configs))
        for cfg in configs:
            data = json.loads(json.dumps(BASE))
            data["rescore"].update(dict(zip(GRID, cfg)))
            policy = load_policy_dict(data)
            out = {}
            for name, (lset, pp) in prepped.items():
                out[name] = [float(np.mean([_row(p, run_docket(p, lset, policy, b, counter, emb), 0.95).gold_in for p in pp]))
                             for b in BUDGETS]
            results[cfg] = out
            bar.advance(task)

    def fmt(vals: list[float]) -> str:
        return " | ".join(f"{100 * v:.1f}%" for v in vals)

    lines = ["| weights (title, lexical, link) | chosen on | reported on | " + " | ".join(f"budget {b}" for b in BUDGETS) + " |",
             "|---|---|---|" + "---|" * len(BUDGETS)]
    report: dict[str, object] = {"budgets": BUDGETS, "grid": {",".join(map(str, k)): v for k, v in results.items()}}
    for chosen, other in (("hotpotqa", "musique"), ("musique", "hotpotqa")):
        best = max(results, key=lambda k: (np.mean(results[k][chosen]), k == default_key))
        report[f"best_on_{chosen}"] = {"weights": best, chosen: results[best][chosen], other: results[best][other]}
        lines.append(f"| {best} | {chosen} | **{other}** (held out) | {fmt(results[best][other])} |")
        lines.append(f"| {default_key} (shipped) | both (by eye) | {other} | {fmt(results[default_key][other])} |")
    for name in SETS:
        lo = [min(r[name][i] for r in results.values()) for i in range(len(BUDGETS))]
        hi = [max(r[name][i] for r in results.values()) for i in range(len(BUDGETS))]
        lines.append(f"| grid spread ({len(results)} settings) | — | {name} | "
                     + " | ".join(f"{100 * a:.1f}–{100 * b:.1f}%" for a, b in zip(lo, hi)) + " |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "rescore_holdout.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
