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
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date as Date
from functools import partial
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from docket.errors import InputError
from docket.model import MAX_SMALL_INT, Chunk, misnamed_field, misnamed_message
from docket.safeio import DuplicateKey, decode_json
from docket.store.bulk_check import ABSENT, KNOWN, Slow, check_columns, nul_in

#: a vector whose length is off 1 by more than this is scaled to unit length: the stores score by
#: inner product, which is the cosine only over unit vectors (`docket index` normalises a record's
#: own vector the same way); vectors already of unit length are stored as given, byte for byte
UNIT_TOLERANCE = 1e-4
#: the largest magnitude a float32 holds: a JSON number beyond it would be stored as infinity
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_NOT_FINITE = "holds NaN or infinite values (or values beyond float32's range, ±3.4e38)"
_ZERO = ("is all zeros (or too small to have a length): a zero vector is similar to nothing (re-embed the "
         "row's text, or drop the row)")

#: rows per batch: big enough that per-batch work (numpy checks, executemany) is amortised, small
#: enough that a batch of 384-dim vectors stays a few MB
BATCH_ROWS = 4096
#: the longest JSONL line read (a 384-dimension vector takes about 8 KB of it): a line without
#: end is refused at this size rather than read into memory whole
MAX_LINE_BYTES = 16 * 2**20
FORMATS = ("parquet", "jsonl")
#: the columns of a checked batch (Chunk's fields but the vector, which travels as one array)
_FIELDS = ("id", "doc", "text", "version", "status", "date", "effective_to", "title", "section", "position",
           "source_type", "trust", "acl", "metadata")


@dataclass
class Batch:
    """Checked rows, in file order, as columns: each Chunk field's values (`cols[name][i]` is what
    Chunk(...).name of row `first + i` is), their vectors and token counts."""

    first: int  # the 1-based row number of the first row
    cols: dict[str, list[Any]]
    vectors: np.ndarray  # (n, dim) float32, finite
    tokens: list[int]
    terms: Any = None  # the rows' keyword terms (SQLite), from `batches`: docket.store.bulk_text.Terms

    def __len__(self) -> int:
        return len(self.tokens)


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


@dataclass
class Rows:
    """One batch as a reader gives it: columns (ABSENT where a row gives nothing), the fields
    outside the contract per row (None: there are none), the vectors as one array, and the rows as
    records (`docket.model.Chunk` keyword arguments) for the row-by-row check."""

    first: int
    n: int
    cols: dict[str, list[Any]]
    extras: list[dict[str, Any]] | None
    vectors: np.ndarray
    records: Callable[[], list[dict[str, Any]]]


class Checker:
    """What must hold across batches: unique ids, one status and date per document version."""

    def __init__(self, where: str, dim: int, embedder: str, count: Callable[[str], int]) -> None:
        self.where, self.dim, self.embedder, self.count = where, dim, embedder, count
        self.ids: set[str] = set()
        self.versions: dict[tuple[str, int], VersionRow] = {}
        self.rows = 0
        #: rows whose vector was not of unit length and was scaled to it (`UNIT_TOLERANCE`)
        self.normalised = 0
        #: called with each checked batch and the file's row count where its reader knows it
        #: (Parquet's footer; 0 for JSONL), as soon as the batch's text work is handed out, before
        #: the batch reaches the writer (bulk_sqlite starts its ANN training at the last one)
        self.on_checked: Callable[[Batch, int], None] | None = None
        #: where the reader can: the vectors of given rows (0-based, sorted) as this check will
        #: give them, read from the file on their own (`parquet_rows`; set by `batches`)
        self.read_rows: Callable[[np.ndarray | slice], np.ndarray | None] | None = None

    def fail(self, row: int, fieldname: str, message: str) -> InputError:
        return InputError(f"row {row}: {message}", where=self.where, field=fieldname)

    def batch(self, rows: Rows) -> Batch:
        """Check one batch as columns (docket.store.bulk_check); a batch that path does not accept
        is checked row by row, which raises on its first bad row. Token counts not given are None
        (`batches` counts them)."""
        vectors = np.ascontiguousarray(rows.vectors, dtype=np.float32)
        try:
            if not np.isfinite(vectors).all():
                raise Slow
            vectors = self._unit(vectors)
            cols = check_columns(rows.cols, rows.n, rows.extras)
            self._agree(cols, rows.n)
        except Slow:
            return self._rows(rows.first, rows.records(), vectors)
        tokens = cols.pop("tokens")
        self._commit(rows.first, cols, vectors)
        return Batch(rows.first, cols, vectors, tokens)

    def _unit(self, vectors: np.ndarray) -> np.ndarray:
        """`vectors` with each row off unit length scaled to it; raises Slow when a row is all
        zeros (the row-by-row check names it)."""
        got = _unit(vectors)
        if got is None:
            raise Slow
        vectors, scaled = got
        self.normalised += scaled
        return vectors

    def _agree(self, cols: dict[str, list[Any]], n: int) -> None:
        """Unique ids, and every row of a document version giving it one status and dates."""
        ids = cols["id"]
        if len(set(ids)) != n or not self.ids.isdisjoint(ids):
            raise Slow
        keys = list(zip(cols["doc"], cols["version"], strict=True))
        facts = dict(zip(keys, zip(cols["status"], cols["date"], cols["effective_to"], strict=True), strict=True))
        if len(set(zip(keys, cols["status"], cols["date"], cols["effective_to"], strict=True))) != len(facts):
            raise Slow
        for key, (status, date, end) in facts.items():
            v = self.versions.get(key)
            if v is not None and (v.status, v.date, v.effective_to) != (status, date, end):
                raise Slow

    def _commit(self, first: int, cols: dict[str, list[Any]], vectors: np.ndarray) -> None:
        """Record a checked batch: its ids, and each row in its version (count, first row, digest)."""
        self.ids.update(cols["id"])
        keys = list(zip(cols["doc"], cols["version"], strict=True))
        for key, i in dict(zip(reversed(keys), range(len(keys) - 1, -1, -1))).items():  # key -> its first row
            if key not in self.versions:
                self.versions[key] = VersionRow(key[0], key[1], cols["status"][i], cols["date"][i],
                                                cols["effective_to"][i], cols["title"][i], first + i)
        shown = _row_reprs(cols)
        raw, width = memoryview(vectors.data).cast("B"), vectors.shape[1] * 4  # a view: no copy of the batch
        versions = self.versions
        for i, (key, text) in enumerate(zip(keys, shown, strict=True)):
            v = versions[key]
            v.n += 1
            v.digest.update(text.encode())
            v.digest.update(raw[i * width : (i + 1) * width])
        self.rows += len(keys)

    def _rows(self, first: int, records: list[dict[str, Any]], vectors: np.ndarray) -> Batch:
        """The row-by-row check (each record through Chunk): names the first bad row and field."""
        finite = np.isfinite(vectors).all(axis=1)
        with np.errstate(invalid="ignore", over="ignore"):  # the rows that are not finite are named as such
            bad = np.flatnonzero(~finite | (_norms(vectors) == 0))
        chunks: list[Chunk] = []
        tokens: list[int | None] = []
        unit = self._unit(vectors[: bad[0]] if bad.size else vectors)  # the rows before the first bad one
        for i, rec in enumerate(records):
            row = first + i
            if bad.size and bad[0] == i:
                raise self.fail(row, "vector", _NOT_FINITE if not finite[i] else _ZERO)
            chunks.append(self._chunk(row, rec, tokens))
            self._version(row, chunks[-1], unit[i])
        self.rows += len(records)
        cols = {name: [getattr(c, name) for c in chunks] for name in _FIELDS}
        return Batch(first, cols, unit, tokens)  # type: ignore[arg-type]

    def _chunk(self, row: int, rec: dict[str, Any], tokens: list[int | None]) -> Chunk:
        for name in ("id", "doc", "text"):
            if rec.get(name) is None:
                raise self.fail(row, name, f"has no {name!r} (every row needs id, doc, text and vector)")
        n = rec.pop("tokens", None)
        for k in rec:
            meant = misnamed_field(k, KNOWN)
            if meant is not None:
                raise self.fail(row, meant, misnamed_message(k, meant))
        at = nul_in(rec)
        if at is not None:
            # (a NUL in a key is shown as \x00: the message is one printable line)
            raise self.fail(row, at.replace("\x00", "\\x00"), "holds a NUL character, which no store can keep")
        try:
            c = Chunk(**rec)
        except InputError as e:
            raise self.fail(row, e.field or "record", e.detail) from None
        except ValueError as e:  # pydantic's ValidationError: the first problem, in one line
            errs: list[Any] = getattr(e, "errors", lambda: [])()
            loc = ".".join(str(x) for x in errs[0]["loc"]) if errs else "record"
            msg = str(errs[0]["msg"]).removeprefix("Value error, ") if errs else str(e).splitlines()[0]
            raise self.fail(row, loc or "record", msg) from None
        if c.id in self.ids:
            raise self.fail(row, "id", f"chunk id {c.id!r} appears twice in the file")
        self.ids.add(c.id)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_SMALL_INT):
            raise self.fail(row, "tokens", f"must be an integer from 0 to {MAX_SMALL_INT:,}, got {n!r}")
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


def batches(path: Path, fmt: str, checker: Checker, rows: int | None = None, *,
            terms: bool = False) -> Iterator[Batch]:
    """The file's rows, checked, a batch at a time, with their token counts and, with `terms`,
    each row's keyword term counts (`Batch.terms`, SQLite's). That text work runs ahead of the
    writer, in worker processes for a big file (docket.store.bulk_text)."""
    from docket.store.bulk_text import AHEAD, TextWork, is_default

    read = _parquet if fmt == "parquet" else _jsonl
    total = _parquet_rows(path) if fmt == "parquet" else 0
    text = TextWork(checker.count, default_counter=is_default(checker.count), rows=total)
    if total:
        checker.read_rows = partial(parquet_rows, path, checker.dim)
    pending: deque[tuple[Batch, Any]] = deque()
    try:
        for raw in read(path, checker, rows or BATCH_ROWS):
            b = checker.batch(raw)
            c = b.cols
            to_count = [c["text"][i] for i, n in enumerate(b.tokens) if n is None]
            to_terms = (c["title"], c["section"], c["text"]) if terms else None  # joined where worked out
            pending.append((b, text.submit(to_count, to_terms)))
            if checker.on_checked is not None:  # after the submit: any worker process is forked by now
                checker.on_checked(b, total)
            if len(pending) > AHEAD:
                yield _done(*pending.popleft())
        if not checker.rows:  # a store with nothing in it is no import: a truncated export, the wrong file
            raise InputError("holds no rows; `docket import` needs at least one chunk", where=checker.where)
        while pending:
            yield _done(*pending.popleft())
    finally:
        text.close()


def _done(b: Batch, result: Any) -> Batch:
    counts, b.terms = result.result()
    it = iter(counts)
    b.tokens = [next(it) if n is None else n for n in b.tokens]
    return b


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


#: the ASCII characters `repr` of a str writes as they are (all printable ones but the backslash;
#: the quotes decide which quote it uses)
_AS_IS = bytes(c for c in range(0x20, 0x7F) if c != ord("\\"))


def _row_reprs(cols: dict[str, list[Any]]) -> list[str]:
    """Each checked row's `repr((id, text, title, section, position, date, effective_to,
    source_type, trust, acl, sorted(metadata.items())))`, the text `Checker._version` digests for a
    row, the text's part made without `repr` where it is ASCII with nothing to escape (most rows;
    `repr` scans every character twice)."""
    n = len(cols["id"])
    metas = [sorted(m.items()) if m else [] for m in cols["metadata"]] if any(cols["metadata"]) else \
        repeat([], n)  # no row has metadata (most files): one shared empty list, repr "[]"
    rest = map(repr, zip(cols["title"], cols["section"], cols["position"], cols["date"], cols["effective_to"],
                         cols["source_type"], cols["trust"], cols["acl"], metas, strict=True))
    return [f"({i!r}, {_text_repr(t)}, {r[1:]}" for i, t, r in zip(cols["id"], cols["text"], rest, strict=True)]


def _text_repr(text: str) -> str:
    """`repr(text)`: for an ASCII text whose only characters `repr` treats apart are quotes (no
    backslash, no control character), `'text'`, or `"text"` when it holds ' but not "."""
    if not text.isascii() or text.encode().translate(None, _AS_IS):
        return repr(text)
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return repr(text)


def _unit(vectors: np.ndarray) -> tuple[np.ndarray, int] | None:
    """`vectors` with each row off unit length scaled to it, and how many were; None when a row is
    all zeros."""
    norms = _norms(vectors)
    if not norms.all():
        return None
    off = np.flatnonzero(np.abs(norms - 1.0) > UNIT_TOLERANCE)
    if off.size:
        vectors = vectors.copy()  # the reader's array may be a read-only view of the file's buffer
        vectors[off] = vectors[off] / norms[off, None]  # in float64: a tiny vector scales without underflow
    return vectors, int(off.size)


def parquet_rows(path: Path, dim: int, picks: np.ndarray | slice) -> np.ndarray | None:
    """The vectors of rows `picks` (0-based, sorted; a slice: every row) of the Parquet file at
    `path`, as `_parquet` and `Checker.batch` give them (float32, a row off unit length scaled to
    it), read on their own: the vector column only, a batch at a time, without pyarrow's thread
    pool (the caller is a thread beside the load: sqlite_ann.LoadBuild.ahead). None where a
    picked row is not one the check would pass (the load then names it); the caller compares
    what it got with the checked rows anyway."""
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    n = f.metadata.num_rows
    want = np.arange(n, dtype=np.int64)[picks] if isinstance(picks, slice) else np.asarray(picks, dtype=np.int64)
    out = np.empty((want.shape[0], dim), dtype=np.float32)
    first = at = 0
    for rb in f.iter_batches(batch_size=BATCH_ROWS, columns=["vector"], use_threads=False):
        end = at + int(np.searchsorted(want[at:], first + len(rb)))
        if end > at:
            col = rb.column(0).take(want[at:end] - first)
            if col.null_count:
                return None
            values = col.flatten()
            if values.null_count or len(values) != (end - at) * dim:
                return None
            with np.errstate(over="ignore"):
                rows = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(end - at, dim)
            rows = np.ascontiguousarray(rows, dtype=np.float32)
            if not np.isfinite(rows).all():
                return None
            got = _unit(rows)
            if got is None:
                return None
            out[at:end] = got[0]
        first += len(rb)
        at = end
    return out if at == want.shape[0] else None


def _norms(vectors: np.ndarray) -> np.ndarray:
    """Each row's length, summed in float64 (a float32 sum of squares of values near 1e-23 or
    below underflows to 0)."""
    return np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))


def _in_float32(vec: list[int | float]) -> bool:
    """Every number finite and within float32's range (a JSON integer too large for any float
    included: `math.isfinite` raises on it)."""
    try:
        return all(math.isfinite(x) and abs(x) <= _FLOAT32_MAX for x in vec)
    except OverflowError:
        return False


def _jsonl(path: Path, checker: Checker, rows: int) -> Iterator[Rows]:
    for first, records, vectors in _jsonl_records(path, checker, rows):
        present: set[str] = set().union(*records)
        cols = {k: [r.get(k, ABSENT) for r in records] for k in present & KNOWN}
        extras = [{k: v for k, v in r.items() if k not in KNOWN} for r in records] if present - KNOWN else None
        yield Rows(first, len(records), cols, extras, vectors, _constant(records))


def _jsonl_records(path: Path, checker: Checker, rows: int) -> Iterator[tuple[int, list[dict[str, Any]], np.ndarray]]:
    records: list[dict[str, Any]] = []
    vecs: list[Any] = []
    first = 1
    with path.open("rb") as fh:
        # binary lines end at b"\n" only (a "\r" or U+2028 inside a line is no line break), each at
        # most MAX_LINE_BYTES long: a file with no newline is never read whole into memory
        for row, raw in enumerate(iter(partial(fh.readline, MAX_LINE_BYTES + 1), b""), start=1):
            rec = _record(checker, row, raw)
            vec = rec.pop("vector", None)
            if vec is None:
                raise checker.fail(row, "vector", "has no 'vector' (every row needs id, doc, text and vector)")
            if not isinstance(vec, list) or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
                raise checker.fail(row, "vector", "must be a list of numbers")
            if len(vec) != checker.dim:
                raise _dim_error(checker, row, len(vec))
            if not _in_float32(vec):
                raise checker.fail(row, "vector", _NOT_FINITE)
            records.append(rec)
            vecs.append(vec)
            if len(records) == rows:
                yield first, records, np.asarray(vecs, dtype=np.float32)
                first, records, vecs = row + 1, [], []
    if records:
        yield first, records, np.asarray(vecs, dtype=np.float32)


def _record(checker: Checker, row: int, raw: bytes) -> dict[str, Any]:
    """One JSONL line as its record: UTF-8 (a BOM before the first line dropped), valid JSON, an
    object, no key given twice, within MAX_LINE_BYTES; anything else names the row."""
    if len(raw) > MAX_LINE_BYTES:
        raise checker.fail(row, "record", f"is longer than {MAX_LINE_BYTES:,} bytes (no row of a chunk needs "
                                          "that much; is the file one JSON document rather than JSON lines?)")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        line = _decoded(checker, row, raw)
    if row == 1:
        line = line.removeprefix("\ufeff")
    if not line.strip():
        raise checker.fail(row, "record", "is blank; one JSON object per line")
    try:
        rec = decode_json(line)
    except json.JSONDecodeError as e:
        raise checker.fail(row, "record", f"is not valid JSON ({e.msg} at column {e.colno})") from None
    except DuplicateKey as e:  # json.loads would keep the last copy: `"acl": ["hr"], ..., "acl": null` is public
        raise checker.fail(row, e.path, e.detail) from None
    except RecursionError:
        raise checker.fail(row, "record", "is nested too deeply to read; flatten it") from None
    except ValueError as e:  # an integer literal longer than Python's limit (4300 digits)
        raise checker.fail(row, "record", f"holds a number that cannot be read ({str(e).split(';')[0]})") from None
    if not isinstance(rec, dict):
        raise checker.fail(row, "record", f"must be a JSON object, got {type(rec).__name__}")
    return rec


def _decoded(checker: Checker, row: int, raw: bytes) -> str:
    """A line that is not plain UTF-8: what docket.safeio.decode makes of it (a lone surrogate
    written as UTF-8 bytes becomes U+FFFD, as in any JSON docket reads), or its row named."""
    from docket.safeio import decode

    if row == 1 and raw.startswith(b"\x1f\x8b"):
        raise checker.fail(row, "record", "is gzip-compressed data, not text; decompress the file first")
    try:
        return decode(raw, checker.where, first_line=row)
    except InputError as e:
        raise checker.fail(row, "record", e.detail.replace(f"line {row}, ", "")) from None


def _parquet(path: Path, checker: Checker, rows: int) -> Iterator[Rows]:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as e:
        raise InputError("reading Parquet needs pyarrow: pip install 'docket[import]' (or convert the file "
                         "to JSONL)", where=str(path)) from e
    from docket.store import parquet_bounds as bounds

    bounds.check_footer_length(path)  # before pyarrow parses it
    unreadable = (pa.ArrowException, OSError, MemoryError, UnicodeDecodeError)
    try:
        f, plan, schema = _footer(pq, bounds, path, checker, rows)
    except unreadable as e:
        raise _unreadable(path, e) from None
    names = [n for n in schema.names if n != "vector"]
    seen: set[str] = set()
    for name in schema.names:
        if name in seen:  # pyarrow would refuse to pick one; the writer meant one of them
            raise checker.fail(1, name, f"the file has more than one column named {name!r}; keep one")
        seen.add(name)
    # metadata (and any column outside the contract, which goes into it) is stored as JSON
    not_json = {n: schema.field(n).type for n in names
                if (n == "metadata" or n not in KNOWN) and not _json_type(pa, schema.field(n).type)}
    for name in ("id", "doc", "text", "vector"):
        if name not in seen:
            raise checker.fail(1, name, f"the file has no {name!r} column (every row needs id, doc, text and vector)")
    vtype = schema.field("vector").type
    if not (pa.types.is_list(vtype) or pa.types.is_large_list(vtype) or pa.types.is_fixed_size_list(vtype)) or not (
            pa.types.is_floating(vtype.value_type) or pa.types.is_integer(vtype.value_type)):
        raise checker.fail(1, "vector", f"column must be a list of floats, got {vtype}")
    try:
        f = pq.ParquetFile(path, metadata=f.metadata, read_dictionary=plan.dictionary)
    except unreadable as e:
        raise _unreadable(path, e) from None
    first = 1
    measured = bounds.Decoded(pa, str(path), plan.budget)
    read = _read_ahead(_measured(pa, f.iter_batches(batch_size=plan.batch_rows), measured))
    while True:
        try:
            rb = next(read)
        except StopIteration:
            break
        except (pa.ArrowException, OSError) as e:  # a damaged page (the footer read well)
            raise checker.fail(first, "record", f"cannot be read: the file is damaged ({_printable(str(e))})"
                               ) from None
        except MemoryError as e:  # a page whose sizes lie past the footer's, that pyarrow did not catch
            raise checker.fail(first, "record", f"cannot be decoded within memory ({_printable(str(e))}); "
                                                "the file declares less than its pages hold") from None
        for name, t in not_json.items():
            valid = rb.column(name).is_valid().to_numpy(zero_copy_only=False)
            if valid.any():  # an all-null column is absent
                raise checker.fail(first + int(np.flatnonzero(valid)[0]), name,
                                   f"has type {t}, which metadata cannot hold (JSON values only: strings, numbers, "
                                   "booleans, lists, structs); cast the column, e.g. to a string")
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
        with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf: the check names its row
            vectors = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(rb), checker.dim)
        cols: dict[str, list[Any]] = {}
        for name in names:
            col = rb.column(name)
            values = _pylist(pa, col)  # a null is an absent field (the column's writer filled it in)
            cols[name] = [ABSENT if v is None else v for v in values] if col.null_count else values
        yield Rows(first, len(rb), {k: v for k, v in cols.items() if k in KNOWN}, _extras(cols, len(rb)), vectors,
                   _records_of(cols, len(rb)))
        first += len(rb)


def _unreadable(path: Path, e: BaseException) -> InputError:
    if isinstance(e, UnicodeDecodeError):  # pyarrow decodes the footer's names (columns, paths) as UTF-8
        return InputError(f"is not a readable Parquet file: its footer holds a name that is not UTF-8 ({e.reason} at "
                          f"byte {e.start} of {e.object[:40]!r})", where=str(path))
    return InputError(f"is not a readable Parquet file ({_printable(str(e))})", where=str(path))


def _footer(pq: Any, bounds: Any, path: Path, checker: Checker, rows: int) -> tuple[Any, Any, Any]:
    """The file opened, its footer and page headers checked (parquet_bounds): the ParquetFile,
    its batch plan and its Arrow schema. pyarrow's own errors (and a footer name that is not
    UTF-8) are the caller's to report (`_unreadable`)."""
    f = pq.ParquetFile(path)
    # the footer's size statistics against its schema, before pyarrow builds a column chunk's
    # metadata (a mismatch aborts the process there)
    bounds.check_statistics(f, path)
    # the footer's declared sizes against the rows' limits, before a page is decoded (and before
    # the schema is walked: 20,000 columns took minutes); the string columns are then read
    # dictionary-encoded and measured before they are expanded (parquet_bounds)
    plan = bounds.check_footer(f, path, checker.dim, rows, checker.embedder)
    # then each column chunk's page headers against what its footer declares: pyarrow allocates
    # what a page header declares before it finds the page holds less
    bounds.check_pages(f, path)
    return f, plan, f.schema_arrow  # (a property that builds the schema anew at each use)


def _measured(pa: Any, batches: Iterator[Any], decoded: Any) -> Iterator[Any]:
    """pyarrow's record batches as `parquet_bounds.Decoded` expands them: measured first (a row
    too large, a file past its budget, refused with its row), in slices of bounded bytes. The row
    numbers count the batches' rows (the same as the slices', which cover each batch in order)."""
    first = 1
    for rb in batches:
        yield from decoded.slices(rb, first)
        first += rb.num_rows


#: record batches a Parquet file is decoded ahead of the check (`_read_ahead`)
READ_AHEAD = 2


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """`items` (pyarrow's record batches), the first one here and the rest decoded in a thread up
    to `READ_AHEAD` ahead: pyarrow decodes without the GIL, so the file's next batches are read
    while this thread checks and writes the last ones, instead of waiting for each. The thread
    starts at the second batch, after the first batch's text work is handed out (any worker
    process is forked by then: docket.store.bulk_text forks only from a process without another
    thread), and is stopped and joined however the caller leaves (a refused row, an error)."""
    import queue
    import threading

    try:
        first = next(items)
    except StopIteration:
        return
    yield first
    done = object()
    q: queue.Queue[Any] = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((done, None))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
            put((done, e))

    t = threading.Thread(target=read, name="docket-import-read", daemon=True)
    t.start()
    try:
        while True:
            item, error = q.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
        t.join()


def _printable(message: str) -> str:
    """The first line of a library's message, its control characters (bytes it quotes) as '?'."""
    line = message.splitlines()[0] if message else ""
    return "".join(c if c.isprintable() else "?" for c in line).strip()


def _json_type(pa: Any, t: Any) -> bool:
    """Whether `to_pylist` of a column of type `t` gives JSON values (what metadata stores)."""
    types = pa.types
    if types.is_dictionary(t):
        return _json_type(pa, t.value_type)
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        return _json_type(pa, t.value_type)
    if types.is_struct(t):
        return all(_json_type(pa, t.field(i).type) for i in range(t.num_fields))
    return bool(types.is_null(t) or types.is_boolean(t) or types.is_integer(t) or types.is_floating(t)
                or types.is_string(t) or types.is_large_string(t))


def _pylist(pa: Any, col: Any) -> list[Any]:
    """`col.to_pylist()`, in a fraction of its time for the common column types: strings and
    integers through numpy (one C-level conversion instead of a scalar object per value), lists
    of strings (acl) as slices of their values; any other type through to_pylist itself."""
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or (pa.types.is_integer(t) and not col.null_count):
        return col.to_numpy(zero_copy_only=False).tolist()  # type: ignore[no-any-return]
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (
            pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        values = col.values.to_numpy(zero_copy_only=False).tolist()
        offsets = col.offsets.to_numpy().tolist()
        valid = col.is_valid().to_numpy(zero_copy_only=False).tolist() if col.null_count else repeat(True)
        return [values[a:b] if ok else None for a, b, ok in zip(offsets, offsets[1:], valid)]
    return col.to_pylist()  # type: ignore[no-any-return]


def _parquet_rows(path: Path) -> int:
    """The row count in a Parquet file's footer (0 where it cannot be read: the reader says why)."""
    try:
        import pyarrow.parquet as pq

        from docket.store.parquet_bounds import check_footer_length

        check_footer_length(path)  # a footer too long to parse: _parquet refuses it
        return int(pq.ParquetFile(path).metadata.num_rows)
    except Exception:  # noqa: BLE001 - any unreadable file: _parquet reports it, with its row
        return 0


def _constant(records: list[dict[str, Any]]) -> Callable[[], list[dict[str, Any]]]:
    return lambda: records


def _records_of(cols: dict[str, list[Any]], n: int) -> Callable[[], list[dict[str, Any]]]:
    """The rows as records, made only for the row-by-row check (a Parquet null: no key)."""
    return lambda: [{k: v[i] for k, v in cols.items() if v[i] is not ABSENT} for i in range(n)]


def _extras(cols: dict[str, list[Any]], n: int) -> list[dict[str, Any]] | None:
    names = [k for k in cols if k not in KNOWN]
    if not names:
        return None
    return [{k: cols[k][i] for k in names if cols[k][i] is not ABSENT} for i in range(n)]
