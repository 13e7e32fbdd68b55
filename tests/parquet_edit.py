"""Rewriting a Parquet file's Thrift structures (page headers, the footer) for tests of hostile
files: a plain codec of Thrift's compact protocol, written apart from docket's own strict reader
(docket.store.parquet_bounds.page_header) so that one does not test itself.

A struct decodes to a list of [field id, compact type, value]: an i8/i16/i32/i64 is an int, a
double 8 raw bytes, a binary its bytes, a bool True/False, a list or set (element type, items), a
struct a list of fields again, a map (key type, value type, [(key, value)])."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Fields = list[list[Any]]


def _varint(data: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = data[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, i


def varint(n: int) -> bytes:
    out = bytearray()
    while n >> 7:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


def _value(data: bytes, i: int, t: int) -> tuple[Any, int]:
    if t in (1, 2):
        return t == 1, i
    if t == 3:
        return data[i], i + 1
    if t in (4, 5, 6):
        z, i = _varint(data, i)
        return (z >> 1) ^ -(z & 1), i
    if t == 7:
        return data[i:i + 8], i + 8
    if t == 8:
        n, i = _varint(data, i)
        return data[i:i + n], i + n
    if t in (9, 10):
        n, et = data[i] >> 4, data[i] & 15
        i += 1
        if n == 15:
            n, i = _varint(data, i)
        items = []
        for _ in range(n):
            if et in (1, 2):
                items.append(data[i] == 1)
                i += 1
            else:
                v, i = _value(data, i, et)
                items.append(v)
        return (et, items), i
    if t == 11:
        n, i = _varint(data, i)
        if not n:
            return (0, 0, []), i
        kt, vt = data[i] >> 4, data[i] & 15
        i += 1
        pairs = []
        for _ in range(n):
            k, i = _value(data, i, kt)
            v, i = _value(data, i, vt)
            pairs.append((k, v))
        return (kt, vt, pairs), i
    if t == 12:
        return decode(data, i)
    raise ValueError(f"compact type {t}")


def decode(data: bytes, i: int = 0) -> tuple[Fields, int]:
    """The struct at `data[i:]` and the index after it."""
    fields: Fields = []
    last = 0
    while True:
        h = data[i]
        i += 1
        if h == 0:
            return fields, i
        t, d = h & 15, h >> 4
        if d:
            fid = last + d
        else:
            z, i = _varint(data, i)
            fid = (z >> 1) ^ -(z & 1)
        v, i = _value(data, i, t)
        fields.append([fid, t, v])
        last = fid


def _encode_value(t: int, v: Any) -> bytes:
    if t in (1, 2):
        return b""
    if t == 3:
        return bytes([v])
    if t in (4, 5, 6):
        return zigzag(v)
    if t == 7:
        return bytes(v)
    if t == 8:
        return varint(len(v)) + bytes(v)
    if t in (9, 10):
        et, items = v
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else bytes([0xF0 | et]) + varint(len(items))
        if et in (1, 2):
            return head + bytes(1 if x else 2 for x in items)
        return head + b"".join(_encode_value(et, x) for x in items)
    if t == 11:
        kt, vt, pairs = v
        if not pairs:
            return b"\x00"
        return varint(len(pairs)) + bytes([kt << 4 | vt]) + b"".join(
            _encode_value(kt, k) + _encode_value(vt, x) for k, x in pairs)
    if t == 12:
        return encode(v)
    raise ValueError(f"compact type {t}")


def encode(fields: Fields) -> bytes:
    out = bytearray()
    last = 0
    for fid, t, v in fields:
        if t in (1, 2):
            t = 1 if v else 2
        if 0 < fid - last <= 15:
            out.append(((fid - last) << 4) | t)
        else:
            out.append(t)
            out += zigzag(fid)
        out += _encode_value(t, v)
        last = fid
    out.append(0)
    return bytes(out)


def field(fields: Fields, fid: int) -> list[Any]:
    return next(f for f in fields if f[0] == fid)


def rewrite_page(path: Path, at: int, edit: Callable[[Fields], None]) -> None:
    """Apply `edit` to the page header at byte `at`, re-encoded to its old length so that every
    offset after it holds: a longer header drops its crc (field 4: write the file with
    write_page_checksum=True to leave room), a shorter one is padded with bool fields of ids no
    PageHeader has (9 on; a reader skips them)."""
    data = bytearray(path.read_bytes())
    fields, end = decode(bytes(data), at)
    n = end - at
    edit(fields)
    new = encode(fields)
    if len(new) > n:
        fields = [f for f in fields if f[0] != 4]
        new = encode(fields)
    assert len(new) <= n, f"the edited header takes {len(new)} bytes, the old one {n}"
    top = max(8, *(f[0] for f in fields))
    new = encode(fields + [[top + 1 + k, 1, True] for k in range(n - len(new))])  # a byte each
    assert len(new) == n and decode(new)[1] == n
    data[at:end] = new
    path.write_bytes(bytes(data))


def rewrite_footer(path: Path, edit: Callable[[Fields], None]) -> None:
    """Apply `edit` to the footer (FileMetaData), written back with its new length in the
    trailer (the pages before it keep their offsets)."""
    data = path.read_bytes()
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    fields, end = decode(data, start)
    assert end == len(data) - 8
    edit(fields)
    new = encode(fields)
    path.write_bytes(data[:start] + new + len(new).to_bytes(4, "little") + b"PAR1")


def column_meta(fields: Fields) -> Iterator[tuple[int, str, Fields]]:
    """(row group, column path, its ColumnMetaData) for each column chunk of a decoded footer."""
    for g, rg in enumerate(field(fields, 4)[2][1]):
        for chunk in field(rg, 1)[2][1]:
            meta = field(chunk, 3)[2]
            yield g, ".".join(x.decode() for x in field(meta, 3)[2][1]), meta
