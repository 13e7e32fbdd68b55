"""Small builders for hand-made cases."""

from __future__ import annotations

from typing import Any

import numpy as np

from docket.brief.sizer import RenderSizer
from docket.context import Context
from docket.model import Candidate, Chunk, Passage, parse_chunk, passage_of
from docket.policy import Policy
from docket.store.base import MemoryStore
from docket.tokens import default_counter


def mk(cid: str, text: str | None = None, **kw: Any) -> Chunk:
    rec: dict[str, Any] = {"id": cid, "doc": kw.pop("doc", "d"), "text": text or f"Text of {cid}."}
    rec.update(kw)
    return parse_chunk(rec)


def cands(chunks: list[Chunk], scores: list[float] | None = None) -> list[Candidate]:
    scores = scores or [1.0 - 0.01 * i for i in range(len(chunks))]
    return [Candidate(chunk=c, score=s, rank=r) for r, (c, s) in enumerate(zip(chunks, scores), 1)]


def passages(chunks: list[Chunk], scores: list[float] | None = None) -> list[Passage]:
    return [passage_of(c) for c in cands(chunks, scores)]


class FixedEmbedder:
    """Vectors chosen by the test: text -> vector (unit length); unknown text -> a fresh axis."""

    name = "fixed"

    def __init__(self, table: dict[str, list[float]], dim: int = 8) -> None:
        self.dim = dim
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for k, v in table.items()}
        self._next = 0

    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[override]
        out = []
        for t in texts:
            if t not in self.table:
                v = np.zeros(self.dim, dtype=np.float32)
                v[(len(self.table) + self._next) % self.dim] = 1.0
                self._next += 1
                self.table[t] = v
            out.append(self.table[t])
        return np.stack(out)


def context(chunks: list[Chunk], question: str = "q", policy: Policy | None = None, embedder: Any = None) -> Context:
    return Context(question=question, store=MemoryStore(chunks), policy=policy or Policy(), counter=default_counter(),
                   embedder=embedder, sizer_factory=RenderSizer)


def newest_schema(store: Any) -> str:
    """The schema version this docket writes for `store`'s backend (SQLite and PostgreSQL number theirs apart)."""
    import sys

    return str(sys.modules[type(store).__module__].SCHEMA_VERSION)
