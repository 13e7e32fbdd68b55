"""Documents and chunk records sent in a request (the service's `POST /v1/index`) as document
versions: the same readers as files, without touching the server's file system.

Records follow the JSONL contract and are numbered from 1 in problems (`records:3` is the third);
a document is `{"name", "text", "kind"?, "meta"?}`: `name` gives its id as a file path would
(`refunds/annual.md`), `kind` (markdown, html, text) defaults to the name's suffix, and `meta`
stands for the metadata sidecar (version, status, date, source_type, trust, acl, ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from docket.errors import InputError
from docket.ingest.pipeline import IndexOptions
from docket.ingest.readers import KINDS, Found, read_document, read_jsonl
from docket.ingest.report import IndexReport
from docket.store.protocol import DocumentVersion

DOCUMENT_KINDS = ("markdown", "html", "text")


def read_inline(records: Sequence[Mapping[str, Any]], documents: Sequence[Mapping[str, Any]], options: IndexOptions,
                report: IndexReport) -> list[DocumentVersion]:
    """Document versions from records and documents; a bad one is a problem in `report`."""
    from docket.ingest.readers import Problem

    out: list[DocumentVersion] = []
    problems: list[Problem] = []
    if records:
        text = "\n".join(json.dumps(dict(r), ensure_ascii=False) for r in records)
        out.extend(read_jsonl(text, "records", report.removed, problems))
    for i, d in enumerate(documents):
        where = f"documents[{i}]"
        try:
            out.append(_document(d, where, options, report))
            report.files += 1
        except InputError as e:
            problems.append(Problem(where, str(e).removeprefix(where + ": ").removeprefix(where + ", ") + "; skipped"))
    for p in problems:
        report.problem(p.where, p.message)
    return out


def _document(d: Mapping[str, Any], where: str, options: IndexOptions, report: IndexReport) -> DocumentVersion:
    name, text = d.get("name"), d.get("text")
    if not isinstance(name, str) or not name.strip():
        raise InputError("is required (the document's path-like id, e.g. refunds/annual.md)", where=where, field="name")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise InputError("must be a relative path without '..'", where=where, field="name")
    if not isinstance(text, str):
        raise InputError("is required (the document's text)", where=where, field="text")
    kind = d.get("kind") or KINDS.get(path.suffix.lower())
    if kind not in DOCUMENT_KINDS:
        raise InputError(f"must be one of {', '.join(DOCUMENT_KINDS)} (or give the name a .md/.html/.txt suffix), "
                         f"got {kind!r}", where=where, field="kind")
    meta = d.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise InputError("must be an object (the fields a metadata sidecar would hold)", where=where, field="meta")
    from pathlib import Path

    found = Found(path=Path(name), root=Path("."))
    return read_document(found, str(kind), text, options.chunk, options.counter, report.removed, sidecar=dict(meta))
