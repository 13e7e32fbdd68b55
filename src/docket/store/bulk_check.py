"""`docket import`'s checks of a batch of rows as columns: the same checks as docket.model.Chunk,
without building a Chunk per row.

A file's columns hold few distinct values outside the per-row strings (status, version, dates,
acl, trust: a few dozen in 100,000 rows), so each distinct value goes once through the real Chunk
model (a record holding just that field): the result is the model's by construction, and a rule
added to the model applies here too. The strings unique to each row (id, doc, text, title,
section) are checked as whole columns, with C-level passes. The answer is either the batch's
values, equal to what Chunk gives row by row, or None: the batch holds a row this path does not
accept (a bad value, an unusual type, a lone surrogate), and docket.store.importer checks it row
by row instead, which names the first bad row and field exactly as it always has.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

from pydantic import ValidationError

from docket.errors import InputError
from docket.model import CHUNK_FIELDS, MAX_SMALL_INT, Chunk, misnamed_field


class _Absent:
    """A field the row does not give (a JSONL key not there, a Parquet null): the model's default."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
#: checked per row here, as columns of strings
STRINGS = ("id", "doc", "text", "title", "section")
#: checked once per distinct value through the model
DISTINCT = ("version", "position", "status", "source_type", "trust")
#: every column this module knows by name (any other goes into metadata, as Chunk does)
KNOWN = frozenset(CHUNK_FIELDS) | {"tokens"}
#: the validators this module mirrors; tests/test_import.py fails when Chunk gains another, so
#: that a new cross-field rule is not skipped here unnoticed
MIRRORED = frozenset({"_unknown_into_metadata", "_non_empty_id", "_non_empty_text", "_strict_int", "_status_lower", "_status_text",
                      "_finite_vector", "_acl_list", "_date_order", "_date_not_number"})
_ANCHOR = {"id": "x", "doc": "x", "text": "x"}
_BAD = (ValidationError, InputError, ValueError, TypeError)


class Slow(Exception):
    """The batch needs the row-by-row check."""


def check_columns(cols: dict[str, list[Any]], n: int, extras: list[dict[str, Any]] | None) -> dict[str, list[Any]]:
    """The checked values of every Chunk field for `n` rows given as columns (ABSENT where a row
    gives nothing), plus `tokens` (None: count it); `extras` holds each row's fields outside the
    contract (with `metadata`, they become its metadata). Raises Slow for anything doubtful."""
    if extras is not None and any(misnamed_field(k, KNOWN) for k in set().union(*extras)):
        raise Slow  # a key spelling a field ("ACL", "Status", "Tokens"): the row-by-row check names its row
    out: dict[str, list[Any]] = {}
    for name in STRINGS:
        out[name] = _strings(cols.get(name), n, required=name in ("id", "doc", "text"))
    for name in DISTINCT:
        out[name] = _distinct(cols.get(name), n, lambda v, name=name: getattr(_one({name: v}), name))
    dates, ends = cols.get("date"), cols.get("effective_to")
    if dates is None and ends is None:
        out["date"] = out["effective_to"] = [None] * n
    else:
        pairs = list(zip(dates or [ABSENT] * n, ends or [ABSENT] * n, strict=True))
        both = _distinct(pairs, n, lambda p: _date_pair(*p))
        out["date"], out["effective_to"] = [p[0] for p in both], [p[1] for p in both]
    out["acl"] = _acl(cols.get("acl"), n)
    out["metadata"] = _metadata(cols.get("metadata"), extras, n)
    out["tokens"] = _tokens(cols.get("tokens"), n)
    return out


def _one(fields: dict[str, Any]) -> Chunk:
    if nul_in(fields) is not None:  # the model would make it U+FFFD: the row-by-row check refuses it
        raise Slow
    try:
        return Chunk(**_ANCHOR, **{k: v for k, v in fields.items() if v is not ABSENT})
    except _BAD:
        raise Slow from None


def _strings(col: list[Any] | None, n: int, required: bool) -> list[Any]:
    if col is None:
        if required:
            raise Slow
        return [""] * n
    if set(map(type, col)) - {str}:  # absent, null or another type: a title may be absent, then ""
        if required or set(map(type, col)) - {str, _Absent}:
            raise Slow
        col = ["" if v is ABSENT else v for v in col]
    if required and not all(map(str.strip, col)):
        raise Slow
    joined = "".join(col)
    if "\x00" in joined:
        raise Slow
    if not joined.isascii():
        try:
            joined.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the model replaces it
            raise Slow from None
    return col


def _distinct(col: Sequence[Any] | None, n: int, check: Any) -> list[Any]:
    """Each value's checked form, `check` called once per distinct (type, value)."""
    if col is None:
        return [check(ABSENT)] * n
    try:
        keys = list(zip(map(type, col), col))
        seen = dict.fromkeys(keys)
    except TypeError:  # an unhashable value (a list where a string belongs)
        raise Slow from None
    for k in seen:
        seen[k] = check(k[1])
    return list(map(seen.__getitem__, keys))


def _date_pair(date: Any, end: Any) -> tuple[Any, Any]:
    c = _one({"date": date, "effective_to": end})
    return c.date, c.effective_to


def _acl(col: list[Any] | None, n: int) -> list[Any]:
    if col is None:
        return [None] * n
    lists = [v for v in col if type(v) is list]
    if set(map(type, chain.from_iterable(lists))) - {str}:
        raise Slow
    keys: list[tuple[Any, Any]] = [(list, tuple(v)) if type(v) is list else (type(v), v) for v in col]
    try:
        seen = dict.fromkeys(keys)
    except TypeError:
        raise Slow from None
    for k in seen:
        v = k[1]
        seen[k] = _one({"acl": list(v) if k[0] is list else v}).acl
    return list(map(seen.__getitem__, keys))


_EMPTY: dict[str, Any] = {}


def _metadata(col: list[Any] | None, extras: list[dict[str, Any]] | None, n: int) -> list[dict[str, Any]]:
    if extras is None and (col is None or all(v is ABSENT for v in col)):
        return [_EMPTY] * n  # shared, read only: the backends write `metadata or None`
    out = []
    for i in range(n):
        fields = dict(extras[i]) if extras is not None else {}
        m = col[i] if col is not None else ABSENT
        out.append(_one({"metadata": m, **fields}).metadata if m is not ABSENT or fields else _EMPTY)
    return out


def _tokens(col: list[Any] | None, n: int) -> list[Any]:
    if col is None:
        return [None] * n
    if set(map(type, col)) - {int, _Absent, type(None)}:  # a float, a bool, a string: the row check names it
        raise Slow
    out = [None if v is ABSENT else v for v in col]  # None: count it
    given = [v for v in out if v is not None]
    if given and (min(given) < 0 or max(given) > MAX_SMALL_INT):
        raise Slow
    return out


def nul_in(value: Any, name: str = "") -> str | None:
    """The dotted path (under `name`) of the first NUL character in `value`, a key or a string
    anywhere inside it (dicts, lists), or None. No store keeps a NUL (PostgreSQL refuses it in
    text and jsonb); the model would replace it with U+FFFD, altering an ACL entry or a status
    without a word, so `docket import` refuses the row instead."""
    stack: list[tuple[Any, str]] = [(value, name)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, str):
            if "\x00" in v:
                return at
        elif isinstance(v, dict):
            for k, x in v.items():
                here = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and "\x00" in k:
                    return here
                stack.append((x, here))
        elif isinstance(v, (list, tuple)):
            stack.extend((x, at) for x in v)
    return None
