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
* while decoding: every string column is read dictionary-encoded (pyarrow then gives indices into
  one copy of each distinct value rather than the values repeated), each row's decoded size is
  measured from that before the values are expanded, and the batch is expanded in slices of at
  most `BATCH_BYTES`; a row over `MAX_ROW_BYTES`, or a file whose decoded total passes the
  expansion bound, is refused naming the row and column. A page whose size lies past these (pyarrow
  checks its own sizes and raises) or an allocation that still fails becomes the same one line.

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
    for j in range(m.num_columns):
        col = schema.column(j)
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
        group = 0
        for j in range(rg.num_columns):
            c = rg.column(j)
            name = c.path_in_schema.split(".")[0]
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
