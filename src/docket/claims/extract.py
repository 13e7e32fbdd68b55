"""A passage as claims: one `Claim` per sentence with two content words (its words, names,
quantities, negation, anaphora and the passage's subject), and the plain-JSON record a store
keeps of them (docket.claims)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docket.claims.quantities import Quantity, _quantities
from docket.claims.words import (
    _CJK,
    _CJK_STOPS,
    _DIGIT,
    _FRACTION,
    _NOT_CONTENT,
    _ORDINAL,
    _PRONOUNS,
    _SENT,
    _SENT_LATIN,
    _TOKEN,
    _fraction,
    _names,
    _negated,
    _row_key,
    _stem,
    fold,
    subject,
)


@dataclass(frozen=True, slots=True)
class Claim:
    words: frozenset[str]
    names: frozenset[str]
    quantities: tuple[Quantity, ...]
    negated: bool
    text: str
    #: the name the passage opens with (the same for every claim of one passage)
    subject: frozenset[str] = frozenset()
    #: the sentence opens with a pronoun ("It was added to the register on ..."): its subject
    #: is whatever its own passage is about
    anaphoric: bool = False
    #: `units()`, filled on first use (no part of the claim's value)
    _units: dict[str, tuple[Quantity, ...]] | None = field(default=None, init=False, repr=False, compare=False)

    def units(self) -> dict[str, tuple[Quantity, ...]]:
        """The quantities by unit (computed once per claim: asked for every pair it is in)."""
        got = self._units
        if got is None:
            out: dict[str, list[Quantity]] = {}
            for q in self.quantities:
                out.setdefault(q.unit, []).append(q)
            got = {u: tuple(v) for u, v in out.items()}
            object.__setattr__(self, "_units", got)
        return got


def claims(text: str, opening: frozenset[str] | None = None) -> list[Claim]:
    """The sentences of a passage as claims (sentences without two content words are skipped).
    Stores keep what this returns (docket.features records): when a change here changes the
    result, bump features.RECORD_VERSION so records written before are recomputed. `opening` is
    `subject(text)` when the caller has it already."""
    out = []
    subj = subject(text) if opening is None else opening
    split = _SENT.split if any(stop in text for stop in _CJK_STOPS) else _SENT_LATIN.split
    for sent in split(text):
        sent = sent.strip()
        if not sent:
            continue
        folded = fold(sent).replace("’", "'")
        if _DIGIT.search(folded):  # ordinals and fractions hold a digit
            # ordinals name an edition ("the 16th Annual Awards"), they are not amounts
            folded = _ORDINAL.sub(" ", folded)
            if "/" in folded or "⁄" in folded:
                folded = _FRACTION.sub(_fraction, folded)
        tokens = _TOKEN.findall(folded)
        qs, used = _quantities(tokens)
        negated = _negated(folded, tokens)
        words: set[str] = set()
        for k, t in enumerate(tokens):
            if k in used or t in _NOT_CONTENT or not t[0].isalpha():
                continue
            if t.isascii():  # (no CJK character, and no "-": a word token never holds one)
                if len(t) > 1:
                    words.add(_stem(t))
                continue
            if len(t) < 2 and not _CJK.match(t):
                continue
            if _CJK.search(t):
                words.update(t[m : m + 2] for m in range(max(1, len(t) - 1)))
                continue
            t = t.removeprefix("non-")
            words.add(_stem(t))
        if len(words) >= 2 or (qs and words):
            anaphoric = not _PRONOUNS.isdisjoint(tokens[:8])
            out.append(Claim(frozenset(words), _names(sent) | _row_key(sent), tuple(qs), negated, sent, subj, anaphoric))
    return out


def to_record(text: str, found: list[Claim]) -> list[Any]:
    """`claims(text)` as plain JSON data, for a store to keep next to the chunk (docket.features):
    each claim's sentence as offsets into `text` (not a second copy of it), its words, names,
    quantities, negation and anaphora; the passage's subject once."""
    out: list[Any] = [sorted(found[0].subject) if found else []]
    pos = 0
    for c in found:
        start = text.find(c.text, pos)
        if start < 0:  # cannot happen for claims of this text; the record then keeps no claims
            raise ValueError("claim text is not in the passage")
        pos = start + len(c.text)
        out.append([start, pos, sorted(c.words), sorted(c.names),
                    [[q.value, q.unit, q.text, q.step, q.of] for q in c.quantities], int(c.negated), int(c.anaphoric)])
    return out


def from_record(text: str, record: list[Any]) -> list[Claim]:
    """The claims `to_record` wrote for this text (the caller checks the record is for it)."""
    subj = frozenset(record[0])
    out = []
    for a, b, w, n, qs, neg, ana in record[1:]:
        if not (type(a) is int and type(b) is int and 0 <= a < b <= len(text)):
            raise ValueError("a claim's sentence is not inside the passage")  # the caller recomputes
        out.append(Claim(frozenset(w), frozenset(n),
                         tuple(Quantity(float(v), str(u), str(t), float(st), str(of)) for v, u, t, st, of in qs),
                         bool(neg), text[a:b], subj, bool(ana)))
    return out

