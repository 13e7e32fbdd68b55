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
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from docket.errors import InputError
from docket.model import parse_chunk

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
    try:
        if kind == "yaml":
            data = yaml.safe_load(text) if text.strip() else {}
        elif kind == "toml":
            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"is not valid YAML{line}", where=where) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"is not valid TOML ({e})", where=where) from None
    except json.JSONDecodeError as e:
        raise InputError(f"is not valid JSON ({e.msg} at line {e.lineno})", where=where) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"must be a mapping of keys to values, got {type(data).__name__}", where=where)
    return data


def read_sidecar(path: Path) -> tuple[dict[str, Any], Path | None]:
    """The first sidecar found next to `path` (json, yaml, yml, toml), parsed."""
    for suffix in SIDECAR_SUFFIXES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            try:
                text = side.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise InputError(f"cannot be read ({e})", where=str(side)) from None
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
    metadata = dict(extra) if isinstance(extra, dict) else {}
    metadata.update(merged)
    return DocMeta(fields=clean, metadata=_jsonable(metadata, where), supersedes=supersedes)


def _jsonable(metadata: dict[str, Any], where: str) -> dict[str, Any]:
    """Metadata is stored as JSON: dates become ISO strings; other odd values are rejected."""
    try:
        return json.loads(json.dumps(metadata, default=_iso))
    except TypeError as e:
        raise InputError(f"holds a value that cannot be stored as JSON ({e})", where=where, field="metadata") from None


def _iso(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
