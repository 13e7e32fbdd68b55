"""Fuzzing `docket import` of Parquet files: mutated good files are imported or refused, nothing else.

Small good files (several codecs, v1 and v2 pages, dictionaries on and off, nulls, a few row
groups) are mutated: bytes flipped, set, inserted, deleted or the file cut short inside a page
header, a page body or the footer; or a field of a page header or of the footer (sizes, counts,
offsets, types, num_rows, the schema's types and repetition, names) re-encoded with another value
(tests/parquet_edit.py). The property (docs/security.md, "Promised for docket import"):

* the import succeeds and stores the rows pyarrow reads from the same file, or
* it raises docket's InputError in one line naming the file, and the store stays empty;

never another exception, never more than MAX_SECONDS a file or MAX_RSS of memory. A few run
through the CLI in a subprocess under the red-team harness's memory ceiling (RLIMIT_AS, 3 GiB):
exit 0, or exit 2 with one line on stderr and no store left behind.

The default run is derandomized and small (a few seconds); the `slow` ones try thousands.
"""

from __future__ import annotations

import io
import random
import resource
import signal
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from parquet_edit import Fields, decode, encode

from docket.errors import InputError
from docket.store.bulk import import_file
from docket.store.factory import open_store

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

#: a file's import may take at most this long in-process (a good one takes a few ms)
MAX_SECONDS = 20
#: and the process's peak resident memory may not pass this
MAX_RSS = 2**30
DIM = 8
HASH_DIM = 256  # `docket import --embedder hash`

#: the good files mutated: (codec, data page version, dictionary, row group size, page size rows)
SEEDS = [("none", "1.0", True, None, None), ("snappy", "1.0", False, 7, None), ("zstd", "2.0", False, None, 4),
         ("gzip", "2.0", True, 10, None), ("lz4", "1.0", True, None, 5), ("brotli", "1.0", False, 12, None),
         ("zstd", "1.0", True, 9, 3), ("none", "2.0", True, None, 6)]


def _table(n: int, dim: int) -> Any:
    rng = np.random.default_rng(n + dim)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return pa.table({
        "id": [f"c{i}" for i in range(n)], "doc": [f"d{i % 4}" for i in range(n)],
        "text": [f"refund window {i} " + "policy " * (i % 5) for i in range(n)],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim),
        "title": [None if i % 3 == 0 else f"Refunds {i % 4}" for i in range(n)],
        "acl": [None if i % 2 else ["group:g1", f"user:u{i % 3}"] for i in range(n)],
        "position": pa.array([i for i in range(n)], pa.int32()),
        "extra": pa.array([None if i % 4 == 1 else i * 1.5 for i in range(n)]),
    })


@cache
def seeds(dim: int = DIM) -> list[tuple[str, bytes]]:
    out = []
    for k, (codec, version, dictionary, group, page_rows) in enumerate(SEEDS):
        sink = io.BytesIO()
        pq.write_table(_table(20 + k, dim), sink, compression=codec, data_page_version=version,
                       use_dictionary=dictionary, row_group_size=group, max_rows_per_page=page_rows,
                       write_page_checksum=k % 2 == 1)
        name = f"{codec}-v{version[0]}{'-dict' if dictionary else ''}{f'-rg{group}' if group else ''}"
        out.append((name, sink.getvalue()))
    return out


# --- where the structures lie in a file (parsed with the independent codec) ------------------------

def footer_span(data: bytes) -> tuple[int, int]:
    n = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - n, len(data) - 8


def _field(fields: Fields, fid: int) -> Any:
    return next((f[2] for f in fields if f[0] == fid), None)


def _header_spans(data: bytes) -> list[tuple[int, int, int]]:
    start, _ = footer_span(data)
    meta, _ = decode(data, start)
    out = []
    for rg in _field(meta, 4)[1]:
        for chunk in _field(rg, 1)[1]:
            cm = _field(chunk, 3)
            pos = min(x for x in (_field(cm, 9), _field(cm, 11)) if x)
            end = pos + _field(cm, 7)
            while pos < end:
                h, body = decode(data, pos)
                out.append((pos, body, body + _field(h, 3)))
                pos = body + _field(h, 3)
    return out


def _ints(fields: Fields, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], int, Any]]:
    """Every scalar field of a decoded struct, nested ones too: (path of list indices, type, value)."""
    out: list[tuple[tuple[Any, ...], int, Any]] = []
    for k, (_, t, v) in enumerate(fields):
        here = (*path, k)
        if t == 12:
            out += _ints(v, here)
        elif t in (9, 10):
            et, items = v
            for m, item in enumerate(items):
                if et == 12:
                    out += _ints(item, (*here, m))
                elif et in (3, 4, 5, 6, 8):
                    out.append(((*here, m), et, item))
        elif t in (1, 2, 3, 4, 5, 6, 8):
            out.append((here, t, v))
    return out


def _set_at(fields: Fields, path: tuple[Any, ...], value: Any) -> None:
    node: Any = fields
    for k in path[:-1]:
        node = node[k]
        if isinstance(node, list) and len(node) == 3 and isinstance(node[0], int) and isinstance(node[1], int):
            node = node[2] if node[1] == 12 else node[2][1]
    last = path[-1]
    if isinstance(node, list) and node and isinstance(node[last], list) and len(node[last]) == 3:
        node[last][2] = value
    else:
        node[last] = value


def _new_value(t: int, old: Any, r: random.Random) -> Any:
    if t in (1, 2):
        return not old
    if t == 8:
        return r.choice([b"", old + b"x", old[:-1], b"\xff\xfe", b"vector", b"text", b"id", bytes(r.randrange(256)
                                                                                              for _ in range(4))])
    lim = {3: 2**7, 4: 2**15, 5: 2**31, 6: 2**63}[t]
    v = r.choice([0, 1, -1, 2, old - 1, old + 1, old * 2, old // 2, lim - 1, -lim, lim // 2, 127, 128, 255, 4096,
                  r.randrange(-lim, lim), r.randrange(-300, 300)])
    if t == 3:
        return v & 0xFF
    return max(-2**63, min(2**63 - 1, v))


# --- mutations -------------------------------------------------------------------------------------

PLACES = ("header", "body", "footer")
BYTE_OPS = ("flip", "set", "insert", "delete", "truncate")
#: a field re-encoded with another value: anywhere in the footer, in its schema (types, repetition,
#: children, names), in its column chunks' metadata (sizes, counts, offsets), or in a page header
FIELDS = ("footer-field", "schema-field", "chunk-field", "header-field")
KINDS = tuple(f"{p}-{o}" for p in PLACES for o in BYTE_OPS) + FIELDS
#: FileMetaData's fields each kind picks from (its schema: 2, its row groups: 4)
_PICK = {"footer-field": None, "schema-field": 2, "chunk-field": 4}


def mutate(data: bytes, kind: str, r: random.Random) -> bytes:
    """`data` with one mutation of `kind`, its positions and values from `r`."""
    heads = _header_spans(data)
    fa, fb = footer_span(data)
    if kind in _PICK:
        meta, _ = decode(data, fa)
        top = _PICK[kind]
        scalars = [x for x in _ints(meta) if top is None or meta[x[0][0]][0] == top]
        for _ in range(r.choice([1, 1, 1, 2, 3])):
            path, t, old = r.choice(scalars)
            _set_at(meta, path, _new_value(t, old, r))
        new = encode(meta)
        return data[:fa] + new + len(new).to_bytes(4, "little") + b"PAR1"
    if kind == "header-field":
        a, b, _ = r.choice(heads)
        h, _ = decode(data, a)
        path, t, old = r.choice(_ints(h))
        _set_at(h, path, _new_value(t, old, r))
        new = encode(h)
        if len(new) > b - a:
            new = encode([f for f in h if f[0] != 4])
        if len(new) < b - a:  # padded to its old length so that the offsets after it hold (parquet_edit)
            top = max(8, *(f[0] for f in h))
            new = encode(h + [[top + 1 + k, 1, True] for k in range(b - a - len(new))])
        return data[:a] + new + data[b:]
    place, op = kind.split("-")
    if place == "header":
        a, b, _ = r.choice(heads)
    elif place == "body":
        spans = [(b, c) for _, b, c in heads if c > b]
        a, b = r.choice(spans)
    else:
        a, b = fa, fb
    at = r.randrange(a, b)
    buf = bytearray(data)
    if op == "flip":
        for _ in range(r.choice([1, 1, 2, 4])):
            buf[r.randrange(a, b)] ^= 1 << r.randrange(8) if r.random() < 0.7 else r.randrange(1, 256)
    elif op == "set":
        buf[at] = r.choice([0, 0xFF, 0x7F, 0x80, 0x15, 0x19, 0x1C, 0x0C, r.randrange(256)])
    elif op == "insert":
        buf[at:at] = bytes(r.randrange(256) for _ in range(r.choice([1, 1, 2, 5, 16])))
    elif op == "delete":
        del buf[at:at + r.choice([1, 1, 2, 5, 16])]
    else:  # truncate: the file cut at `at`, with a trailer again (or not)
        del buf[at:]
        if r.random() < 0.7:
            buf += (fb - fa).to_bytes(4, "little") + b"PAR1"
        return bytes(buf)
    if place == "footer" and op in ("insert", "delete") and r.random() < 0.7:  # the trailer's length fixed up
        n = fb - fa + len(buf) - len(data)
        buf[-8:-4] = n.to_bytes(4, "little")
    return bytes(buf)


# --- the property ----------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _expected(path: Path) -> dict[str, tuple[Any, ...]] | None:
    """What pyarrow reads from `path`, by id (None: pyarrow cannot read it). pyarrow's ParquetFile,
    as docket reads it: `pq.read_table` (datasets) also decodes each chunk's min/max statistics,
    which neither reads for the rows, and refuses a file whose statistics are damaged."""
    try:
        t = pq.ParquetFile(path).read()
        rows = t.to_pylist()
    except Exception:  # noqa: BLE001 - any pyarrow failure: nothing to compare with
        return None
    def text(v: Any) -> Any:  # a BYTE_ARRAY column without its UTF8 annotation reads as bytes; docket's as text
        try:
            return v.decode() if isinstance(v, bytes) else v
        except UnicodeDecodeError:
            return v

    return {text(r["id"]): (text(r["doc"]), text(r["text"])) for r in rows}


def outcome(path: Path, db: Path) -> str:
    """"" where importing `path` keeps the promise, else what happened instead."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, MAX_SECONDS)
    started = time.monotonic()
    problem = ""
    try:
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            import_file(s, path, embedder=("hash-bow", DIM), count=lambda t: len(t.split()))
    except InputError as e:
        msg = str(e)
        if "\n" in msg:
            problem = f"refused in more than one line: {msg[:300]!r}"
        elif str(path) not in msg:
            problem = f"refused without naming the file: {msg[:300]!r}"
        else:
            with open_store(str(db)) as s:  # type: ignore[attr-defined]
                if s.count() or "embedder" in s.meta():
                    problem = f"refused ({msg[:200]!r}), but something was stored"
    except _Timeout:
        problem = f"ran past {MAX_SECONDS} s"
    except Exception as e:  # noqa: BLE001 - any other exception is the escape
        problem = f"escaped: {type(e).__name__}: {str(e)[:300]!r}"
    else:
        want = _expected(path)
        with open_store(str(db)) as s:  # type: ignore[attr-defined]
            n = s.count()
            got = {c.id: (c.doc, c.text) for c in s.get_many(list(want or ())).values()}
        if want is None:
            problem = f"accepted ({n} rows), but pyarrow cannot read the file"
        elif got != want or n != len(want):
            diff = sorted(map(repr, set(want.items()) ^ set(got.items())))[:2]
            problem = f"stored {n} rows, pyarrow reads {len(want)}; first differences {diff!r}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    took = time.monotonic() - started
    if not problem and took > MAX_SECONDS:
        problem = f"took {took:.1f} s"
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if not problem and after > MAX_RSS and after > before:
        problem = f"peak RSS {after / 2**20:.0f} MiB"
    return problem


def _one(tmp: Path, k: int, kind: str, r: random.Random, dim: int = DIM) -> tuple[str, bytes]:
    name, data = seeds(dim)[k % len(SEEDS)]
    return name, mutate(data, kind, r)


def check(tmp: Path, k: int, kind: str, rseed: int) -> str:
    name, data = _one(tmp, k, kind, random.Random(rseed))
    path = tmp / "in.parquet"
    path.write_bytes(data)
    for f in tmp.glob("s.db*"):
        f.unlink()
    why = outcome(path, tmp / "s.db")
    return f"{kind} of {name} (seed {rseed}): {why}" if why else ""


def test_the_seeds_import_as_pyarrow_reads_them(tmp_path: Path) -> None:
    """The harness itself: every good file imports and stores what pyarrow reads."""
    for k, (name, data) in enumerate(seeds()):
        path = tmp_path / f"{k}.parquet"
        path.write_bytes(data)
        assert outcome(path, tmp_path / f"{k}.db") == "", name
        assert len(_header_spans(data)) >= 8, name


SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@seed(20261204)
@settings(max_examples=150, derandomize=True, **SETTINGS)  # type: ignore[arg-type]
@given(k=st.integers(0, len(SEEDS) - 1), kind=st.sampled_from(KINDS), rseed=st.integers(0, 2**32))
def test_a_mutated_file_is_imported_or_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory, k: int,
                                                           kind: str, rseed: int) -> None:
    tmp = tmp_path_factory.mktemp("fuzz", numbered=True)
    assert check(tmp, k, kind, rseed) == ""


@pytest.mark.slow
@settings(max_examples=3000, **SETTINGS)  # type: ignore[arg-type]
@given(k=st.integers(0, len(SEEDS) - 1), kind=st.sampled_from(KINDS), rseed=st.integers(0, 2**32))
def test_a_mutated_file_is_imported_or_refused_in_one_line_many(tmp_path_factory: pytest.TempPathFactory, k: int,
                                                                kind: str, rseed: int) -> None:
    tmp = tmp_path_factory.mktemp("fuzz", numbered=True)
    assert check(tmp, k, kind, rseed) == ""


def _cli(tmp: Path, data: bytes) -> str:
    from test_import_bounds import _run_import

    path = tmp / "in.parquet"
    path.write_bytes(data)
    rc, err, _ = _run_import(path, tmp / "s.db")
    if rc is None:
        return err
    if rc == 0:
        return ""
    lines = err.strip().splitlines()
    if rc != 2 or len(lines) != 1 or "Traceback" in err:
        return f"exit {rc}: {err.strip()[-300:]!r}"
    if str(path) not in lines[0]:
        return f"refused without naming the file: {lines[0]!r}"
    if list(tmp.glob("s.db*")):
        return "refused, but a store was left behind"
    return ""


def _cli_cases(n: int, start: int) -> list[tuple[int, str, int]]:
    return [(k % len(SEEDS), KINDS[(k * 7) % len(KINDS)], start + k) for k in range(n)]


@pytest.mark.parametrize(("k", "kind", "rseed"), _cli_cases(3, 0))
def test_a_mutated_file_through_the_cli_exits_0_or_2_in_one_line(tmp_path: Path, k: int, kind: str,
                                                                 rseed: int) -> None:
    name, data = _one(tmp_path, k, kind, random.Random(rseed), HASH_DIM)
    assert _cli(tmp_path, data) == "", f"{kind} of {name} (seed {rseed})"


@pytest.mark.slow
def test_mutated_files_through_the_cli_many(tmp_path: Path) -> None:
    failed = []
    for k, kind, rseed in _cli_cases(60, 1000):
        tmp = tmp_path / f"{rseed}"
        tmp.mkdir()
        name, data = _one(tmp, k, kind, random.Random(rseed), HASH_DIM)
        why = _cli(tmp, data)
        if why:
            failed.append(f"{kind} of {name} (seed {rseed}): {why}")
    assert not failed, failed


def survey(n: int, out: Callable[[str], None] = print, start: int = 0) -> dict[str, tuple[int, int]]:
    """`n` examples of each kind of mutation (no hypothesis: a plain loop), the failures printed;
    (tried, failed) by kind. `python tests/test_import_fuzz.py N` runs it."""
    import tempfile

    counts: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for i in range(start, start + n):
            for kind in KINDS:
                why = check(tmp, i, kind, i * len(KINDS) + KINDS.index(kind))
                tried, failed = counts.get(kind, (0, 0))
                counts[kind] = (tried + 1, failed + bool(why))
                if why:
                    out(why)
    return counts


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    got = survey(int(sys.argv[1]), start=int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    for kind, (tried, failed) in got.items():
        print(f"{kind:20} {tried:6} {failed:6}")
