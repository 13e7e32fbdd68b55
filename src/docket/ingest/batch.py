"""Fields one index run sets on every document it writes, over what the documents say.

Front matter, sidecars and JSONL records are the documents' own claims about themselves: a file
from a stranger can say `doc: refund-policy`, `version: 4`, `trust: trusted` and become the rule
in force. An index run over files from people you would not let write those fields says what is
true of the whole batch instead (`docket index uploads/ --set trust=untrusted --set
source_type=forum --doc-prefix uploads/`): `--set` replaces a field on every chunk of every
version, whatever the file said, and `--doc-prefix` puts every document (and chunk id) of the run
in a namespace of its own, so no file can claim to be a version of a document outside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from docket.errors import InputError
from docket.model import Chunk, parse_chunk
from docket.store.protocol import DocumentVersion

#: the fields `--set` may fix (the document's identity, text and position stay the file's)
SETTABLE = ("status", "date", "effective_to", "source_type", "trust", "acl")
_PREFIX = re.compile(r"^[\w.:/@+-]+$")


@dataclass(frozen=True)
class BatchMeta:
    """What an index run imposes: `fields` (validated chunk values) and a `doc_prefix`."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    doc_prefix: str = ""

    def __bool__(self) -> bool:
        return bool(self.fields) or bool(self.doc_prefix)

    def apply(self, dv: DocumentVersion) -> DocumentVersion:
        """The version with the run's fields and prefix; its content hash follows, so a document
        indexed before without them is rewritten, not skipped as unchanged."""
        if not self:
            return dv
        p = self.doc_prefix
        chunks = [_with(c, {**self.fields, "doc": p + c.doc, "id": p + c.id}) for c in dv.chunks]
        f = self.fields
        # every other field (vectors, tokens, contexts, ...) carried over; the content hash recomputed
        return replace(dv, doc=p + dv.doc, status=f.get("status", dv.status), date=f.get("date", dv.date),
                       effective_to=f.get("effective_to", dv.effective_to), chunks=chunks, content_hash="")

    def applied(self, versions: Iterable[DocumentVersion]) -> Iterator[DocumentVersion]:
        for dv in versions:
            yield self.apply(dv)

    def describe(self) -> str:
        parts = [f"{k}={_shown(v)}" for k, v in sorted(self.fields.items())]
        if self.doc_prefix:
            parts.append(f"doc prefix {self.doc_prefix!r}")
        return ", ".join(parts)


def _with(c: Chunk, update: Mapping[str, Any]) -> Chunk:
    return Chunk.model_validate({**c.model_dump(), **update})


def _shown(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(v)
    return "none" if v is None else str(v)


def batch_meta(sets: Sequence[str] | Mapping[str, Any] = (), doc_prefix: str | None = None, *,
               field_name: str = "--set") -> BatchMeta:
    """A BatchMeta from `KEY=VALUE` strings (the CLI) or a mapping (Python, the service), each value
    checked as the chunk contract checks it; one clear error naming the key otherwise."""
    raw: dict[str, Any] = {}
    if isinstance(sets, Mapping):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in sets.items()]
    else:
        items = []
        for s in sets:
            key, eq, value = str(s).partition("=")
            if not eq or not key.strip():
                raise InputError(f"{s!r} is not KEY=VALUE (e.g. trust=untrusted)", field=field_name)
            if not value.strip():  # `--set trust=$TRUST` with the variable unset must not clear the field
                raise InputError(f"{s!r} gives {key.strip()} no value; give one, or {key.strip()}=none to clear it",
                                 field=field_name)
            items.append((key.strip(), _cli_value(key.strip(), value.strip())))
    for key, value in items:
        if key not in SETTABLE:
            raise InputError(f"cannot set {key!r}; settable fields: {', '.join(SETTABLE)}", field=field_name)
        if key in raw:
            raise InputError(f"{key!r} is set twice", field=field_name)
        raw[key] = value
    try:
        probe = parse_chunk({"id": "probe", "doc": "probe", "text": "probe", **raw}, where=field_name)
    except InputError as e:
        raise InputError(e.detail, field=f"{field_name} {e.field}" if e.field else field_name) from None
    fields = {k: getattr(probe, k) for k in raw}
    prefix = doc_prefix or ""
    if prefix and not _PREFIX.match(prefix):
        raise InputError(f"{prefix!r} may hold only letters, digits and . _ : / @ + - (no spaces)",
                         field="--doc-prefix" if field_name == "--set" else "doc_prefix")
    return BatchMeta(fields=fields, doc_prefix=prefix)


def _cli_value(key: str, value: str) -> Any:
    """A command-line value as the record would hold it: `acl` a comma list, `none` = no value."""
    if value.lower() in ("none", "null", ""):
        return None
    if key == "acl":
        return [v.strip() for v in value.split(",") if v.strip()]
    return value
