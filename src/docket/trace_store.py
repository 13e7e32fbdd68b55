"""Recent briefs kept for `GET /v1/trace/{id}`: a bounded, thread-safe memory of the last N, each
readable only by the identity that made it.

A brief can hold text its asker may read and others may not, so a trace is keyed by an id that
cannot be guessed (128 random bits) *and* its owner; asking for someone else's id answers as if
it did not exist. Entries live in the process that built them (with several worker processes, a
trace is found only by the worker that served the request) and the oldest go first.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kept:
    owner: str
    brief: dict[str, Any]
    candidates: list[dict[str, Any]]


class TraceStore:
    def __init__(self, capacity: int = 256) -> None:
        if capacity < 1:
            raise ValueError("a trace store needs room for at least one trace")
        self.capacity = capacity
        self._items: OrderedDict[str, Kept] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, owner: str, brief: dict[str, Any], candidates: list[dict[str, Any]]) -> str:
        trace_id = secrets.token_urlsafe(16)
        with self._lock:
            self._items[trace_id] = Kept(owner, brief, candidates)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return trace_id

    def get(self, trace_id: str, owner: str) -> Kept | None:
        with self._lock:
            kept = self._items.get(trace_id)
        if kept is None or not secrets.compare_digest(kept.owner, owner):
            return None
        return kept

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def candidate_rows(candidates: Any) -> list[dict[str, Any]]:
    """What the trace page shows of each ranked candidate (not its text)."""
    return [{"rank": c.rank, "id": c.chunk.id, "doc": c.chunk.doc, "version": c.chunk.version,
             "status": c.chunk.status, "score": c.score} for c in candidates or []]
