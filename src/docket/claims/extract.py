"""A passage as claims: one `Claim` per sentence with two content words (its words, names,
quantities, negation, anaphora and the passage's subject), and the plain-JSON record a store
keeps of them (docket.claims)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from docket.claims.quantities import _OPENS, Quantity, _quantities
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
    #: `stated_key()`, filled on first use (no part of the claim's value)
    _stated_key: str | None = field(default=None, init=False, repr=False, compare=False)

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

    def stated_key(self) -> str:
        """What `compare._stated_in` reads of the claim, as one string (its hash is kept: sets of
        keys are compared for every pair of passages): the repr of its negation, sorted names,
        sorted words and each amount's unit and value, which tells any two of these apart. Of two
        claims with a value or a negation and one key, each is stated in a passage holding the
        other (same negation and names, the same words, and each amount matched by its equal:
        |v - v| = 0 is within half of any step >= 0), so a copy's statement found by key in its
        source needs no scan (compare.PassageClaims). "" where that proof fails (a value that is
        no finite number, or a step that is negative or NaN); "" is never looked up. Once per
        claim: features keep a chunk's claims."""
        got = self._stated_key
        if got is None:
            qs = self.quantities
            exact = all(math.isfinite(q.value) and q.step >= 0 for q in qs)
            got = repr((self.negated, sorted(self.names), sorted(self.words), [(q.unit, q.value) for q in qs])) \
                if exact else ""
            object.__setattr__(self, "_stated_key", got)
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
        digits = _DIGIT.search(folded) is not None
        if digits:  # ordinals and fractions hold a digit
            # ordinals name an edition ("the 16th Annual Awards"), they are not amounts
            folded = _ORDINAL.sub(" ", folded)
            if "/" in folded or "⁄" in folded:
                folded = _FRACTION.sub(_fraction, folded)
        tokens = _TOKEN.findall(folded)
        qs: list[Quantity]
        used: set[int]
        if not digits and folded.isascii() and _OPENS_BUT_COMMA.isdisjoint(tokens):
            qs, used = [], set()  # no quantity can start: no digit, no number or month word (a comma opens none alone)
        else:
            qs, used = _quantities(tokens)
        negated = _negated(folded, tokens)
        # a token's content words depend on the token alone: each distinct one looked up once
        kept = set(tokens) if not used else {t for k, t in enumerate(tokens) if k not in used}
        words = set(chain.from_iterable(map(_CONTENT.__getitem__, kept)))
        if len(words) >= 2 or (qs and words):
            anaphoric = not _PRONOUNS.isdisjoint(tokens[:8])
            out.append(Claim(frozenset(words), _names(sent) | _row_key(sent), tuple(qs), negated, sent, subj, anaphoric))
    return out


#: the tokens a quantity may start at (docket.claims.quantities) but the comma, which starts one
#: only next to a number or a month
_OPENS_BUT_COMMA = _OPENS - {","}


def _content_words(t: str) -> tuple[str, ...]:
    """The content words a claim takes from one token (not a number or unit a quantity used):
    none for a stop word, a negation, a sign or a one-letter word; a CJK run's character pairs;
    else the token's stem."""
    if t in _NOT_CONTENT or not t[0].isalpha():
        return ()
    if t.isascii():  # (no CJK character, and no "-": a word token never holds one)
        return (_stem(t),) if len(t) > 1 else ()
    if len(t) < 2 and not _CJK.match(t):
        return ()
    if _CJK.search(t):
        return tuple(t[m : m + 2] for m in range(max(1, len(t) - 1)))
    return (_stem(t.removeprefix("non-")),)


class _ContentOf(dict):  # type: ignore[type-arg]
    """token -> `_content_words(token)`, filled on first sight of each token (a claim's words are
    then one C-level pass over its distinct tokens); at most 65,536 remembered, the rest asked
    each time."""

    def __missing__(self, t: str) -> tuple[str, ...]:
        out = _content_words(t)
        if len(self) < 1 << 16:
            self[t] = out
        return out


_CONTENT = _ContentOf()


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

