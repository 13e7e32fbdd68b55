"""Real paragraphs for the benchmarks, read from ../shared/data (never copied into the repo),
and an on-disk embedding cache under benchmarks/out/ so reruns do not re-embed."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

from docket.embed import Embedder

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "benchmarks" / "out"


def paragraphs() -> list[tuple[str, str]]:
    """(title, text) of every distinct paragraph in hotpotqa, musique and squad-v2."""
    seen: dict[tuple[str, str], None] = {}
    with (DATA / "hotpotqa" / "dev250.jsonl").open() as fh:
        for line in fh:
            for c in json.loads(line)["contexts"]:
                seen.setdefault((c["title"], c["paragraph_text"].strip()), None)
    for p in json.loads((DATA / "musique" / "musique_train_corpus.json").read_text()):
        seen.setdefault((p["title"], p["text"].strip()), None)
    squad = json.loads((DATA / "squad-v2" / "dev-v2.0.subset.json").read_text())
    for art in squad["data"]:
        for p in art["paragraphs"]:
            seen.setdefault((art["title"], p["context"].strip()), None)
    return [k for k in seen if k[1]]


def hotpot_questions(limit: int | None = None) -> tuple[list[tuple[str, str]], list[tuple[str, set[int]]]]:
    """The distinct (title, text) paragraphs of the first `limit` HotpotQA dev250 questions (all
    without a limit), and each question with the rows of its gold paragraphs."""
    corpus: dict[tuple[str, str], int] = {}
    qs: list[tuple[str, set[int]]] = []
    with (DATA / "hotpotqa" / "dev250.jsonl").open() as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    for rec in recs[:limit]:
        gold = set()
        for c in rec["contexts"]:
            i = corpus.setdefault((c["title"], c["paragraph_text"].strip()), len(corpus))
            if c["is_supporting"]:
                gold.add(i)
        qs.append((rec["question_text"], gold))
    return list(corpus), qs


def variant(text: str, n: int) -> str:
    """The n-th variation of a paragraph: its sentences rotated by n (n = 0 is the original)."""
    if n == 0:
        return text
    sents = re.split(r"(?<=[.!?])\s+", text)
    r = n % max(1, len(sents))
    out = " ".join(sents[r:] + sents[:r])
    return out if n < len(sents) else f"{out} ({n})"


def cached_embed(embedder: Embedder, texts: list[str], tag: str) -> np.ndarray:
    """Embed `texts` once; the result is kept in benchmarks/out/ keyed by model and content."""
    OUT.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(embedder.name.encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    path = OUT / f"emb-{tag}-{embedder.name}-{len(texts)}-{h.hexdigest()[:12]}.npy"
    if path.exists():
        return np.load(path)
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    np.save(path, vecs)
    return vecs
