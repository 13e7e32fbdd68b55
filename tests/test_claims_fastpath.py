"""The early exits in `claims.disagreement` change no verdict: checked against the comparison
as it was before them (kept here as the reference) on generated sentence pairs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docket import claims as C
from docket.claims import compare as K


def reference(a: C.Claim, b: C.Claim, overlap: float, similar: C.Similar | None = None) -> str | None:
    if C.different_names(a, b):
        return None
    sim = C.similarity(a, b)
    shared = len(a.words & b.words)
    ua, ub = a.units(), b.units()
    differing = [u for u in sorted(set(ua) & set(ub))
                 if not (K._contains(ua[u], ub[u]) or K._contains(ub[u], ua[u])) and not K._other_things(ua[u], ub[u], a, b)]
    if len(differing) == 1:
        unit = differing[0]
        loose = unit not in ("year", "date", "plain", "clock") and not unit.startswith("count:")
        need = C.UNIT_OVERLAP if loose else overlap
        same = shared >= min(2, len(a.words), len(b.words)) and sim >= need
        if not same and loose and similar is not None and shared >= 1:
            same = similar(a.text, b.text) >= C.SENTENCE_SIMILARITY
        if same:
            return (f"values differ ({K._fmt(a, unit)} vs {K._fmt(b, unit)}) in the same statement: "
                    f"{K._short(a.text)!r} vs {K._short(b.text)!r}")
    if a.negated != b.negated and sim >= C.NEGATION_OVERLAP and shared >= min(2, len(a.words), len(b.words)):
        if all(K._contains(ua[u], ub[u]) and K._contains(ub[u], ua[u]) for u in set(ua) & set(ub)):
            return f"one negates what the other states: {K._short(a.text)!r} vs {K._short(b.text)!r}"
    return None


_VOCAB = ["refunds", "take", "the", "fee", "is", "not", "never", "10", "14", "40", "50", "EUR", "days", "business",
          "a", "day", "for", "each", "annual", "leave", "sick", "Paris", "London", "in", "1992", "1994", "since",
          "21", "October", "two", "weeks", "20", "20.4", "%", "km", "1,200", "m", "people", "it", "was", "opened",
          "$", "5", "million", "sold", "plans", "cost", "yearly", "subscription"]
_SENT = st.lists(st.sampled_from(_VOCAB), min_size=2, max_size=14).map(lambda ws: " ".join(ws) + ".")


def _sim(a: str, b: str) -> float:  # a deterministic stand-in for the sentence embedder
    wa, wb = set(a.split()), set(b.split())
    return len(wa & wb) / max(1, len(wa | wb)) + 0.5


@settings(max_examples=1500, deadline=None)
@given(_SENT, _SENT, st.sampled_from([0.0, 0.3, 0.6, 1.0]), st.booleans())
def test_disagreement_matches_the_reference(x: str, y: str, overlap: float, with_similar: bool) -> None:
    _check(x, y, overlap, with_similar)


def _check(x: str, y: str, overlap: float, with_similar: bool) -> None:
    sim = _sim if with_similar else None
    for a in C.claims(x):
        for b in C.claims(y):
            assert C.disagreement(a, b, overlap, sim) == reference(a, b, overlap, sim)


@st.composite
def _near_pair(draw: st.DrawFn) -> tuple[str, str]:
    """A sentence and an edit of it (a word swapped, "not" put in): where conflicts are found."""
    ws = draw(st.lists(st.sampled_from(_VOCAB), min_size=3, max_size=12))
    other = list(ws)
    for _ in range(draw(st.integers(1, 2))):
        k = draw(st.integers(0, len(other) - 1))
        other[k] = draw(st.sampled_from(_VOCAB))
    if draw(st.booleans()):
        other.insert(draw(st.integers(0, len(other))), "not")
    return " ".join(ws) + ".", " ".join(other) + "."


@settings(max_examples=1500, deadline=None)
@given(_near_pair(), st.sampled_from([0.0, 0.3, 0.6]), st.booleans())
def test_disagreement_matches_the_reference_on_near_pairs(pair: tuple[str, str], overlap: float,
                                                          with_similar: bool) -> None:
    _check(pair[0], pair[1], overlap, with_similar)


def test_claims_without_words_are_compared_as_before() -> None:
    a = C.Claim(frozenset(), frozenset(), (C.Quantity(10.0, "plain", "10"),), False, "10")
    b = C.Claim(frozenset({"fee"}), frozenset(), (C.Quantity(12.0, "plain", "12"),), False, "fee 12")
    for overlap in (0.0, 0.6):
        assert C.disagreement(a, b, overlap) == reference(a, b, overlap)


@settings(max_examples=300, deadline=None)
@given(st.lists(_near_pair(), min_size=1, max_size=6), st.booleans())
def test_a_shared_sentence_memo_changes_no_verdict(pairs: list[tuple[str, str]], anaphora: bool) -> None:
    """One query's memo, shared across passage pairs (as _find_conflicts shares it)."""
    memo: dict[tuple[str, str], str | None] = {}
    passages = [C.claims(" ".join(p)) for p in pairs] + [C.claims(p[1]) for p in pairs]
    for x in passages:
        for y in passages:
            assert C.contradiction(x, y, 0.6, anaphora, None, memo) == C.contradiction(x, y, 0.6, anaphora, None)


def every_pair(sa: list[C.Claim], sb: list[C.Claim], overlap: float, anaphora: bool) -> str | None:
    """`contradiction` as the plain loop over every pair of claims (the reference for its index)."""
    if sa and sb and C.different_subjects(sa[0].subject, sb[0].subject):
        return None
    for a in sa:
        for b in sb:
            if (a.anaphoric or b.anaphoric) and not anaphora:
                continue
            why = C.disagreement(a, b, overlap)
            # a claim the other passage also states pairs two rows of one table, not two versions
            if why is not None and not (K._stated_in(a, sb) or K._stated_in(b, sa)):
                return why
    return None


_PRONOUN_VOCAB = _VOCAB + ["It", "He", "They", "no", "non-refundable", "Sir", "Matt", "Busby", "was", "2001", "3", "km"]
_PSENT = st.lists(st.sampled_from(_PRONOUN_VOCAB), min_size=2, max_size=10).map(lambda ws: " ".join(ws) + ".")


@settings(max_examples=600, deadline=None)
@given(st.lists(_PSENT, min_size=0, max_size=6), st.lists(_PSENT, min_size=0, max_size=6),
       st.sampled_from([0.0, 0.3, 0.6]), st.booleans(), st.booleans())
def test_contradiction_finds_the_first_pair_the_full_loop_finds(xs: list[str], ys: list[str], overlap: float,
                                                                anaphora: bool, use_memo: bool) -> None:
    sa, sb = C.claims(" ".join(xs)), C.claims(" ".join(ys))
    memo: dict[tuple[str, str], str | None] | None = {} if use_memo else None
    assert C.contradiction(sa, sb, overlap, anaphora, None, memo) == every_pair(sa, sb, overlap, anaphora)


@settings(max_examples=600, deadline=None)
@given(st.lists(_near_pair(), min_size=1, max_size=4), st.sampled_from([0.0, 0.6]), st.booleans())
def test_contradiction_index_on_near_copies(pairs: list[tuple[str, str]], overlap: float, anaphora: bool) -> None:
    """Passages made of edited copies of each other's sentences: where the index prunes least."""
    sa = C.claims(" ".join(p[0] for p in pairs))
    sb = C.claims(" ".join(p[1] for p in reversed(pairs)))
    assert C.contradiction(sa, sb, overlap, anaphora) == every_pair(sa, sb, overlap, anaphora)
    assert C.contradiction(sb, sa, overlap, anaphora) == every_pair(sb, sa, overlap, anaphora)
