"""Bounds on what a Parquet file handed to `docket import` may make the reader decode.

A Parquet file is compressed and dictionary-encoded, so a few KB on disk can decode to GBs: a
column chunk of one repeated byte (zstd, gzip, brotli), a dictionary of one long string that every
row points at, a list of millions of zeros in one row, a footer of hundreds of MB or 100,000
columns. JSONL has its line cap (importer.MAX_LINE_BYTES); these are Parquet's, on the same scale:

* before anything is decoded, the footer: its length (read from the file's last 8 bytes, before
  pyarrow parses it), its column count, nesting depth and row-group count, its row counts adding
  up, and each column chunk's declared uncompressed size and value count against what the rows it
  holds may take (`MAX_ROW_BYTES` a row, `dim` vector values a row, `MAX_ROW_VALUES` list values a
  row), and the whole file's declared size against `MAX_EXPANSION` times its size on disk;
* then, still before anything is decoded, every column chunk's page headers (read here: pyarrow
  allocates what a header declares before it finds the page holds less): no page may declare
  more uncompressed bytes than the footer does for its chunk, compressed bytes past the chunk, a
  dictionary of more values than its bytes hold, or values that do not add up to the footer's;
* while decoding: every string column is read dictionary-encoded (pyarrow then gives indices into
  one copy of each distinct value rather than the values repeated), each row's decoded size is
  measured from that before the values are expanded, and the batch is expanded in slices of at
  most `BATCH_BYTES`; a row over `MAX_ROW_BYTES`, or a file whose decoded total passes the
  expansion bound, is refused naming the row and column. A page that holds more than its header
  declares (pyarrow decompresses into what the header declares and raises) or an allocation that
  still fails becomes the same one line.

The limits are module constants so tests can lower them (monkeypatch) instead of writing big files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import InputError

#: the most bytes one row may decode to, all its columns together: the JSONL line cap
#: (importer.MAX_LINE_BYTES), so a row no JSONL file could hold is no Parquet row either
MAX_ROW_BYTES = 16 * 2**20
#: the longest footer read (schema, row-group and column-chunk metadata, key-value metadata): a
#: million-row file's is tens of KB
MAX_FOOTER_BYTES = 64 * 2**20
#: the most leaf columns (the contract has 16 fields; the rest go into metadata)
MAX_COLUMNS = 1_000
#: the deepest column path (a list of structs of lists ... in metadata)
MAX_DEPTH = 32
#: the most row groups (a writer with a sane row-group size makes a few per GB)
MAX_ROW_GROUPS = 100_000
#: the most values a list column (acl, metadata lists) may hold in one row: what a JSONL line of
#: MAX_ROW_BYTES could hold ("0," a value)
MAX_ROW_VALUES = MAX_ROW_BYTES // 2
#: the most decoded bytes a batch holds at once (its row count is picked from the footer's sizes
#: and a batch is expanded in slices of at most this many bytes)
BATCH_BYTES = 64 * 2**20
#: a file may decode to at most this many times its size on disk (a file of vectors and text
#: compresses 1-4x; a decompression bomb 1,000x and more), but always to MIN_DECODED_BYTES
MAX_EXPANSION = 100
MIN_DECODED_BYTES = 256 * 2**20
#: per column chunk, the page headers and dictionary a declared size may hold beyond its rows' bytes
_SLACK = 2**20

_SPLIT = "split the file or rewrite it with a standard writer (pyarrow, Spark)"


def size(n: float) -> str:
    """`n` bytes for a message: '16 MiB', '9.7 GiB', '2,000 bytes'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if round(v, 1) == int(v) or v >= 100 else f"{v:.1f} {unit}"
    return f"{int(n):,} bytes"


def over(n: int, limit: int) -> str:
    """`n`, a size over `limit`, for a message: in bytes where the rounded size would read as the
    limit itself ('16,777,217 bytes (limit 16 MiB ...')."""
    return f"{n:,} bytes" if size(n) == size(limit) else size(n)


def footer_length(path: Path) -> int:
    """The footer length a Parquet file's last 8 bytes declare (-1: no Parquet trailer; pyarrow
    says what is wrong)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            if fh.tell() < 12:
                return -1
            fh.seek(-8, 2)
            tail = fh.read(8)
    except OSError:
        return -1
    return int.from_bytes(tail[:4], "little") if tail[4:] == b"PAR1" else -1


def check_footer_length(path: Path) -> None:
    n = footer_length(path)
    if n > MAX_FOOTER_BYTES:
        raise InputError(f"declares a footer of {over(n, MAX_FOOTER_BYTES)} (limit {size(MAX_FOOTER_BYTES)}; a file's footer is "
                         f"its schema and row-group metadata, a few KB a row group): key-value metadata or a "
                         f"schema this large is no chunk file; {_SPLIT}", where=str(path))


@dataclass
class Plan:
    """What the footer allows: the rows a batch reads, the decoded bytes the whole file may make,
    and the string columns read dictionary-encoded (their leaf paths)."""

    batch_rows: int
    budget: int
    dictionary: list[str]


def _n(count: int, what: str) -> str:
    return f"{count:,} {what}" + ("" if count == 1 else "s")


def check_footer(f: Any, path: Path, dim: int, batch_rows: int, embedder: str = "") -> Plan:
    """Refuse a file whose footer declares more than its rows may take (each limit named), before
    any page is decoded; the batch row count from the declared bytes a row."""
    where = str(path)
    m = f.metadata
    if m.num_columns > MAX_COLUMNS:
        raise InputError(f"has {m.num_columns:,} columns (limit {MAX_COLUMNS:,}): a chunk file needs the record's "
                         f"fields and a few more; {_SPLIT}", where=where)
    if m.num_row_groups > MAX_ROW_GROUPS:
        raise InputError(f"has {m.num_row_groups:,} row groups (limit {MAX_ROW_GROUPS:,}); rewrite it with larger "
                         "row groups", where=where)
    schema = f.schema
    caps: list[int] = []
    dictionary: list[str] = []
    types: list[str] = []
    for j in range(m.num_columns):
        col = schema.column(j)
        types.append(col.physical_type)
        parts = col.path.split(".")
        if len(parts) > MAX_DEPTH:
            raise InputError(f"is nested {len(parts)} levels deep (limit {MAX_DEPTH}); flatten the column",
                             where=where, field=parts[0])
        caps.append(dim if parts[0] == "vector" else 1 if col.max_repetition_level == 0 else MAX_ROW_VALUES)
        if col.physical_type == "BYTE_ARRAY" and col.logical_type.type in ("STRING", "NONE", "ENUM", "JSON"):
            dictionary.append(col.path)
    total_rows = total_bytes = 0
    worst = 0.0
    for g in range(m.num_row_groups):
        rg = m.row_group(g)
        rows = rg.num_rows
        if rows < 0:
            raise InputError(f"row group {g + 1}: declares {rows} rows; the footer is damaged", where=where)
        if rg.num_columns != m.num_columns:
            raise InputError(f"row group {g + 1}: holds {_n(rg.num_columns, 'column chunk')}, but the schema has "
                             f"{_n(m.num_columns, 'column')}; the footer is damaged", where=where)
        group = 0
        for j in range(rg.num_columns):
            c = rg.column(j)
            name = c.path_in_schema.split(".")[0]
            if c.physical_type != types[j]:  # pages decode as the schema says; pyarrow's datasets refuse the file
                raise InputError(f"row group {g + 1}: the column chunk's type is {c.physical_type}, the schema's "
                                 f"{types[j]}; the footer is damaged", where=where, field=name)
            declared = c.total_uncompressed_size
            if declared > rows * MAX_ROW_BYTES + _SLACK:
                raise InputError(f"row group {g + 1}: declares {over(declared, MAX_ROW_BYTES)} uncompressed for {_n(rows, 'row')} "
                                 f"(limit {size(MAX_ROW_BYTES)} a row); {_SPLIT}", where=where, field=name)
            if c.num_values < rows:  # every row, a null or an empty list too, has at least one value (level)
                raise InputError(f"row group {g + 1}: declares {_n(c.num_values, 'value')} for {_n(rows, 'row')}; "
                                 "the footer is damaged", where=where, field=name)
            if c.num_values > rows * caps[j]:
                if name == "vector":
                    raise InputError(f"row group {g + 1}: declares {_n(c.num_values, 'value')} for {_n(rows, 'row')}, "
                                     f"more than the store's embedder {embedder!r} has dimensions ({dim} a row): "
                                     "vectors of another model cannot be searched together", where=where, field=name)
                raise InputError(f"row group {g + 1}: declares {_n(c.num_values, 'value')} for {_n(rows, 'row')} "
                                 f"(limit {caps[j]:,} a row)", where=where, field=name)
            group += max(declared, 0)
        if group > rows * MAX_ROW_BYTES + _SLACK * max(rg.num_columns, 1):
            raise InputError(f"row group {g + 1}: declares {size(group)} uncompressed for {_n(rows, 'row')} (limit "
                             f"{size(MAX_ROW_BYTES)} a row, all columns together); {_SPLIT}", where=where)
        total_rows += rows
        total_bytes += group
        if rows:
            worst = max(worst, group / rows)
    if total_rows != m.num_rows:
        raise InputError(f"declares {m.num_rows:,} rows, but its row groups hold {total_rows:,}; the footer is "
                         "damaged", where=where)
    budget = budget_of(path)
    if total_bytes > budget:
        raise InputError(f"declares {size(total_bytes)} uncompressed in {size(path.stat().st_size)} on disk (limit "
                         f"{size(budget)}: {MAX_EXPANSION} times its size, at least {size(MIN_DECODED_BYTES)}); a "
                         f"file of chunks does not compress that well; {_SPLIT}", where=where)
    rows_a_batch = int(BATCH_BYTES // worst) if worst else batch_rows
    return Plan(max(1, min(batch_rows, rows_a_batch)), budget, dictionary)


def budget_of(path: Path) -> int:
    return max(MIN_DECODED_BYTES, MAX_EXPANSION * path.stat().st_size)


class Decoded:
    """Each batch's rows measured (decoded bytes) before their dictionaries are expanded, and
    expanded in slices of at most BATCH_BYTES."""

    def __init__(self, pa: Any, where: str, budget: int) -> None:
        self.pa, self.where, self.budget = pa, where, budget
        self.total = 0

    def slices(self, rb: Any, first: int) -> Iterator[Any]:
        """`rb` (rows `first`...) as record batches of plain (not dictionary) columns, each at
        most BATCH_BYTES decoded (at least one row); raises on a row over MAX_ROW_BYTES or a file
        past its budget, naming the row."""
        pa = self.pa
        n = rb.num_rows
        if not n:
            return
        try:  # what a page decoded to, before numpy reads its buffers (pyarrow checks neither)
            rb.validate(full=True)
        except pa.ArrowInvalid as e:
            raise self._invalid(rb, first, e) from None
        per = [_sizes(pa, c) for c in rb.columns]
        rows = np.sum(np.stack(per), axis=0) if per else np.zeros(n, dtype=np.int64)
        big = np.flatnonzero(rows > MAX_ROW_BYTES)
        if big.size:
            i = int(big[0])
            col = rb.schema.names[int(np.argmax([p[i] for p in per]))]
            raise InputError(f"row {first + i}: decodes to {over(int(rows[i]), MAX_ROW_BYTES)} (limit {size(MAX_ROW_BYTES)} a row, as "
                             "for a JSONL line)", where=self.where, field=col)
        cum = np.cumsum(rows)
        past = np.flatnonzero(self.total + cum > self.budget)
        if past.size:
            i = int(past[0])
            col = rb.schema.names[int(np.argmax([p[i] for p in per]))]
            raise InputError(f"row {first + i}: the file decodes to more than {size(self.budget)} by this row "
                             f"(limit: {MAX_EXPANSION} times its size on disk, at least {size(MIN_DECODED_BYTES)}); "
                             f"its values repeat more than a file of chunks does; {_SPLIT}", where=self.where, field=col)
        self.total += int(cum[-1])
        dense = [_dense(pa, c.type) for c in rb.columns]
        start = 0
        while start < n:
            base = int(cum[start - 1]) if start else 0
            end = max(start + 1, int(np.searchsorted(cum, base + BATCH_BYTES, side="right")))
            part = rb.slice(start, end - start) if (start, end) != (0, n) else rb
            if any(t is not None for t in dense):
                part = pa.RecordBatch.from_arrays(
                    [c if t is None else c.cast(t) for c, t in zip(part.columns, dense, strict=True)],
                    names=part.schema.names)
            yield part
            start = end


    def _invalid(self, rb: Any, first: int, e: Exception) -> InputError:
        """The first row (and column) of `rb` that fails pyarrow's full validation: a dictionary
        index past its dictionary, a string that is not UTF-8, offsets out of order (a damaged
        page: pyarrow checks none of them as it decodes one)."""
        why, row, name = str(e), first, None
        for j, col in enumerate(rb.columns):
            try:
                col.validate(full=True)
            except self.pa.ArrowInvalid as e:
                why, row, name = str(e), first + _first_invalid(self.pa, col), rb.schema.names[j]
                break
        line = why.splitlines()[0] if why else ""
        line = "".join(c if c.isprintable() else "?" for c in line).strip()
        what = "holds a string that is not UTF-8" if "utf8" in line.lower() or "utf-8" in line.lower() else \
            "holds values its pages cannot hold"
        return InputError(f"row {row}: {what} ({line}); the file is damaged: {_REWRITE}", where=self.where, field=name)


def _first_invalid(pa: Any, col: Any) -> int:
    """The first element of `col` (which fails full validation) that does, or 0: a dictionary's
    first row pointing at a bad value (every row's slice holds the whole dictionary), else the
    first row whose slice fails."""
    def bad(a: Any) -> bool:
        try:
            a.validate(full=True)
        except pa.ArrowInvalid:
            return True
        return False

    if pa.types.is_dictionary(col.type) and bad(col.dictionary):
        values = [k for k in range(len(col.dictionary)) if bad(col.dictionary.slice(k, 1))]
        idx = col.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(np.isin(idx, values))
        return int(rows[0]) if rows.size else 0
    return next((i for i in range(len(col)) if bad(col.slice(i, 1))), 0)


def _width(pa: Any, t: Any) -> int | None:
    """The bytes one value of a fixed-width type takes (None: not fixed width)."""
    if pa.types.is_null(t):
        return 0
    if pa.types.is_boolean(t):
        return 1
    try:
        return max(1, t.bit_width // 8)
    except ValueError:
        return None


def _sizes(pa: Any, arr: Any) -> np.ndarray:
    """Each element's decoded size in bytes (int64), read from the array's offsets and
    dictionaries without expanding them."""
    t = arr.type
    n = len(arr)
    types = pa.types
    if isinstance(arr, pa.ChunkedArray):
        return np.concatenate([_sizes(pa, c) for c in arr.chunks]) if arr.num_chunks else np.zeros(0, np.int64)
    if types.is_dictionary(t):
        values = _sizes(pa, arr.dictionary)
        idx = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        out = values[idx] + 4 if values.size else np.full(n, 4, dtype=np.int64)
        if arr.null_count:
            out[arr.is_null().to_numpy(zero_copy_only=False)] = 0
        return out
    if types.is_string(t) or types.is_binary(t) or types.is_large_string(t) or types.is_large_binary(t):
        wide = types.is_large_string(t) or types.is_large_binary(t)
        buf = arr.buffers()[1]
        if buf is None:
            return np.zeros(n, dtype=np.int64)
        offs = np.frombuffer(buf, dtype=np.int64 if wide else np.int32)[arr.offset:arr.offset + n + 1]
        return np.diff(offs).astype(np.int64) + (8 if wide else 4)
    if types.is_list(t) or types.is_large_list(t) or types.is_map(t):
        offs = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        w = _width(pa, t.value_type)
        if w is not None:
            return np.diff(offs) * w + 4
        child = _sizes(pa, arr.values)
        cs = np.concatenate([np.zeros(1, np.int64), np.cumsum(child)])
        return cs[offs[1:]] - cs[offs[:-1]] + 4
    if types.is_fixed_size_list(t):
        w = _width(pa, t.value_type)
        if w is not None:
            return np.full(n, w * t.list_size, dtype=np.int64)
        child = _sizes(pa, arr.flatten())
        return child.reshape(n, t.list_size).sum(axis=1) if t.list_size else np.zeros(n, dtype=np.int64)
    if types.is_struct(t):
        out = np.zeros(n, dtype=np.int64)
        for c in arr.flatten():
            out += _sizes(pa, c)
        return out
    w = _width(pa, t)
    if w is not None:
        return np.full(n, w, dtype=np.int64)
    return np.full(n, -(-arr.get_total_buffer_size() // max(n, 1)), dtype=np.int64)  # any other type: its share


def _dense(pa: Any, t: Any) -> Any:
    """`t` with every dictionary type replaced by its value type (None: `t` holds none)."""
    types = pa.types
    if types.is_dictionary(t):
        return _dense(pa, t.value_type) or t.value_type
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        inner = _dense(pa, t.value_type)
        if inner is None:
            return None
        field = t.value_field.with_type(inner)
        if types.is_fixed_size_list(t):
            return pa.list_(field, t.list_size)
        return pa.large_list(field) if types.is_large_list(t) else pa.list_(field)
    if types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        inner = [_dense(pa, fl.type) for fl in fields]
        if all(x is None for x in inner):
            return None
        return pa.struct([fl if x is None else fl.with_type(x) for fl, x in zip(fields, inner, strict=True)])
    return None


# --- page headers: read before pyarrow decodes a page ---------------------------------------------
#
# A page's header declares its own sizes, and pyarrow allocates what it declares before it finds
# the page holds less: a header of a tiny file declaring 2 GiB made a 2 GiB allocation (and a
# dictionary page declaring 2 billion values 8 GiB), and a true header under a footer that
# declares less decoded GBs past every bound above. So each column chunk's page headers are read
# here first (a strict reader of Thrift's compact protocol: the few PageHeader fields below, the
# rest skipped), and the pages must tile the chunk's bytes, declare no more than the footer does
# for the chunk, and hold the values it declares.

#: the longest page header read (pyarrow's own cap; a header is its sizes and, at most, a page's
#: statistics: tens of bytes to a few KB)
MAX_PAGE_HEADER_BYTES = 16 * 2**20
#: the deepest nesting of structs and lists in a page header (the format's is 3: PageHeader,
#: DataPageHeader, Statistics)
MAX_HEADER_DEPTH = 16
#: bytes read at a time while walking a column chunk's headers (a window, grown for a longer header)
_WINDOW = 64 * 2**10
#: PageHeader.type: the pages pyarrow decodes (an index page, or any other type, it skips)
_DATA, _DICTIONARY, _DATA_V2 = 0, 2, 3
#: a dictionary value's least bits, by physical type (plain-encoded: a BYTE_ARRAY's 4-byte length)
_VALUE_BITS = {"BOOLEAN": 1, "INT32": 32, "FLOAT": 32, "INT64": 64, "DOUBLE": 64, "INT96": 96, "BYTE_ARRAY": 32}
_REWRITE = "rewrite it with a standard writer (pyarrow, Spark)"


class _Short(Exception):
    """The header runs past the bytes read so far."""


class _Malformed(Exception):
    """Not a PageHeader in Thrift's compact protocol; the message says why."""


@dataclass
class PageHeader:
    type: int
    uncompressed: int
    compressed: int
    #: num_values of the data, dictionary or v2 sub-header (-1: absent)
    values: int
    #: a v2 page's definition and repetition level bytes (0 otherwise)
    levels: int
    #: the header's length in bytes
    length: int


def _varint(b: bytes, i: int) -> tuple[int, int]:
    if i >= len(b):
        raise _Short
    c = b[i]
    if c < 0x80:  # most: one byte
        return c, i + 1
    out, shift = c & 0x7F, 7
    while True:
        i += 1
        if i >= len(b):
            raise _Short
        c = b[i]
        out |= (c & 0x7F) << shift
        if c < 0x80:
            return out, i + 1
        shift += 7
        if shift > 63:
            raise _Malformed("a varint longer than 10 bytes")


def _i32(b: bytes, i: int) -> tuple[int, int]:
    z, i = _varint(b, i)
    v = (z >> 1) ^ -(z & 1)
    if not -2**31 <= v < 2**31:
        raise _Malformed(f"an i32 of {v}")
    return v, i


def _skip(b: bytes, i: int, t: int, depth: int) -> int:
    """The index after a value of compact type `t` at `i` (every value takes at least a byte
    but booleans in a field header, so skipping is linear in the header's bytes)."""
    if t in (4, 5, 6):  # i16, i32, i64: a varint
        if i < len(b) and b[i] < 0x80:
            return i + 1
        return _varint(b, i)[1]
    if t in (1, 2):  # a bool field: its value is in the type
        return i
    if t == 8:  # binary: a length, then the bytes
        n, i = _varint(b, i)
        if n > MAX_PAGE_HEADER_BYTES and n > len(b) - i:  # (a header's window is at most that long; a footer is read whole)
            raise _Malformed(f"a string of {n:,} bytes")
        if i + n > len(b):
            raise _Short
        return i + n
    if t in (3, 7):  # a byte, a double
        i += 1 if t == 3 else 8
        if i > len(b):
            raise _Short
        return i
    if depth >= MAX_HEADER_DEPTH:
        raise _Malformed(f"nested more than {MAX_HEADER_DEPTH} levels deep")
    if t == 12:
        return _skip_struct(b, i, depth + 1)
    if t in (9, 10):  # list, set: size and element type, then the elements
        if i >= len(b):
            raise _Short
        h = b[i]
        i += 1
        n, et = h >> 4, h & 0x0F
        if n == 15:
            n, i = _varint(b, i)
        if et in (1, 2):  # booleans in a collection take a byte each
            if i + n > len(b):
                raise _Short
            return i + n
        if not 3 <= et <= 12:
            raise _Malformed(f"a list of type {et}")
        for _ in range(n):
            i = _skip(b, i, et, depth + 1)
        return i
    if t == 11:  # map: size, then (if any) key and value types, then the pairs
        n, i = _varint(b, i)
        if not n:
            return i
        if i >= len(b):
            raise _Short
        kt, vt = b[i] >> 4, b[i] & 0x0F
        i += 1
        if not (1 <= kt <= 12 and 1 <= vt <= 12):
            raise _Malformed(f"a map of types {kt} and {vt}")
        for _ in range(n):
            i = _skip(b, i, kt, depth + 1) if kt not in (1, 2) else i + 1
            i = _skip(b, i, vt, depth + 1) if vt not in (1, 2) else i + 1
            if i > len(b):
                raise _Short
        return i
    raise _Malformed(f"a field of type {t}")


def _skip_struct(b: bytes, i: int, depth: int) -> int:
    """The index after the struct at `i`, every field skipped."""
    return _struct(b, i, depth, {})[1]


def _struct(b: bytes, i: int, depth: int, want: dict[int, Any]) -> tuple[dict[int, Any], int]:
    """The fields of the struct at `i` that `want` names (id: 5, an i32, or id: the `want` of a
    struct field), each other field skipped; and the index after the struct."""
    got: dict[int, Any] = {}
    last = 0
    n = len(b)
    while True:
        if i >= n:
            raise _Short
        h = b[i]
        i += 1
        if not h:
            return got, i
        t, delta = h & 0x0F, h >> 4
        if delta:
            fid = last + delta
        else:
            z, i = _varint(b, i)
            fid = (z >> 1) ^ -(z & 1)
        last = fid
        kind = want.get(fid)
        if kind is None:
            i = _skip(b, i, t, depth)
        elif kind == 5:
            if t != 5:
                raise _Malformed(f"field {fid} of type {t}, not an i32")
            if i < n and b[i] < 0x80:  # most: one byte
                z = b[i]
                got[fid], i = (z >> 1) ^ -(z & 1), i + 1
            else:
                got[fid], i = _i32(b, i)
        elif kind == 6:  # an i64 present (its value unread)
            if t != 6:
                raise _Malformed(f"field {fid} of type {t}, not an i64")
            got[fid], i = True, _skip(b, i, t, depth)
        elif isinstance(kind, tuple):  # a list: its length (kind[0] None), or its structs' wanted fields
            if t != 9:
                raise _Malformed(f"field {fid} of type {t}, not a list")
            if kind[0] is None:
                got[fid] = _list_length(b, i)
                i = _skip(b, i, t, depth)
            else:
                got[fid], i = _structs(b, i, depth + 1, kind[0])
        else:
            if t != 12:
                raise _Malformed(f"field {fid} of type {t}, not a struct")
            got[fid], i = _struct(b, i, depth + 1, kind)


def _list_length(b: bytes, i: int) -> int:
    if i >= len(b):
        raise _Short
    n = b[i] >> 4
    return _varint(b, i + 1)[0] if n == 15 else n


def _structs(b: bytes, i: int, depth: int, want: dict[int, Any]) -> tuple[list[dict[int, Any]], int]:
    """The list of structs at `i`: each one's fields that `want` names; and the index after it."""
    if depth >= MAX_HEADER_DEPTH:
        raise _Malformed(f"nested more than {MAX_HEADER_DEPTH} levels deep")
    if i >= len(b):
        raise _Short
    n, et = b[i] >> 4, b[i] & 0x0F
    i += 1
    if n == 15:
        n, i = _varint(b, i)
    if n and et != 12:
        raise _Malformed(f"a list of type {et}, not of structs")
    if n > len(b) - i:  # a struct takes a byte at least
        raise _Short
    out = []
    for _ in range(n):
        got, i = _struct(b, i, depth, want)
        out.append(got)
    return out, i


#: PageHeader's fields read: type, uncompressed_page_size, compressed_page_size (i32s), and
#: num_values in data_page_header, dictionary_page_header and data_page_header_v2 (with a v2
#: page's definition and repetition level bytes, 5 and 6)
_TOP: dict[int, Any] = {1: 5, 2: 5, 3: 5, 5: {1: 5}, 7: {1: 5}, 8: {1: 5, 5: 5, 6: 5}}


def page_header(b: bytes, i: int = 0) -> PageHeader:
    """The PageHeader at `b[i:]` (raises _Short where `b` ends first, _Malformed where it is no
    header: a required field absent, a size below 0, a field of the wrong type)."""
    got, end = _struct(b, i, 0, _TOP)
    for fid, name in ((1, "type"), (2, "uncompressed_page_size"), (3, "compressed_page_size")):
        if fid not in got:
            raise _Malformed(f"no {name}")
    kind, usize, csize = got[1], got[2], got[3]
    if usize < 0 or csize < 0:
        raise _Malformed(f"a page size of {min(usize, csize)}")
    sub: dict[int, int] = {}
    if kind in (_DATA, _DICTIONARY, _DATA_V2):
        fid = {_DATA: 5, _DICTIONARY: 7, _DATA_V2: 8}[kind]
        if fid not in got or 1 not in got[fid]:
            raise _Malformed(f"a page of type {kind} without its num_values")
        sub = got[fid]
        if sub[1] < 0:
            raise _Malformed(f"num_values {sub[1]}")
    levels = sub.get(5, 0) + sub.get(6, 0) if kind == _DATA_V2 else 0
    if min(sub.get(5, 0), sub.get(6, 0)) < 0:
        raise _Malformed("a level byte length below 0")
    return PageHeader(kind, usize, csize, sub.get(1, -1), levels, end - i)


class _Reader:
    """A file's bytes in windows: the page header at an offset, read within a column chunk."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        self.at = 0
        self.buf = b""

    def chunk(self) -> None:
        """A column chunk starts: no bytes read for another are used for its headers."""
        self.buf = b""

    def header(self, pos: int, end: int) -> PageHeader:
        """The header at `pos`, within [pos, end) (the window read for it ends there)."""
        want = _WINDOW
        while True:
            if self.at <= pos < self.at + len(self.buf):
                try:
                    return page_header(self.buf, pos - self.at)
                except _Short:
                    if self.at + len(self.buf) >= end:
                        raise _Malformed("it runs past its column chunk") from None
                    if self.at == pos:  # a window from `pos` already: a longer one
                        if len(self.buf) >= MAX_PAGE_HEADER_BYTES:
                            raise _Malformed(f"it is longer than {size(MAX_PAGE_HEADER_BYTES)}") from None
                        want = len(self.buf) * 4
            n = min(want, end - pos, MAX_PAGE_HEADER_BYTES)
            self.fh.seek(pos)
            self.at, self.buf = pos, self.fh.read(n)
            if len(self.buf) < n:
                raise _Malformed("the file ends before it does")


def check_pages(f: Any, path: Path) -> None:
    """Refuse a file any of whose pages' headers declares more than its footer does for the
    column chunk (or more values, or bytes past the chunk), or cannot be read, naming the row
    group and the column; before pyarrow decodes (and allocates for) a page."""
    where = str(path)
    m = f.metadata
    schema = f.schema
    stop = path.stat().st_size - 8 - max(footer_length(path), 0)
    bits = []
    for j in range(m.num_columns):
        col = schema.column(j)
        bits.append(_VALUE_BITS.get(col.physical_type, 8 * max(col.length or 0, 1)))
    with path.open("rb") as fh:
        read = _Reader(fh)
        for g in range(m.num_row_groups):
            rg = m.row_group(g)
            for j in range(rg.num_columns):
                _check_chunk(read, rg.column(j), g, stop, bits[j], where)


def _check_chunk(read: _Reader, c: Any, g: int, stop: int, bits: int, where: str) -> None:
    name = c.path_in_schema.split(".")[0]

    def refuse(what: str) -> InputError:
        return InputError(f"row group {g + 1}: {what}; the file is damaged or its writer's sizes are wrong: {_REWRITE}",
                          where=where, field=name)

    if not c.total_compressed_size and not c.num_values:  # a chunk of no pages (pyarrow's, of no rows)
        return
    # the first page: the dictionary's where there is one (a chunk of no values pyarrow writes
    # with a dictionary page only, its data_page_offset 0)
    starts = [o for o in (c.data_page_offset, c.dictionary_page_offset if c.has_dictionary_page else None)
              if o is not None and o > 0]
    start = min(starts) if starts else c.data_page_offset
    end = start + c.total_compressed_size
    if start < 4 or c.total_compressed_size < 0 or end > stop:
        raise refuse(f"the column chunk's pages (bytes {start:,} to {end:,}) lie outside the file's pages "
                     f"(bytes 4 to {stop:,})")
    declared = c.total_uncompressed_size
    values = unpacked = 0
    pos = start
    read.chunk()
    while pos < end:
        try:
            h = read.header(pos, end)
        except _Malformed as e:
            raise refuse(f"the page header at byte {pos:,} cannot be read ({e})") from None
        body = pos + h.length
        if h.compressed > end - body:
            raise refuse(f"the page at byte {pos:,} declares {size(h.compressed)} compressed, past the end of its "
                         f"column chunk ({size(c.total_compressed_size)} in the footer)")
        if h.uncompressed > declared - unpacked:
            what = "a dictionary" if h.type == _DICTIONARY else "a data" if h.type in (_DATA, _DATA_V2) else "a"
            before = f", {size(unpacked)} of it in the pages before" if unpacked else ""
            raise refuse(f"{what} page at byte {pos:,} declares {over(h.uncompressed, declared)} uncompressed, past "
                         f"the {size(declared)} the footer declares for its column chunk{before} (limit: the "
                         f"footer's size, itself at most {size(MAX_ROW_BYTES)} a row)")
        if h.levels > min(h.compressed, h.uncompressed):
            raise refuse(f"the page at byte {pos:,} declares {size(h.levels)} of levels in a page of "
                         f"{size(min(h.compressed, h.uncompressed))}")
        if h.type == _DICTIONARY and h.values * bits > 8 * h.uncompressed:
            raise refuse(f"the dictionary page at byte {pos:,} declares {_n(h.values, 'value')} in "
                         f"{size(h.uncompressed)} (at least {bits / 8:g} bytes a value)")
        if h.type in (_DATA, _DATA_V2):
            values += h.values
        unpacked += h.uncompressed
        pos = body + h.compressed
        if values >= c.num_values and h.type in (_DATA, _DATA_V2):
            break  # pyarrow reads no page past the chunk's values: bytes after them (a writer's padding) are never decoded
    if values != c.num_values:
        raise refuse(f"its pages hold {_n(values, 'value')}, but the footer declares {c.num_values:,} for the "
                     "column chunk")


# --- the footer's size statistics: read before pyarrow builds a column chunk's metadata -----------
#
# pyarrow checks a column chunk's size statistics (its level histograms) against the schema when it
# builds the chunk's metadata, and a mismatch ends the process (C++ std::terminate: no exception,
# no message a caller can catch): a footer whose schema says a column is required while its
# statistics count the levels of an optional one. So they are read here first, with the reader
# above, and a file whose statistics do not fit its schema is refused before pyarrow sees them.

#: FileMetaData.row_groups > RowGroup.columns > ColumnChunk.meta_data > ColumnMetaData.size_statistics:
#: unencoded_byte_array_data_bytes (an i64, read as present) and the two level histograms' lengths
_SIZE_STATISTICS: dict[int, Any] = {4: ({1: ({3: {16: {1: 6, 2: (None,), 3: (None,)}}},)},)}


def check_statistics(f: Any, path: Path) -> None:
    """Refuse a file whose footer's size statistics do not fit its schema (a level histogram of
    another length than the column's levels, byte-array sizes for a column of another type),
    naming the row group and the column; before pyarrow reads them (which aborts the process)."""
    where = str(path)
    n = footer_length(path)
    with path.open("rb") as fh:
        fh.seek(-8 - n, 2)
        raw = fh.read(n)
    try:
        groups = _struct(raw, 0, 0, _SIZE_STATISTICS)[0].get(4, [])
    except (_Short, _Malformed) as e:
        why = str(e) or "it ends before its structures do"
        raise InputError(f"its footer cannot be read ({why}); the file is damaged: {_REWRITE}", where=where) from None
    schema = f.schema
    columns = [schema.column(j) for j in range(min(len(schema), max((len(g.get(1, [])) for g in groups), default=0)))]
    for g, group in enumerate(groups):
        for j, chunk in enumerate(group.get(1, [])[:len(columns)]):
            stats = chunk.get(3, {}).get(16)
            if stats is None:
                continue
            col = columns[j]
            problem = ""
            for fid, what, levels in ((2, "repetition", col.max_repetition_level),
                                      (3, "definition", col.max_definition_level)):
                if stats.get(fid) and stats[fid] != levels + 1:
                    problem = (f"its size statistics count {_n(stats[fid], what + ' level')}, but the schema gives "
                               f"the column {levels + 1}")
            if stats.get(1) and col.physical_type != "BYTE_ARRAY":
                problem = f"its size statistics give byte-array sizes for a column of {col.physical_type}"
            if problem:
                raise InputError(f"row group {g + 1}: {problem}; the file is damaged: {_REWRITE}", where=where,
                                 field=col.path.split(".")[0])
