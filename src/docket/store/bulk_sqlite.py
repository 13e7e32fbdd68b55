"""`docket import` into a SQLite store: every row of the file in one transaction, batch inserts.

Uses the store's own write transaction (`_transaction`: BEGIN IMMEDIATE, the generation bump,
COMMIT, or ROLLBACK on any error) and its keyword-term packing (`_TermIds`, the same term ids and
posting blobs `write_version` stores), with one `executemany` per batch instead of statements per
document version. The chunk log triggers fire as for any write, so readers' warm indexes and the
ANN index file follow; the search index is built once, after the load, by a first search.

Feature records (docket.features) are not computed here (about 1 ms a chunk, ten times the rest of
the import); a chunk without one gets its features the first time a brief reads it, as chunks
written before schema 3 do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.store.access import AclResolution, resolve_acl
from docket.store.importer import Batch, Checker
from docket.store.protocol import Filters

_INSERT = ("INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
           " trust, acl, public, metadata, text, tokens, vector, terms, len, context)"
           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


def load(store: Any, batches: Iterable[Batch], checker: Checker, note: AclResolution,
         stages: dict[str, float] | None = None) -> int:
    """Write every batch and the versions they make, all or nothing; returns the chunks written.
    `stages` (benchmarks) gets the seconds each stage took."""
    import time

    from docket.store.sqlite_read import _iso
    from docket.store.sqlite_schema import _registry, _TermIds

    ids = _TermIds(store._terms)
    n = 0
    started = time.perf_counter()
    with store._transaction() as cur:
        if cur.execute("SELECT EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM versions)").fetchone()[0]:
            raise InputError("already holds documents; `docket import` builds a new store (import into an empty "
                             "one, then add to it with `docket index`)", where=store.location)
        cur.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                        [("dim", str(checker.dim)), ("embedder", checker.embedder)])
        registry = _registry(cur)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for b in batches:
            n += _insert(cur, b, ids, registry, note)
        cur.executemany(
            "INSERT INTO versions VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(v.doc, v.version, v.status, _iso(v.date), _iso(v.effective_to), v.title, f"{checker.where}:{v.first}",
              v.content_hash(), v.n, now) for v in sorted(checker.versions.values(), key=lambda v: (v.doc, v.version))])
    ids.committed()
    built = time.perf_counter()
    if n:  # the search index (and its snapshot / ANN files), built once now rather than by the first question
        store.search_dense(np.zeros(checker.dim, dtype=np.float32), 1, Filters(unrestricted=True))
    if stages is not None:
        stages["read+check+insert"] = built - started
        stages["search index"] = time.perf_counter() - built
    return n


def _insert(cur: Any, b: Batch, ids: Any, registry: Any, note: AclResolution) -> int:
    from docket.store.sqlite_read import _iso
    from docket.store.sqlite_schema import _search_text

    cs = b.chunks
    terms = ids.pack(cur, [_search_text(c.title, c.section, c.text) for c in cs])
    acls = [resolve_acl(c.acl, registry, note) for c in cs]
    vectors = np.ascontiguousarray(b.vectors, dtype=np.float32)
    cur.executemany(_INSERT, [
        (c.id, c.doc, c.version, c.position, c.status, _iso(c.date), _iso(c.effective_to), c.title, c.section,
         c.source_type, c.trust, json.dumps(list(acl)) if acl is not None else None, 1 if acl is None else 0,
         json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None, c.text, tok, vec.tobytes(), blob, length,
         None)
        for c, acl, vec, tok, (blob, length) in zip(cs, acls, vectors, b.tokens, terms, strict=True)])
    if any(acls):
        first = cur.execute("SELECT rowid FROM chunks WHERE id = ?", (cs[0].id,)).fetchone()[0]
        rows = cur.execute(f"SELECT id, rowid FROM chunks WHERE rowid >= ? AND rowid < ? + {len(cs)}", (first, first))
        rowid_of = dict(rows.fetchall())
        if len(rowid_of) != len(cs) or any(c.id not in rowid_of for c in cs):  # rowids not consecutive
            rowid_of = {c.id: cur.execute("SELECT rowid FROM chunks WHERE id = ?", (c.id,)).fetchone()[0] for c in cs}
        cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)",
                        [(e, rowid_of[c.id]) for c, acl in zip(cs, acls, strict=True) if acl for e in acl])
    return len(cs)
