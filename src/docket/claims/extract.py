"""A passage as claims: one `Claim` per sentence with two content words (its words, names,
quantities, negation, anaphora and the passage's subject), and the plain-JSON record a store
keeps of them (docket.claims)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from docket.claims.quantities import _OPENS, Quantity, _quantities, _slot_setters
from docket.claims.words import (
    _CJK,
    _DIGIT,
    _FRACTION,
    _NOT_CONTENT,
    _ORDINAL,
    _PRONOUNS,
    _fraction,
    _names,
    _negated,
    _row_key,
    _stem,
    fold,
    sentences,
    subject,
    tokens_of,
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
    _stated_key: StatedKey | None = field(default=None, init=False, repr=False, compare=False)

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

    def stated_key(self) -> StatedKey:
        """What `compare._stated_in` reads of the claim, as one hashable value (sets of keys are
        compared for every pair of passages): its negation, names, words and each amount's unit
        and value, in a tuple; two keys are equal when all of these are. Of two claims with a
        value or a negation and one key, each is stated in a passage holding the other (same
        negation and names, the same words, and each amount matched by an equal one: |v - w| = 0
        is within half of any step >= 0, -0.0 and 0.0 included), so a copy's statement found by
        key in its source needs no scan (compare.PassageClaims). "" where that proof fails (a
        value that is no finite number, or a step that is negative or NaN); "" is never looked
        up. Once per claim: features keep a chunk's claims. (The name and word sets go in as
        they are: a frozenset keeps its hash, where sorting and printing them cost ~3 µs a claim.)"""
        got = self._stated_key
        if got is None:
            qs = self.quantities
            exact = all(math.isfinite(q.value) and q.step >= 0 for q in qs)
            got = (self.negated, self.names, self.words, tuple([(q.unit, q.value) for q in qs])) if exact else ""
            object.__setattr__(self, "_stated_key", got)
        return got


#: `Claim.stated_key`: (negated, names, words, ((unit, value), ...)), or "" for no key
StatedKey = tuple[bool, frozenset[str], frozenset[str], tuple[tuple[str, float], ...]] | str

_NEW = object.__new__
_CLAIM_SETTERS = _slot_setters(Claim, ("words", "names", "quantities", "negated", "text", "subject", "anaphoric",
                                       "_units", "_stated_key"))


def _claim(words: frozenset[str], names: frozenset[str], quantities: tuple[Quantity, ...], negated: bool, text: str,
           subject: frozenset[str], anaphoric: bool) -> Claim:
    """`Claim(words, names, quantities, negated, text, subject, anaphoric)`, its slots set
    directly (the frozen dataclass's `__init__` makes one `object.__setattr__` call per field,
    ~2x the cost of this, and a passage makes ~4 claims)."""
    c = _NEW(Claim)
    set_words, set_names, set_quantities, set_negated, set_text, set_subject, set_anaphoric, set_units, set_key = \
        _CLAIM_SETTERS
    set_words(c, words)
    set_names(c, names)
    set_quantities(c, quantities)
    set_negated(c, negated)
    set_text(c, text)
    set_subject(c, subject)
    set_anaphoric(c, anaphoric)
    set_units(c, None)
    set_key(c, None)
    return c


def claims(text: str, opening: frozenset[str] | None = None) -> list[Claim]:
    """The sentences of a passage as claims (sentences without two content words are skipped).
    Stores keep what this returns (docket.features records): when a change here changes the
    result, bump features.RECORD_VERSION so records written before are recomputed. `opening` is
    `subject(text)` when the caller has it already."""
    out = []
    subj = subject(text) if opening is None else opening
    plain = text.isascii()  # then a sentence's fold is its lower case (and holds no ’)
    for sent in sentences(text):
        folded, tokens, digits = sentence_tokens(sent, plain)
        qs: list[Quantity]
        if not digits and folded.isascii() and _OPENS_BUT_COMMA.isdisjoint(tokens):
            qs, kept = [], tokens  # no quantity can start: no digit, no number or month word (a comma opens none alone)
        else:
            qs, used = _quantities(tokens)
            kept = tokens
            if used:  # a number or unit a quantity used is no content word (the same word elsewhere is)
                kept = tokens.copy()
                for k in used:
                    kept[k] = ""
        words = _words(kept)
        if len(words) >= 2 or (qs and words):
            names = _names(sent)
            if sent[0] == "|":
                names |= _row_key(sent)
            anaphoric = not _PRONOUNS.isdisjoint(tokens[:8])
            out.append(_claim(words, names, tuple(qs), _negated(folded, tokens), sent, subj, anaphoric))
    return out


def sentence_tokens(sent: str, plain: bool) -> tuple[str, list[str], bool]:
    """A sentence as `claims` reads it: folded (its lower case when the passage is ASCII, `plain`),
    ordinals blanked and fractions written as decimals; its tokens; whether it holds a digit.
    (docket.claims.bounds sketches a sentence from the same tokens.)"""
    folded = sent.lower() if plain else fold(sent).replace("’", "'")
    digits = _DIGIT.search(folded) is not None
    if digits:  # ordinals and fractions hold a digit
        # ordinals name an edition ("the 16th Annual Awards"), they are not amounts
        folded = _ORDINAL.sub(" ", folded)
        if "/" in folded or "⁄" in folded:
            folded = _FRACTION.sub(_fraction, folded)
    return folded, tokens_of(folded), digits


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


#: `_WordOf`'s mark for a token with more than one content word (a CJK run): never a word itself
#: (a word holds letters only)
_SEVERAL = "\x00"


class _WordOf(dict):  # type: ignore[type-arg]
    """token -> its one content word, "" for none, `_SEVERAL` for more (`_content_words`), filled
    on first sight of each token (a claim's words are then one C-level pass over its tokens); at
    most 65,536 remembered, the rest asked each time. "" (a token a quantity used) has none."""

    def __missing__(self, t: str) -> str:
        got = _content_words(t)
        out = got[0] if len(got) == 1 else _SEVERAL if got else ""
        if len(self) < 1 << 16:
            self[t] = out
        return out


_WORD_OF = _WordOf({"": ""})


def _words(tokens: list[str]) -> frozenset[str]:
    """The content words of a sentence's tokens ("" for a token left out): one C-level pass (the
    table's look-ups, `filter` dropping the empty "")."""
    words = frozenset(filter(None, map(_WORD_OF.__getitem__, tokens)))
    if _SEVERAL in words:  # a CJK run: its character pairs
        words = words.union(*[_content_words(t) for t in tokens if t and _WORD_OF[t] == _SEVERAL]) - {_SEVERAL}
    return words


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

