"""Shared helpers for the store behaviour tests: small document versions and a backend factory."""

from __future__ import annotations

from datetime import date

import numpy as np

from docket.embed import HashEmbedder
from docket.model import Chunk
from docket.store.protocol import DocumentVersion

EMB = HashEmbedder(64)


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
