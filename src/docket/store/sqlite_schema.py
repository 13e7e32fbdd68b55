"""The SQLite store's file: its schema, the migrations between schema versions, and opening.

Schema changes are one migration function per version step (`_MIGRATIONS`), run once when an
older file is opened, inside one write transaction. `_Opened` is the bottom of `SQLiteStore`:
it opens (or creates) the file, checks it is a docket store, brings an older one up to date and
gives it its identity (`store_id`) and write tokens, which an index file beside the database is
checked against before it is trusted (sqlite_search, sqlite_ann).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from docket.errors import DocketError, InputError
from docket.features import FeatureCache, RecordWriter, default_cache, record_of
from docket.store import sqlite_file as _sqlite_file
from docket.store.access import AclResolution, Registry, resolve_acl
from docket.store.protocol import chunk_from_row, search_text
from docket.store.terms import term_counts

SCHEMA_VERSION = 4
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS versions(
  doc TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL, date TEXT, effective_to TEXT,
  title TEXT, source TEXT, content_hash TEXT NOT NULL, n_chunks INTEGER NOT NULL, indexed_at TEXT,
  PRIMARY KEY (doc, version));
CREATE TABLE IF NOT EXISTS chunks(
  rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL, version INTEGER NOT NULL,
  position INTEGER, status TEXT NOT NULL, date TEXT, effective_to TEXT, title TEXT, section TEXT,
  source_type TEXT, trust TEXT, acl TEXT, public INTEGER NOT NULL, metadata TEXT, text TEXT NOT NULL,
  tokens INTEGER NOT NULL, vector BLOB NOT NULL, terms BLOB NOT NULL DEFAULT x'', len INTEGER NOT NULL DEFAULT 0,
  context TEXT);
CREATE INDEX IF NOT EXISTS chunks_docver ON chunks(doc, version, position);
CREATE TABLE IF NOT EXISTS chunk_acl(principal TEXT NOT NULL, chunk INTEGER NOT NULL,
  PRIMARY KEY (principal, chunk)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_acl_chunk ON chunk_acl(chunk);
CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS principals(name TEXT PRIMARY KEY, groups TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_features(chunk INTEGER PRIMARY KEY, features TEXT NOT NULL);
"""
#: which chunk rows changed, in commit order: triggers fill it for every writer (older docket
#: versions and plain SQL included), so a reader's warm index applies what changed since it
#: loaded instead of reading the whole file again (`_Index.refreshed`); writes prune it
_LOG_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS chunk_log_insert AFTER INSERT ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (NEW.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_delete AFTER DELETE ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_update AFTER UPDATE ON chunks
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.rowid); INSERT INTO chunk_log(chunk) VALUES (NEW.rowid); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_acl_insert AFTER INSERT ON chunk_acl
  BEGIN INSERT INTO chunk_log(chunk) VALUES (NEW.chunk); END;
CREATE TRIGGER IF NOT EXISTS chunk_log_acl_delete AFTER DELETE ON chunk_acl
  BEGIN INSERT INTO chunk_log(chunk) VALUES (OLD.chunk); END;
"""
#: one random token per generation, written by each write transaction (see `_ensure_write_tokens`)
_TOKENS_SCHEMA = "CREATE TABLE IF NOT EXISTS write_tokens(generation INTEGER PRIMARY KEY, token TEXT NOT NULL);"
_COLS = "c.id, c.doc, c.version, c.position, c.status, c.date, c.effective_to, c.title, c.section, " \
    "c.source_type, c.trust, c.acl, c.metadata, c.text, c.tokens, c.vector, f.features"
#: the chunks with their persisted features (docket.features), kept in a table of their own so
#: the chunk rows (read whole by every search) stay as narrow as before
_FROM = "chunks c LEFT JOIN chunk_features f ON f.chunk = c.rowid"
#: one posting of a chunk's term list: term id, frequency in the chunk
_POSTING = np.dtype([("term", "<i4"), ("tf", "<u2")])


def _migrate_v1_to_v2(cur: sqlite3.Cursor) -> None:
    """Schema 1 -> 2: users and groups apart, BM25 over docket's own postings.

    Plain acl entries are rewritten in the typed form by the principals table (`resolve_acl`:
    a registered user who is no registered group becomes `user:NAME`, the rest `group:NAME`;
    what was done is kept in meta `acl_migration`). Each chunk gets its term ids and length; the
    FTS5 table (whose bm25() counted every row, restricted ones included) is dropped.
    """
    registry = _registry(cur)
    note = AclResolution()
    for rowid, acl in cur.execute("SELECT rowid, acl FROM chunks WHERE acl IS NOT NULL").fetchall():
        typed = resolve_acl(json.loads(acl), registry, note)
        assert typed is not None
        cur.execute("UPDATE chunks SET acl = ? WHERE rowid = ?", (json.dumps(list(typed)), rowid))
        cur.execute("DELETE FROM chunk_acl WHERE chunk = ?", (rowid,))
        cur.executemany("INSERT OR IGNORE INTO chunk_acl VALUES (?, ?)", [(e, rowid) for e in typed])
    cur.execute("ALTER TABLE chunks ADD COLUMN terms BLOB NOT NULL DEFAULT x''")
    cur.execute("ALTER TABLE chunks ADD COLUMN len INTEGER NOT NULL DEFAULT 0")
    cur.execute("CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)")
    rows = cur.execute("SELECT rowid, title, section, text FROM chunks ORDER BY rowid").fetchall()
    ids = _TermIds()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        packed = ids.pack(cur, [_search_text(r[1], r[2], r[3]) for r in part])
        cur.executemany("UPDATE chunks SET terms = ?, len = ? WHERE rowid = ?",
                        [(blob, n, r[0]) for (blob, n), r in zip(packed, part)])
    cur.execute("DROP TABLE IF EXISTS chunks_fts")
    cur.execute("INSERT OR REPLACE INTO meta VALUES ('acl_migration', ?)", (json.dumps(note.to_json()),))


def _migrate_v2_to_v3(cur: sqlite3.Cursor) -> None:
    """Schema 2 -> 3: every chunk keeps its question-independent features (docket.features:
    words, titles, statements, copy hash, rendered token counts), computed here for the rows
    already stored, so a fresh process reads them instead of recomputing them per chunk."""
    cur.execute("CREATE TABLE IF NOT EXISTS chunk_features(chunk INTEGER PRIMARY KEY, features TEXT NOT NULL)")
    cols = _COLS.replace(", f.features", "")
    rows = cur.execute(f"SELECT c.rowid AS rowid, {cols} FROM chunks c ORDER BY c.rowid").fetchall()
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        cur.executemany("INSERT OR REPLACE INTO chunk_features VALUES (?, ?)",
                        [(r["rowid"], record_of(chunk_from_row(dict(r), None))) for r in part])


def _migrate_v3_to_v4(cur: sqlite3.Cursor) -> None:
    """Schema 3 -> 4: a nullable `context` per chunk (index --contextualize: a model-written
    context, embedded and keyword-indexed with the chunk, never shown in a prompt). Existing
    chunks have none, so their vectors and postings stay as they are. A store that already has the
    column (written with it, then marked older) is left as it is."""
    if "context" not in {r[1] for r in cur.execute("PRAGMA table_info(chunks)")}:
        cur.execute("ALTER TABLE chunks ADD COLUMN context TEXT")


#: schema version -> the function that lifts a store from it to the next version
_MIGRATIONS = {1: _migrate_v1_to_v2, 2: _migrate_v2_to_v3, 3: _migrate_v3_to_v4}


def _registry(cur: sqlite3.Cursor) -> Registry:
    return Registry.of((r[0], json.loads(r[1])) for r in cur.execute("SELECT name, groups FROM principals"))


def _search_text(title: str | None, section: str | None, text: str, context: str | None = None) -> str:
    """What keyword search reads of a chunk: title, section, its context (if any) and text."""
    return f"{title or ''} {section or ''} {search_text(context, text)}"


def insert_terms(cur: sqlite3.Cursor, wanted: set[str]) -> list[tuple[int, str]]:
    """(id, term) of each of `wanted`, inserting the terms the `terms` table lacks (in sorted order,
    so ids do not depend on the set's iteration order)."""
    todo = sorted(wanted)
    if not todo:
        return []
    cur.executemany("INSERT OR IGNORE INTO terms(term) VALUES (?)", [(t,) for t in todo])
    out: list[tuple[int, str]] = []
    for start in range(0, len(todo), 500):
        part = todo[start : start + 500]
        out += cur.execute(f"SELECT id, term FROM terms WHERE term IN ({','.join('?' * len(part))})", part).fetchall()
    return out


class _TermIds:
    """Term -> id in the `terms` table; ids are never reused or deleted, so a mapping read once
    stays true. New ids enter the shared cache only after their transaction commits."""

    def __init__(self, cache: dict[str, int] | None = None) -> None:
        self.cache = cache if cache is not None else {}
        self.new: dict[str, int] = {}

    def pack(self, cur: sqlite3.Cursor, texts: Sequence[str]) -> list[tuple[bytes, int]]:
        counts = [term_counts(t) for t in texts]
        wanted = {t for c in counts for t in c if t not in self.cache and t not in self.new}
        for tid, term in insert_terms(cur, wanted):
            self.new[term] = tid
        out = []
        cache, new = self.cache, self.new
        for c in counts:
            arr = np.empty(len(c), dtype=_POSTING)
            arr["term"] = [cache.get(t) or new[t] for t in c]
            arr["tf"] = np.minimum(np.fromiter(c.values(), dtype=np.int64, count=len(c)), 65535)
            out.append((arr.tobytes(), int(sum(c.values()))))
        return out

    def committed(self) -> None:
        self.cache.update(self.new)
        self.new = {}




def _set_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL, waiting for other openers. Changing the journal mode needs the file to
    itself for an instant and SQLite answers "database is locked" at once instead of calling the
    busy handler, so two processes opening a brand-new store at the same moment would fail."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(0.2, pause * 2)



class _Opened:
    """An open store file (the schema made or migrated); the other parts of `SQLiteStore` build on it."""

    def __init__(self, path: str | Path, *, create: bool = True, read_only: bool = False,
                 file_mode: int | None = None, records: RecordWriter | None = None,
                 features: FeatureCache | None = None) -> None:
        """`create`: make the file when there is none (mode 0600, or `file_mode`, whatever the
        umask). `read_only`: open it with SQLite's mode=ro, for commands that only read: nothing is
        created or migrated, and a file that is not a docket store is refused (sqlite_file).
        `records`: writes each chunk's feature record (see below). `features`: the cache the rows
        read are offered to (a Session's own, docket.caches; default the process-wide one)."""
        self.path = Path(path)
        #: writes each chunk's feature record (docket.features); the wiring passes one that adds
        #: the rendered token counts (docket.brief.sizer.feature_record), which a store cannot know
        self.records: RecordWriter = records or record_of
        #: the feature cache each row read is offered to, with its stored record and float32 vector
        self.features: FeatureCache = features if features is not None else default_cache()
        self.location = str(self.path)
        self.read_only = read_only
        if (read_only or not create) and not self.path.exists():
            raise InputError("no store here; build one with `docket index PATH --db FILE`" + _near_stores(self.path),
                             where=str(self.path))
        if self.path.exists() and not self.path.is_file():
            raise InputError("is not a file; give the store's file name (e.g. docket.db)", where=str(self.path))
        try:
            if read_only:
                self._conn = _sqlite_file.connect_read_only(self.path)
            else:
                _sqlite_file.create_private(self.path, file_mode)
                self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
            self._conn.row_factory = sqlite3.Row
            _sqlite_file.check(self._conn, self.path, may_create=create and not read_only, newest=SCHEMA_VERSION)
            if not read_only:
                _set_wal(self._conn)
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._open_schema()
        except BaseException as e:
            conn = getattr(self, "_conn", None)
            if conn is not None:
                conn.close()  # a refused file is not held open
            if isinstance(e, sqlite3.DatabaseError):
                raise InputError(f"is not a docket SQLite store ({e}){_chunk_file_hint(self.path)}",
                                 where=str(self.path)) from None
            if isinstance(e, OSError):
                raise InputError(f"cannot be opened ({e.strerror or e})", where=str(self.path)) from None
            raise
        if file_mode is not None and not read_only:
            _sqlite_file.apply_mode(self.path, file_mode)
        self._lock = threading.RLock()
        self._terms: dict[str, int] = {}
        self._snapshot_depth = 0

    def _open_schema(self) -> None:
        if self.read_only:
            self._open_read_only()
            return
        self._open_schema_version()
        self._ensure_log()
        self._store_id = self._ensure_store_id()
        self._tokens = self._ensure_write_tokens()

    def _open_read_only(self) -> None:
        """What `_open_schema` learns, without writing: an older store is refused (a write
        command upgrades it), and one without a store id or write tokens reads no snapshot."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        found = int(row[0])
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if found > SCHEMA_VERSION:
            raise InputError(f"was written by a newer docket (schema {found}, this one reads {SCHEMA_VERSION}); "
                             "upgrade docket", where=str(self.path))
        if found < SCHEMA_VERSION or "chunk_log" not in tables:
            raise InputError(f"was written by an older docket (schema {found}); a command that writes it "
                             "(`docket index ... --db FILE`, `docket principal NAME --groups ... --db FILE`) upgrades it "
                             "once, then reading works", where=str(self.path))
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        self._store_id = str(row[0]) if row is not None else None
        self._tokens = "write_tokens" in tables

    def _ensure_write_tokens(self) -> bool:
        """The table of write tokens (one random token per generation, written by every write
        transaction): an index snapshot says which token its generation had, and a database whose
        token for that generation differs (a restored backup written again, a copy that went its
        own way) is not the state the snapshot describes. False when it cannot be made (a
        read-only file): no snapshot is then read or written."""
        found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'write_tokens'")
        if found.fetchone() is not None:
            current = self._conn.execute("SELECT 1 FROM write_tokens WHERE generation = "
                                         "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation')")
            if current.fetchone() is not None:
                return True
        # the table, and a token for the generation the file is at (written by a docket before
        # tokens, or migrated): without one, a store that is only read would never get a snapshot
        try:
            self._conn.executescript(f"BEGIN IMMEDIATE;\n{_TOKENS_SCHEMA}\n"
                                     "INSERT OR IGNORE INTO write_tokens SELECT CAST(value AS INTEGER), "
                                     f"'{uuid.uuid4().hex}' FROM meta WHERE key = 'generation';\nCOMMIT;")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'write_tokens'")
            return found.fetchone() is not None  # the table is there (a generation without a token writes no file)
        return True

    def _ensure_store_id(self) -> str | None:
        """This database's random identity (meta `store_id`), given to a store made before it
        existed on its first open (INSERT OR IGNORE: two openers agree). An index snapshot is used
        only by the database it was written for: a file deleted and indexed again at the same path
        can reach the same generation, row count and row ids with other contents or other ACLs.
        None when it cannot be written (a read-only file): such a store reads no snapshot."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is not None:
            return str(row[0])
        try:
            self._conn.executescript("BEGIN IMMEDIATE;\n"
                                     f"INSERT OR IGNORE INTO meta VALUES ('store_id', '{uuid.uuid4().hex}');\nCOMMIT;")
        except sqlite3.OperationalError:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            return None
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(row[0]) if row is not None else None

    def _ensure_log(self) -> None:
        """The change log and its triggers, added to a store made before they existed (one
        transaction; IF NOT EXISTS, so two openers agree)."""
        found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'chunk_log_acl_delete'")
        if found.fetchone() is not None:
            return
        try:
            self._conn.executescript(f"BEGIN IMMEDIATE;\n{_LOG_SCHEMA}\nCOMMIT;")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _open_schema_version(self) -> None:
        """Create a new store, or bring an older one up to `SCHEMA_VERSION` (one transaction)."""
        fresh = self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None
        if fresh:  # the whole schema in one transaction: another opener sees all of it or none
            try:  # (IF NOT EXISTS throughout: two creators agree)
                self._conn.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\n{_LOG_SCHEMA}\n"
                                         f"INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA_VERSION}');\n"
                                         "INSERT OR IGNORE INTO meta VALUES ('generation', '0');\n"
                                         f"INSERT OR IGNORE INTO meta VALUES ('store_id', '{uuid.uuid4().hex}');\nCOMMIT;")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        found = int(row[0]) if row is not None else SCHEMA_VERSION
        if found > SCHEMA_VERSION:
            raise InputError(f"was written by a newer docket (schema {found}, this one reads {SCHEMA_VERSION}); "
                             "upgrade docket", where=str(self.path))
        if found == SCHEMA_VERSION:
            return
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            found = int(cur.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])  # another opener may have migrated it
            while found < SCHEMA_VERSION:
                _MIGRATIONS[found](cur)
                found += 1
                cur.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(found),))
            cur.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    # --- settings and principals -----------------------------------------------------------
    def _check_writable(self) -> None:
        if self.read_only:
            raise DocketError(f"{self.path}: opened for reading only; open it without read_only to write")

    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self._conn.execute("SELECT key, value FROM meta")}


def _near_stores(path: Path) -> str:
    """A mistyped --db: the SQLite stores beside it whose names are close (at most three)."""
    import difflib

    try:
        with os.scandir(path.parent if str(path.parent) else ".") as it:
            names = [e.name for e in it if e.name.endswith((".db", ".sqlite", ".sqlite3")) and e.is_file()]
    except OSError:
        return ""
    near = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(near)}?)" if near else ""


def _chunk_file_hint(path: Path) -> str:
    """A chunk file (JSONL) given where a store belongs: say what to do with it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return ""
    if head[:1] in (b"{", b"["):
        return (f"; it holds JSON text, a chunk file? index it with `docket index {path} --db docket.db`, "
                f"or read it directly with `docket assemble --store {path}`")
    return ""

