"""What two passages' claims can decide, bounded before the claims are split (issue 21, decision 3:
features computed only when a comparison needs them).

Splitting a passage into claims reads its amounts and names, the costliest parts (~200 µs a
passage). Most pairs Moves 1-2 compare never needed them: no sentence of one shares enough words
with a sentence of the other, in the way `contradiction` or `restates` asks. A *sketch* holds,
for each sentence that may be a claim, what bounds its claim without reading an amount: the
content words it surely keeps (`low`: those of tokens no amount may take) and may keep (`high`:
those of every token), whether it may hold an amount at all and one whose unit a word gives,
and its negation and anaphora (exact). From two sketches, `may_contradict` and `may_restate`
say False only when the claims could only say no: each test below is one of theirs with the
words' overlap bounded from above (shared words by `high`, all words by `low`)."""

from __future__ import annotations

from typing import NamedTuple

from docket.claims.extract import _OPENS_BUT_COMMA, Claim, _content_words, _words, sentence_tokens
from docket.claims.quantities import AMOUNT_WORDS, Quantity, may_have_unit
from docket.claims.words import _PRONOUNS, _negated, sentences

#: what a word-overlap bound is loosened by: the claims compare a float quotient with a float
#: threshold, the bounds an integer with a product (counts are far below 10^6)
_SLACK = 1e-9


#: the content words of every word an amount may take (quantities.AMOUNT_WORDS): a sentence's
#: other content words come only from tokens no amount takes, so its claim surely has them
_AMOUNT_STEMS = frozenset().union(*map(_content_words, AMOUNT_WORDS))


class SentenceBounds(NamedTuple):
    """What bounds one sentence's claim (the module docstring)."""

    #: content words the claim surely has (a subset of its words)
    low: frozenset[str]
    #: content words it may have (a superset of its words)
    high: frozenset[str]
    #: it may hold an amount (False: its claim holds none)
    amount: bool
    #: it may hold an amount whose unit a word gives (compare.disagreement asks such a unit for
    #: less overlap, and compares it by sentence cosine)
    unit: bool
    negated: bool
    anaphoric: bool


class Sketch(NamedTuple):
    """A passage's sentences' bounds, and what pairs read of them together."""

    sentences: tuple[SentenceBounds, ...]
    #: the sentences that may state a value or a negation (the facts `restates` asks a copy to repeat)
    facts: tuple[SentenceBounds, ...]
    #: every content word the sentences may have
    words: frozenset[str]
    #: a sentence may hold an amount whose unit a word gives
    units: bool
    #: every content word the facts may have (`may_restate` bounds each fact's overlap by it)
    fact_words: frozenset[str]
    #: the facts' `low` sizes, smallest first
    fact_lows: tuple[int, ...]


#: `SentenceBounds(...)` from one tuple at C speed (the named tuple's own `__new__` is Python code)
_NEW_TUPLE = tuple.__new__


def _sketch(bounds: list[SentenceBounds]) -> Sketch:
    facts = tuple([b for b in bounds if b.amount or b.negated])
    return Sketch(tuple(bounds), facts, frozenset().union(*[b.high for b in bounds]), any([b.unit for b in bounds]),
                  frozenset().union(*[b.high for b in facts]), tuple(sorted([len(b.low) for b in facts])))


def sketch(text: str) -> Sketch:
    """The bounds of each sentence of `text` that may be a claim (one with a content word), from
    the tokens `claims` reads, without reading amounts or names."""
    plain = text.isascii()
    out = []
    for sent in sentences(text):
        folded, tokens, digits = sentence_tokens(sent, plain)
        high = _words(tokens)
        if not high:
            continue  # no content word: no claim
        low = high if high.isdisjoint(_AMOUNT_STEMS) else high - _AMOUNT_STEMS
        amount = digits or not _OPENS_BUT_COMMA.isdisjoint(tokens)  # (claims reads no amount otherwise)
        out.append(_NEW_TUPLE(SentenceBounds, (low, high, amount, amount and may_have_unit(tokens),
                                               _negated(folded, tokens), not _PRONOUNS.isdisjoint(tokens[:8]))))
    return _sketch(out)


def sketch_of(found: list[Claim]) -> Sketch:
    """The sketch of claims already split: exact bounds (cheaper than sketching the text again)."""
    return _sketch([SentenceBounds(c.words, c.words, bool(c.quantities), any(map(_has_unit, c.quantities)), c.negated,
                                   c.anaphoric) for c in found])


def _has_unit(q: Quantity) -> bool:
    """The amount's unit is one a word gives (compare.disagreement's loose units)."""
    unit = q.unit
    return unit not in ("year", "date", "plain", "clock") and not unit.startswith("count:")


def may_contradict(a: Sketch, b: Sketch, overlap: float, anaphora: bool, similar: bool, negation: float,
                   unit_overlap: float) -> bool:
    """False when `contradiction` of the two passages' claims (this `overlap` and `anaphora`, a
    sentence similarity or none: `similar`) is certainly None: no pair of sentences passes the
    tests of `compare.disagreement` with its word overlap bounded. `negation` and `unit_overlap`
    are compare's NEGATION_OVERLAP and UNIT_OVERLAP. Only the sentences `_candidates` keeps are
    paired: most sentences of a similar pair are not."""
    least = min(overlap, unit_overlap, negation)
    left = _candidates(a, b, least, anaphora, similar)
    right = _candidates(b, a, least, anaphora, similar) if left else []
    for low_a, high_a, amount_a, unit_a, neg_a in left:
        for low_b, high_b, amount_b, unit_b, neg_b in right:
            if high_a and high_b and high_a.isdisjoint(high_b):
                continue
            both_amounts = amount_a and amount_b
            if neg_a == neg_b and not both_amounts:
                continue  # neither a changed value nor a negation
            shared = len(high_a & high_b)
            union = len(low_a | low_b)
            enough = shared >= min(2, len(low_a), len(low_b))
            if neg_a != neg_b and enough and shared >= negation * union - _SLACK:
                return True
            if both_amounts:
                units = unit_a and unit_b
                need = min(overlap, unit_overlap) if units else overlap
                if (enough and shared >= need * union - _SLACK) or (similar and units and shared >= 1):
                    return True
    return False


def _candidates(own: Sketch, other: Sketch, least: float, anaphora: bool,
                similar: bool) -> list[tuple[frozenset[str], frozenset[str], bool, bool, bool]]:
    """The sentences of `own` that may pass a test of `may_contradict` against a sentence of
    `other`: it shares no more words with one than with the whole passage, and the two have at
    least its own `low` words together, so it must share `least` (the lowest overlap any test
    asks) of those; with a similarity, one shared word will do where both may have a unit. (A
    sentence a pronoun opens is left out when `anaphora` is off, as contradiction leaves it out.)"""
    words = other.words
    units = similar and other.units
    out = []
    for low, high, amount, unit, neg, ana in own.sentences:
        if ana and not anaphora:
            continue
        bound = len(high & words)
        if bound >= least * len(low) - _SLACK or (units and unit and bound):
            out.append((low, high, amount, unit, neg))
    return out


def may_restate(copy: Sketch, source: Sketch, overlap: float, least: int) -> bool:
    """False when `restates` of the two passages' claims is certainly False: fewer than `least`
    sentences of `copy` that may state a value or a negation find a sentence of `source` with
    the same negation and words that may overlap by `overlap` (compare.COPY_MIN_STATEMENTS and
    COPY_OVERLAP; `restates` asks every such claim to find one)."""
    facts = copy.facts
    if len(facts) < least:
        return False
    if least <= 0:
        return True
    everything = source.words  # (a sentence shares no more words with one sentence than with them all)
    if len(copy.fact_words & everything) < restate_need(copy, overlap, least):
        # (most similar pairs, ~90 % on the service path, issue 21): no fact shares more words with the
        # source than all facts together do, so every fact but the least - 1 with the smallest `low`
        # falls short of `overlap` below: one set operation for the pair, not one per fact
        return False
    close = [f for f in facts if len(f.high & everything) >= overlap * len(f.low) - _SLACK]
    if len(close) < least:
        return False
    found = 0
    for low_c, high_c, _, _, neg_c, _ in close:
        for low_s, high_s, _, _, neg_s, _ in source.sentences:
            if neg_s == neg_c and len(high_c & high_s) >= overlap * len(low_c | low_s) - _SLACK:
                found += 1
                if found >= least:
                    return True
                break
    return False


def restate_need(copy: Sketch, overlap: float, least: int) -> float:
    """How many of `copy`'s fact words a source must have for `may_restate(copy, source, overlap,
    least)` to pass its one-set test (a copy with at least `least` > 0 facts): fewer, and it is False."""
    return overlap * copy.fact_lows[least - 1] - _SLACK


def restate_gate(copy: Sketch, overlap: float, least: int) -> tuple[frozenset[str], float] | None:
    """What `may_restate(copy, source, overlap, least)` asks of `copy` alone, for a caller that
    tests one copy against many sources: None when it is False against every source (fewer than
    `least` facts), else (its fact words, `restate_need`): it is False against a source whose
    `words` hold fewer of those fact words than the need. (`least` > 0.)"""
    if len(copy.facts) < least:
        return None
    return copy.fact_words, restate_need(copy, overlap, least)
