"""Opening a SQLite store (issue 20 §6, issue 26 §4): reading never creates or changes a file, a
file that is not a docket store (or a damaged one) is refused in one line naming it, and a new
store's files are private (0600, or `--file-mode`) whatever the umask."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bad_input_kit import problems, run_cli
from conftest_pg import pg_server, pg_url  # noqa: F401

from docket.demo import nimbus_path
from docket.errors import InputError
from docket.store import sqlite_file
from docket.store.factory import open_store
from docket.store.sqlite import SQLiteStore

READ_COMMANDS = {
    "ask": lambda db: ["ask", "refund", "--db", db, "--json"],
    "export": lambda db: ["export", str(Path(db).with_name("out.jsonl")), "--db", db],
    "principal": lambda db: ["principal", "ann", "--db", db],
    "index --from": lambda db: ["index", "--from", db, "--db", str(Path(db).with_name("target.db")), "--embedder",
                                "hash", "--json"],
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def store_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("open") / "store.db"
    out = run_cli(["index", nimbus_path(), "--db", str(db), "--embedder", "hash", "--json"])
    assert out.rc == 0, out.text
    return db


def _copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(src.read_bytes())
    return dst


def _other_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.commit()
    conn.close()
    return path


# --- reading never writes -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(READ_COMMANDS))
@pytest.mark.parametrize("kind", ["other-sqlite", "zero-bytes", "empty-database"])
def test_a_read_command_refuses_a_file_that_is_not_a_store_and_leaves_it_as_it_was(tmp_path: Path, command: str,
                                                                                    kind: str) -> None:
    db = tmp_path / "other.db"
    if kind == "other-sqlite":
        _other_sqlite(db)
    elif kind == "zero-bytes":
        db.write_bytes(b"")
    else:
        sqlite3.connect(db).execute("PRAGMA user_version = 3").connection.close()
    before, names = _digest(db), sorted(p.name for p in tmp_path.iterdir())
    out = run_cli(READ_COMMANDS[command](str(db)))
    assert not problems(out, command.split()[0], must_fail=True), out.text
    assert out.rc == 2 and "is not a docket store" in out.err and str(db) in out.err, out.err
    assert _digest(db) == before and db.stat().st_size == (0 if kind == "zero-bytes" else db.stat().st_size)
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # no -wal, -shm, out.jsonl or target.db left


def test_an_index_run_will_not_write_its_tables_into_another_database(tmp_path: Path) -> None:
    db = _other_sqlite(tmp_path / "app.db")
    before = _digest(db)
    good = tmp_path / "a.md"
    good.write_text("# Refunds\n\nAnnual plans can be refunded within 30 days.\n")
    out = run_cli(["index", str(good), "--db", str(db), "--embedder", "hash"])
    assert out.rc == 2 and "other tables: invoices" in out.err, out.text
    assert _digest(db) == before


def test_a_zero_byte_file_becomes_a_store_only_when_written(tmp_path: Path) -> None:
    """`index` into an empty file (mktemp) makes it a store; `ask` on it does not."""
    db = tmp_path / "made-by-mktemp.db"
    db.write_bytes(b"")
    assert run_cli(["ask", "refund", "--db", str(db)]).rc == 2 and db.stat().st_size == 0
    good = tmp_path / "a.md"
    good.write_text("# Refunds\n\nAnnual plans can be refunded within 30 days.\n")
    assert run_cli(["index", str(good), "--db", str(db), "--embedder", "hash", "--json"]).rc == 0
    assert run_cli(["ask", "refund", "--db", str(db), "--json"]).rc == 0


def test_reading_a_store_changes_no_byte_of_it(store_db: Path, tmp_path: Path) -> None:
    db = _copy(store_db, tmp_path / "s.db")
    before = _digest(db)
    for command in ("ask", "export", "principal"):
        out = run_cli(READ_COMMANDS[command](str(db)))
        assert out.rc == 0, (command, out.text)
    assert _digest(db) == before


def test_a_read_only_store_object_refuses_writes_with_a_message(store_db: Path, tmp_path: Path) -> None:
    db = _copy(store_db, tmp_path / "s.db")
    with SQLiteStore(db, read_only=True) as st:
        assert st.count() > 0 and st.documents()
        with pytest.raises(Exception, match="opened for reading only"):
            st.set_meta({"x": "1"})
        with pytest.raises(Exception, match="opened for reading only"):
            st.set_principal("ann", ["hr"])


def test_a_missing_store_is_named_for_readers(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(InputError, match="no store here"):
        open_store(str(missing), read_only=True)
    assert not missing.exists()


def test_a_mistyped_store_or_a_chunk_file_as_store_says_what_was_meant(tmp_path: Path) -> None:
    """`--db docket.bd` next to docket.db, and `--db chunks.jsonl`: a new user's two first mistakes. The
    line names the close store name, or says the file is a chunk file and the two ways to use it."""
    (tmp_path / "docket.db").write_bytes(b"")
    (tmp_path / "other.sqlite").write_bytes(b"")
    with pytest.raises(InputError, match=r"no store here; .* \(did you mean docket.db\?\)$"):
        open_store(str(tmp_path / "docket.bd"), read_only=True)
    with pytest.raises(InputError, match=r"no store here; build one with `docket index PATH --db FILE`$"):
        open_store(str(tmp_path / "zzz.db"), read_only=True)
    chunks = tmp_path / "chunks.jsonl"
    shutil.copy(nimbus_path(), chunks)
    with pytest.raises(InputError, match=r"is not a docket SQLite store \(.*\); it holds JSON text, a chunk file\? "
                       r"index it with `docket index .*chunks.jsonl --db docket.db`, or read it directly with "
                       r"`docket assemble --store .*chunks.jsonl`"):
        open_store(str(chunks), read_only=True)
    assert chunks.read_bytes() == Path(nimbus_path()).read_bytes()


def test_the_immutable_fallback_is_used_only_where_the_folder_cannot_be_written(store_db: Path, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A WAL reader needs the -shm file; in a read-only folder (simulated: root writes anywhere) the
    file is opened immutable, in a writable one the error is not hidden."""
    db = _copy(store_db, tmp_path / "s.db")
    real = sqlite3.connect

    class _Failing:  # what a WAL reader gets where the -shm file can be neither found nor made
        def execute(self, *_: object) -> None:
            raise sqlite3.OperationalError("attempt to write a readonly database")

        def close(self) -> None:
            pass

    monkeypatch.setattr(sqlite_file.sqlite3, "connect", lambda target, *a, **k: _Failing() if "&immutable=1" not in target
                        else real(target, *a, **k))
    monkeypatch.setattr(sqlite_file.os, "access", lambda *_: False)
    conn = sqlite_file.connect_read_only(db)
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    monkeypatch.setattr(sqlite_file.os, "access", lambda *_: True)
    with pytest.raises(sqlite3.OperationalError):
        sqlite_file.connect_read_only(db)


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(),
                    reason="needs root to run a reader as another user")
def test_a_store_in_a_read_only_folder_is_read_by_a_user_who_cannot_write_there(store_db: Path,
                                                                                tmp_path: Path) -> None:
    """The real case: another user, a folder they cannot write. The system Python runs the reader
    (the test's venv may not be readable by that user), with this checkout's sqlite_file."""
    tmp_path = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own folder is private to root
    folder = tmp_path / "ro"
    folder.mkdir()
    db = _copy(store_db, folder / "s.db")
    os.chmod(db, 0o644)
    for p in (tmp_path, folder):
        os.chmod(p, 0o755)
    code = ("import sys, types; sys.modules['docket.errors'] = types.SimpleNamespace(InputError=ValueError);"
            "import importlib.util as u; s = u.spec_from_file_location('sf', sys.argv[1]); m = u.module_from_spec(s);"
            "s.loader.exec_module(m); from pathlib import Path;"
            "print(m.connect_read_only(Path(sys.argv[2])).execute('SELECT count(*) FROM chunks').fetchone()[0])")
    src = Path(sqlite_file.__file__)
    probe = tmp_path / "sqlite_file.py"
    probe.write_bytes(src.read_bytes())
    os.chmod(probe, 0o644)
    parents = [p for p in tmp_path.parents if str(p) != "/"]
    if any(not os.stat(p).st_mode & stat.S_IXOTH for p in parents):
        pytest.skip("the temporary folder is not reachable by another user")
    proc = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
                           "-c", code, str(probe), str(db)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and int(proc.stdout) > 0, proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["s.db"]
    shutil.rmtree(tmp_path, ignore_errors=True)


# --- damaged stores -------------------------------------------------------------------------------------

DAMAGE = {
    "schema-v4": ("UPDATE meta SET value = 'v4' WHERE key = 'schema'", "schema='v4' is not a whole number"),
    "schema-missing": ("DELETE FROM meta WHERE key = 'schema'", "no schema version"),
    "schema-zero": ("UPDATE meta SET value = '0' WHERE key = 'schema'", "schema='0'"),
    "generation-zz": ("UPDATE meta SET value = 'zz' WHERE key = 'generation'", "generation='zz'"),
    "generation-negative": ("UPDATE meta SET value = '-4' WHERE key = 'generation'", "generation='-4'"),
    "generation-float": ("UPDATE meta SET value = '1.5' WHERE key = 'generation'", "generation='1.5'"),
    "dim-abc": ("UPDATE meta SET value = 'abc' WHERE key = 'dim'", "dim='abc'"),
    "dim-zero": ("UPDATE meta SET value = '0' WHERE key = 'dim'", "dim='0'"),
    "dim-empty": ("UPDATE meta SET value = '' WHERE key = 'dim'", "dim=''"),
    "no-chunks": ("DROP TABLE chunks", "the table chunks is missing"),
    "no-versions": ("DROP TABLE versions", "the table versions is missing"),
    "no-principals": ("DROP TABLE principals", "the table principals is missing"),
    "no-meta": ("DROP TABLE meta", "is not a docket store"),
}


def _damaged(store_db: Path, where: Path, sql: str) -> Path:
    db = _copy(store_db, where / "damaged.db")
    conn = sqlite3.connect(db)
    conn.executescript(sql)
    conn.commit()
    conn.close()
    return db


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", ["ask", "export", "principal", "index", "delete", "principal --groups"])
def test_a_damaged_store_is_one_line_naming_it_for_every_command(store_db: Path, tmp_path: Path, damage: str,
                                                                 command: str) -> None:
    sql, words = DAMAGE[damage]
    db = str(_damaged(store_db, tmp_path, sql))
    good = tmp_path / "a.md"
    good.write_text("# Refunds\n\nAnnual plans can be refunded within 30 days.\n")
    args = {"ask": ["ask", "refund", "--db", db], "export": ["export", str(tmp_path / "o.jsonl"), "--db", db],
            "principal": ["principal", "ann", "--db", db], "index": ["index", str(good), "--db", db, "--embedder", "hash"],
            "delete": ["delete", "refund-policy", "--db", db],
            "principal --groups": ["principal", "ann", "--groups", "hr", "--db", db]}[command]
    out = run_cli(args)
    assert not problems(out, args[0], must_fail=True), out.text + (out.exc or "")
    assert out.rc == 2 and db in out.err and words in out.err, out.err


def test_the_python_api_refuses_a_damaged_store_too(store_db: Path, tmp_path: Path) -> None:
    db = _damaged(store_db, tmp_path, DAMAGE["dim-abc"][0])
    for how in ({}, {"read_only": True}, {"create": False}):
        with pytest.raises(InputError, match="dim='abc'"):
            open_store(str(db), **how)  # type: ignore[arg-type]


def test_an_older_store_read_only_says_how_to_upgrade(tmp_path: Path) -> None:
    from store_v1 import write_sqlite_v1

    db = tmp_path / "v1.db"
    write_sqlite_v1(str(db))
    before = _digest(db)
    out = run_cli(["ask", "holiday", "--db", str(db)])
    assert out.rc == 2 and "older docket (schema 1)" in out.err, out.text
    assert _digest(db) == before
    open_store(str(db)).close()  # a writing open migrates it
    assert run_cli(["ask", "holiday", "--db", str(db), "--json"]).rc == 0


# --- file modes -----------------------------------------------------------------------------------------


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_a_new_store_and_its_wal_and_shm_files_are_0600_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """Subprocess: the umask is per process."""
    db = tmp_path / "s.db"
    code = ("import os, sys; os.umask(int(sys.argv[2], 8)); from docket.store.sqlite import SQLiteStore;"
            "from docket.store.protocol import DocumentVersion;"
            "s = SQLiteStore(sys.argv[1]); s.set_meta({'x': '1'}); import pathlib;"
            "print(sorted(p.name for p in pathlib.Path(sys.argv[1]).parent.iterdir()))")
    proc = subprocess.run([sys.executable, "-c", code, str(db), oct(umask)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    assert proc.returncode == 0, proc.stderr
    assert {"s.db-wal", "s.db-shm"} <= set(json.loads(proc.stdout.replace("'", '"')))  # open while listed
    assert _mode(db) == 0o600


def test_index_writes_private_files_and_the_snapshot_follows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_INDEX_SNAPSHOT", "1")
    old = os.umask(0o022)
    try:
        db = tmp_path / "s.db"
        assert run_cli(["index", nimbus_path(), "--db", str(db), "--embedder", "hash", "--json"]).rc == 0
        assert run_cli(["ask", "refund", "--db", str(db), "--json"]).rc == 0  # writes the index snapshot
        made = [p for p in tmp_path.iterdir() if p.name.startswith("s.db")]
        assert db in made and all(_mode(p) == 0o600 for p in made), {p.name: oct(_mode(p)) for p in made}
    finally:
        os.umask(old)


def test_an_explicit_file_mode_is_honoured_on_new_and_existing_stores(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert run_cli(["index", nimbus_path(), "--db", str(db), "--embedder", "hash", "--file-mode", "0640"]).rc == 0
    assert _mode(db) == 0o640
    assert run_cli(["index", nimbus_path(), "--db", str(db), "--embedder", "hash", "--mode", "600"]).rc == 0
    assert _mode(db) == 0o600
    assert run_cli(["index", nimbus_path(), "--db", str(db), "--embedder", "hash"]).rc == 0
    assert _mode(db) == 0o600  # without the option an existing store keeps its mode


@pytest.mark.parametrize("value, words", [("0400", "owner read and write"), ("abc", "octal"), ("", "octal"),
                                          ("1777", "0000 to 0777"), ("0o9", "octal"), ("-1", "octal")])
def test_a_bad_file_mode_is_a_usage_error(tmp_path: Path, value: str, words: str) -> None:
    out = run_cli(["index", nimbus_path(), "--db", str(tmp_path / "s.db"), "--embedder", "hash", f"--file-mode={value}"])
    assert not problems(out, "index", must_fail=True), out.text
    assert words in out.err and not (tmp_path / "s.db").exists()


def test_parse_mode() -> None:
    assert sqlite_file.parse_mode("0600") == 0o600 and sqlite_file.parse_mode("0o640") == 0o640
    assert sqlite_file.parse_mode(None) is None and sqlite_file.parse_mode(0o660) == 0o660


@pytest.mark.parametrize("key, value", [("schema", "v4"), ("generation", "zz"), ("dim", "abc"), ("dim", "0")])
def test_a_postgres_store_with_damaged_meta_is_one_line_too(pg_url: str, key: str, value: str) -> None:  # noqa: F811
    import psycopg

    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                     (key, value))
    with pytest.raises(InputError, match=f"{key}='{value}'"):
        open_store(pg_url)
    out = run_cli(["ask", "refund", "--db", pg_url])
    assert not problems(out, "ask", must_fail=True) and f"{key}='{value}'" in out.err, out.text


def test_a_postgres_read_creates_nothing_in_a_database_that_is_not_a_store(pg_url: str) -> None:  # noqa: F811
    """`docket ask` / `export` on a PostgreSQL database without docket's tables: one line, and
    the database (here an empty schema) is left without a table."""
    import psycopg

    def tables() -> list[str]:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            return [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = ANY(current_schemas(false))")]

    assert tables() == []
    with pytest.raises(InputError, match="not a docket store"):
        open_store(pg_url, create=False, read_only=True)
    for command in (["ask", "refund", "--db", pg_url], ["export", "out.jsonl", "--db", pg_url]):
        out = run_cli(command)
        assert out.rc == 2 and "not a docket store" in out.err, out.text
    assert tables() == []
    open_store(pg_url).close()  # a writer makes the store; a reader then opens it
    open_store(pg_url, create=False, read_only=True).close()
