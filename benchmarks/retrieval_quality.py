"""Retrieval quality of the store: dense, BM25 and fused (RRF), on HotpotQA and MuSiQue.

    .venv/bin/python benchmarks/retrieval_quality.py [--limit N]

HotpotQA: every paragraph of all 250 dev questions is one corpus (a paragraph = one chunk,
doc = its title); gold = the two `is_supporting` paragraphs. MuSiQue: the 1,890-paragraph corpus
file; gold = each question's `is_supporting` paragraphs. Vectors: all-MiniLM-L6-v2 (int8 ONNX),
cached under benchmarks/out/. Reported per method: recall@5 and recall@10 (share of gold
paragraphs among the first k), and gold-in-prompt: the share of questions whose gold paragraphs
ALL reach the final prompt after assembly (default policy, floor 0.40) at 500 and 1,000 evidence
tokens, with 50 candidates handed to the assembler.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA, cached_embed, hotpot_questions  # noqa: E402

from docket.assemble import assemble  # noqa: E402
from docket.embed import default_embedder  # noqa: E402
from docket.ingest import IndexOptions, index_versions  # noqa: E402
from docket.model import Chunk  # noqa: E402
from docket.retrieve import MODES, retrieve  # noqa: E402
from docket.store.protocol import DocumentVersion, Filters, ScopedView  # noqa: E402
from docket.store.sqlite import SQLiteStore  # noqa: E402
from docket.tokens import default_counter  # noqa: E402

BUDGETS = (500, 1000)


def hotpot() -> tuple[list[tuple[str, str]], list[tuple[str, set[int]]]]:
    return hotpot_questions()


def musique() -> tuple[list[tuple[str, str]], list[tuple[str, set[int]]]]:
    paras = json.loads((DATA / "musique" / "musique_train_corpus.json").read_text())
    corpus: dict[tuple[str, str], int] = {}
    for p in paras:
        corpus.setdefault((p["title"], p["text"].strip()), len(corpus))
    qs = []
    for rec in json.loads((DATA / "musique" / "musique_train.json").read_text()):
        gold = {corpus[(p["title"], p["paragraph_text"].strip())] for p in rec["paragraphs"] if p["is_supporting"]}
        qs.append((rec["question"], gold))
    return list(corpus), qs


def build(store: SQLiteStore, corpus: list[tuple[str, str]], vecs: np.ndarray) -> None:
    counter = default_counter()
    by_doc: dict[str, list[int]] = {}
    for i, (title, _) in enumerate(corpus):
        by_doc.setdefault(title, []).append(i)
    dvs = []
    for title, idx in by_doc.items():
        chunks = [Chunk(id=f"p{i}", doc=title, text=corpus[i][1], title=title, position=j) for j, i in enumerate(idx)]
        dvs.append(DocumentVersion(doc=title, version=1, status="current", date=None, effective_to=None, title=title,
                                   source="bench", chunks=chunks, vectors=vecs[idx],
                                   tokens=[counter.count(c.text) for c in chunks]))
    report = index_versions(store, dvs, IndexOptions(embedder=default_embedder(), counter=counter))
    assert report.chunks_written == len(corpus), report.problems[:3]


def evaluate(name: str, corpus: list[tuple[str, str]], qs: list[tuple[str, set[int]]], candidates: int = 50,
             modes: tuple[str, ...] = MODES) -> list[dict[str, object]]:
    emb = default_embedder()
    t0 = time.perf_counter()
    vecs = cached_embed(emb, [f"{t}" for _, t in corpus], name)
    print(f"{name}: {len(corpus)} paragraphs embedded/loaded in {time.perf_counter() - t0:.0f}s, {len(qs)} questions",
          flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "q.db")
        build(store, corpus, vecs)
        view = ScopedView(store, None)
        for mode in modes:
            r5 = r10 = 0.0
            in_prompt = dict.fromkeys(BUDGETS, 0)
            for q, gold in qs:
                gold_ids = {f"p{i}" for i in gold}
                cands = retrieve(store, q, k=candidates, mode=mode, filters=Filters(), embedder=emb)
                ids = [c.chunk.id for c in cands]
                r5 += len(gold_ids & set(ids[:5])) / len(gold_ids)
                r10 += len(gold_ids & set(ids[:10])) / len(gold_ids)
                for b in BUDGETS:
                    brief = assemble(q, cands, store=view, embedder=emb, budget=b)
                    shown = {cid for s in brief.sources.values() for cid in s["chunks"]}
                    in_prompt[b] += gold_ids <= shown
            n = len(qs)
            row: dict[str, object] = {"dataset": name, "method": mode, "candidates": candidates, "questions": n,
                                      "recall@5": r5 / n,
                                      "recall@10": r10 / n}
            row.update({f"gold_in_prompt@{b}": in_prompt[b] / n for b in BUDGETS})
            rows.append(row)
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
        store.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions of each set (0 = all)")
    ap.add_argument("--candidates", default="50",
                    help="candidates handed to the assembler (comma-separated: each is measured, same store)")
    ap.add_argument("--modes", default=",".join(MODES), help="retrieval methods to measure (comma-separated)")
    args = ap.parse_args()
    rows = []
    modes = tuple(args.modes.split(","))
    for name, loader in (("hotpotqa", hotpot), ("musique", musique)):
        corpus, qs = loader()
        for k in (int(x) for x in args.candidates.split(",")):
            rows += evaluate(name, corpus, qs[: args.limit] if args.limit else qs, k, modes)
    print()
    print("| dataset | method | candidates | questions | recall@5 | recall@10 | gold in prompt @500 | gold in prompt @1000 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['method']} | {r['candidates']} | {r['questions']} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | "
              f"{r['gold_in_prompt@500']:.3f} | {r['gold_in_prompt@1000']:.3f} |")


if __name__ == "__main__":
    main()
