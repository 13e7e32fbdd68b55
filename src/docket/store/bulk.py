"""`docket import`: a file of chunks with vectors into a new store, all or nothing.

docket.store.importer reads and checks the rows; docket.store.bulk_sqlite and
docket.store.bulk_postgres write them, each in one transaction (docs/store.md, Bulk import).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.errors import InputError
from docket.store.importer import Checker, batches, format_of


@dataclass
class ImportReport:
    rows: int
    versions: int
    documents: int
    seconds: float
    embedder: str
    dim: int
    acl: dict[str, list[str]]
    #: rows whose vector was not of unit length and was stored scaled to it (importer.UNIT_TOLERANCE)
    normalised: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "versions": self.versions, "documents": self.documents,
                "seconds": round(self.seconds, 3), "chunks_per_s": round(self.rows / self.seconds) if self.seconds else None,
                "embedder": self.embedder, "dim": self.dim, "acl": self.acl, "normalised": self.normalised}


def import_file(store: Any, path: Path, *, fmt: str | None = None, embedder: tuple[str, int],
                count: Callable[[str], int] | None = None, stages: dict[str, float] | None = None) -> ImportReport:
    """Load `path` into the empty `store` in one transaction (docket.store.bulk_sqlite or
    bulk_postgres). `embedder` is (name, dim) of the model that made the vectors; a store that
    already names another is refused, naming both. `stages` (benchmarks) gets each stage's seconds."""
    import time

    from docket.store.access import AclResolution

    started = time.perf_counter()
    fmt = format_of(path, fmt)
    from docket.safeio import input_problem

    problem = input_problem(path)  # missing, a folder, a symlink loop, a pipe, unreadable
    if problem:
        raise InputError("no such file" if problem == "file not found" else problem, where=str(path))
    name, dim = embedder
    meta = store.meta()  # a new store takes the embedder in the load's transaction (a refused file leaves none)
    have = (meta.get("embedder", name), int(meta.get("dim", dim)))
    if have != (name, dim):
        raise InputError(f"was built with embedder {have[0]!r} (dim {have[1]}); these vectors are said to come from "
                         f"{name!r} (dim {dim}) - vectors of different models are not comparable",
                         where=store.location, field="--embedder")
    if count is None:
        from docket.store.bulk_text import DefaultCount

        count = DefaultCount()  # the vocabulary loaded where a count is made (the workers, for a big file)
    checker = Checker(str(path), dim, name, count)
    note = AclResolution()
    postgres = type(store).__name__ == "PostgresStore"
    if postgres:
        from docket.store import bulk_postgres as backend
    else:
        from docket.store import bulk_sqlite as backend  # type: ignore[no-redef]
    # SQLite's keyword terms are worked out here (PostgreSQL parses its own tsvector in SQL)
    n = backend.load(store, batches(path, fmt, checker, terms=not postgres), checker, note, stages)  # also writes meta embedder, dim
    return ImportReport(n, len(checker.versions), len({d for d, _ in checker.versions}), time.perf_counter() - started,
                        name, dim, note.to_json(), checker.normalised)
