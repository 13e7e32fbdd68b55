"""Per-document metadata from front matter or a sidecar file.

A file's document-level fields (doc id, version, status, date, effective_to, title,
source_type, trust, acl, supersedes, and any other key, kept in `metadata`) come from:

1. front matter at the very top of the file: YAML between `---` lines, or TOML between `+++`;
2. a sidecar next to the file, named after it: `NAME.meta.json`, `NAME.meta.yaml`
   (or `.yml`) or `NAME.meta.toml` (e.g. `refund.md.meta.json`), which wins over front matter
   key by key, so metadata can be managed without touching the document.

Values are validated with the chunk contract itself, so a bad `date` or `version` is reported
exactly as it would be in a JSONL record, naming the file and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docket.errors import InputError
from docket.model import parse_chunk, twice_in_metadata_message
from docket.safeio import input_problem, loads_json, loads_toml, loads_yaml, read_text

SIDECAR_SUFFIXES = (".meta.json", ".meta.yaml", ".meta.yml", ".meta.toml")
#: document-level keys; anything else goes to each chunk's `metadata`
DOC_KEYS = ("doc", "version", "status", "date", "effective_to", "title", "source_type", "trust", "acl")


@dataclass(frozen=True)
class DocMeta:
    fields: dict[str, Any] = field(default_factory=dict)  # validated DOC_KEYS present in the source
    metadata: dict[str, Any] = field(default_factory=dict)  # every other key
    supersedes: bool = True


def is_sidecar(path: Path) -> bool:
    return any(path.name.endswith(s) for s in SIDECAR_SUFFIXES)


def split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """(front matter dict, body). No front matter gives ({}, text)."""
    stripped = text.lstrip("\ufeff")
    for fence, kind in (("---", "yaml"), ("+++", "toml")):
        first, _, rest = stripped.partition("\n")
        if first.strip() != fence:
            continue
        lines = rest.split("\n")
        for i, line in enumerate(lines):
            if line.strip() == fence:
                head, body = "\n".join(lines[:i]), "\n".join(lines[i + 1 :])
                return _parse(head, kind, f"{where} (front matter)"), body
        raise InputError(f"front matter opened with '{fence}' on line 1 is never closed", where=where)
    return {}, text


def _parse(text: str, kind: str, where: str) -> dict[str, Any]:
    """Front matter or a sidecar through docket.safeio (syntax, nesting, numbers, surrogates)."""
    if kind == "yaml":
        data = loads_yaml(text, where)
    elif kind == "toml":
        data = loads_toml(text, where)
    else:
        data = loads_json(text, where)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"must be a mapping of keys to values, got {type(data).__name__}", where=where)
    return data


def read_sidecar(path: Path) -> tuple[dict[str, Any], Path | None]:
    """The first sidecar found next to `path` (json, yaml, yml, toml), parsed."""
    for suffix in SIDECAR_SUFFIXES:
        side = path.with_name(path.name + suffix)
        if side.exists() or side.is_symlink():
            problem = input_problem(side, "file")
            if problem:
                raise InputError(problem, where=str(side))
            text = read_text(side)
            kind = {"json": "json", "yaml": "yaml", "yml": "yaml", "toml": "toml"}[suffix.rsplit(".", 1)[1]]
            return _parse(text, kind, str(side)), side
    return {}, None


def resolve_meta(front: dict[str, Any], sidecar: dict[str, Any], where: str) -> DocMeta:
    """Merge front matter and sidecar (sidecar wins) and validate with the chunk contract."""
    merged = {**front, **sidecar}
    if "id" in merged and "doc" not in merged:
        merged["doc"] = merged.pop("id")
    supersedes = merged.pop("supersedes", True)
    if not isinstance(supersedes, bool):
        raise InputError(f"must be true or false, got {supersedes!r}", where=where, field="supersedes")
    fields = {k: merged.pop(k) for k in DOC_KEYS if k in merged}
    if "doc" in fields:
        fields["doc"] = str(fields["doc"])
    probe = {"id": "probe", "doc": fields.get("doc", "probe"), "text": "probe", **fields}
    try:
        checked = parse_chunk(probe)
    except InputError as e:  # re-labelled: the file is at fault, not a chunk
        msg = str(e).split(": ", 1)[-1]
        raise InputError(msg, where=where, field=e.field) from None
    clean = {k: getattr(checked, k) for k in fields}
    extra = merged.pop("metadata", None)
    if extra is not None and not isinstance(extra, dict):  # never dropped in silence
        raise InputError(f"must be a mapping of keys to values, got {type(extra).__name__}", where=where,
                         field="metadata")
    metadata = dict(extra) if extra else {}
    for k, v in merged.items():
        if k in metadata and metadata[k] != v:  # top level and `metadata:` disagree: which counts is a guess
            raise InputError(twice_in_metadata_message(k), where=where, field=f"metadata.{k}")
    metadata.update(merged)
    return DocMeta(fields=clean, metadata=_jsonable(metadata, where), supersedes=supersedes)


def _jsonable(metadata: dict[str, Any], where: str) -> dict[str, Any]:
    """Metadata is stored as JSON: dates become ISO strings; other odd values are rejected."""
    try:
        return json.loads(json.dumps(metadata, default=_iso, allow_nan=False))  # type: ignore[no-any-return]
    except (TypeError, ValueError) as e:
        raise InputError(f"holds a value that cannot be stored as JSON ({e})", where=where, field="metadata") from None


def _iso(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
