"""Red team: `docket import` of a messy or hostile file either builds the whole store or refuses in one line.

The promise (issue 22, decision 4): a bad row is refused with one line naming the row (1-based) and
the field, and nothing is half-written: no rows, no embedder recorded, no empty store file. Each
table row below is one file a user or an attacker could hand to `docket import`, and what must
happen to it:

* refused: an `InputError` whose one line names the row and the field (or, for a file with no row
  to name, the file), never a traceback from deep inside (a decoder, pyarrow, SQLite, psycopg);
* accepted: the store holds exactly what the file said (no field dropped, no text altered, no
  duplicate key resolved by whichever parser came first).

The default run replays every table row (each is a tiny SQLite store); `test_redteam_import_*`
(slow) counts the escapes per class for scripts/redteam.sh.
"""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from redteam_log import record

from docket.errors import InputError
from docket.store import importer
from docket.store.bulk import import_file
from docket.store.factory import open_store

DIM = 16
EMB = ("hash-bow", DIM)
LIMIT = getattr(importer, "MAX_LINE_BYTES", 16 * 2**20)  # (getattr: the suite also runs against older code)


def vec(i: int = 0) -> list[float]:
    v = np.random.default_rng(i).normal(size=DIM)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


def rec(i: int, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"id": f"c{i}", "doc": f"d{i}", "text": f"refund window item{i}", "vector": vec(i)}
    r.update(kw)
    return r


def line(r: dict[str, Any]) -> bytes:
    return json.dumps(r).encode() + b"\n"


def good(n: int = 3) -> bytes:
    return b"".join(line(rec(i)) for i in range(n))


def spliced(r: dict[str, Any], extra: str) -> bytes:
    """`r`'s JSON with `extra` (raw JSON text: duplicate keys, NaN, deep nesting) before its last brace."""
    return json.dumps(r)[:-1].encode() + b", " + extra.encode() + b"}\n"


# --- JSONL: (name, the file's bytes, (row, field) it must be refused at | a check of the stored chunk) ---

Check = Callable[[Any], bool]
Expect = tuple[int, str] | Check | str  # str: refused naming the file only, the message holds it

JSONL_FILES: list[tuple[str, bytes, Expect]] = [
    ("invalid UTF-8", good(2) + b'{"id": "\xff"}\n', (3, "record")),
    ("Latin-1 text", good(1) + line(rec(5)).replace(b"item5", b"caf\xe9"), (2, "record")),
    ("gzip named .jsonl", gzip.compress(good(2)), (1, "record")),
    ("UTF-16 file", good(1).decode().encode("utf-16"), (1, "record")),
    ("nesting deeper than the parser's stack", b"[" * 100_000 + b"]" * 100_000 + b"\n", (1, "record")),
    ("deep nesting in metadata", spliced(rec(1), '"m": ' + "[" * 100_000 + "]" * 100_000), (1, "record")),
    ("integer longer than Python reads", spliced(rec(1), '"n": ' + "9" * 5000), (1, "record")),
    ("vector value longer than Python reads", line(rec(1)).replace(b"[", b"[" + b"1" * 5000 + b", ", 1), (1, "record")),
    ("empty file", b"", "holds no rows"),
    ("a line longer than the limit", line(rec(1, text="refund " * (LIMIT // 7 + 1))), (1, "record")),
]

DUPLICATE_KEYS: list[tuple[str, bytes, Expect]] = [
    ("acl then null acl", spliced(rec(1, acl=["hr"]), '"acl": null'), (1, "acl")),
    ("acl then empty acl", spliced(rec(1, acl=["hr"]), '"acl": []'), (1, "acl")),
    ("text twice", spliced(rec(1), '"text": "other"'), (1, "text")),
    ("status twice", spliced(rec(1, status="superseded"), '"status": "current"'), (1, "status")),
    ("vector twice", spliced(rec(1), '"vector": ' + json.dumps(vec(9))), (1, "vector")),
    ("id twice", spliced(rec(1), '"id": "c2"'), (1, "id")),
    ("metadata key twice", spliced(rec(1), '"metadata": {"team": "a", "team": "b"}'), (1, "metadata.team")),
    ("in a later row", good(2) + spliced(rec(7, effective_to="2020-01-01"), '"effective_to": null'), (3, "effective_to")),
]

NUL = [  # PostgreSQL refuses NUL; the model would turn it into U+FFFD, altering an ACL entry without a word
    ("acl entry", rec(1, acl=["hr\x00"]), (1, "acl")),
    ("status", rec(1, status="retired\x00"), (1, "status")),
    ("source_type", rec(1, source_type="policy\x00"), (1, "source_type")),
    ("metadata value", rec(1, metadata={"k": "a\x00b"}), (1, "metadata.k")),
    ("metadata key", rec(1, metadata={"k\x00": "ab"}), (1, "metadata.k\\x00")),
    ("extra column's key", {**rec(1), "k\x00": "ab"}, (1, "k\\x00")),
    ("extra column's value", {**rec(1), "team": ["a", "b\x00"]}, (1, "team")),
    ("text (already refused)", rec(1, text="a\x00b"), (1, "text")),
]

NUMBERS = [  # PostgreSQL's tokens column is int4, SQLite's INTEGER 64 bits: neither took these
    ("tokens beyond 64 bits", rec(1, tokens=2**70), (1, "tokens")),
    ("tokens beyond int4", rec(1, tokens=2**40), (1, "tokens")),
    ("tokens just beyond int4", rec(1, tokens=2**31), (1, "tokens")),
    ("negative tokens", rec(1, tokens=-1), (1, "tokens")),
    # pydantic reads a number as seconds since 1970: 0 made a chunk dated (or expired) 1970-01-01
    ("date 0", rec(1, date=0), (1, "date")),
    ("date as a Unix time", rec(1, date=1714521600), (1, "date")),
    ("date as a float Unix time", rec(1, date=1714521600.0), (1, "date")),
    ("effective_to 0", rec(1, effective_to=0), (1, "effective_to")),
]

MISNAMED = [  # a key spelling an import field would go into metadata, the field it meant absent
    ("Tokens", {**rec(1), "Tokens": 5}, (1, "tokens")),
    ("TOKENS", {**rec(1), "TOKENS": 5}, (1, "tokens")),
    ("token-count? no: 'Tokens ' with a space", {**rec(1), "Tokens ": 5}, (1, "tokens")),
    ("Vector (already refused)", {**rec(1), "Vector": vec(2)}, (1, "vector")),
    ("ACL (already refused)", {**rec(1), "ACL": ["hr"]}, (1, "acl")),
]

# files that must be accepted, and what must then be stored
ACCEPTED: list[tuple[str, bytes, Check]] = [
    ("a BOM before the first line", b"\xef\xbb\xbf" + good(2), lambda s: s.count() == 2),
    ("CRLF line ends", good(2).replace(b"\n", b"\r\n"), lambda s: s.count() == 2),
    ("no newline after the last line", good(2).rstrip(b"\n"), lambda s: s.count() == 2),
    ("a CR between tokens is whitespace, not a line end",
     spliced(rec(1), '\r"team": "ops"'), lambda s: s.get("c1").metadata == {"team": "ops"}),
    ("U+2028 inside a text is no line end",
     line(rec(1, text="refund\u2028window")), lambda s: s.get("c1").text == "refund\u2028window"),
    ("a JSON-escaped NUL-free control char in text",
     line(rec(1, text="tab\there")), lambda s: s.get("c1").text == "tab\there"),
    ("the same key in two different objects", spliced(rec(1), '"m": {"id": 1}'),
     lambda s: s.get("c1").id == "c1" and s.get("c1").metadata == {"m": {"id": 1}}),
]


def _files() -> list[tuple[str, str, bytes, Expect]]:
    out = [("bad-input/import/bytes", n, b, e) for n, b, e in JSONL_FILES]
    out += [("bad-input/import/duplicate-keys", n, b, e) for n, b, e in DUPLICATE_KEYS]
    out += [("bad-input/import/nul", n, line(r), e) for n, r, e in NUL]
    out += [("bad-input/import/numbers", n, line(r), e) for n, r, e in NUMBERS]
    out += [("bad-input/import/misnamed", n, line(r), e) for n, r, e in MISNAMED]
    out += [("bad-input/import/accepted", n, b, e) for n, b, e in ACCEPTED]
    return out


FILES = _files()


# --- Parquet: (name, a function of pyarrow making the table, expect) -----------------------------

def _table(pa: Any, n: int = 6, **cols: Any) -> Any:
    base: dict[str, Any] = {"id": [f"c{i}" for i in range(n)], "doc": [f"d{i}" for i in range(n)],
                            "text": [f"refund item{i}" for i in range(n)],
                            "vector": pa.array([vec(i) for i in range(n)], type=pa.list_(pa.float32()))}
    base.update(cols)
    return pa.table(base)


def _twice(pa: Any, name: str) -> Any:
    t = _table(pa)
    return pa.Table.from_arrays([*t.columns, pa.array(["x"] * 6)], names=[*t.column_names, name])


PARQUET: list[tuple[str, str, Callable[[Any], Any], Expect]] = [
    ("bad-input/import/parquet-types", "timestamp column", lambda pa: _table(pa, when=pa.array([1] * 6, pa.timestamp("s"))),
     (1, "when")),
    ("bad-input/import/parquet-types", "binary column", lambda pa: _table(pa, blob=pa.array([b"\x00\x01"] * 6)), (1, "blob")),
    ("bad-input/import/parquet-types", "decimal column", lambda pa: _table(pa, price=pa.array([1] * 6, pa.decimal128(5, 2))),
     (1, "price")),
    ("bad-input/import/parquet-types", "date32 column outside the contract",
     lambda pa: _table(pa, day=pa.array([None, None, 19000, None, None, None], pa.date32())), (3, "day")),
    ("bad-input/import/parquet-types", "struct metadata holding a timestamp",
     lambda pa: _table(pa, metadata=pa.array([{"t": 1}] * 6, pa.struct([("t", pa.timestamp("s"))]))), (1, "metadata")),
    ("bad-input/import/parquet-types", "tokens as uint64 beyond 64 bits",
     lambda pa: _table(pa, tokens=pa.array([2**63 + 5] * 6, pa.uint64())), (1, "tokens")),
    ("bad-input/import/parquet-types", "tokens beyond int4", lambda pa: _table(pa, tokens=pa.array([2**40] * 6)), (1, "tokens")),
    ("bad-input/import/parquet-types", "Tokens misnamed", lambda pa: _table(pa, Tokens=pa.array([3] * 6)), (1, "tokens")),
    ("bad-input/import/parquet-types", "status holding NUL",
     lambda pa: _table(pa, status=pa.array(["current"] * 4 + ["retired\x00"] * 2)), (5, "status")),
    ("bad-input/import/parquet-types", "acl entry holding NUL", lambda pa: _table(pa, acl=pa.array([["hr\x00"]] * 6)),
     (1, "acl")),
    ("bad-input/import/parquet-types", "date as an integer column", lambda pa: _table(pa, date=pa.array([0] * 6)),
     (1, "date")),
    ("bad-input/import/parquet-columns", "two id columns", lambda pa: _twice(pa, "id"), (1, "id")),
    ("bad-input/import/parquet-columns", "two extra columns of one name",
     lambda pa: pa.Table.from_arrays([*_table(pa).columns, pa.array(["a"] * 6), pa.array(["b"] * 6)],
                                     names=[*_table(pa).column_names, "x", "x"]), (1, "x")),
    ("bad-input/import/parquet-columns", "no rows", lambda pa: _table(pa).slice(0, 0), "holds no rows"),
    ("bad-input/import/parquet-accepted", "an all-null timestamp column is absent",
     lambda pa: _table(pa, when=pa.array([None] * 6, pa.timestamp("s"))), lambda s: s.get("c1").metadata == {}),
    ("bad-input/import/parquet-accepted", "a JSON-able struct metadata",
     lambda pa: _table(pa, metadata=pa.array([{"a": 1, "b": ["x"]}] * 6)),
     lambda s: s.get("c1").metadata == {"a": 1, "b": ["x"]}),
    ("bad-input/import/parquet-accepted", "a date32 date", lambda pa: _table(pa, date=pa.array([19000] * 6, pa.date32())),
     lambda s: str(s.get("c1").date) == "2022-01-08"),
]


# --- the harness ---------------------------------------------------------------------------------

def outcome(path: Path, db: Path, expect: Expect) -> str:
    """"" when `expect` held (and a refused file left an empty store), else what escaped."""
    try:
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
            if callable(expect):
                return "" if expect(s) else "accepted, but stored something else"
    except InputError as e:
        msg = str(e)
        if "\n" in msg:
            return f"a message of more than one line: {msg!r}"
        if isinstance(expect, tuple):
            row, field = expect
            if f"row {row}:" not in msg or f"field '{field}'" not in msg:
                return f"refused naming the wrong row or field: {msg!r}"
        elif isinstance(expect, str):
            if expect not in msg:
                return f"refused with another message: {msg!r}"
        else:
            return f"refused a file that must be accepted: {msg!r}"
        left = sqlite3.connect(db)
        try:
            kept = left.execute("SELECT (SELECT count(*) FROM chunks) + (SELECT count(*) FROM versions) + "
                                "(SELECT count(*) FROM meta WHERE key = 'embedder')").fetchone()[0]
        finally:
            left.close()
        return f"refused, but {kept} rows were written" if kept else ""
    except (Exception, RecursionError) as e:  # noqa: BLE001 - any other exception is the escape
        return f"a traceback: {type(e).__name__}: {str(e)[:120]}"
    return "" if callable(expect) else "accepted a file that must be refused"


def run_jsonl(tmp: Path, name: str, data: bytes, expect: Expect) -> str:
    path = tmp / "in.jsonl"
    path.write_bytes(data)
    return outcome(path, tmp / "s.db", expect)


def run_parquet(tmp: Path, make: Callable[[Any], Any], expect: Expect) -> str:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp / "in.parquet"
    pq.write_table(make(pa), path)
    return outcome(path, tmp / "s.db", expect)


# --- the default run: every table row, one test each ----------------------------------------------

@pytest.mark.parametrize(("cls", "name", "data", "expect"), FILES, ids=[f[1] for f in FILES])
def test_jsonl_attack(tmp_path: Path, cls: str, name: str, data: bytes, expect: Expect) -> None:
    assert run_jsonl(tmp_path, name, data, expect) == ""


@pytest.mark.parametrize(("cls", "name", "make", "expect"), PARQUET, ids=[p[1] for p in PARQUET])
def test_parquet_attack(tmp_path: Path, cls: str, name: str, make: Callable[[Any], Any], expect: Expect) -> None:
    assert run_parquet(tmp_path, make, expect) == ""


def test_damaged_parquet_page_is_named_not_a_traceback(tmp_path: Path) -> None:
    """A footer that reads well over pages that do not. Damaged page headers are found by the page
    walk before pyarrow decodes anything (one line naming the row group and column); a damaged page
    body under a good header is pyarrow's to find: its OSError, raised in the read-ahead thread,
    becomes one line naming the first row of the batch it was reading."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from docket.store import parquet_bounds

    path = tmp_path / "in.parquet"
    pq.write_table(_table(pa, 400), path, compression="zstd")  # pages well before the footer
    good = path.read_bytes()
    data = bytearray(good)
    for k in range(8, len(data) // 2):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))
    assert outcome(path, tmp_path / "s.db", "row group 1: the page header at byte") == ""

    chunk = pq.ParquetFile(io.BytesIO(good)).metadata.row_group(0).column(2)  # text: one data page
    at = chunk.data_page_offset
    header = parquet_bounds.page_header(good, at)
    body = bytearray(good)
    for k in range(at + header.length, at + header.length + header.compressed):
        body[k] ^= 0x5A  # the compressed bytes alone: the header still agrees with the footer
    path.write_bytes(bytes(body))
    assert outcome(path, tmp_path / "s2.db", (1, "record")) == ""


@pytest.mark.parametrize("kind", ["folder", "symlink loop"])
def test_a_path_that_is_no_file_is_named_as_such(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "in.jsonl"
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(path)
    with open_store(str(tmp_path / "s.db")) as s, pytest.raises(InputError) as e:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB)
    assert ("is a directory" if kind == "folder" else "symlink loop") in str(e.value)


@pytest.mark.parametrize("data", [b"", good(2) + b'{"id": "\xff"}\n', spliced(rec(1, acl=["hr"]), '"acl": null')],
                         ids=["empty", "not UTF-8", "duplicate key"])
def test_cli_refusal_leaves_no_store_file(tmp_path: Path, data: bytes) -> None:
    from cli_run import run

    path = tmp_path / "in.jsonl"
    path.write_bytes(data.replace(json.dumps(vec(1)).encode(), json.dumps((vec(1) * 16)[:256]).encode()))
    r = run("import", str(path), "--db", str(tmp_path / "s.db"), "--embedder", "hash")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert list(tmp_path.glob("s.db*")) == []


def test_the_line_limit_reads_no_more_than_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file without a newline is refused after MAX_LINE_BYTES, not read into memory whole."""
    monkeypatch.setattr(importer, "MAX_LINE_BYTES", 4096)
    path = tmp_path / "in.jsonl"
    path.write_bytes(good(2) + b'{"id": "' + b"x" * 100_000)
    reads: list[int] = []
    real = Path.open

    def spy(self: Path, *a: Any, **kw: Any) -> Any:
        fh = real(self, *a, **kw)
        readline = fh.readline

        class Wrapped:
            def __getattr__(self, n: str) -> Any:
                return getattr(fh, n)

            def readline(self, size: int = -1) -> bytes:
                got: bytes = readline(size)
                reads.append(len(got))
                return got

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: Any) -> None:
                fh.close()

        return Wrapped()

    monkeypatch.setattr(Path, "open", spy)
    assert outcome(path, tmp_path / "s.db", (3, "record")) == ""
    assert max(reads) <= 4097


@pytest.mark.postgres
@pytest.mark.parametrize(("name", "r", "row", "field"), [
    ("tokens beyond int4", rec(5, tokens=2**40), 1, "tokens"),
    ("NUL in an extra column's key", {**rec(5), "k\x00": "ab"}, 1, "k\\x00"),
    ("NUL in a metadata value", rec(5, metadata={"k": "a\x00"}), 1, "metadata.k"),
], ids=["tokens beyond int4", "NUL in an extra key", "NUL in metadata"])
def test_postgres_refuses_what_it_could_not_store(request: Any, tmp_path: Path, name: str, r: dict[str, Any], row: int,
                                                  field: str) -> None:
    url = str(request.getfixturevalue("pg_url"))
    path = tmp_path / "in.jsonl"
    path.write_bytes(good(2) + line(r))
    with open_store(url) as s:  # type: ignore[attr-defined]
        with pytest.raises(InputError) as e:
            import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
        assert f"row {row + 2}:" in str(e.value) and f"field '{field}'" in str(e.value), str(e.value)
        assert s.count() == 0 and "embedder" not in s.meta()


# --- the red team: every table, counted per class ------------------------------------------------

@pytest.mark.slow
def test_redteam_import_files(tmp_path: Path) -> None:
    escaped: dict[str, list[str]] = {}
    tried: dict[str, int] = {}
    for i, (cls, name, data, expect) in enumerate(FILES):
        tmp = tmp_path / f"j{i}"
        tmp.mkdir()
        tried[cls] = tried.get(cls, 0) + 1
        why = run_jsonl(tmp, name, data, expect)
        if why:
            escaped.setdefault(cls, []).append(f"{name}: {why}")
    for i, (cls, name, make, expect) in enumerate(PARQUET):
        tmp = tmp_path / f"p{i}"
        tmp.mkdir()
        tried[cls] = tried.get(cls, 0) + 1
        why = run_parquet(tmp, make, expect)
        if why:
            escaped.setdefault(cls, []).append(f"{name}: {why}")
    for cls, n in tried.items():
        record(cls, tried=n, escaped=len(escaped.get(cls, [])), note="; ".join(escaped.get(cls, []))[:300])
    assert not escaped, escaped
