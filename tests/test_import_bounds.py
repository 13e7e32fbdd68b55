"""`docket import` of a hostile Parquet (or JSONL) file stays within bounded memory and time.

A Parquet file is compressed and dictionary-encoded: a few KB on disk can decode to GBs (a zstd
column of one repeated byte, a dictionary value every row points at, a list of 50 million zeros
in one row), and its footer can declare anything. docket.store.parquet_bounds checks what the
footer declares before a page is decoded and measures each batch before its dictionaries are
expanded; every such file is refused in one line naming the limit (and the row group or row and
the column), and nothing is stored.

The default run checks each bound in-process with its limit lowered (monkeypatch: small files);
`test_redteam_import_bombs` (slow) builds the real bombs (each a few KB to a few MB on disk) and
runs `docket import` on each in a subprocess under a memory ceiling (RLIMIT_AS) and a wall-clock
limit, so an escape fails the test instead of taking the machine down.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from redteam_log import record

import docket
from docket.errors import InputError
from docket.store import importer
from docket.store import parquet_bounds as bounds
from docket.store.bulk import import_file
from docket.store.factory import open_store

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DIM = 16
EMB = ("hash-bow", DIM)
MiB = 2**20


def vectors(n: int, dim: int = DIM) -> Any:
    v = np.random.default_rng(n).normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)


def table(n: int = 6, dim: int = DIM, **cols: Any) -> Any:
    base: dict[str, Any] = {"id": [f"c{i}" for i in range(n)], "doc": [f"d{i}" for i in range(n)],
                            "text": [f"refund item{i}" for i in range(n)], "vector": vectors(n, dim)}
    base.update(cols)
    return pa.table(base)


def refused(path: Path, db: Path, *wanted: str) -> str:
    """"" when importing `path` is refused in one line holding every `wanted` and leaves nothing
    stored, else what happened instead."""
    try:
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
    except InputError as e:
        msg = str(e)
        if "\n" in msg:
            return f"more than one line: {msg!r}"
        missing = [w for w in wanted if w not in msg]
        if missing:
            return f"refused without {missing}: {msg!r}"
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            if s.count() or "embedder" in s.meta():
                return "refused, but something was stored"
        return ""
    except Exception as e:  # noqa: BLE001 - any other exception is the escape
        return f"a traceback: {type(e).__name__}: {str(e)[:200]}"
    return "accepted"


# --- the footer's bounds, with small limits (default run) -----------------------------------------

def test_a_long_footer_is_refused_before_pyarrow_parses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(table().replace_schema_metadata({"junk": "x" * 200_000}), path)
    monkeypatch.setattr(bounds, "MAX_FOOTER_BYTES", 100 * 2**10)
    parsed: list[Any] = []
    real = pq.ParquetFile

    def spy(*a: Any, **kw: Any) -> Any:
        parsed.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(pq, "ParquetFile", spy)
    assert refused(path, tmp_path / "s.db", "declares a footer of", "limit 102,400 bytes") == ""
    assert parsed == []


@pytest.mark.parametrize(("name", "limit", "make", "wanted"), [
    ("columns", ("MAX_COLUMNS", 10), lambda: table(**{f"x{i}": [1] * 6 for i in range(20)}), ("24 columns", "limit 10")),
    ("depth", ("MAX_DEPTH", 4), lambda: table(metadata=pa.array([{"a": {"b": {"c": {"d": 1}}}}] * 6)),
     ("nested 5 levels deep", "field 'metadata'")),
    ("row groups", ("MAX_ROW_GROUPS", 3), lambda: table(12), ("12 row groups", "limit 3")),
    ("declared bytes a row", ("MAX_ROW_BYTES", 1000), lambda: table(text=[f"{i}" + "x" * 300_000 for i in range(6)]),
     ("row group 1: declares 1.7 MiB uncompressed for 6 rows (limit 1,000 bytes a row)", "field 'text'")),
    ("list values a row", ("MAX_ROW_VALUES", 100), lambda: table(acl=[["group:a"] * 101] * 6),
     ("declares 606 values for 6 rows (limit 100 a row)", "field 'acl'")),
    ("expansion over the size on disk", ("MIN_DECODED_BYTES", 0), lambda: table(text=["r" * 2 * MiB] * 6),
     ("declares 12 MiB uncompressed in", "100 times its size")),
], ids=lambda x: x if isinstance(x, str) else "")
def test_the_footer_is_checked_before_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                               limit: tuple[str, int], make: Callable[[], Any],
                                               wanted: tuple[str, ...]) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(make(), path, row_group_size=1 if name == "row groups" else None, compression="zstd",
                   use_dictionary=False)
    monkeypatch.setattr(bounds, *limit)
    decoded: list[int] = []
    monkeypatch.setattr(bounds.Decoded, "slices", lambda self, rb, first: decoded.append(first) or iter(()))
    assert refused(path, tmp_path / "s.db", *wanted) == ""
    assert decoded == []  # refused from the footer, before any page was read


def test_a_vector_column_longer_than_the_dimension_is_named_from_the_footer(tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(table(dim=DIM + 1), path)
    assert refused(path, tmp_path / "s.db", "field 'vector'", "declares 102 values for 6 rows",
                   "embedder 'hash-bow' has dimensions (16 a row)") == ""


def _lie(path: Path, occurrence: int, old: int, new: int) -> None:
    """Rewrite the `occurrence`th i64 field in the footer holding `old` (thrift compact: field
    delta 1, type i64, zigzag varint) to `new`, of the same encoded length. In a one-row-group file
    of flat columns: 0 is the file's num_rows, 1-3 the id/doc/text chunks' num_values, 4 the row
    group's num_rows."""
    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), b""
        while True:
            if z >> 7:
                out, z = out + bytes([(z & 0x7F) | 0x80]), z >> 7
            else:
                return out + bytes([z])

    data = bytearray(path.read_bytes())
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    footer = bytes(data[start:-8])
    a, b = b"\x16" + varint(old), b"\x16" + varint(new)
    assert len(a) == len(b)
    at = -1
    for _ in range(occurrence + 1):
        at = footer.index(a, at + 1)
    data[start + at : start + at + len(a)] = b
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("what", "patches", "wanted"), [
    ("file num_rows more than its row groups", [(0, 1500)], ("declares 1,500 rows, but its row groups hold 1,000",)),
    ("file num_rows fewer", [(0, 500)], ("declares 500 rows, but its row groups hold 1,000",)),
    ("row group num_rows fewer than its pages", [(0, 500), (4, 500)], ("declares 1,000 values for 500 rows",)),
    ("row group num_rows more than its pages", [(0, 1500), (4, 1500)],
     ("declares 1,000 values for 1,500 rows; the footer is damaged", "field 'id'")),
], ids=lambda x: x if isinstance(x, str) else "")
def test_a_footer_whose_row_counts_lie_is_refused(tmp_path: Path, what: str, patches: list[tuple[int, int]],
                                                  wanted: tuple[str, ...]) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(table(1000), path, use_dictionary=False, compression="none", write_statistics=False)
    for occurrence, new in sorted(patches, reverse=True):  # a later one first: the earlier ones still read `old`
        _lie(path, occurrence, 1000, new)
    m = pq.ParquetFile(path).metadata
    assert m.num_rows == patches[0][1] and (len(patches) == 1 or m.row_group(0).num_rows == patches[1][1])
    assert refused(path, tmp_path / "s.db", *wanted) == ""


# --- while decoding: measured before the dictionaries are expanded -------------------------------

def _dictionary_bomb(path: Path, rows: int, value: int, dim: int = DIM) -> None:
    """`rows` rows whose text is all the one dictionary value of `value` bytes: a few KB on disk."""
    zeros = pa.array(np.zeros(rows, dtype=np.int32))
    text = pa.DictionaryArray.from_arrays(zeros, pa.array(["a" * value]))
    t = pa.table({"id": [f"c{i}" for i in range(rows)], "doc": ["d"] * rows, "text": text,
                  "vector": vectors(1, dim).take(zeros)})
    pq.write_table(t, path, compression="zstd", dictionary_pagesize_limit=2**31 - 1)


def test_a_row_is_measured_before_its_dictionary_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dictionary value longer than a row may be, in 4 rows: the footer declares it once (within
    4 rows' limit); row 1 is refused as it would decode, before any value is expanded."""
    path = tmp_path / "in.parquet"
    _dictionary_bomb(path, 4, 3000)
    monkeypatch.setattr(bounds, "MAX_ROW_BYTES", 2000)
    expanded: list[Any] = []
    real = pa.Array.cast
    monkeypatch.setattr(bounds, "_dense", lambda pa_, t: expanded.append(t))
    assert refused(path, tmp_path / "s.db", "row 1: decodes to 3,0", "bytes (limit 2,000 bytes a row",
                   "field 'text'") == ""
    assert expanded == [] and real is pa.Array.cast


def test_a_file_that_decodes_past_its_budget_names_the_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "in.parquet"
    _dictionary_bomb(path, 5000, 1000)  # 5 MB decoded from a few KB
    monkeypatch.setattr(bounds, "MIN_DECODED_BYTES", 2 * MiB)
    monkeypatch.setattr(importer, "BATCH_ROWS", 1000)
    size = path.stat().st_size
    assert size * bounds.MAX_EXPANSION < 2 * MiB
    row = 2 * MiB // (1000 + 4 + 8 + 4 + DIM * 4 + 2) + 1
    msg = refused(path, tmp_path / "s.db", "the file decodes to more than 2 MiB by this row", "field 'text'")
    assert msg == ""
    with open_store(str(tmp_path / "t.db")) as s, pytest.raises(InputError) as e:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB, count=lambda t: 1)
    got = int(str(e.value).split("row ")[1].split(":")[0])
    assert abs(got - row) < 100, (got, row)


def test_batches_are_bounded_in_bytes_not_only_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of 10 KB: a batch holds at most BATCH_BYTES of them, from the footer's sizes (plain
    text) or by slicing a measured batch (dictionary text); the store is the same as with
    unbounded batches."""
    seen: list[int] = []
    real = importer.Checker.batch

    def spy(self: Any, rows: Any) -> Any:
        seen.append(rows.n)
        return real(self, rows)

    monkeypatch.setattr(importer.Checker, "batch", spy)
    stored = []
    default = bounds.BATCH_BYTES
    for enc in ("plain", "dictionary"):
        path = tmp_path / f"{enc}.parquet"
        t = table(200, text=[f"refund {i} " + "x" * 10_000 for i in range(200)])
        if enc == "dictionary":
            t = t.set_column(2, "text", t.column("text").dictionary_encode())
        pq.write_table(t, path, use_dictionary=enc == "dictionary", dictionary_pagesize_limit=2**31 - 1)
        for limit in (default, 100_000):
            monkeypatch.setattr(bounds, "BATCH_BYTES", limit)
            seen.clear()
            db = tmp_path / f"{enc}-{limit}.db"
            with open_store(str(db)) as s:  # type: ignore[attr-defined]
                import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
                stored.append([(c.id, c.text) for c in map(s.get, [f"c{i}" for i in range(200)])])
            assert sum(seen) == 200
            if limit == 100_000:
                assert max(seen) <= 10, (enc, seen)
            else:
                assert len(seen) == 1, (enc, seen)
    assert all(x == stored[0] for x in stored)


def test_dictionary_columns_are_stored_as_their_values(tmp_path: Path) -> None:
    """Strings read dictionary-encoded (and columns a file declares as dictionaries, nested ones
    included) reach the store as the values they stand for."""
    path = tmp_path / "in.parquet"
    t = table(4, acl=[["group:a"], ["group:b", "group:a"], None, ["user:x"]],
              metadata=pa.array([{"k": "v"}, {"k": None}, {"k": "w"}, {"k": "v"}]),
              status=pa.array(["current", "current", "draft", "current"]).dictionary_encode())
    pq.write_table(t, path)
    with open_store(str(tmp_path / "s.db")) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
        got = [s.get(f"c{i}") for i in range(4)]
    assert [c.acl for c in got] == [("group:a",), ("group:a", "group:b"), None, ("user:x",)]
    assert [c.metadata for c in got] == [{"k": "v"}, {"k": None}, {"k": "w"}, {"k": "v"}]
    assert [c.status for c in got] == ["current", "current", "draft", "current"]


def test_sizes_are_those_of_the_decoded_values() -> None:
    """parquet_bounds._sizes reads each row's bytes from offsets and dictionaries: the values'
    own lengths, sliced arrays included."""
    strs = pa.array(["ab", "cde", None, "f" * 100])
    assert bounds._sizes(pa, strs).tolist() == [6, 7, 4, 104]
    assert bounds._sizes(pa, strs.slice(1, 2)).tolist() == [7, 4]
    assert bounds._sizes(pa, strs.dictionary_encode()).tolist() == [10, 11, 0, 108]
    lists = pa.array([["ab"], [], None, ["cde", "f"]])
    assert bounds._sizes(pa, lists).tolist() == [10, 4, 4, 16]
    assert bounds._sizes(pa, lists.slice(3)).tolist() == [16]
    assert bounds._sizes(pa, pa.array([[1.0, 2.0], [3.0]], pa.list_(pa.float32()))).tolist() == [12, 8]
    assert bounds._sizes(pa, vectors(3)).tolist() == [4 * DIM] * 3
    assert bounds._sizes(pa, pa.array([{"a": "xy", "b": 1}])).tolist() == [6 + 8]


# --- JSONL: the line cap bounds what a line can hold ----------------------------------------------

@pytest.mark.parametrize(("name", "line", "wanted"), [
    ("a vector of 5 million values", b'{"id": "c", "doc": "d", "text": "t", "vector": [' + b"0," * 5_000_000 + b"1]}\n",
     ("row 1: has 5000001 values",)),
    ("an acl nested 900 deep", b'{"id": "c", "doc": "d", "text": "t", "acl": ' + b"[" * 900 + b"]" * 900 +
     b', "vector": ' + json.dumps([0.25] * DIM).encode() + b"}\n", ("row 1:", "field 'acl'")),
    ("metadata nested 900 deep", b'{"id": "c", "doc": "d", "text": "t", "metadata": {"m": ' + b"[" * 900 + b"]" * 900 +
     b'}, "vector": ' + json.dumps([0.25] * DIM).encode() + b"}\n", ("row 1:", "nested")),
], ids=lambda x: x if isinstance(x, str) else "")
def test_jsonl_lines_within_the_cap_are_bounded_too(tmp_path: Path, name: str, line: bytes,
                                                    wanted: tuple[str, ...]) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(line)
    assert len(line) < importer.MAX_LINE_BYTES
    assert refused(path, tmp_path / "s.db", *wanted) == ""


# --- the red team: the real bombs, each in a subprocess under a memory ceiling --------------------

#: the address space a `docket import` subprocess may take: a good 20k-row import runs in 2 GiB
CEILING = 3 * 2**30
#: `--embedder hash`'s dimension: the bombs' other rows are good ones, so no other check refuses them first
HASH_DIM = 256
#: seconds one import may take (a good small file: ~2 s)
WALL = 120


def _text_bomb(path: Path, codec: str, rows: int, cell: int) -> None:
    """`rows` rows (one row group each) whose text is `cell` bytes of one repeated letter: a
    column chunk of a few KB that decompresses to `cell`."""
    t = table(1, HASH_DIM, text=["a" * cell])
    with pq.ParquetWriter(path, t.schema, compression=codec, use_dictionary=False,
                          compression_level=1 if codec in ("gzip", "brotli", "zstd") else None) as w:
        for i in range(rows):
            w.write_table(t.set_column(0, "id", pa.array([f"c{i}"])))


def _vector_bomb(path: Path, rows: int, values: int, dictionary: bool) -> None:
    vals = pa.array(np.zeros(values, dtype=np.float32))
    col = pa.ListArray.from_arrays(pa.array([0, values], pa.int32()), vals)
    t = pa.table({"id": ["c0"], "doc": ["d"], "text": ["t"], "vector": col})
    with pq.ParquetWriter(path, t.schema, compression="zstd", use_dictionary=dictionary) as w:
        for i in range(rows):
            w.write_table(t.set_column(0, "id", pa.array([f"c{i}"])))


def _acl_bomb(path: Path, entries: int) -> None:
    acl = pa.ListArray.from_arrays(pa.array([0, entries], pa.int32()), pa.repeat("group:a", entries))
    pq.write_table(table(1, HASH_DIM, acl=acl), path, compression="zstd")


def _modest_rows(path: Path, groups: int, rows: int, cell: int) -> None:
    """Rows of `cell` bytes each (within a row's limit), `groups` row groups of `rows`: GBs a
    batch of 4,096 rows, a few hundred KB on disk."""
    t = table(rows, HASH_DIM, text=["b" * cell] * rows)
    with pq.ParquetWriter(path, t.schema, compression="zstd", use_dictionary=False) as w:
        for _ in range(groups):
            w.write_table(t)


def _wide(path: Path, columns: int) -> None:
    t = table(2, HASH_DIM)
    extra = pa.array([1, 2], pa.int8())
    pq.write_table(pa.Table.from_arrays([*t.columns, *[extra] * columns],
                                        names=[*t.column_names, *[f"x{i}" for i in range(columns)]]), path)


def _deep(path: Path, depth: int) -> None:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    pq.write_table(table(2, HASH_DIM, metadata=[value, value]), path)


BOMBS: list[tuple[str, str, Callable[[Path], None], tuple[str, ...]]] = [
    ("parquet-decompression", "zstd text, 1.5 GiB in 24 rows", lambda p: _text_bomb(p, "zstd", 24, 64 * MiB),
     ("field 'text'", "uncompressed for 1 row (limit 16 MiB a row)")),
    ("parquet-decompression", "gzip text, 256 MiB in 4 rows", lambda p: _text_bomb(p, "gzip", 4, 64 * MiB),
     ("field 'text'", "limit 16 MiB a row")),
    ("parquet-decompression", "brotli text, 256 MiB in 4 rows", lambda p: _text_bomb(p, "brotli", 4, 64 * MiB),
     ("field 'text'", "limit 16 MiB a row")),
    ("parquet-decompression", "snappy text, one 32 MiB cell", lambda p: _text_bomb(p, "snappy", 1, 32 * MiB),
     ("field 'text'", "limit 16 MiB a row")),
    ("parquet-decompression", "one cell just over the row limit", lambda p: _text_bomb(p, "zstd", 1, 16 * MiB + 1),
     ("field 'text'", "limit 16 MiB a row")),
    ("parquet-decompression", "modest rows, 2 GiB a batch", lambda p: _modest_rows(p, 8, 256, MiB),
     ("uncompressed in", "100 times its size")),
    ("parquet-dictionary", "8 MiB value x 10,000 rows (80 GB)", lambda p: _dictionary_bomb(p, 10_000, 8 * MiB, HASH_DIM),
     ("the file decodes to more than 256 MiB by this row", "field 'text'")),
    ("parquet-dictionary", "a 17 MiB value in 4 rows", lambda p: _dictionary_bomb(p, 4, 17 * MiB, HASH_DIM),
     ("row 1: decodes to 17 MiB (limit 16 MiB a row", "field 'text'")),
    ("parquet-lists", "50M-value vectors x 12 rows (plain)", lambda p: _vector_bomb(p, 12, 50_000_000, False),
     ("field 'vector'",)),
    ("parquet-lists", "50M-value vector, dictionary zeros", lambda p: _vector_bomb(p, 1, 50_000_000, True),
     ("field 'vector'", "declares 50,000,000 values for 1 row")),
    ("parquet-lists", "10M acl entries in one row", lambda p: _acl_bomb(p, 10_000_000),
     ("field 'acl'", "limit 8,388,608 a row")),
    ("parquet-footer", "20,000 columns", lambda p: _wide(p, 20_000), ("20,004 columns (limit 1,000)",)),
    ("parquet-footer", "metadata nested 60 deep", lambda p: _deep(p, 60), ("nested", "limit 32")),
    ("parquet-footer", "70 MB footer (30 MB key-value metadata, twice)",
     lambda p: pq.write_table(table(6, HASH_DIM).replace_schema_metadata({"junk": "x" * 30_000_000}), p),
     ("declares a footer of",)),
]


def _run_import(path: Path, db: Path) -> tuple[int | None, str, float]:
    """`docket import` in a subprocess under CEILING bytes of address space and WALL seconds:
    (exit code, stderr; None on a timeout) and its seconds."""
    src = str(Path(docket.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}

    def ceiling() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CEILING, CEILING))

    started = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "docket", "import", str(path), "--db", str(db), "--embedder", "hash"],
                           capture_output=True, text=True, timeout=WALL, preexec_fn=ceiling, env=env)
    except subprocess.TimeoutExpired:
        return None, f"ran past {WALL} s", time.monotonic() - started
    return r.returncode, r.stderr, time.monotonic() - started


def _bomb(tmp: Path, make: Callable[[Path], None], wanted: tuple[str, ...]) -> str:
    path = tmp / "in.parquet"
    make(path)
    assert path.stat().st_size < 200 * MiB
    db = tmp / "s.db"
    rc, err, _ = _run_import(path, db)
    if rc is None:
        return err
    lines = err.strip().splitlines()
    if rc != 2 or len(lines) != 1 or "Traceback" in err:
        return f"exit {rc}: {err.strip()[-300:]!r}"
    missing = [w for w in wanted if w not in lines[0]]
    if missing:
        return f"refused without {missing}: {lines[0]!r}"
    if list(tmp.glob("s.db*")):
        return "refused, but a store was left behind"
    return ""


def test_a_good_file_imports_under_the_ceiling(tmp_path: Path) -> None:
    """The harness itself: a good file imports in a subprocess under CEILING (so a refusal below is
    the bound's, not the ceiling's)."""
    path = tmp_path / "good.parquet"
    pq.write_table(table(2000, dim=256, text=[f"refund window item{i} " * 20 for i in range(2000)]), path)
    rc, err, _ = _run_import(path, tmp_path / "s.db")
    assert rc == 0, err


@pytest.mark.slow
def test_redteam_import_bombs(tmp_path: Path) -> None:
    escaped: dict[str, list[str]] = {}
    tried: dict[str, int] = {}
    for i, (cls, name, make, wanted) in enumerate(BOMBS):
        tmp = tmp_path / f"b{i}"
        tmp.mkdir()
        tried[cls] = tried.get(cls, 0) + 1
        why = _bomb(tmp, make, wanted)
        for f in tmp.iterdir():
            f.unlink()  # the next bomb's disk
        if why:
            escaped.setdefault(cls, []).append(f"{name}: {why}")
    for cls, n in tried.items():
        record(f"bad-input/import/{cls}", tried=n, escaped=len(escaped.get(cls, [])),
               note="; ".join(escaped.get(cls, []))[:300])
    assert not escaped, escaped


@pytest.mark.parametrize("declared", [8000, 100], ids=["more", "fewer"])
def test_a_page_header_that_lies_about_its_size_is_refused_by_pyarrow(tmp_path: Path, declared: int) -> None:
    """Past the footer, a data page's header declares its own uncompressed size: pyarrow
    compares it with what the page decompresses to and raises; the import names the batch's
    first row. (The footer's size for the chunk is not the page's: it cannot catch this.)"""
    path = tmp_path / "in.parquet"
    pq.write_table(table(6, text=["refund window policy " * 10 + str(i) for i in range(6)]), path,
                   compression="zstd", use_dictionary=False)
    at = pq.ParquetFile(path).metadata.row_group(0).column(2).data_page_offset
    data = bytearray(path.read_bytes())

    def varint(z: int, i: int) -> tuple[int, int]:  # (value, the index after it)
        out = shift = 0
        while True:
            out, i, shift = out | (data[i] & 0x7F) << shift, i + 1, shift + 7
            if not data[i - 1] & 0x80:
                return out, i

    assert data[at] == 0x15  # PageHeader field 1 (type, i32), then field 2 (uncompressed_page_size)
    _, i = varint(0, at + 1)
    assert data[i] == 0x15
    size, end = varint(0, i + 1)
    assert 128 <= size >> 1 < 8192 and end - i - 1 == 2  # a two-byte varint, both ways
    z = declared << 1
    data[i + 1 : end] = bytes([(z & 0x7F) | 0x80, z >> 7]) if z >> 7 else bytes([z | 0x80, 0])
    path.write_bytes(bytes(data))
    assert refused(path, tmp_path / "s.db", "row 1:", "field 'record'", "the file is damaged") == ""
