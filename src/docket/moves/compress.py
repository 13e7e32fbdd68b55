"""Move 6: compress only what the budget forces.

Not a stage of its own: packing calls it for a passage the answer needs that does not fit.
Extractive and guarded: every sentence with a number, a date or a word like except / unless /
waived / only / not is kept; a sentence that leans on the one before ("It is waived…") is kept
only together with it; label and metadata stay. Filler sentences are kept by how many of the
question's words they share, while they fit.
"""

from __future__ import annotations

import re

from docket.context import Context
from docket.model import Passage
from docket.text import OVERLAP_STOPWORDS, ascii_words
from docket.text import sentences as split_sentences

MOVE = "compress"

_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
_DATEISH = re.compile(rf"\b{_MONTHS}\b|\b(?:19|20)\d\d\b", re.I)
_NUMBER = re.compile(r"\d|%|\$|€|£|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand|million)\b", re.I)
_REFERENT = re.compile(r"^(?:it|its|they|them|their|this|these|that|those|he|she|his|her|such|the latter|the former)\b", re.I)
__all__ = ["compress", "leans_back", "protected", "split_sentences"]


def protected(sentence: str, keywords: list[str]) -> str | None:
    """Why a sentence must survive compression, or None."""
    if _NUMBER.search(sentence):
        return "number"
    if _DATEISH.search(sentence):
        return "date"
    low = sentence.lower()
    for k in keywords:
        if re.search(rf"\b{re.escape(k.lower())}\b", low):
            return f"keyword '{k}'"
    return None


def leans_back(sentence: str) -> bool:
    return bool(_REFERENT.match(sentence))


def _overlap(sentence: str, qwords: set[str]) -> int:
    return len(qwords & set(ascii_words(sentence)))


def compress(p: Passage, room: int, ctx: Context, label: str) -> Passage | None:
    """A shorter passage that fits `room` tokens (as rendered), or None if the guarded
    sentences alone do not fit."""
    size = ctx.sizer.cost
    sents = split_sentences(p.text)
    if len(sents) < 2:
        ctx.trace.add(MOVE, "fail", list(p.ids), "a single sentence cannot be compressed")
        return None
    keywords = ctx.policy.compress.keywords
    reasons = {i: protected(s, keywords) for i, s in enumerate(sents)}
    keep = {i for i, r in reasons.items() if r}
    # a kept sentence that leans on its predecessor pulls the predecessor in, transitively
    changed = True
    while changed:
        changed = False
        for i in sorted(keep):
            if i > 0 and leans_back(sents[i]) and i - 1 not in keep:
                keep.add(i - 1)
                changed = True

    def build(idx: set[int]) -> Passage:
        parts: list[str] = []
        prev = None
        for i in sorted(idx):
            if prev is not None and i != prev + 1:
                parts.append("…")
            parts.append(sents[i])
            prev = i
        return p.with_(text_override=" ".join(parts))

    full_cost = size(p, label)
    if not keep:
        keep = {0}
    if size(build(keep), label) > room:
        ctx.trace.add(MOVE, "fail", list(p.ids), f"the {len(keep)} guarded sentence(s) need "
                      f"{size(build(keep), label)} tokens > {room} left; skipped rather than lose them")
        return None
    qwords = {w for w in ascii_words(ctx.question) if w not in OVERLAP_STOPWORDS}
    for i in sorted((i for i in range(len(sents)) if i not in keep), key=lambda i: (-_overlap(sents[i], qwords), i)):
        trial = set(keep) | {i}
        if leans_back(sents[i]) and i > 0:
            trial.add(i - 1)
        if size(build(trial), label) <= room:
            keep = trial
    # never keep a sentence whose referent was dropped
    keep = {i for i in keep if not (i > 0 and leans_back(sents[i]) and i - 1 not in keep)} or keep
    out = build(keep)
    cost = size(out, label)
    dropped = len(sents) - len(keep)
    ctx.trace.add(MOVE, "compress", list(p.ids), f"{full_cost} -> {cost} tokens: kept {len(keep)} of {len(sents)} sentences "
                  f"(guarded: {', '.join(sorted({r for r in reasons.values() if r})) or 'none'}), dropped {dropped}",
                  before=full_cost, after=cost)
    return out
