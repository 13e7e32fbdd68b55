"""Writing a SQLite store: one `BEGIN IMMEDIATE` transaction per document version, and the change log.

A process killed mid-index leaves every document either in its old or its new state. Every write
transaction bumps the generation counter and records a random token for it (`write_tokens`);
triggers on the chunk tables fill `chunk_log` with the rows that changed, for every writer (older
docket versions and plain SQL included), so a reader's warm index applies only those rows.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from docket.errors import DocketError, InputError
from docket.features import stored_features
from docket.store.access import Principal, Registry, resolve_acl
from docket.store.protocol import DocumentVersion, WriteResult, check_version, plan_write
from docket.store.sqlite_read import _iso, _Reads
from docket.store.sqlite_schema import _registry, _search_text, _TermIds

#: how many log entries a store keeps (a reader further behind reloads in full)
_LOG_KEEP = 200_000


class _Writes(_Reads):
    """The write side of `SQLiteStore`."""

    def set_meta(self, values: dict[str, str]) -> None:
        """All the values in one transaction (a reader never sees `embedder` without `dim`)."""
        with self._transaction() as cur:
            cur.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(values.items()))

    def claim_meta(self, values: dict[str, str]) -> dict[str, str]:
        """Set the keys no one has set yet, in one transaction, and return the settings after it:
        of two first index runs starting at once, one fixes the embedder and the other learns it."""
        with self._transaction() as cur:
            cur.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", sorted(values.items()))
            return {r["key"]: r["value"] for r in cur.execute("SELECT key, value FROM meta")}

    def set_principal(self, name: str, groups: Sequence[str]) -> None:
        p = Principal(name, frozenset(groups))  # validates and strips user:/group: prefixes
        with self._lock:
            self._check_writable()
            self._conn.execute("INSERT OR REPLACE INTO principals VALUES (?, ?)", (p.name, json.dumps(sorted(p.groups))))

    # --- writing ----------------------------------------------------------------------------
    def write_version(self, dv: DocumentVersion) -> WriteResult:
        if dv.vectors is None or dv.tokens is None:
            raise DocketError(f"{dv.source}: document {dv.doc!r} v{dv.version} has no vectors/token counts yet")
        contexts: list[str | None] = list(dv.contexts) if dv.contexts else [None] * len(dv.chunks)
        texts = [_search_text(c.title, c.section, c.text, ctx) for c, ctx in zip(dv.chunks, contexts, strict=True)]
        ids = _TermIds(self._terms)
        with self._transaction() as cur:
            existing = self.stored_versions(dv.doc)
            check_version(existing, dv)
            plan = plan_write(existing, dv)
            self._check_ids(cur, dv)
            self._delete_rows(cur, "doc = ? AND version = ?", (dv.doc, dv.version))
            cur.execute(
                "INSERT OR REPLACE INTO versions VALUES (?,?,?,?,?,?,?,?,?,?)",
                (dv.doc, dv.version, plan.status, _iso(dv.date), _iso(dv.effective_to), dv.title, dv.source,
                 dv.content_hash, len(dv.chunks), datetime.now(UTC).isoformat(timespec="seconds")),
            )
            self._insert_chunks(cur, dv, plan, ids.pack(cur, texts), contexts)
        ids.committed()
        return plan

    def _check_ids(self, cur: sqlite3.Cursor, dv: DocumentVersion) -> None:
        ids = [c.id for c in dv.chunks]
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            q = f"SELECT id, doc, version FROM chunks WHERE id IN ({','.join('?' * len(part))}) AND NOT (doc = ? AND version = ?)"
            clash = cur.execute(q, (*part, dv.doc, dv.version)).fetchone()
            if clash:
                raise InputError(
                    f"chunk id {clash['id']!r} already belongs to document {clash['doc']!r} v{clash['version']}",
                    where=dv.source, field="id",
                )

    def _insert_chunks(self, cur: sqlite3.Cursor, dv: DocumentVersion, plan: WriteResult,
                       terms: list[tuple[bytes, int]], contexts: list[str | None]) -> None:
        """Insert the chunk rows of one version (inside the caller's transaction), acl entries typed."""
        assert dv.vectors is not None and dv.tokens is not None
        vectors = np.ascontiguousarray(dv.vectors, dtype=np.float32)
        registry = _registry(cur) if any(c.acl for c in dv.chunks) else Registry()
        acls = [resolve_acl(c.acl, registry, plan.acl) for c in dv.chunks]
        cur.executemany(
            "INSERT INTO chunks(id, doc, version, position, status, date, effective_to, title, section, source_type,"
            " trust, acl, public, metadata, text, tokens, vector, terms, len, context)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(c.id, c.doc, c.version, c.position, plan.status, _iso(c.date), _iso(c.effective_to), c.title, c.section,
              c.source_type, c.trust, json.dumps(list(acl)) if acl is not None else None,
              1 if acl is None else 0, json.dumps(c.metadata, ensure_ascii=False) if c.metadata else None,
              c.text, int(n), vec.tobytes(), blob, length, ctx or None)
             for c, acl, vec, n, (blob, length), ctx in zip(dv.chunks, acls, vectors, dv.tokens, terms, contexts,
                                                            strict=True)],
        )
        cur.executemany("INSERT OR REPLACE INTO chunk_features SELECT rowid, ? FROM chunks WHERE id = ?",
                        [(stored_features(c, plan.status, self.records), c.id) for c in dv.chunks])
        if any(acls):
            rowid_of = {r[1]: r[0] for r in cur.execute("SELECT rowid, id FROM chunks WHERE doc = ? AND version = ?",
                                                       (dv.doc, dv.version))}
            cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)",
                            [(e, rowid_of[c.id]) for c, acl in zip(dv.chunks, acls) if acl for e in acl])

    def _delete_rows(self, cur: sqlite3.Cursor, where: str, args: tuple[Any, ...]) -> int:
        rowids = [r[0] for r in cur.execute(f"SELECT rowid FROM chunks WHERE {where}", args)]
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            cur.execute(f"DELETE FROM chunk_acl WHERE chunk IN ({marks})", part)
            cur.execute(f"DELETE FROM chunk_features WHERE chunk IN ({marks})", part)
            cur.execute(f"DELETE FROM chunks WHERE rowid IN ({marks})", part)
        return len(rowids)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One write: `BEGIN IMMEDIATE`, the caller's statements, the generation bump (readers
        reload their index when it changes), COMMIT; any error rolls all of it back."""
        with self._lock:
            self._check_writable()
            if self._snapshot_depth:
                raise DocketError("a store cannot be written inside its own snapshot() block")
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")  # waits up to the connection's 30 s for another writer
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                raise InputError("another writer held the store for 30 s; nothing of this write was stored, "
                                 "run it again", where=str(self.path)) from None
            try:
                yield cur
                cur.execute("DELETE FROM chunk_log WHERE seq <= (SELECT max(seq) FROM chunk_log) - ?", (_LOG_KEEP,))
                cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
                if self._tokens:
                    cur.execute("INSERT OR REPLACE INTO write_tokens SELECT CAST(value AS INTEGER), ? FROM meta "
                                "WHERE key = 'generation'", (uuid.uuid4().hex,))
                    cur.execute("DELETE FROM write_tokens WHERE generation <= (SELECT CAST(value AS INTEGER) FROM meta "
                                "WHERE key = 'generation') - ?", (_LOG_KEEP,))
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def delete(self, doc: str, version: int | None = None) -> int:
        where, args = ("doc = ?", (doc,)) if version is None else ("doc = ? AND version = ?", (doc, version))
        with self._transaction() as cur:
            n = self._delete_rows(cur, where, args)
            cur.execute(f"DELETE FROM versions WHERE {where}", args)
        return n

