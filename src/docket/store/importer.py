"""Reading `docket import` files: chunks with vectors made elsewhere (Parquet or JSONL).

The input is the output of an embedding job run outside docket (Spark, Ray, Dask): one row per
chunk with the chunk record's fields (docs/input-format.md: `id`, `doc`, `text`, and the optional
`version`, `status`, `date`, `effective_to`, `title`, `section`, `position`, `source_type`, `trust`,
`acl`, `metadata`; any other field goes into metadata), its `vector` (a list of floats, the
store's embedder's dimension) and optionally `tokens` (its token count; counted here if absent).

Rows are checked here, in batches, before a backend writes anything it could not take back: each
chunk through the same validation as every other chunk record (docket.model.Chunk), the vectors as
one array per batch (dimension, NaN and infinity), ids unique across the whole file, and the rows
of one document version agreeing on its status and dates. The first bad row stops the import with
one line naming the row (1-based, in file order) and the field; the backends write in one
transaction, so nothing of the file is stored then.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.model import Chunk

#: rows per batch: big enough that per-batch work (numpy checks, executemany) is amortised, small
#: enough that a batch of 384-dim vectors stays a few MB
BATCH_ROWS = 4096
FORMATS = ("parquet", "jsonl")


@dataclass
class Batch:
    """Checked rows, in file order: the chunks (without vectors), their vectors and token counts."""

    first: int  # the 1-based row number of chunks[0]
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), dim) float32, finite
    tokens: list[int]


@dataclass
class VersionRow:
    """One document version as the import saw it (the `versions` row a backend writes)."""

    doc: str
    version: int
    status: str
    date: Date | None
    effective_to: Date | None
    title: str
    first: int
    n: int = 0
    digest: Any = field(default_factory=hashlib.sha256)

    def content_hash(self) -> str:
        """Not `docket index`'s hash (that one is of records it writes itself): a later `docket
        index` of the same document sees a changed version and rewrites it, never skips it wrongly."""
        return "import:" + self.digest.hexdigest()


class Checker:
    """What must hold across batches: unique ids, one status and date per document version."""

    def __init__(self, where: str, dim: int, embedder: str, count: Callable[[str], int]) -> None:
        self.where, self.dim, self.embedder, self.count = where, dim, embedder, count
        self.ids: set[str] = set()
        self.versions: dict[tuple[str, int], VersionRow] = {}
        self.rows = 0

    def fail(self, row: int, fieldname: str, message: str) -> InputError:
        return InputError(f"row {row}: {message}", where=self.where, field=fieldname)

    def batch(self, first: int, records: list[dict[str, Any]], vectors: np.ndarray) -> Batch:
        """Check one batch (records without their vectors, the vectors already one array)."""
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        chunks: list[Chunk] = []
        tokens: list[int] = []
        for i, rec in enumerate(records):
            row = first + i
            if bad.size and bad[0] == i:
                raise self.fail(row, "vector", "holds NaN or infinite values")
            chunks.append(self._chunk(row, rec, tokens))
            self._version(row, chunks[-1], vectors[i])
        self.rows += len(records)
        return Batch(first, chunks, vectors, tokens)

    def _chunk(self, row: int, rec: dict[str, Any], tokens: list[int]) -> Chunk:
        for name in ("id", "doc", "text"):
            if rec.get(name) is None:
                raise self.fail(row, name, f"has no {name!r} (every row needs id, doc, text and vector)")
        n = rec.pop("tokens", None)
        for name in ("id", "doc", "text", "title", "section"):
            if isinstance(rec.get(name), str) and "\x00" in rec[name]:
                raise self.fail(row, name, "holds a NUL character, which no store can keep")
        try:
            c = Chunk(**rec)
        except InputError as e:
            raise self.fail(row, e.field or "record", e.detail) from None
        except ValueError as e:  # pydantic's ValidationError: the first problem, in one line
            errs: list[Any] = getattr(e, "errors", lambda: [])()
            loc = ".".join(str(x) for x in errs[0]["loc"]) if errs else "record"
            msg = errs[0]["msg"] if errs else str(e).splitlines()[0]
            raise self.fail(row, loc or "record", msg) from None
        if c.id in self.ids:
            raise self.fail(row, "id", f"chunk id {c.id!r} appears twice in the file")
        self.ids.add(c.id)
        if n is None:
            tokens.append(self.count(c.text))
        elif isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise self.fail(row, "tokens", f"must be a non-negative integer, got {n!r}")
        else:
            tokens.append(n)
        return c

    def _version(self, row: int, c: Chunk, vec: np.ndarray) -> None:
        key = (c.doc, c.version)
        v = self.versions.get(key)
        if v is None:
            v = self.versions[key] = VersionRow(c.doc, c.version, c.status, c.date, c.effective_to, c.title, row)
        else:
            for name, mine, theirs in (("status", c.status, v.status), ("date", c.date, v.date),
                                       ("effective_to", c.effective_to, v.effective_to)):
                if mine != theirs:
                    raise self.fail(row, name, f"{name} {mine!r} differs from {theirs!r} given to document {c.doc!r} "
                                               f"v{c.version} at row {v.first}; the rows of one version share it")
        v.n += 1
        v.digest.update(repr((c.id, c.text, c.title, c.section, c.position, c.date, c.effective_to, c.source_type,
                              c.trust, c.acl, sorted(c.metadata.items()))).encode())
        v.digest.update(vec.tobytes())


def batches(path: Path, fmt: str, checker: Checker, rows: int | None = None) -> Iterator[Batch]:
    """The file's rows, checked, a batch at a time."""
    read = _parquet if fmt == "parquet" else _jsonl
    for first, records, vectors in read(path, checker, rows or BATCH_ROWS):
        yield checker.batch(first, records, vectors)


def format_of(path: Path, given: str | None) -> str:
    if given:
        if given not in FORMATS:
            raise InputError(f"must be one of {', '.join(FORMATS)}, got {given!r}", field="--format")
        return given
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    raise InputError("cannot tell the format from the file name; give --format parquet or --format jsonl",
                     where=str(path), field="--format")


def _dim_error(checker: Checker, row: int, got: int) -> InputError:
    return checker.fail(row, "vector", f"has {got} values, but the store's embedder {checker.embedder!r} has "
                                       f"dimension {checker.dim}: vectors of another model cannot be searched together")


def _jsonl(path: Path, checker: Checker, rows: int) -> Iterator[tuple[int, list[dict[str, Any]], np.ndarray]]:
    records: list[dict[str, Any]] = []
    vecs: list[Any] = []
    first = 1
    with path.open(encoding="utf-8") as fh:
        for row, line in enumerate(fh, start=1):
            if not line.strip():
                raise checker.fail(row, "record", "is blank; one JSON object per line")
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise checker.fail(row, "record", f"is not valid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(rec, dict):
                raise checker.fail(row, "record", f"must be a JSON object, got {type(rec).__name__}")
            vec = rec.pop("vector", None)
            if vec is None:
                raise checker.fail(row, "vector", "has no 'vector' (every row needs id, doc, text and vector)")
            if not isinstance(vec, list) or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
                raise checker.fail(row, "vector", "must be a list of numbers")
            if len(vec) != checker.dim:
                raise _dim_error(checker, row, len(vec))
            if not all(math.isfinite(x) for x in vec):
                raise checker.fail(row, "vector", "holds NaN or infinite values")
            records.append(rec)
            vecs.append(vec)
            if len(records) == rows:
                yield first, records, np.asarray(vecs, dtype=np.float32)
                first, records, vecs = row + 1, [], []
    if records:
        yield first, records, np.asarray(vecs, dtype=np.float32)


def _parquet(path: Path, checker: Checker, rows: int) -> Iterator[tuple[int, list[dict[str, Any]], np.ndarray]]:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as e:
        raise InputError("reading Parquet needs pyarrow: pip install 'docket[import]' (or convert the file "
                         "to JSONL)", where=str(path)) from e
    try:
        f = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"is not a readable Parquet file ({str(e).splitlines()[0]})", where=str(path)) from None
    names = f.schema_arrow.names
    for name in ("id", "doc", "text", "vector"):
        if name not in names:
            raise checker.fail(1, name, f"the file has no {name!r} column (every row needs id, doc, text and vector)")
    vtype = f.schema_arrow.field("vector").type
    if not (pa.types.is_list(vtype) or pa.types.is_large_list(vtype) or pa.types.is_fixed_size_list(vtype)) or not (
            pa.types.is_floating(vtype.value_type) or pa.types.is_integer(vtype.value_type)):
        raise checker.fail(1, "vector", f"column must be a list of floats, got {vtype}")
    first = 1
    for rb in f.iter_batches(batch_size=rows):
        col = rb.column("vector")
        if col.null_count:
            bad = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise checker.fail(first + bad, "vector", "has no 'vector' (every row needs id, doc, text and vector)")
        lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        wrong = np.flatnonzero(lengths != checker.dim)
        if wrong.size:
            raise _dim_error(checker, first + int(wrong[0]), int(lengths[wrong[0]]))
        values = col.flatten()
        if values.null_count:
            at = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0]) // checker.dim
            raise checker.fail(first + at, "vector", "holds a null value")
        vectors = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(rb), checker.dim)
        records = rb.drop_columns(["vector"]).to_pylist()
        for rec in records:  # a column the writer filled with nulls for this row is an absent field
            for k in [k for k, v in rec.items() if v is None and k != "acl"]:
                del rec[k]
        yield first, records, vectors
        first += len(rb)

