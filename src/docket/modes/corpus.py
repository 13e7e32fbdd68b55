"""The whole corpus instead of retrieval (the spec's "when not to augment", case 2).

When everything the asker may read fits a configured size (default 200,000 tokens), the prompt
can carry all of it and skip retrieval: no retrieval misses, and questions about the whole
corpus ("which policies mention travel?") become answerable. What goes in:

* exactly the chunks this principal may read (the ACL rule of docket.store), nothing else, so
  two principals whose readable sets differ get different blocks and different cache keys;
* of each document, the version in force on the pinned `as_of` or today, as Move 1 decides
  (dates named in a question are not applied: the block is the same for every question);
* untrusted chunks marked as such (left out with `pack.untrusted = "never"`);
* in document order (document id, version, position; with `order.untrusted_last`, strangers'
  posts after the official documents), labelled S1..Sn in that order, so the block is
  byte-identical for every question and a provider's prompt cache holds it.

The block is built once per store generation and readable set and reused across questions.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any

from docket.brief.render import render_all
from docket.context import Context
from docket.model import Chunk, Passage
from docket.store.access import Principal, may_read
from docket.store.base import ChunkLookup, VersionInfo, version_in_force
from docket.store.protocol import ScopedView


@dataclass
class CorpusBlock:
    passages: list[Passage]
    #: tokens of the rendered documents block (what the size limit is compared with)
    tokens: int
    documents: int
    #: sha256 over the readable chunks' ids, versions and text
    readable_key: str
    #: chunks left out, by reason ("retired": not the version in force; "untrusted")
    left_out: dict[str, int] = field(default_factory=dict)


def _unwrap(store: ChunkLookup, principal: Principal | None) -> tuple[Any, Principal | None]:
    """The store behind a principal-scoped view, and the view's principal."""
    if isinstance(store, ScopedView):
        return store._store, principal if principal is not None else store.principal
    return store, principal


def _all_chunks(store: Any) -> Iterable[tuple[Chunk, VersionInfo]]:
    """Every chunk with its version's info: from `export()` (SQLite, PostgreSQL) or `all()`."""
    export = getattr(store, "export", None)
    if callable(export):
        for dv in export():
            info = VersionInfo(dv.doc, dv.version, dv.status, dv.date, dv.effective_to)
            for c in dv.chunks:
                yield c, info
        return
    everything = getattr(store, "all", None)
    if not callable(everything):
        from docket.errors import InputError

        raise InputError("whole-corpus mode needs a store that can list its chunks (all() or export())",
                         field="corpus.mode")
    for c in everything():
        yield c, VersionInfo(c.doc, c.version, c.status, c.date, c.effective_to)


def readable(store: ChunkLookup, principal: Principal | None, ctx: Context) -> tuple[list[Chunk], dict[str, int]]:
    """The chunks of the versions in force that `principal` may read, in document order."""
    inner, who = _unwrap(store, principal)
    by_doc: dict[str, dict[int, tuple[VersionInfo, list[Chunk]]]] = {}
    for c, info in _all_chunks(inner):
        if not may_read(who, c.acl):
            continue
        by_doc.setdefault(c.doc, {}).setdefault(c.version, (info, []))[1].append(c)
    kept: list[Chunk] = []
    left = {"retired": 0, "not_yet": 0, "untrusted": 0}
    day = as_of_day(ctx)
    for doc in sorted(by_doc):
        versions = by_doc[doc]
        current = version_in_force([v[0] for v in versions.values()], day)
        for ver, (_info, chunks) in versions.items():
            if current is None or ver != current.version:
                left["retired"] += len(chunks)
                continue
            for c in sorted(chunks, key=lambda c: (c.position is None, c.position or 0, c.id)):
                if c.date is not None and c.date > day:  # published after the as-of day: not there yet
                    left["not_yet"] += 1
                    continue
                if c.untrusted and ctx.policy.pack.untrusted == "never":
                    left["untrusted"] += 1
                    continue
                kept.append(c)
    if ctx.policy.order.untrusted_last:  # strangers' posts after every official document, as in retrieval
        kept.sort(key=lambda c: c.untrusted)
    return kept, {k: v for k, v in left.items() if v}


def as_of_day(ctx: Context) -> Date:
    """The day whose versions the block holds: the pinned `as_of`, else today (as Move 1 does).
    Dates in the question are not applied: the block must be the same for every question."""
    return ctx.policy.as_of or ctx.today


def passages_in_order(chunks: list[Chunk]) -> list[Passage]:
    """One passage per chunk, ranked by document order (they are not ranked by relevance)."""
    return [Passage(chunks=(c,), score=0.0, rank=i, hits=(c.id,)) for i, c in enumerate(chunks, 1)]


def readable_key(chunks: list[Chunk]) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(f"{c.doc}\x00{c.version}\x00{c.id}\x00".encode())
        h.update(c.text.encode())
        h.update(b"\x01")
    return h.hexdigest()


def block_of(chunks: list[Chunk], left_out: dict[str, int], ctx: Context) -> CorpusBlock:
    passages = passages_in_order(chunks)
    documents, _, _ = render_all(passages, ctx.policy.render, ctx.caches)
    n_docs = len({(c.doc, c.version) for c in chunks})
    return CorpusBlock(passages=passages, tokens=ctx.tokens(documents) if passages else 0, documents=n_docs,
                       readable_key=readable_key(chunks), left_out=left_out)


# one block per (store generation, readable set, rendering): built once, reused across questions
_MEMO: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], CorpusBlock]] = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()  # the service assembles from several threads


def _generation(store: Any) -> str | None:
    gen = getattr(store, "generation", None)
    if callable(gen):
        return str(gen())
    meta = getattr(store, "meta", None)
    if callable(meta):
        value = meta().get("generation")
        return str(value) if value is not None else None
    if type(store).__name__ == "MemoryStore":
        return "static"  # built once from a list, never written
    return None


def corpus_block(store: ChunkLookup, principal: Principal | None, ctx: Context) -> CorpusBlock:
    inner, who = _unwrap(store, principal)
    gen = _generation(inner)
    key = (gen, tuple(sorted(who.keys)) if who else None, as_of_day(ctx), ctx.policy.pack.untrusted,
           ctx.policy.order.untrusted_last, ctx.policy.render.model_dump_json(), ctx.counter.name)
    memo: dict[tuple[Any, ...], CorpusBlock] | None = None
    if gen is not None:
        with _MEMO_LOCK:
            try:
                memo = _MEMO.setdefault(inner, {})
            except TypeError:  # not weak-referenceable: no memo
                memo = None
            if memo is not None and key in memo:
                return memo[key]
    chunks, left = readable(store, principal, ctx)
    block = block_of(chunks, left, ctx)
    if memo is not None:
        with _MEMO_LOCK:
            if len(memo) >= 16:  # a few readable sets per store generation
                memo.pop(next(iter(memo)))
            memo[key] = block
    return block
