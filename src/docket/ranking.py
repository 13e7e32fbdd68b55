"""The spec's default ranking: chunks by cosine to the question.

Used when nobody ranked the candidates: `docket.assemble` without candidates (every chunk of the
store), the attachments searched inside (docket.modes) and the integrations' documents without
scores. It lives below `docket.assemble` and `docket.modes` so either can rank without the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from docket.context import check_entries, stack
from docket.embed import Embedder
from docket.features import FeatureCache, default_cache
from docket.model import Candidate, Chunk


def rank_by_cosine(question: str, chunks: Sequence[Chunk], embedder: Embedder,
                   question_vector: np.ndarray | None = None, features: FeatureCache | None = None) -> list[Candidate]:
    """Rank chunks by cosine to the question (the spec's default ranking). Ties break by id.
    `question_vector`: the question's vector when the caller already has it; `features`: the
    session's feature cache (docket.caches), else the process-wide one."""
    if not chunks:
        return []
    ctx_vecs = _chunk_vectors(chunks, embedder, features if features is not None else default_cache())
    q = question_vector if question_vector is not None else embedder.embed([question])[0]
    sims = ctx_vecs @ q
    order_idx = sorted(range(len(chunks)), key=lambda i: (-float(sims[i]), chunks[i].id))
    return [Candidate(chunk=chunks[i], score=round(float(sims[i]), 6), rank=r) for r, i in enumerate(order_idx, 1)]


def _chunk_vectors(chunks: Sequence[Chunk], embedder: Embedder, features: FeatureCache) -> np.ndarray:
    check_entries(chunks, embedder, features)
    entries = features.entries(chunks)
    if all(e.vector is not None for e in entries):
        return stack([e.vector for e in entries])  # type: ignore[misc]
    out = embedder.embed([c.text for c in chunks])
    for i, e in enumerate(entries):
        if e.vector is not None:
            out[i] = e.vector
    return out


__all__ = ["rank_by_cosine"]
