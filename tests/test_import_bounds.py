"""`docket import` of a hostile Parquet (or JSONL) file stays within bounded memory and time.

A Parquet file is compressed and dictionary-encoded: a few KB on disk can decode to GBs (a zstd
column of one repeated byte, a dictionary value every row points at, a list of 50 million zeros
in one row), and its footer can declare anything. docket.store.parquet_bounds checks what the
footer declares before a page is decoded, then each column chunk's page headers against the footer
(pyarrow allocates what a page header declares), and measures each batch before its dictionaries
are expanded; every such file is refused in one line naming the limit (and the row group or row and
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
from parquet_edit import Fields, column_meta, decode, encode, field, rewrite_footer, rewrite_page
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


# --- page headers: read before pyarrow decodes a page ---------------------------------------------

INT32_MAX = 2**31 - 1


def _pages_file(path: Path, codec: str = "zstd", version: str = "1.0", dictionary: bool = False, n: int = 50,
                dim: int = DIM) -> None:
    """A good file of `n` rows, one row group, its text 100 bytes a row; page checksums on, so
    that a header can be rewritten longer (parquet_edit.rewrite_page drops the crc)."""
    pq.write_table(table(n, dim, text=[f"refund window item{i:03} " * 4 for i in range(n)]), path, compression=codec,
                   data_page_version=version, use_dictionary=dictionary, write_page_checksum=True)


def _lie_in_page(path: Path, column: int, edit: Callable[[Fields], None], dictionary: bool = False) -> None:
    """`edit` the first data page header (or the dictionary page's) of `column` in row group 1."""
    c = pq.ParquetFile(path).metadata.row_group(0).column(column)
    rewrite_page(path, c.dictionary_page_offset if dictionary else c.data_page_offset, edit)


def _set(fid: int, value: int, sub: int | None = None) -> Callable[[Fields], None]:
    """An edit setting PageHeader field `fid` (or field `fid` of its sub-header field `sub`)."""
    def edit(fields: Fields) -> None:
        field(field(fields, sub)[2] if sub else fields, fid)[2] = value
    return edit


def _footer_low(path: Path, column: str, declared: int) -> None:
    """The footer declares `declared` uncompressed bytes for `column`'s chunks, its pages' headers
    their true sizes."""
    def edit(fields: Fields) -> None:
        for _, name, meta in column_meta(fields):
            if name == column:
                field(meta, 6)[2] = declared
    rewrite_footer(path, edit)


TEXT, VECTOR = 2, 3  # the columns of `table`

PAGE_LIES: list[tuple[str, dict[str, Any], Callable[[Path], None], tuple[str, ...]]] = [
    *[(f"{codec} v1 data page uncompressed_page_size", {"codec": codec},
       lambda p: _lie_in_page(p, TEXT, _set(2, INT32_MAX)),
       ("row group 1: a data page at byte", "declares 2.0 GiB uncompressed, past the 4,817 bytes the footer",
        "field 'text'",
        "limit: the footer's size")) for codec in ("none", "snappy", "gzip", "zstd")],
    *[(f"{codec} v2 data page uncompressed_page_size", {"codec": codec, "version": "2.0"},
       lambda p: _lie_in_page(p, VECTOR, _set(2, INT32_MAX)),
       ("row group 1: a data page at byte", "declares 2.0 GiB uncompressed", "field 'vector'"))
      for codec in ("none", "zstd")],
    *[(f"{codec} dictionary page uncompressed_page_size", {"codec": codec, "dictionary": True},
       lambda p: _lie_in_page(p, TEXT, _set(2, INT32_MAX), dictionary=True),
       ("row group 1: a dictionary page at byte", "declares 2.0 GiB uncompressed", "field 'text'"))
      for codec in ("none", "snappy")],
    ("compressed_page_size past the chunk", {}, lambda p: _lie_in_page(p, VECTOR, _set(3, INT32_MAX)),
     ("declares 2.0 GiB compressed, past the end of its column chunk", "field 'vector'")),
    ("dictionary num_values", {"dictionary": True},
     lambda p: _lie_in_page(p, VECTOR, _set(1, INT32_MAX, sub=7), dictionary=True),
     ("the dictionary page at byte", "declares 2,147,483,647 values in", "(at least 4 bytes a value)",
      "field 'vector'")),
    ("v1 data page num_values", {}, lambda p: _lie_in_page(p, TEXT, _set(1, 51, sub=5)),
     ("its pages hold 51 values, but the footer declares 50 for the column chunk", "field 'text'")),
    ("v2 data page num_values", {"version": "2.0"}, lambda p: _lie_in_page(p, TEXT, _set(1, 49, sub=8)),
     ("its pages hold 49 values, but the footer declares 50", "field 'text'")),
    ("v2 level bytes past the page", {"version": "2.0"}, lambda p: _lie_in_page(p, TEXT, _set(5, 100_000, sub=8)),
     ("declares 100,000 bytes of levels in a page of", "field 'text'")),
    ("a negative page size", {}, lambda p: _lie_in_page(p, TEXT, _set(2, -1)),
     ("the page header at byte", "cannot be read (a page size of -1)", "field 'text'")),
    ("a header that is no PageHeader", {}, lambda p: _lie_in_page(p, TEXT, lambda f: f.__setitem__(0, [1, 8, b"x"])),
     ("cannot be read (field 1 of type 8, not an i32)", "field 'text'")),
    ("the footer declares less than the true headers", {}, lambda p: _footer_low(p, "text", 1000),
     ("a data page at byte", "uncompressed, past the 1,000 bytes the footer declares for its column chunk",
      "field 'text'")),
    ("the footer's chunk runs past the file's pages", {},
     lambda p: rewrite_footer(p, lambda f: [field(m, 7).__setitem__(2, 10**6) for _, n, m in column_meta(f)
                                            if n.startswith("vector")]),
     ("the column chunk's pages (bytes", "lie outside the file's pages", "field 'vector'")),
]


@pytest.mark.parametrize(("what", "kw", "lie", "wanted"), PAGE_LIES, ids=[x[0] for x in PAGE_LIES])
def test_a_page_header_that_lies_is_refused_before_pyarrow_reads_a_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, kw: dict[str, Any],
        lie: Callable[[Path], None], wanted: tuple[str, ...]) -> None:
    """Each page header is read against the footer before pyarrow decodes a page (before, it
    allocated what a header declared: 2 GiB, 8 GiB for a dictionary's values; or a codec-less
    page's lie went unnoticed, or a true header under a footer declaring less decoded past every
    bound). One line naming the row group and the column; no batch is read."""
    path = tmp_path / "in.parquet"
    _pages_file(path, **kw)
    lie(path)
    batches: list[Any] = []
    real = pq.ParquetFile.iter_batches
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", lambda self, *a, **k: batches.append(a) or real(self, *a, **k))
    assert refused(path, tmp_path / "s.db", *wanted) == ""
    assert batches == []


def test_a_page_header_that_declares_less_is_still_pyarrows_to_catch(tmp_path: Path) -> None:
    """A header declaring fewer bytes than its page decompresses to bounds what pyarrow
    allocates: pyarrow refuses the page (the batch's first row named)."""
    path = tmp_path / "in.parquet"
    _pages_file(path, "zstd")
    _lie_in_page(path, TEXT, _set(2, 100))
    assert refused(path, tmp_path / "s.db", "row 1:", "field 'record'", "the file is damaged") == ""


def _stored(path: Path, db: Path) -> list[Any]:
    with open_store(str(db)) as s:  # type: ignore[attr-defined]
        import_file(s, path, embedder=EMB, count=lambda t: len(t.split()))
        return [c and (c.id, c.text, c.acl, c.metadata, c.status) for c in map(s.get, [f"c{i}" for i in range(300)])]


GOOD = [(codec, version, dictionary) for codec in ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
        for version, dictionary in (("1.0", True), ("2.0", False))]


def _good_table() -> Any:
    n = 300
    return table(n, text=[f"refund window {i} " + "policy " * (i % 40) for i in range(n)],
                 acl=[None if i % 3 else [f"group:g{i % 7}", "user:ann"] for i in range(n)],
                 metadata=pa.array([{"k": f"v{i % 5}", "n": i} for i in range(n)]),
                 status=pa.array(["current" if i % 4 else "draft" for i in range(n)]))


def test_good_files_of_every_codec_and_page_kind_import_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page headers of files pyarrow writes (every codec, v1 pages with dictionaries, v2
    pages without, page checksums, statistics, pages of 7 rows, nested columns, nulls) are read
    as written (compared with an independent decoding of each) and the files import alike, a
    header read across windows of 16 bytes too."""
    t = _good_table()
    want = None
    for k, (codec, version, dictionary) in enumerate([*GOOD, ("zstd", "1.0", "small pages")]):
        path = tmp_path / f"{k}.parquet"
        pq.write_table(t, path, compression=codec, data_page_version=version, use_dictionary=bool(dictionary),
                       write_page_checksum=k % 2 == 0, max_rows_per_page=7 if dictionary == "small pages" else None)
        data = path.read_bytes()
        m = pq.ParquetFile(path).metadata
        pages = 0
        for j in range(m.num_columns):
            c = m.row_group(0).column(j)
            pos = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            end_of_chunk = pos + c.total_compressed_size
            while pos < end_of_chunk:
                fields, end = decode(data, pos)
                h = bounds.page_header(data, pos)
                sub = next((f[2] for f in fields if f[0] in (5, 7, 8)), [])
                assert (h.type, h.uncompressed, h.compressed, h.values, h.length) == (
                    field(fields, 1)[2], field(fields, 2)[2], field(fields, 3)[2], field(sub, 1)[2], end - pos)
                pos = end + h.compressed
                pages += 1
            assert pos == end_of_chunk
        assert pages >= m.num_columns + (40 if dictionary == "small pages" else 0)
        got = _stored(path, tmp_path / f"{k}.db")
        assert want is None or got == want, (codec, version, dictionary)
        want = got
    monkeypatch.setattr(bounds, "_WINDOW", 16)
    assert _stored(path, tmp_path / "window.db") == want


def test_bytes_after_a_chunks_last_page_are_not_read_as_pages(tmp_path: Path) -> None:
    """A column chunk whose declared size runs past its last page (a writer's padding: the footer
    counts bytes that hold no page) imports as pyarrow reads it, which stops at the chunk's values:
    the walk reads no header after them, so the padding is not refused as a malformed page."""
    path = tmp_path / "padded.parquet"
    _pages_file(path, codec="zstd")
    want = _stored(path, tmp_path / "plain.db")
    data = path.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    footer_at = len(data) - 8 - n
    fields, _ = decode(data, footer_at)
    last = list(column_meta(fields))[-1][2]
    field(last, 7)[2] += 64  # total_compressed_size: the 64 bytes of padding added after the chunk
    new = encode(fields)
    path.write_bytes(data[:footer_at] + b"\x00" * 64 + new + len(new).to_bytes(4, "little") + b"PAR1")
    assert pq.ParquetFile(path).read().num_rows == 50  # pyarrow itself reads it
    assert _stored(path, tmp_path / "padded.db") == want


@pytest.mark.parametrize("kw", [{}, {"use_dictionary": False}, {"data_page_version": "2.0"}],
                         ids=["dictionary", "plain", "v2"])
def test_empty_row_groups_have_no_pages_to_refuse(tmp_path: Path, kw: dict[str, Any]) -> None:
    """pyarrow writes a chunk of no rows as a dictionary page alone (data_page_offset 0), or as
    no page at all: an empty file is still 'holds no rows', and an empty row group between two
    others imports."""
    pq.write_table(table(0), tmp_path / "empty.parquet", **kw)
    assert refused(tmp_path / "empty.parquet", tmp_path / "e.db", "holds no rows") == ""
    t = table(5)
    with pq.ParquetWriter(tmp_path / "in.parquet", t.schema, **kw) as w:
        for part in (t.slice(0, 3), t.slice(0, 0), t.slice(3)):
            w.write_table(part)
    got = _stored(tmp_path / "in.parquet", tmp_path / "s.db")[:6]
    assert [c and c[0] for c in got] == [*[f"c{i}" for i in range(5)], None]


def test_a_page_header_longer_than_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "in.parquet"
    _pages_file(path)  # its data page headers hold statistics: 100-byte min and max texts
    monkeypatch.setattr(bounds, "MAX_PAGE_HEADER_BYTES", 128)
    monkeypatch.setattr(bounds, "_WINDOW", 16)
    assert refused(path, tmp_path / "s.db", "row group 1: the page header at byte",
                   "cannot be read (it is longer than 128 bytes)", "field 'text'") == ""


def _header(*extra: list[Any], sub: Fields | None = None) -> bytes:
    return encode([[1, 5, 0], [2, 5, 300], [3, 5, 120], *extra,
                   [5, 12, sub if sub is not None else [[1, 5, 50], [2, 5, 0]]]])


def test_the_page_header_reader_skips_every_field_it_does_not_read() -> None:
    """Fields of every compact type the reader does not need, nested ones and a long-form field
    id included, are skipped to the byte; the header's length is what it took."""
    stats = [[1, 8, b"max"], [2, 8, b"min"], [3, 6, -5], [4, 6, 2**40], [5, 1, True], [6, 2, False],
             [7, 3, 255], [8, 4, -300], [9, 7, b"\x00" * 8], [10, 9, (12, [[[1, 5, 1]], []])],
             [11, 10, (1, [True, False, True])], [12, 11, (8, 5, [(b"k", 1), (b"l", -2)])], [13, 11, (0, 0, [])],
             [14, 9, (8, [b"x"] * 20)], [300, 12, [[1, 12, [[1, 12, []]]]]]]
    raw = _header([4, 5, -123456], [6, 12, []], sub=[[1, 5, 50], [2, 5, 0], [5, 12, stats]])
    h = bounds.page_header(raw + b"page bytes")
    assert (h.type, h.uncompressed, h.compressed, h.values, h.levels, h.length) == (0, 300, 120, 50, 0, len(raw))
    v2 = encode([[1, 5, 3], [2, 5, 300], [3, 5, 120], [8, 12, [[1, 5, 50], [2, 5, 1], [3, 5, 50], [4, 5, 0],
                                                              [5, 5, 7], [6, 5, 2], [7, 1, True]]]])
    assert bounds.page_header(v2).levels == 9
    other = encode([[1, 5, 1], [2, 5, 10], [3, 5, 10]])  # an index page: no sub-header needed
    assert bounds.page_header(other).values == -1
    with pytest.raises(bounds._Short):
        bounds.page_header(raw[:-1])


@pytest.mark.parametrize(("raw", "why"), [
    (encode([[2, 5, 1], [3, 5, 1], [5, 12, [[1, 5, 1]]]]), "no type"),
    (encode([[1, 5, 0], [2, 5, 1], [3, 5, 1]]), "a page of type 0 without its num_values"),
    (encode([[1, 5, 2], [2, 5, 1], [3, 5, 1], [7, 12, [[1, 5, -1]]]]), "num_values -1"),
    (encode([[1, 5, 0], [2, 5, 1], [3, 5, -7], [5, 12, [[1, 5, 1]]]]), "a page size of -7"),
    (encode([[1, 5, 0], [2, 6, 2**40], [3, 5, 1]]), "field 2 of type 6, not an i32"),
    (encode([[1, 5, 0], [2, 5, 1], [3, 5, 1], [5, 5, 1]]), "field 5 of type 5, not a struct"),
    (b"\x15\x00\x15" + b"\xff" * 10 + b"\x01", "a varint longer than 10 bytes"),
    (b"\x15" + b"\xfe\xff\xff\xff\x1f", "an i32 of 4294967295"),
    (b"\x4d\x00", "a field of type 13"),  # field 4 (crc, not read) from here on
    (b"\x49\x10", "a list of type 0"),
    (b"\x4b\x01\xd5", "a map of types 13 and 5"),
    (b"\x48\xff\xff\xff\xff\x0f", "a string of 4,294,967,295 bytes"),
    (b"\x4c" * 40, "nested more than 16 levels deep"),
    (b"\x49\x1c" * 40, "nested more than 16 levels deep"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_the_page_header_reader_refuses_what_is_no_page_header(raw: bytes, why: str) -> None:
    with pytest.raises(bounds._Malformed) as e:
        bounds.page_header(raw + b"\x00" * 64)
    assert str(e.value) == why


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


def _page_bomb(path: Path, column: int, edit: Callable[[Fields], None], dictionary: bool = False, **kw: Any) -> None:
    _pages_file(path, dim=HASH_DIM, dictionary=dictionary, **kw)
    _lie_in_page(path, column, edit, dictionary=dictionary)


def _footer_low_bomb(path: Path, rows: int = 16, cell: int = 64 * MiB) -> None:
    """`rows` rows of `cell` bytes in one row group (one page, its header true), the footer
    declaring 2,000 bytes a row: before, pyarrow decoded the whole batch (1 GiB from 40 KB on
    disk) before the row measure refused row 1."""
    text = pa.array(["a" * cell]).take(pa.array(np.zeros(rows, dtype=np.int32)))
    pq.write_table(table(rows, HASH_DIM, text=text), path, compression="zstd", use_dictionary=False,
                   compression_level=1)
    _footer_low(path, "text", 2000 * rows)


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
    *[("parquet-pages", f"{codec} {kind} page header declaring 2 GiB uncompressed",
       lambda p, codec=codec, kw=kw, col=col: _page_bomb(p, col, _set(2, INT32_MAX), codec=codec, **kw),
       ("row group 1:", "declares 2.0 GiB uncompressed, past the", f"field '{'text' if col == TEXT else 'vector'}'"))
      for codec, kind, kw, col in [("none", "v1 data", {}, TEXT), ("snappy", "v1 data", {}, TEXT),
                                   ("gzip", "v1 data", {}, TEXT), ("zstd", "v1 data", {}, TEXT),
                                   ("zstd", "v2 data", {"version": "2.0"}, VECTOR),
                                   ("zstd", "dictionary", {"dictionary": True}, TEXT)]],
    ("parquet-pages", "dictionary page declaring 2^31 values (8 GiB)",
     lambda p: _page_bomb(p, VECTOR, _set(1, INT32_MAX, sub=7), dictionary=True),
     ("field 'vector'", "declares 2,147,483,647 values in")),
    ("parquet-pages", "page header declaring 2 GiB compressed", lambda p: _page_bomb(p, VECTOR, _set(3, INT32_MAX)),
     ("field 'vector'", "compressed, past the end of its column chunk")),
    ("parquet-pages", "a true 1 GiB page under a footer declaring 32 KB", _footer_low_bomb,
     ("field 'text'", "declares 1 GiB uncompressed, past the 32,000 bytes the footer declares")),
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


# --- found by fuzzing (tests/test_import_fuzz.py): each class refused in one line ------------------

def _statistics_lie(column: str, edit: Callable[[Fields], None]) -> Callable[[Path], None]:
    """The footer's size statistics of `column`'s chunks edited (the schema left as written)."""
    def lie(path: Path) -> None:
        def edit_footer(fields: Fields) -> None:
            for _, name, meta in column_meta(fields):
                if name == column:
                    edit(field(meta, 16)[2])
        rewrite_footer(path, edit_footer)
    return lie


def _required(column: str) -> Callable[[Path], None]:
    """The schema says `column` is required (its chunks' statistics count an optional one's levels)."""
    def lie(path: Path) -> None:
        rewrite_footer(path, lambda f: [field(e, 3).__setitem__(2, 0) for e in field(f, 2)[2][1]
                                        if field(e, 4)[2] == column.encode()])
    return lie


STATISTICS_LIES = [
    ("the schema makes an optional column required", _required("title"),
     ("its size statistics count 2 definition levels, but the schema gives the column 1", "field 'title'")),
    ("a repetition histogram of another length", _statistics_lie("acl.list.element", lambda s: field(s, 2)[2][1].append(0)),
     ("its size statistics count 3 repetition levels, but the schema gives the column 2", "field 'acl'")),
    ("byte-array sizes for an INT32 column", _statistics_lie("position", lambda s: s.insert(0, [1, 6, 40])),
     ("its size statistics give byte-array sizes for a column of INT32", "field 'position'")),
]


@pytest.mark.parametrize(("what", "lie", "wanted"), STATISTICS_LIES, ids=[x[0] for x in STATISTICS_LIES])
def test_size_statistics_that_do_not_fit_the_schema_are_refused(tmp_path: Path, what: str,
                                                                lie: Callable[[Path], None],
                                                                wanted: tuple[str, ...]) -> None:
    """pyarrow checks a chunk's size statistics against the schema as it builds the chunk's
    metadata, and a mismatch ended the process (std::terminate: 'Definition level histogram size
    mismatch', exit -6, no message naming the file). Through the CLI, in a subprocess: the old
    code would take the test run down with it."""
    path = tmp_path / "in.parquet"
    n = 6
    pq.write_table(table(n, HASH_DIM, title=[None, "Refunds"] * 3, acl=[["group:a"], None] * 3,
                         position=pa.array(range(n), pa.int32())), path)
    lie(path)
    rc, err, _ = _run_import(path, tmp_path / "s.db")
    assert rc == 2 and len(err.strip().splitlines()) == 1, (rc, err[-500:])
    assert all(w in err for w in (str(path), "row group 1:", *wanted)), err
    assert not list(tmp_path.glob("s.db*"))


def _rename(old: bytes, new: bytes, where: str) -> Callable[[Fields], None]:
    def edit(fields: Fields) -> None:
        if where == "schema":
            for e in field(fields, 2)[2][1]:
                if field(e, 4)[2] == old:
                    field(e, 4)[2] = new
        else:
            for _, _, meta in column_meta(fields):
                items = field(meta, 3)[2][1]
                items[:] = [new if x == old else x for x in items]
    return edit


@pytest.mark.parametrize("where", ["schema", "path_in_schema"])
def test_a_footer_name_that_is_not_utf8_is_refused(tmp_path: Path, where: str) -> None:
    """pyarrow decodes the footer's names as UTF-8 (a schema element's name, a chunk's
    path_in_schema) and raised UnicodeDecodeError, a traceback."""
    path = tmp_path / "in.parquet"
    pq.write_table(table(), path)
    rewrite_footer(path, _rename(b"text", b"t\xffxt", where))
    assert refused(path, tmp_path / "s.db", "is not a readable Parquet file: its footer holds a name that is not "
                                            "UTF-8", "b't\\xffxt'") == ""


@pytest.mark.parametrize("dictionary", [False, True], ids=["plain", "dictionary"])
def test_a_string_that_is_not_utf8_is_refused_naming_its_row(tmp_path: Path, dictionary: bool) -> None:
    """pyarrow does not check a page's strings as it decodes them; converting one to Python
    raised ArrowException ('Wrapping ?efund ... failed'), a traceback. The row is the first that
    holds it (a dictionary's bad value: the first row pointing at it)."""
    path = tmp_path / "in.parquet"
    _pages_file(path, codec="none", dictionary=dictionary)
    data = path.read_bytes()
    at = data.index(b"refund window item007")
    path.write_bytes(data[:at] + b"\xff" + data[at + 1:])
    assert refused(path, tmp_path / "s.db", "row 8: holds a string that is not UTF-8", "field 'text'",
                   "the file is damaged") == ""


def test_a_dictionary_index_past_its_dictionary_is_refused_naming_its_row(tmp_path: Path) -> None:
    """A dictionary page declaring fewer values than the data pages point at: pyarrow decodes the
    indices unchecked, and measuring the rows (numpy, indexing the dictionary's sizes) raised
    IndexError, a traceback."""
    path = tmp_path / "in.parquet"
    _pages_file(path, codec="none", dictionary=True)
    _lie_in_page(path, TEXT, _set(1, 5, sub=7), dictionary=True)
    assert refused(path, tmp_path / "s.db", "row 6: holds values its pages cannot hold", "out of bounds",
                   "field 'text'") == ""


def test_a_chunk_of_another_type_than_its_schema_is_refused(tmp_path: Path) -> None:
    """A column chunk's metadata naming another physical type than the schema's: pyarrow's
    ParquetFile decodes the pages as the schema says, its datasets (pq.read_table) refuse the
    file; docket refuses it too, from the footer."""
    path = tmp_path / "in.parquet"
    pq.write_table(table(), path)
    rewrite_footer(path, lambda f: [field(m, 1).__setitem__(2, 5) for _, n, m in column_meta(f) if n == "doc"])
    assert refused(path, tmp_path / "s.db", "row group 1: the column chunk's type is DOUBLE, the schema's BYTE_ARRAY",
                   "field 'doc'") == ""
