"""A file of numpy arrays and string lists, written in one piece and read back memory-mapped.

The SQLite store keeps its search index (vector matrix, postings, codes) in one such file next
to the database, so a new process maps it in milliseconds instead of reading every row (seconds
at 100k chunks, most of a minute at 1M). The file is a cache: `read` returns None for anything
it cannot vouch for (missing, truncated, another layout), and the caller rebuilds from the
database. `write` goes to a temporary file in the same directory and renames it over the old
one, so a reader sees the old file or the new one, never half of one.

Layout: the magic (8 bytes), the header length (8 bytes, little endian), the header (JSON: the
caller's fields, the string lists, and per array its dtype, shape and offset), then each array's
bytes at a 64-byte aligned offset.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from docket.safeio import replacing

MAGIC = b"DKTIDX01"
_ALIGN = 64


def write(path: Path, fields: dict[str, Any], arrays: dict[str, np.ndarray], strings: dict[str, list[str]],
          mode: int | None = None) -> None:
    """Write the file at `path` in one rename, with permission bits `mode` (default: the
    temporary file's, owner only). Raises OSError when the directory is not writable."""
    layout: dict[str, Any] = {}
    offset = 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        arrays[name] = a
        offset = -(-offset // _ALIGN) * _ALIGN
        layout[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset}
        offset += a.nbytes
    header = json.dumps({"fields": fields, "strings": strings, "arrays": layout}, ensure_ascii=False,
                        separators=(",", ":")).encode()
    start = -(-(len(MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    with replacing(path, mode) as tmp, open(tmp, "wb") as f:
        f.write(MAGIC + len(header).to_bytes(8, "little") + header)
        f.write(b"\0" * (start - f.tell()))
        for name, a in arrays.items():
            f.write(b"\0" * (start + layout[name]["offset"] - f.tell()))
            if a.size:
                f.write(a.data.cast("B"))


def read(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, list[str]]] | None:
    """(fields, arrays, strings) of the file, the arrays read-only views of a memory map; None
    when there is no readable file of this layout at `path`."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(MAGIC) + 8:
                return None
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        if mm[: len(MAGIC)] != MAGIC:
            return None
        n = int.from_bytes(mm[len(MAGIC) : len(MAGIC) + 8], "little")
        if len(MAGIC) + 8 + n > size:
            return None
        head = json.loads(mm[len(MAGIC) + 8 : len(MAGIC) + 8 + n])
        start = -(-(len(MAGIC) + 8 + n) // _ALIGN) * _ALIGN
        arrays: dict[str, np.ndarray] = {}
        for name, spec in head["arrays"].items():
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(x) for x in spec["shape"])
            count = int(np.prod(shape, dtype=np.int64))
            at = start + int(spec["offset"])
            if at < start or at + count * dtype.itemsize > size:
                return None
            arrays[name] = np.frombuffer(mm, dtype=dtype, count=count, offset=at).reshape(shape)
        fields, strings = head["fields"], head["strings"]
        if not isinstance(fields, dict) or not isinstance(strings, dict):
            return None
        return fields, arrays, strings
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
