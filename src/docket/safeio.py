"""Reading input docket did not write: one place for everything a file or a string may do wrong.

Every JSON, JSONL, TOML and YAML that docket reads from a user goes through here, so each class
of bad input is handled once, with one line that names the file (and line, and key):

- the path: missing, a directory where a file is expected, a symlink loop or a dangling link,
  no permission;
- the bytes: not UTF-8 (the message gives the line and column of the first bad byte);
- the syntax: invalid JSON/TOML/YAML; nesting deeper than `MAX_DEPTH` (the parsers would hit
  Python's recursion limit, and every consumer after them too);
- ambiguity: a key given twice in one JSON object or YAML mapping (readers differ on which copy
  counts: Python's json and PyYAML keep the last, others the first or refuse; `"acl": ["hr"], ...,
  `"acl": null` must not read as public here and restricted in the tool that reviewed it), keys that
  only a JSON name or a replaced surrogate makes equal, a byte order mark inside a JSON Lines file;
  TOML refuses a key given twice itself;
- the numbers: NaN, infinities, floats that overflow (`1e999`), integers beyond 64 bits (SQLite
  and PostgreSQL cannot store them) or too long to parse;
- the text: lone surrogates (a `\\ud800` escape decodes to a code point that no encoder, tokenizer
  or database accepts) and NUL (PostgreSQL refuses it) become U+FFFD, the replacement character.
- the kind of file: a pipe, socket, device or folder where a file is expected is refused before
  it is opened for reading (reading a FIFO waits for a writer forever), and `read_bytes` never
  reads past a size limit it is given, whatever the file's size said when it was checked.

Output paths are checked before any work starts (`output_file_problem`, `output_dir_problem`)
and written atomically (`atomic_write`), so a failed run never leaves half a file where a good
one was.
"""

from __future__ import annotations

import contextlib
import errno
import json
import json.decoder
import json.scanner
import math
import os
import re
import stat
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import IO, Any

from docket.errors import InputError

#: deepest nesting of arrays/objects (tables) docket reads; its own records need 4-5 levels
MAX_DEPTH = 64
#: integers must fit the stores' 64-bit columns
MAX_INT = 2**63 - 1
#: the one line for a path that is a pipe, socket or device (reading one can block forever)
NOT_REGULAR = "is not a regular file (a pipe, socket or device); give a file"

#: what no encoder, tokenizer or store takes: lone surrogates, and NUL (PostgreSQL text and jsonb refuse it)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: terminal escape sequences (colour codes and the like): control sequences, not words
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
#: the numbers a JSON text may hold that check_tree refuses: an exponent of three or more digits
#: (1e999 overflows to inf) or a run of 19 digits (an integer past 64 bits; a float needs 309 to
#: overflow). A JSON exponent always follows a digit, so both start at an ASCII digit, which lets
#: the regex engine skip every other character at C speed (an alternation starting at `[eE]` stopped
#: at every letter e of the text: ~30 us a typical chunk line, most of reading it)
_BIG_NUMBER = re.compile(r"[0-9](?:[eE][+-]?[0-9]{3}|[0-9]{18})")
_BAD_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F]|0000)")


def _suspect(text: str) -> bool:
    """Cheap pre-check: only a text that might hold a bad number (NaN and the infinities are
    Python's extensions), a surrogate or NUL escape is walked by check_tree. A superset: the
    word NaN in prose or a long phone number only costs the walk."""
    return ("NaN" in text or "Infinity" in text or ("\\u" in text and _BAD_ESCAPE.search(text) is not None)
            or _BIG_NUMBER.search(text) is not None)


# --- paths ----------------------------------------------------------------------------------------


def _loops(p: Path) -> bool:
    try:
        os.stat(p)
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


def input_problem(path: str | Path, kind: str = "file") -> str | None:
    """Why `path` cannot be read as `kind` ("file", "dir" or "any"), or None when it can."""
    p = Path(path)
    if _loops(p):
        return "is a symlink loop; point it at a real file"
    if p.is_symlink() and not p.exists():
        return f"is a symlink to {os.readlink(p)!r}, which does not exist"
    if not p.exists():
        return "file not found" if kind == "file" else "not found"
    if kind == "file" and p.is_dir():
        return "is a directory; give a file"
    if not p.is_dir() and not p.is_file():
        return NOT_REGULAR
    if kind == "dir" and not p.is_dir():
        return "is a file; give a folder"
    if not os.access(p, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def check_input(path: str | Path, kind: str = "file", field: str | None = None) -> Path:
    problem = input_problem(path, kind)
    if problem:
        raise InputError(problem, where=str(path), field=field)
    return Path(path)


def _nearest_existing(p: Path) -> Path:
    cur = p.parent if str(p.parent) else Path(".")
    while not cur.exists() and cur != cur.parent:
        cur = cur.parent
    return cur


def output_file_problem(path: str | Path) -> str | None:
    """Why a file cannot be written at `path` (checked before the work, not after), or None."""
    p = Path(path)
    if _loops(p):
        return "is a symlink loop; give a real file name"
    if p.is_dir():
        return "is a directory; give a file name inside it"
    if p.exists() and not p.is_file():
        return "exists and is not a regular file"
    if p.exists() and not os.access(p, os.W_OK):
        return "is read-only"
    parent = p.parent if str(p.parent) else Path(".")
    if _loops(parent):
        return f"folder {str(parent)!r} is a symlink loop"
    if not parent.exists():
        return f"folder {str(parent)!r} does not exist; create it first"
    if not parent.is_dir():
        return f"{str(parent)!r} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write into folder {str(parent)!r} (permission denied)"
    return None


def output_dir_problem(path: str | Path) -> str | None:
    """Why a folder cannot be created or written at `path`, or None."""
    p = Path(path)
    if _loops(p):
        return "is a symlink loop; give a real folder"
    if p.exists():
        if not p.is_dir():
            return "is a file; give a folder (it is created if missing)"
        if not os.access(p, os.W_OK | os.X_OK):
            return "cannot be written (permission denied)"
        return None
    base = _nearest_existing(p)
    if not base.is_dir():
        return f"{str(base)!r} is a file, so the folder cannot be created under it"
    if not os.access(base, os.W_OK | os.X_OK):
        return f"cannot create it under {str(base)!r} (permission denied)"
    return None


def check_output_file(path: str | Path, field: str | None = None) -> Path:
    problem = output_file_problem(path)
    if problem:
        raise InputError(problem, where=str(path), field=field)
    return Path(path)


def check_output_dir(path: str | Path, field: str | None = None) -> Path:
    problem = output_dir_problem(path)
    if problem:
        raise InputError(problem, where=str(path), field=field)
    return Path(path)


@contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[str]]:
    """Write text to a temporary file next to `path`, renamed over `path` only on success."""
    p = Path(path)
    check_output_file(p)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        if p.exists():
            os.chmod(tmp, p.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def replacing(path: Path, mode: int | None = None) -> Iterator[str]:
    """A temporary file's name beside `path`; renamed over `path` (with permission bits `mode`, when
    given) once the block succeeds, removed when it fails, so a reader sees the old file or the new
    one, never half of one. For binary files whose writer wants a name (faiss, numpy)."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)


# --- bytes and text ---------------------------------------------------------------------------------


def read_bytes(path: str | Path, max_bytes: int | None = None, limit: str = "the size limit") -> bytes:
    """The file's bytes; any path problem is an InputError naming the file. A file that is not a
    regular one is refused after opening without blocking (the check before opening could race),
    and with `max_bytes` no more than that is ever read (a file may grow after its size is read):
    over it is an InputError naming `limit` and the size."""
    p = check_input(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise InputError(f"cannot be read ({e.strerror or e})", where=str(p)) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(NOT_REGULAR, where=str(p))
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"is {st.st_size:,} bytes, more than {limit} {max_bytes:,}", where=str(p))
        try:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        except OSError as e:
            raise InputError(f"cannot be read ({e.strerror or e})", where=str(p)) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise InputError(f"is more than {limit} {max_bytes:,} bytes (it grew while being read)", where=str(p))
    return data


def decode(data: bytes, where: str, first_line: int = 1, counts: Counter[str] | None = None) -> str:
    """Strict UTF-8 (a leading BOM is dropped); a bad byte is reported with its line and column
    (`first_line`: the line number `data` starts at, when it is one line of a longer file).

    The one exception is a lone surrogate written as UTF-8 bytes (WTF-8 / CESU-8, what a
    JavaScript or Windows string gives): like a `\\ud800` escape in JSON or a str handed over in
    Python, it becomes U+FFFD, and each one is counted in `counts["lone_surrogates"]`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        try:
            text = data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            line = data.count(b"\n", 0, e.start) + first_line
            col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise InputError(f"is not UTF-8 text (byte 0x{data[e.start]:02x} at line {line}, column {col}); "
                             "save it as UTF-8", where=where) from None
        # a pair written as two 3-byte halves (CESU-8) is the character it encodes; the rest are lone
        text = scrub_counted(text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"), counts)
    return text.removeprefix("\ufeff") if first_line == 1 else text


def read_text(path: str | Path, counts: Counter[str] | None = None) -> str:
    return decode(read_bytes(path), str(path), counts=counts)


def scrub_counted(text: str, counts: Counter[str] | None = None) -> str:
    """`scrub`, counting the lone surrogates replaced (`lone_surrogates`; NUL as `nul_chars`)."""
    if text.isascii() and "\x00" not in text:
        return text
    if counts is not None:
        nul = text.count("\x00")
        surrogates = len(_SURROGATE.findall(text))
        if surrogates:
            counts["lone_surrogates"] += surrogates
        if nul:
            counts["nul_chars"] += nul
    return scrub(text)


def scrub(text: str) -> str:
    """`text` with every lone surrogate and NUL replaced by U+FFFD, the replacement character.

    No encoder, tokenizer or database accepts a lone surrogate (they arise from `\\udXXX` escapes
    and from command-line bytes that are not UTF-8); PostgreSQL refuses NUL in text and jsonb."""
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def _unstorable(text: str) -> bool:
    return "\x00" in text or (not text.isascii() and _UNSTORABLE.search(text) is not None)


def has_words(text: str) -> bool:
    """True when `text` holds at least one letter, digit or symbol (not only spaces, controls or
    invisible formatting characters)."""
    return any(unicodedata.category(ch)[0] in "LNS" and ch != "\ufffd" for ch in text)


def clean_question(question: object, field: str = "question") -> str:
    """The question with lone surrogates replaced; refused when it is not a string or holds no
    word (empty, or only spaces, control or invisible characters): nothing to retrieve or answer."""
    if not isinstance(question, str):
        raise InputError(f"must be a string, got {type(question).__name__}", field=field)
    if not question.strip():
        raise InputError("is empty; ask a question", field=field)
    q = scrub(question)
    if not has_words(_UNSTORABLE.sub("", _ANSI.sub("", question))):
        raise InputError("holds no words (only spaces, punctuation, control or invisible characters); ask a question",
                         field=field)
    return q


def shown(value: object, limit: int = 60) -> str:
    """repr() of a value for an error message, cut to `limit` characters."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


# --- parsed data --------------------------------------------------------------------------------------


def _path_str(chain: tuple[Any, ...] | None, limit: int = 6) -> str:
    keys: list[Any] = []
    while chain is not None:
        chain, key = chain
        keys.append(key)
    keys.reverse()
    out = ""
    for k in keys[:limit]:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out + ("..." if len(keys) > limit else "")


def _leaf_problem(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        digits = str(value)
        return f"integer {digits[:24]}{'...' if len(digits) > 24 else ''} is too large (beyond 64 bits)"
    return None


def check_tree(obj: Any, where: str, *, max_depth: int = MAX_DEPTH, max_nodes: int | None = None,
               field: str | None = None) -> Any:
    """Walk parsed data without recursion: refuse nesting deeper than `max_depth`, more than
    `max_nodes` values (YAML aliases can expand a small file into billions), non-finite floats
    and integers beyond 64 bits, naming the key; return it with lone surrogates scrubbed (in
    place for lists and dicts; tuples become lists)."""

    def fail(chain: tuple[Any, ...] | None, msg: str) -> InputError:
        name = ".".join(p for p in (field, _path_str(chain)) if p) or None
        return InputError(msg, where=where, field=name)

    root: list[Any] = [obj]
    # (container, key, path chain as nested (parent, key) pairs, depth)
    stack: list[tuple[Any, Any, tuple[Any, ...] | None, int]] = [(root, 0, None, 0)]
    seen = 0
    while stack:
        parent, key, chain, depth = stack.pop()
        seen += 1
        if max_nodes is not None and seen > max_nodes:
            raise InputError(f"holds more than {max_nodes:,} values (YAML aliases that expand too far?)", where=where,
                             field=field)
        value = parent[key]
        if isinstance(value, str):
            if _unstorable(value):
                parent[key] = scrub(value)
        elif isinstance(value, (dict, list, tuple)):
            if depth >= max_depth:
                raise fail(chain, f"is nested more than {max_depth} levels deep; flatten it")
            if isinstance(value, tuple):
                value = parent[key] = list(value)
            if isinstance(value, dict):
                if any(isinstance(k, str) and _unstorable(k) for k in value):
                    scrubbed = {scrub(k) if isinstance(k, str) else k: v for k, v in value.items()}
                    if len(scrubbed) != len(value):  # "a\ud800" and "a\udc00": one key once replaced
                        names = Counter(scrub(k) if isinstance(k, str) else k for k in value)
                        one = next(k for k, n in names.items() if n > 1)
                        raise fail((chain, one), "gives two keys that differ only by lone surrogates (both become U+FFFD); "
                                          "keep one")
                    value = parent[key] = scrubbed
                stack.extend((value, k, (chain, k), depth + 1) for k in value)
            else:
                stack.extend((value, i, (chain, i), depth + 1) for i in range(len(value)))
        else:
            problem = _leaf_problem(value)
            if problem:
                raise fail(chain, problem)
    return root[0]


class DuplicateKey(ValueError):
    """A JSON object that gives one key twice: `key`, the key path of the second copy (`path`,
    e.g. `metadata.team`, `candidates[3].acl`) and the line its value starts on (`line`, 1-based;
    0 when the text is nested too deeply to find it: the path is then the key alone)."""

    def __init__(self, key: str, path: str, line: int) -> None:
        super().__init__(f"key {key!r} is given twice in one object")
        self.key, self.path, self.line = key, path, line

    @property
    def detail(self) -> str:
        return f"key {shown(self.key)} is given twice in one object (readers differ on which copy counts); keep one"


class _Twice(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's dict, refusing a key given twice. The C scanner hands every object's pairs
    here (a list of tuples and a Python call an object, about 1 us a typical JSONL line more than
    json.loads, benchmarks/json_read_speed.py); the duplicate itself is found by the length alone."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Twice(next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1))
    return out


#: json.loads with a keyword argument builds a decoder per call: one, made once (thread-safe: no state)
_DECODER = json.JSONDecoder(object_pairs_hook=_object)


class _Pairs(list[tuple[str, Any]]):
    """An object's pairs as written, with the offset each value starts at (only when locating)."""

    starts: list[int]


def _locate(text: str, key: str) -> DuplicateKey:
    """Where the key given twice is: the text read again by the pure-Python scanner, which keeps
    every object's pairs and each value's offset, walked in document order. Only a refused text
    pays for this."""
    dec: Any = json.JSONDecoder(object_pairs_hook=_Pairs)

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *rest: Any) -> tuple[Any, int]:
        starts: list[int] = []

        def scan(s: str, idx: int) -> Any:
            starts.append(idx)
            return scan_once(s, idx)

        obj, end = json.decoder.JSONObject(s_and_end, strict, scan, *rest)  # type: ignore[attr-defined]
        obj.starts = starts
        return obj, end

    dec.parse_object = parse_object
    dec.scan_once = json.scanner.py_make_scanner(dec)  # type: ignore[attr-defined]
    try:
        tree = dec.decode(text)
    except (RecursionError, ValueError):  # deeper than Python's scanner reaches: the key alone
        return DuplicateKey(key, key, 0)
    stack: list[tuple[Any, tuple[Any, ...] | None]] = [(tree, None)]
    while stack:
        value, chain = stack.pop()
        if isinstance(value, _Pairs):
            seen: set[str] = set()
            for (k, _), at in zip(value, value.starts, strict=False):
                if k in seen:
                    return DuplicateKey(k, _path_str((chain, k), limit=12), text.count("\n", 0, at) + 1)
                seen.add(k)
            stack.extend(((v, (chain, k)) for k, v in reversed(value)))
        elif isinstance(value, list):
            stack.extend(((v, (chain, i)) for i, v in reversed(list(enumerate(value)))))
    return DuplicateKey(key, key, 0)


def decode_json(text: str) -> Any:
    """json.loads without its silent choice: a key given twice in any object raises DuplicateKey
    (json.loads keeps the last copy, other readers the first). Raises what json.loads raises
    otherwise (JSONDecodeError, RecursionError, ValueError for an over-long integer); no other
    check of this module. For a caller with its own error path (the importer, the service, an
    LLM's reply); input read as a document goes through `loads_json`."""
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return _DECODER.decode(text)
    except _Twice as e:
        raise _locate(text, e.key) from None


def loads_json(text: str, where: str) -> Any:
    """One JSON value with every check of this module; errors name `where`."""
    if text.startswith("\ufeff"):  # read_text and decode drop the one a file may start with
        raise InputError("starts with a byte order mark (U+FEFF), which JSON does not allow here (two files "
                         "joined?); remove it", where=where)
    try:
        obj = decode_json(text)
    except json.JSONDecodeError as e:
        at = f"line {e.lineno}, column {e.colno}" if "\n" in text.rstrip("\n") else f"column {e.colno}"
        raise InputError(f"is not valid JSON ({e.msg} at {at})", where=where) from None
    except DuplicateKey as e:
        line = f":{e.line}" if e.line and "\n" in text.rstrip("\n") else ""
        raise InputError(e.detail, where=f"{where}{line}", field=e.path) from None
    except RecursionError:
        raise InputError(f"is nested too deeply to read (more than {MAX_DEPTH} levels allowed); flatten it",
                         where=where) from None
    except ValueError as e:  # e.g. an integer literal longer than Python's 4300-digit limit
        raise InputError(f"holds a number that cannot be read ({str(e).split(';')[0]})", where=where) from None
    if (text.count("[") + text.count("{") > MAX_DEPTH) or _suspect(text):
        obj = check_tree(obj, where)
    return obj


def iter_json_lines(text: str, where: str) -> Iterator[tuple[int, Any | InputError]]:
    """(line number, value or the InputError for that line) for every non-blank line, so a
    caller can choose to stop at a bad line or report it and go on."""
    # split on "\n" only: str.splitlines() also breaks at U+2028, U+0085 and others, which JSON
    # allows unescaped inside strings
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield n, loads_json(line, f"{where}:{n}")
        except InputError as e:
            yield n, e


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSONL file, read as a stream (a large
    export is never held twice in memory); a bad line stops it, named with its line."""
    p = check_input(path)
    try:
        fh = p.open("rb")
    except OSError as e:
        raise InputError(f"cannot be read ({e.strerror or e})", where=str(p)) from None
    with fh:
        for n, raw in enumerate(fh, 1):  # binary lines end at b"\n" only, as JSONL wants
            line = decode(raw, str(p), first_line=n)
            if line.strip():
                yield n, loads_json(line, f"{p}:{n}")


def load_json(path: str | Path) -> Any:
    return loads_json(read_text(path), str(path))


def loads_toml(text: str, where: str) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(text if text.endswith("\n") else text + "\n")  # a position by line, not "end of document"
    except tomllib.TOMLDecodeError as e:
        if str(e).startswith(("Cannot overwrite a value", "Cannot declare")):  # tomllib refuses a key given twice
            raise InputError(f"is not valid TOML: a key or table is given twice ({e}); keep one", where=where) from None
        raise InputError(f"is not valid TOML ({e})", where=where) from None
    except RecursionError:
        raise InputError(f"is nested too deeply to read (more than {MAX_DEPTH} levels allowed)", where=where) from None
    return check_tree(data, where)  # type: ignore[no-any-return]


def load_toml(path: str | Path) -> dict[str, Any]:
    return loads_toml(read_text(path), str(path))


def _json_name(key: Any) -> Any:
    """The name a YAML key gets once the mapping is stored as JSON (`1`, `true` and `null` become
    the strings "1", "true", "null"), so a key and its spelling as a string count as one key."""
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return key


class _YamlTwice(Exception):
    def __init__(self, key: Any, line: int, first: int) -> None:
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


@cache
def _yaml_loader() -> Any:
    """yaml.SafeLoader refusing a mapping that gives one key twice (PyYAML keeps the last copy).

    A merge (`<<: *defaults`) is YAML 1.1, and YAML 1.2 readers treat `<<` as an ordinary key: the
    merged keys exist for some readers and not for others. A merge is read, but a key that arrives
    from two places (given explicitly and by a merge, or by two merges) is refused like any key
    given twice: which copy wins is a rule of the merge that readers of the file rarely know."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                # every key the mapping gives, in order, with the line that gives it (a merged key: its
                # `<<`); PyYAML's flatten_mapping silently drops some keys two merges give
                keys: list[tuple[Any, Any]] = []
                for key_node, value_node in node.value:
                    if key_node.tag != "tag:yaml.org,2002:merge":
                        keys.append((key_node, key_node.start_mark))
                        continue
                    merged = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                    for sub in merged:
                        if isinstance(sub, yaml.MappingNode):  # anything else: SafeLoader refuses the merge
                            self.flatten_mapping(sub)  # its own merges first, as PyYAML does
                            keys.extend((k, key_node.start_mark) for k, _ in sub.value)
                seen: dict[Any, Any] = {}
                for key_node, mark in keys:
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        name = _json_name(key)
                        first = seen.get(name)
                    except TypeError:  # an unhashable key: SafeLoader says so
                        continue
                    if first is not None:
                        raise _YamlTwice(key, mark.line + 1, first.line + 1)
                    seen[name] = mark
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def loads_yaml(text: str, where: str) -> Any:
    import yaml

    try:
        data = yaml.load(text, Loader=_yaml_loader()) if text.strip() else None  # noqa: S506 - a SafeLoader
    except _YamlTwice as e:
        raise InputError(f"key {shown(e.key)} is given twice in one mapping (also at line {e.first}, directly or "
                         "through a merge '<<'; readers differ on which copy counts); keep one",
                         where=f"{where}:{e.line}", field=str(_json_name(e.key))) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"is not valid YAML{line}", where=where) from None
    except RecursionError:
        raise InputError(f"is nested too deeply to read (more than {MAX_DEPTH} levels allowed)", where=where) from None
    return check_tree(data, where, max_nodes=200_000)


__all__ = [
    "MAX_DEPTH", "DuplicateKey", "atomic_write", "check_input", "check_output_dir", "check_output_file", "check_tree",
    "decode", "decode_json",
    "has_words", "input_problem", "iter_json_lines", "iter_jsonl", "load_json", "load_toml", "loads_json",
    "loads_toml", "loads_yaml", "output_dir_problem", "output_file_problem", "read_bytes", "read_text", "scrub",
    "scrub_counted", "NOT_REGULAR",
    "write_text_atomic",
]
