"""Shared helpers for the store behaviour tests: small document versions and a backend factory."""

from __future__ import annotations

from datetime import date

import numpy as np

from docket.embed import HashEmbedder
from docket.model import Chunk
from docket.store.protocol import DocumentVersion, Filters, Principal

EMB = HashEmbedder(64)

#: search cases shared by the fetch/search reference tests of both backends: the words documents
#: are drawn from, every kind of acl, and askers covering each principal kind and filter
SEARCH_WORDS = ["refund", "window", "annual", "plans", "salary", "bands", "finance", "policy", "forum", "cancel", "the"]
SEARCH_ACLS: list[tuple[str, ...] | None] = [None, ("group:finance",), ("user:ann",), ("group:hr", "user:bob")]
SEARCH_ASKERS = [
    Filters(),
    Filters(principal=Principal("ann", frozenset({"finance"}))),
    Filters(principal=Principal("bob")),
    Filters(principal=Principal("carl", frozenset({"hr"}))),
    Filters(unrestricted=True),
    Filters(statuses=("current",), principal=Principal("ann")),
    Filters(docs=("d1", "d3", "d7")),
    Filters(source_types=("wiki",), unrestricted=True),
    Filters(date_from=date(2024, 3, 1), principal=Principal("ann", frozenset({"finance"}))),
    Filters(date_to=date(2024, 6, 30), docs=("d2", "d4", "d5", "d6")),
    Filters(docs=("nowhere",)),
]
SEARCH_QUERIES = ["refund window", "salary bands finance", "annual plans cancel", "policy", "the forum", "zzz unknown"]


def version(doc: str, v: int, texts: list[str], *, status: str = "current", acl: tuple[str, ...] | None = None,
            when: date | None = None, source_type: str | None = None, supersedes: bool = True,
            prefix: str | None = None) -> DocumentVersion:
    """A document version with one chunk per text, embedded with the hash embedder."""
    prefix = prefix or f"{doc}-v{v}"
    chunks = [
        Chunk(id=f"{prefix}-{i}", doc=doc, text=t, version=v, status=status, position=i, acl=acl, date=when,
              title=doc.title(), section=f"s{i // 2}", source_type=source_type)
        for i, t in enumerate(texts)
    ]
    return DocumentVersion(doc=doc, version=v, status=status, date=when, effective_to=None, title=doc.title(),
                           source=f"test:{doc}", chunks=chunks, supersedes=supersedes,
                           vectors=EMB.embed(texts), tokens=[len(t.split()) for t in texts])


def qvec(text: str) -> np.ndarray:
    return EMB.embed([text])[0]
