"""Contextual retrieval (Move 3, index time): the top-k retrieval failure rate before and after
contextualising, on sub-corpora of HotpotQA and MuSiQue (issue 13 §8).

    .venv/bin/python benchmarks/contextual_retrieval.py --llm URL [--hotpot 20] [--musique 10] [--json out.json]

A sub-corpus is every paragraph of the first N questions of a set (HotpotQA dev250: 10 each;
MuSiQue: 20 each), deduplicated, one document per title (as benchmarks/retrieval_quality.py
builds the full corpora). It is indexed twice into temporary SQLite stores with docket's own
pipeline and MiniLM: plain, and with `--contextualize` by the model at `--llm` (the spec's prompt,
at most `--context-tokens` tokens per context). Then each question is retrieved from both (k = 20;
dense, BM25 and fused) and the failure rate is Anthropic's: the share of gold paragraphs that
are not among the first k (1 - recall@k), for k = 5, 10 and 20; "questions missing gold" counts
questions with any gold paragraph outside the first k. Every context is cached in
.docket-cache/generations.sqlite: a re-run calls the model for nothing it has seen.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA, hotpot_questions  # noqa: E402

KS = (5, 10, 20)


def sub_corpus(name: str, n: int) -> tuple[list[tuple[str, str]], list[tuple[str, set[int]]]]:
    """(title, text) paragraphs of the first `n` questions, and each question with its gold rows."""
    if name == "hotpotqa":
        return hotpot_questions(n)
    corpus: dict[tuple[str, str], int] = {}
    qs: list[tuple[str, set[int]]] = []
    for rec in json.loads((DATA / "musique" / "musique_train.json").read_text())[:n]:
        gold = set()
        for p in rec["paragraphs"]:
            i = corpus.setdefault((p["title"], p["paragraph_text"].strip()), len(corpus))
            if p["is_supporting"]:
                gold.add(i)
        qs.append((rec["question"], gold))
    return list(corpus), qs


def versions(corpus: list[tuple[str, str]]) -> list[Any]:
    from docket.model import Chunk
    from docket.store.protocol import DocumentVersion

    by_doc: dict[str, list[int]] = {}
    for i, (title, _) in enumerate(corpus):
        by_doc.setdefault(title, []).append(i)
    out = []
    for title, idx in by_doc.items():
        chunks = [Chunk(id=f"p{i}", doc=title, text=corpus[i][1], title=title, position=j) for j, i in enumerate(idx)]
        out.append(DocumentVersion(doc=title, version=1, status="current", date=None, effective_to=None, title=title,
                                   source="bench", chunks=chunks))
    return out


def failure(store: Any, qs: list[tuple[str, set[int]]], mode: str, embedder: Any) -> dict[str, float]:
    from docket.retrieve import retrieve
    from docket.store.protocol import Filters

    missing = dict.fromkeys(KS, 0)
    q_missing = dict.fromkeys(KS, 0)
    total = 0
    for q, gold in qs:
        gold_ids = {f"p{i}" for i in gold}
        ids = [c.chunk.id for c in retrieve(store, q, k=max(KS), mode=mode, filters=Filters(), embedder=embedder)]
        total += len(gold_ids)
        for k in KS:
            lost = len(gold_ids - set(ids[:k]))
            missing[k] += lost
            q_missing[k] += lost > 0
    out = {f"failure@{k}": round(missing[k] / max(1, total), 4) for k in KS}
    out |= {f"questions_missing@{k}": round(q_missing[k] / max(1, len(qs)), 4) for k in KS}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--model", default=None)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per model call (a loaded CPU is slow)")
    ap.add_argument("--hotpot", type=int, default=20, help="HotpotQA questions whose paragraphs form the sub-corpus")
    ap.add_argument("--musique", type=int, default=10, help="MuSiQue questions whose paragraphs form the sub-corpus")
    ap.add_argument("--context-tokens", type=int, default=80)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from rich.console import Console
    from rich.progress import Progress

    from docket.eval.cache import eval_embedder
    from docket.eval.generation import make_generator
    from docket.ingest import IndexOptions, index_versions
    from docket.ingest.contextualize import Contextualizer
    from docket.retrieve import MODES
    from docket.store.sqlite import SQLiteStore

    console = Console(stderr=True)
    gen = make_generator(args.llm, args.model, timeout=args.timeout)
    embedder = eval_embedder()
    result: dict[str, Any] = {"model": gen.name, "context_tokens": args.context_tokens, "sets": {}}
    samples: dict[str, list[dict[str, str]]] = {}
    for name, n in (("hotpotqa", args.hotpot), ("musique", args.musique)):
        if n <= 0:
            continue
        corpus, qs = sub_corpus(name, n)
        with tempfile.TemporaryDirectory() as tmp:
            plain = SQLiteStore(Path(tmp) / "plain.db")
            rep = index_versions(plain, versions(corpus), IndexOptions(embedder=embedder))
            assert rep.chunks_written == len(corpus), rep.problems[:3]
            ctx_store = SQLiteStore(Path(tmp) / "contextual.db")
            with Progress(console=console, transient=True) as prog:
                task = prog.add_task(f"{name}: contexts for {len(corpus)} paragraphs", total=len(corpus))
                ctx = Contextualizer(gen, max_tokens=args.context_tokens, progress=lambda k, t=task: prog.advance(t, k))
                rep = index_versions(ctx_store, versions(corpus), IndexOptions(embedder=embedder, contextualizer=ctx))
            assert rep.chunks_written == len(corpus), rep.problems[:3]
            per_mode = {}
            for mode in MODES:
                per_mode[mode] = {"plain": failure(plain, qs, mode, embedder),
                                  "contextual": failure(ctx_store, qs, mode, embedder)}
            samples[name] = [{"title": dv.doc, "text": dv.chunks[0].text[:300], "context": (dv.contexts or [""])[0]}
                             for dv in list(ctx_store.export())[:5]]
            result["sets"][name] = {"questions": len(qs), "paragraphs": len(corpus),
                                    "gold": sum(len(g) for _, g in qs), "contexts": ctx.stats.to_json(),
                                    "modes": per_mode}
            plain.close()
            ctx_store.close()
    result["calls"], result["cache_hits"] = gen.calls, gen.hits
    print_table(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "samples": samples}, indent=1, ensure_ascii=False))
    return 0


def print_table(result: dict[str, Any]) -> None:
    def pct(v: float) -> str:
        return f"{100 * v:.1f}%"

    print(f"model {result['model']}, contexts of at most {result['context_tokens']} tokens, {result['calls']} calls, "
          f"{result['cache_hits']} from cache")
    print("| set (questions / paragraphs / gold) | method | failure@20 plain → contextual | failure@10 | failure@5 | "
          "questions missing gold @20 |")
    print("|---|---|---|---|---|---|")
    for name, s in result["sets"].items():
        for mode, r in s["modes"].items():
            p, c = r["plain"], r["contextual"]
            cells = [f"{pct(p[f'failure@{k}'])} → {pct(c[f'failure@{k}'])}" for k in (20, 10, 5)]
            print(f"| {name} ({s['questions']} / {s['paragraphs']} / {s['gold']}) | {mode} | {' | '.join(cells)} | "
                  f"{pct(p['questions_missing@20'])} → {pct(c['questions_missing@20'])} |")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
