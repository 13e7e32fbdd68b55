"""Conflict notes: what the user message says, after the documents, about passages that disagree.

A note sits outside every fence, so it is made only of docket's own words and labels: one fixed
template per kind, filled with labels such as S1 and S3. The conflict's `reason`, which quotes
the passages, stays in the brief's JSON `conflicts` and in the trace, for people; it never
reaches the prompt, so no passage can put text (or a forged `<document>`) outside the fence.

What a conflict in `ctx.conflicts` (from moves/versions.py) gives this module:

    chunks  [id_a, id_b]      the two chunks that disagree
    kind    "equal_authority" both kept, the model is told to say so and cite both
            "outranked"       one outranks the other; a note needs `higher`
    higher  id of the chunk that outranks the other (kind "outranked"; one of `chunks`)

`label_conflicts` adds `labels` ([S_a, S_b]) and, for "outranked", `higher_label`; a conflict
whose two sides are not both in the prompt gets `in_prompt: false` and no note. A kind without a
template, or a conflict without the fields its template needs, gets no note either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from docket import deadline

_LABEL = re.compile(r"S[1-9][0-9]*\Z")

#: the only text a note can carry besides labels
TEMPLATES = {
    "equal_authority": "Note: {a} and {b} are equally authoritative and disagree. Say that they disagree and cite both.",
    "outranked": "Note: {higher} outranks {lower}, which says otherwise. Follow {higher} and say that {lower} disagrees.",
}


@dataclass(frozen=True)
class ConflictNote:
    kind: str
    labels: tuple[str, str]
    #: the label that outranks the other (kind "outranked")
    higher: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in TEMPLATES:
            raise ValueError(f"no note template for conflict kind {self.kind!r}; known: {', '.join(TEMPLATES)}")
        if len(self.labels) != 2 or self.labels[0] == self.labels[1] or not all(_LABEL.match(x) for x in self.labels):
            raise ValueError(f"a conflict note needs two different labels like S1, got {self.labels!r}")
        if self.kind == "outranked" and self.higher not in self.labels:
            raise ValueError(f"an outranked note needs `higher` to be one of {self.labels!r}, got {self.higher!r}")

    def text(self) -> str:
        a, b = self.labels
        if self.kind == "outranked":
            lower = b if self.higher == a else a
            return TEMPLATES["outranked"].format(higher=self.higher, lower=lower)
        return TEMPLATES[self.kind].format(a=a, b=b)

    @classmethod
    def of(cls, conflict: dict[str, Any]) -> ConflictNote | None:
        """The note for a labelled conflict, or None when it gets none (see the module doc)."""
        labels = conflict.get("labels")
        kind = conflict.get("kind")
        if conflict.get("in_prompt") is False or not isinstance(labels, list) or len(labels) != 2 or kind not in TEMPLATES:
            return None
        higher = conflict.get("higher_label")
        if kind == "outranked" and higher not in labels:
            return None
        try:
            return cls(kind=str(kind), labels=(str(labels[0]), str(labels[1])), higher=higher)
        except ValueError:
            return None


def label_conflicts(conflicts: list[dict[str, Any]], sources: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each conflict with the labels of its two chunks (a chunk merged into another passage takes
    that passage's label), or `in_prompt: false` when they are not two different passages."""
    where: dict[str, str] = {}
    for label, src in sources.items():
        for cid in src["chunks"]:
            where.setdefault(cid, label)
        for extra in src.get("also_in", []):
            for cid in extra["chunks"]:
                where.setdefault(cid, label)
    out = []
    for c in conflicts:
        deadline.check()
        labels = [where.get(cid) for cid in c["chunks"]]
        item = dict(c)
        if len(labels) == 2 and all(labels) and labels[0] != labels[1]:
            item["labels"] = labels
            if c.get("higher") in c["chunks"]:
                item["higher_label"] = where[c["higher"]]
        else:
            item["in_prompt"] = False
        out.append(item)
    return out


def conflict_notes(conflicts: list[dict[str, Any]]) -> str:
    """The notes for labelled conflicts, one line each, in order, without repeats."""
    lines: list[str] = []
    for c in conflicts:
        note = ConflictNote.of(c)
        if note is not None and note.text() not in lines:
            lines.append(note.text())
    return "\n".join(lines)
