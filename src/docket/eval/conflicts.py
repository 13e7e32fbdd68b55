"""Precision and recall of Move 1's conflict detection on labelled pairs of passages.

A pair file is JSON lines `{"a": text, "b": text, "conflict": true|false, "kind": "...",
"title_a": "...", "title_b": "..."}` (titles optional). Each pair becomes two in-force chunks of
two documents of equal authority, and the detector runs exactly as in the assembler (the
passage-cosine gate with the given embedder, then the statement comparison). docket's own set
is tests/data/conflict_pairs.jsonl; `benchmarks/conflict_detection.py` prints the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.context import Context
from docket.embed import Embedder
from docket.errors import InputError
from docket.model import Passage, parse_chunk
from docket.policy import Policy
from docket.safeio import iter_jsonl
from docket.store.base import MemoryStore
from docket.tokens import default_counter


@dataclass(frozen=True)
class ConflictPair:
    a: str
    b: str
    conflict: bool
    kind: str = ""
    title_a: str = ""
    title_b: str = ""


def load_conflict_pairs(path: str | Path) -> list[ConflictPair]:
    out = []
    for n, rec in iter_jsonl(path):  # UTF-8, valid JSON, no key given twice: one line naming the line
        if not isinstance(rec, dict) or not {"a", "b", "conflict"} <= rec.keys() or not isinstance(rec["conflict"], bool):
            raise InputError('needs "a", "b" (texts) and "conflict" (true/false)', where=f"{path}:{n}")
        out.append(ConflictPair(str(rec["a"]), str(rec["b"]), rec["conflict"], str(rec.get("kind", "")),
                                str(rec.get("title_a", "")), str(rec.get("title_b", ""))))
    return out


def detect(pair: ConflictPair, embedder: Embedder | None, policy: Policy | None = None) -> dict[str, Any] | None:
    """The conflict Move 1 reports for this pair (None when it reports none)."""
    from docket.moves import versions

    a = parse_chunk({"id": "a", "doc": "doc-a", "text": pair.a, "title": pair.title_a, "source_type": "policy"})
    b = parse_chunk({"id": "b", "doc": "doc-b", "text": pair.b, "title": pair.title_b, "source_type": "policy"})
    ctx = Context(question="?", store=MemoryStore([a, b]), policy=policy or Policy(), counter=default_counter(),
                  embedder=embedder)
    ps = [Passage(chunks=(c,), score=1.0, rank=r, hits=(c.id,)) for r, c in enumerate((a, b), 1)]
    versions.find_conflicts(ps, ctx)
    return ctx.conflicts[0] if ctx.conflicts else None


def measure(pairs: Sequence[ConflictPair], embedder: Embedder | None, policy: Policy | None = None) -> dict[str, Any]:
    """Precision, recall and F1 over all pairs, and per kind; plus every mistake with its reason."""
    rows = []
    for p in pairs:
        found = detect(p, embedder, policy)
        rows.append((p, found))

    def score(sel: list[tuple[ConflictPair, dict[str, Any] | None]]) -> dict[str, Any]:
        tp = sum(1 for p, f in sel if p.conflict and f)
        fp = sum(1 for p, f in sel if not p.conflict and f)
        fn = sum(1 for p, f in sel if p.conflict and not f)
        tn = len(sel) - tp - fp - fn
        prec = tp / (tp + fp) if tp + fp else None
        rec = tp / (tp + fn) if tp + fn else None
        f1 = 2 * prec * rec / (prec + rec) if prec and rec else None
        return {"pairs": len(sel), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": prec, "recall": rec, "f1": f1}

    kinds = sorted({p.kind for p, _ in rows})
    return {
        "all": score(rows),
        "by_kind": {k: score([r for r in rows if r[0].kind == k]) for k in kinds},
        "mistakes": [{"kind": p.kind, "expected": p.conflict, "a": p.a, "b": p.b,
                      "reason": f["reason"] if f else None} for p, f in rows if bool(f) != p.conflict],
    }
