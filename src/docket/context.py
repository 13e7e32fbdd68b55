"""What every move receives besides the passages: the question, look-ups and the trace.

A move is a plain function `(passages, ctx) -> passages`. It reads the store, vectors and
token counts only through this object and writes its decisions to `ctx.trace`, so it can be
tested without a model or a database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any

import numpy as np

from docket.embed import Embedder
from docket.errors import InputError
from docket.model import Chunk, Trace
from docket.policy import Policy
from docket.store.base import ChunkLookup
from docket.tokens import TokenCounter


def clock() -> Date:
    """Today's date: the one place the assembler reads the wall clock (tests replace it)."""
    return Date.today()


@dataclass
class Context:
    question: str
    store: ChunkLookup
    policy: Policy
    counter: TokenCounter
    embedder: Embedder | None = None
    trace: Trace = field(default_factory=Trace)
    #: pairs of chunk ids that disagree (Move 1), turned into labels at render time
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: things the caller must know (e.g. "the current rule was not found")
    warnings: list[str] = field(default_factory=list)
    #: the wall clock, read once per assembly (the default "as of" date for versions)
    today: Date = field(default_factory=lambda: clock())
    #: the date whose versions Move 1 kept and why: {"date", "source"} (set by Move 1)
    as_of: dict[str, Any] | None = None
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _qvec: np.ndarray | None = None

    def has_vectors(self) -> bool:
        return self.embedder is not None

    def question_vector(self) -> np.ndarray:
        if self._qvec is None:
            if self.embedder is None:
                raise InputError("this move needs vectors: give chunks a 'vector' or configure an embedder")
            self._qvec = self.embedder.embed([self.question])[0]
        return self._qvec

    def vectors(self, chunks: list[Chunk]) -> np.ndarray:
        """Unit vectors for chunks: the record's own `vector` if it has one, else the embedder's."""
        missing = [c for c in chunks if c.id not in self._vectors]
        need_model = [c for c in missing if c.vector is None]
        for c in missing:
            if c.vector is not None:
                v = np.asarray(c.vector, dtype=np.float32)
                check_vectors([c], self.embedder)
                self._vectors[c.id] = v
        if need_model:
            if self.embedder is None:
                raise InputError(
                    "has no 'vector' and no embedder is configured", where=f"chunk {need_model[0].id!r}", field="vector"
                )
            for c, v in zip(need_model, self.embedder.embed([c.text for c in need_model])):
                self._vectors[c.id] = v
        if not chunks:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._vectors[c.id] for c in chunks])

    def tokens(self, text: str) -> int:
        return self.counter.count(text)


def check_vectors(chunks: Sequence[Chunk], embedder: Embedder | None) -> None:
    """Caller-supplied vectors must come from the embedder's model and be unit length, or
    every cosine downstream (floor, duplicates, MMR) is meaningless."""
    dim = getattr(embedder, "dim", None)
    for c in chunks:
        if c.vector is None:
            continue
        if dim is not None and len(c.vector) != dim:
            raise InputError(f"has {len(c.vector)} dimensions but the embedder ({getattr(embedder, 'name', '?')}) gives "
                             f"{dim}; embed with the same model or drop the vectors", where=f"chunk {c.id!r}", field="vector")
        norm = float(np.linalg.norm(np.asarray(c.vector, dtype=np.float64)))
        if abs(norm - 1.0) > 1e-3:
            raise InputError(f"is not unit length (norm {norm:.4f}); L2-normalise it so dot products are cosines",
                             where=f"chunk {c.id!r}", field="vector")
