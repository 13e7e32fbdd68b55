"""What an index run did: documents added, updated, skipped, superseded, rejected, and every
piece of hidden text or invisible character removed on the way (each one is a finding)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from docket.store.access import AclResolution


@dataclass
class IndexReport:
    embedder: str = ""
    files: int = 0
    added: list[str] = field(default_factory=list)  # "doc v2"
    updated: list[str] = field(default_factory=list)  # same version, new content
    unchanged: int = 0
    superseded: list[str] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0
    removed: Counter[str] = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (where, message)
    seconds: float = 0.0
    acl: AclResolution = field(default_factory=AclResolution)  # how acl entries without user:/group: were read
    imposed: str = ""  # what the run set over the documents' own fields (--set, --doc-prefix), "" = nothing
    #: index --contextualize: chunks, generated, from_cache, seconds, prefix_cache (None = off)
    contexts: dict[str, Any] | None = None
    #: chunks written per source_type (as written; chunks without one are not counted): the CLI
    #: warns about a type the authority table does not name (a typo ranks at the default)
    source_types: Counter[str] = field(default_factory=Counter)

    def problem(self, where: str, message: str) -> None:
        self.problems.append((where, message))

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder,
            "files": self.files,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "superseded": self.superseded,
            "chunks_written": self.chunks_written,
            "chunks_embedded": self.chunks_embedded,
            "imposed": self.imposed,
            "removed": dict(sorted(self.removed.items())),
            "source_types": dict(sorted(self.source_types.items())),
            "problems": [{"where": w, "message": m} for w, m in self.problems],
            "seconds": round(self.seconds, 3),
            "acl": self.acl.to_json(),
            **({"contexts": self.contexts} if self.contexts is not None else {}),
        }
