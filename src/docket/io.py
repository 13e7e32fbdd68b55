"""Reading chunk and candidate files, with errors that name the file, line and field.

The bytes, the JSON and its numbers are checked by `docket.safeio` (one loader for every file
docket reads); this module checks the records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docket.errors import InputError
from docket.model import Candidate, Chunk, check_unique, parse_chunk
from docket.safeio import iter_jsonl, shown
from docket.store.base import ChunkLookup


def load_chunks(path: str | Path) -> list[Chunk]:
    """Every chunk of a JSONL file; any bad record or duplicate id stops the load with its line."""
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for n, rec in iter_jsonl(path):
        c = parse_chunk(rec, where=f"{path}:{n}")
        if c.id in seen:
            raise InputError(
                f"duplicate id {c.id!r} (first on line {seen[c.id]}); ids must be unique", where=f"{path}:{n}", field="id"
            )
        seen[c.id] = n
        chunks.append(c)
    if not chunks:
        raise InputError("holds no chunk records", where=str(path))
    return chunks


def parse_candidates(records: Sequence[Any], store: ChunkLookup, where: str = "candidates") -> list[Candidate]:
    """Ranked `{"id", "score"}` records, best first, resolved against the store."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for n, rec in enumerate(records, 1):
        loc = f"{where}:{n}"
        if not isinstance(rec, dict):
            raise InputError("expected an object with 'id' and 'score'", where=loc)
        cid = rec.get("id")
        if not isinstance(cid, str) or not cid:
            raise InputError("is required (a chunk id string)", where=loc, field="id")
        score = rec.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise InputError(f"must be a number, got {shown(score)}", where=f"{loc} (id {shown(cid)})", field="score")
        if not math.isfinite(score):
            raise InputError(f"must be finite, got {score!r}", where=f"{loc} (id {shown(cid)})", field="score")
        if cid in seen:
            raise InputError("is ranked twice", where=f"{loc} (id {shown(cid)})", field="id")
        seen.add(cid)
        chunk = store.get(cid)
        if chunk is None:
            raise InputError("is not in the store", where=f"{loc} (id {shown(cid)})", field="id")
        out.append(Candidate(chunk=chunk, score=float(score), rank=n))
    return out


def load_candidates(path: str | Path, store: ChunkLookup) -> list[Candidate]:
    """A ranked candidates file; an empty one is an error (it would silently mean "not found")."""
    recs = [rec for _, rec in iter_jsonl(path)]
    if not recs:
        raise InputError('holds no candidates; give one {"id", "score"} record per line, best first, or leave '
                         "--candidates out to rank every chunk", where=str(path))
    return parse_candidates(recs, store, where=str(path))


def check_chunks(chunks: Sequence[Chunk]) -> None:
    """Cross-record checks: unique ids, one vector size."""
    check_unique(chunks)
    dims = {len(c.vector) for c in chunks if c.vector is not None}
    if len(dims) > 1:
        raise InputError(f"vectors have different sizes {sorted(dims)}; embed every chunk with one model", field="vector")
