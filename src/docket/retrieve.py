"""Retrieval over a store: dense, BM25, or both fused with reciprocal-rank fusion.

What comes out are assembler candidates: best first, and with `score` always the chunk's cosine
to the question, whatever decided the order. The assembler's floor is a cosine floor (0.40 for
MiniLM); a BM25 or RRF number on that scale would be meaningless. So: `rank` = the order the
chosen method gives, `score` = the dense cosine.

Filters, the access-control filter included, are applied by the store inside each search, so a
chunk the principal may not read never gets a rank, is never fused, never assembled.
`Session.ask` additionally hands the assembler a principal-scoped view of the store, so neighbour
expansion and version look-ups cannot reach a forbidden chunk either; and it passes the question's
vector computed here on to the assembler (`Hits.vector`), so it is embedded once.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Literal

import numpy as np

from docket.embed import Embedder, HashEmbedder, default_embedder
from docket.errors import InputError, UnavailableError
from docket.features import FeatureCache, default_cache
from docket.model import Candidate
from docket.safeio import clean_question
from docket.store.protocol import Filters, Snapshots, Store, may_read

Mode = Literal["fused", "dense", "bm25"]
MODES: tuple[str, ...] = ("fused", "dense", "bm25")
RRF_K = 60


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: score(d) = sum over rankings of 1 / (k + rank of d), ranks from 1.
    Ties break by the first ranking's order, then by id, so the result is deterministic."""
    scores: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for r, ranking in enumerate(rankings):
        for pos, cid in enumerate(ranking, 1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + pos)
            first_seen.setdefault(cid, (r, pos))
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]], kv[0]))


def snapshot_of(store: Store) -> AbstractContextManager[None]:
    """The store's snapshot block (a store without one reads live)."""
    return store.snapshot() if isinstance(store, Snapshots) else nullcontext()


def embedder_for(store: Store) -> Embedder:
    """The embedder the store was indexed with (recorded in its meta); questions must use it."""
    meta = store.meta()
    name, dim = meta.get("embedder"), int(meta.get("dim", "0") or 0)
    if name is None:
        raise InputError("holds no chunks yet; run `docket index` first", where=store.location)
    if name == HashEmbedder.name:
        return HashEmbedder(dim)
    default = default_embedder()
    if name == default.name and dim == default.dim:
        return default
    raise UnavailableError(f"the store was indexed with embedder {name!r} (dim {dim}), which this docket cannot load")


@dataclass(frozen=True)
class Hits:
    """What a search found: the candidates (best first), and the text it embedded with its vector."""

    candidates: list[Candidate]
    query: str
    vector: np.ndarray


def retrieve(
    store: Store,
    question: str,
    *,
    k: int = 50,
    mode: str = "fused",
    filters: Filters | None = None,
    embedder: Embedder | None = None,
    depth: int | None = None,
    rrf_k: int = RRF_K,
) -> list[Candidate]:
    """The `k` best chunks for `question` as assembler candidates (see the module docstring).

    `depth` is how many hits each method contributes before fusion (default max(2k, 100)).
    `filters` default to anonymous access: public chunks only.
    """
    return search(store, question, k=k, mode=mode, filters=filters, embedder=embedder, depth=depth,
                  rrf_k=rrf_k).candidates


def search(
    store: Store,
    question: str,
    *,
    k: int = 50,
    mode: str = "fused",
    filters: Filters | None = None,
    embedder: Embedder | None = None,
    depth: int | None = None,
    rrf_k: int = RRF_K,
    features: FeatureCache | None = None,
) -> Hits:
    """`retrieve`, with the question's vector (`Session.ask` hands it on to the assembler).
    `features`: the feature cache the store offers its rows to (a Session's own, docket.caches)."""
    if mode not in MODES:
        raise InputError(f"must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
    if k < 1:
        raise InputError(f"must be at least 1, got {k}", field="candidates")
    question = clean_question(question)
    filters = filters or Filters()
    embedder = embedder or embedder_for(store)
    depth = depth or max(2 * k, 100)
    qvec = embedder.embed([question])[0]
    rankings: list[list[str]] = []
    with snapshot_of(store):  # search and fetch see the same rows and the same ACLs
        if mode in ("fused", "dense"):
            rankings.append([cid for cid, _ in store.search_dense(qvec, depth, filters)])
        if mode in ("fused", "bm25"):
            rankings.append([cid for cid, _ in store.search_bm25(question, depth, filters)])
        order = [cid for cid, _ in rrf(rankings, rrf_k)] if mode == "fused" else rankings[0]
        order = order[:k]
        chunks = store.get_many(order)
    out: list[Candidate] = []
    vector_of = (features if features is not None else default_cache()).vector_of  # the store's float32 array, not the tuple converted back
    for cid in order:
        c = chunks.get(cid)
        if c is None:
            continue  # deleted between search and fetch (outside a snapshot)
        if not filters.unrestricted and not may_read(filters.principal, c.acl):
            # the ACL changed between search and fetch (a caller outside `store.snapshot()`):
            # the chunk is not shown, and its id is not named anywhere
            continue
        vec = vector_of(c) if c.vector is not None else embedder.embed([c.text])[0]
        out.append(Candidate(chunk=c, score=round(float(vec @ qvec), 6), rank=len(out) + 1))
    return Hits(out, question, qvec)

