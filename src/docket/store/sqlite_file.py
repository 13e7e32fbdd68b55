"""Opening a SQLite store file: private by default, read-only for readers, refused when it is not docket's.

- A new store file is created by docket itself with mode 0600 (or the caller's `file_mode`),
  whatever the umask: SQLite would create it 0644, readable by every local user, restricted
  chunks included. SQLite gives the `-wal` and `-shm` files the database file's mode, and the
  index snapshot copies it too, so all of a store's files follow.
- A reader opens the file with SQLite's `mode=ro` (and `immutable=1` where the folder cannot
  hold the `-shm` file a read-only WAL reader needs), so reading never creates tables in a
  file, never turns a 0-byte file into a store, and works in a read-only folder.
- `check` looks at what a file holds before anything reads it: the docket tables and `meta`
  values a store needs (a damaged `schema`, `generation` or `dim` would otherwise surface as a
  traceback somewhere later), and refuses in one line naming the file and what is wrong.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from docket.errors import InputError

#: the mode of a store file docket creates (owner read and write only)
PRIVATE = 0o600
#: tables every docket store has had since schema 1; the current schema adds `terms`,
#: `chunk_features` (and `chunk_log`, made on first open)
BASE_TABLES = ("meta", "versions", "chunks", "chunk_acl", "principals")
CURRENT_TABLES = (*BASE_TABLES, "terms", "chunk_features")

_REBUILD = "restore it from a backup, or build a new one with `docket index PATH --db FILE`"


def parse_mode(value: str | int | None, field: str = "--file-mode") -> int | None:
    """An octal permission string like 0600 or 640 (owner bits must allow read and write)."""
    if value is None:
        return None
    if isinstance(value, int):
        mode = value
    else:
        text = value.strip().lower().removeprefix("0o")
        try:
            mode = int(text, 8)
        except ValueError:
            raise InputError(f"must be an octal file mode like 0600, got {value!r}", field=field) from None
    if not 0 <= mode <= 0o777:
        raise InputError(f"must be an octal file mode from 0000 to 0777, got {value!r}", field=field)
    if mode & 0o600 != 0o600:
        raise InputError(f"must let the owner read and write the store (e.g. 0600 or 0640), got {mode:04o}", field=field)
    return mode


def create_private(path: Path, mode: int | None) -> bool:
    """Create `path` empty with `mode` (default 0600), not subject to the umask. False when the file
    already exists (another process created it first: its mode stays)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE if mode is None else mode)
    finally:
        os.close(fd)
    return True


#: the files SQLite and docket keep beside a store file: WAL, SHM, index snapshot, approximate index
BESIDE = ("-wal", "-shm", ".index", ".ann")


def beside(path: Path, extra: tuple[str, ...] = ()) -> list[Path]:
    """The store file and the files kept beside it (and those named by `extra` suffixes)."""
    return [path, *(path.with_name(path.name + s) for s in (*BESIDE, *extra))]


def apply_mode(path: Path, mode: int) -> None:
    """Set `mode` on the store file and the files that live beside it (WAL, SHM, index snapshot,
    approximate index)."""
    for p in beside(path):
        if p.exists():
            os.chmod(p, mode)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write the file. A WAL reader needs the `-shm` file; in a folder
    where it can be neither found nor created, the file is opened immutable (no one can write
    it there either: a WAL writer needs the same folder)."""
    uri = "file:" + quote(str(path.resolve()))
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=30)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        if os.access(path.parent, os.W_OK):
            raise
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False,
                           timeout=30)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _int_meta(meta: dict[str, str], key: str, where: str, lo: int) -> int | None:
    if key not in meta:
        return None
    raw = meta[key]
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = None
    if value is None or value < lo or str(raw).strip() != str(value):
        raise InputError(f"is damaged: its meta value {key}={str(raw)[:40]!r} is not a whole number"
                         + (f" of at least {lo}" if lo > 0 else "") + f"; {_REBUILD}", where=where)
    return value


def check_meta_values(meta: dict[str, str], where: str) -> int | None:
    """The `meta` values every backend reads as numbers (schema, generation, dim) are whole
    numbers, else one line naming the store and the value; the schema version (None: unset)."""
    schema = _int_meta(meta, "schema", where, 1)
    _int_meta(meta, "generation", where, 0)
    _int_meta(meta, "dim", where, 1)
    return schema


def check(conn: sqlite3.Connection, path: Path, *, may_create: bool, newest: int) -> bool:
    """Raise InputError unless the file is a docket store (or, when `may_create`, an empty file
    that becomes one). True when the file is empty (the schema is still to be made)."""
    where = str(path)
    tables = _tables(conn)
    if "meta" not in tables:
        if not tables:
            if not may_create:
                what = "an empty file" if _size(path) == 0 else "an empty SQLite database"
                raise InputError(f"is not a docket store ({what}); build one with `docket index PATH --db {where}`",
                                 where=where)
            return True
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise InputError(f"is not a docket store (a SQLite database with other tables: {shown}); "
                         "give a docket store, or a new file name", where=where)
    meta = {str(r[0]): str(r[1]) for r in conn.execute("SELECT key, value FROM meta")}
    if "schema" not in meta:
        raise InputError(f"is not a docket store, or a damaged one: its meta table has no schema version; {_REBUILD}",
                         where=where)
    schema = check_meta_values(meta, where)
    assert schema is not None
    if schema > newest:
        return False  # the caller says "written by a newer docket"
    missing = [t for t in (CURRENT_TABLES if schema == newest else BASE_TABLES) if t not in tables]
    if missing:
        raise InputError(f"is damaged: the table{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"{'are' if len(missing) > 1 else 'is'} missing; {_REBUILD}", where=where)
    return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def is_private(path: Path) -> bool:
    """No permission bit for group or others (what docket creates by default)."""
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
