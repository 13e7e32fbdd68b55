"""Moves 1-2 split a passage into claims only when a pair needs them (issue 21, decision 3): a
sketch (docket.claims.bounds) bounds each sentence's claim, and `may_contradict` / `may_restate`
rule a pair out only when the claims would. Checked against the claims themselves:

- each sentence's sketch bounds its claim (content words between `low` and `high`, an amount
  or a unit only where the sketch allows one, the same negation and anaphora), and a passage's
  sketch is its sentences' sketches in order;
- a pair the sketches rule out is one `contradiction` (every overlap, anaphora on and off, with
  and without a sentence similarity) and `restates` (both ways) answer no for, on generated
  texts that share and edit sentences, and on generated claims (the sketch of claims in hand);
- `contradiction_read` and `restates_read` over `PassageRead`s answer as the claims do, whether
  the claims are split already or not, and split only what a pair needs.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from test_claims_keys import _passages
from test_claims_onepass import _ANY, _PIECES, _TEXT

from docket.claims import claims, contradiction, restates
from docket.claims import compare as K
from docket.claims.bounds import Sketch, _has_unit, may_contradict, may_restate, sketch, sketch_of
from docket.claims.words import sentences

_OVERLAPS = (0.0, 0.3, K.YEAR_OVERLAP, 1.0)


def _similar(a: str, b: str) -> float:  # a deterministic stand-in for the sentence embedder
    return 0.9 if len(a) % 3 else 0.5


def _always(a: str, b: str) -> float:  # the most permissive similarity: every loose amount is the same thing
    return 1.0


@settings(max_examples=1500, deadline=None)
@given(_ANY)
def test_each_sentence_sketch_bounds_its_claim(text: str) -> None:
    for sent in sentences(text):
        found = claims(sent)
        bounds = sketch(sent).sentences
        assert len(found) <= len(bounds) <= 1
        for c, b in zip(found, bounds):
            assert b.low <= c.words <= b.high
            assert b.amount or not c.quantities
            assert b.unit or not any(map(_has_unit, c.quantities))
            assert (b.negated, b.anaphoric) == (c.negated, c.anaphoric)


@settings(max_examples=1000, deadline=None)
@given(_ANY)
def test_a_passage_sketch_is_its_sentences_sketches(text: str) -> None:
    assert sketch(text).sentences == tuple(b for s in sentences(text) for b in sketch(s).sentences)


_SENTENCE = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map(" ".join)


#: statements of the kind conflicts and copies are made of
_RULES = ["Staff are reimbursed up to 40 EUR a day for meals abroad", "The annual fee is refundable within 30 days",
          "Parental leave lasts 20 weeks", "Sir Matt Busby managed the club from 1945", "It was founded in 1994",
          "Support replies within 2 business days", "Storage is limited to 15 GB per account",
          "The bridge is 1.2 km long", "Prices rose by fifteen percent", "Refunds are not available after 14 days"]


@st.composite
def _near(draw: st.DrawFn) -> tuple[str, str]:
    """Two passages that share sentences, some edited (a value, a negation, a word): the pairs a
    conflict or a copy is made of."""
    pool = draw(st.lists(st.one_of(_SENTENCE, _TEXT, st.sampled_from(_RULES)), min_size=1, max_size=5))
    edits = ["", " not", " 40 EUR", " 1998", " twice", " refunds", " staff", " in 2 weeks", " Paris"]
    changes = [("40", "50"), ("1945", "1946"), ("20 weeks", "18 weeks"), ("not ", ""), ("are ", "are not "),
               ("30 days", "one month"), ("15 GB", "20 GB"), ("1.2 km", "1,300 m"), ("fifteen", "twenty")]
    edited = [s + draw(st.sampled_from(edits)) for s in pool]
    edited += [s.replace(*draw(st.sampled_from(changes)), 1) for s in pool]
    a = draw(st.lists(st.sampled_from(pool + edited), max_size=5))
    if draw(st.booleans()):  # the other passage: a copy with some sentences changed, or another pick
        b = [draw(st.sampled_from([x, x.replace(*draw(st.sampled_from(changes)), 1)])) for x in a]
    else:
        b = draw(st.lists(st.sampled_from(pool + edited), max_size=5))
    stop = draw(st.sampled_from([". ", ".\n", "; "]))
    return stop.join(a), stop.join(b)


def _check_texts(x: str, y: str) -> None:
    cx, cy = claims(x), claims(y)
    sx, sy = sketch(x), sketch(y)
    for overlap in _OVERLAPS:
        for anaphora in (True, False):
            for similar in (None, _similar, _always):
                if not may_contradict(sx, sy, overlap, anaphora, similar is not None, K.NEGATION_OVERLAP,
                                      K.UNIT_OVERLAP):
                    assert contradiction(cx, cy, overlap, anaphora, similar) is None
    if not may_restate(sx, sy, K.COPY_OVERLAP, K.COPY_MIN_STATEMENTS):
        assert not restates(cx, cy)
    if not may_restate(sy, sx, K.COPY_OVERLAP, K.COPY_MIN_STATEMENTS):
        assert not restates(cy, cx)


@settings(max_examples=1500, deadline=None)
@given(_near())
def test_a_pair_the_sketches_rule_out_the_claims_rule_out(pair: tuple[str, str]) -> None:
    _check_texts(*pair)


@settings(max_examples=500, deadline=None)
@given(_ANY, _ANY)
def test_a_pair_the_sketches_rule_out_the_claims_rule_out_on_any_text(x: str, y: str) -> None:
    _check_texts(x, y)


@settings(max_examples=1000, deadline=None)
@given(_passages(), st.booleans())
def test_the_sketch_of_claims_in_hand_rules_out_only_what_they_do(pair: tuple[list, list], empty: bool) -> None:
    x, y = pair
    if empty and x:  # a stored record may hold a claim without words: the bounds must not assume one
        x = [dataclasses.replace(x[0], words=frozenset())] + x[1:]
    sx, sy = sketch_of(x), sketch_of(y)
    for overlap in _OVERLAPS:
        for anaphora in (True, False):
            for similar in (None, _similar, _always):
                if not may_contradict(sx, sy, overlap, anaphora, similar is not None, K.NEGATION_OVERLAP,
                                      K.UNIT_OVERLAP):
                    assert contradiction(x, y, overlap, anaphora, similar) is None
    if not may_restate(sx, sy, K.COPY_OVERLAP, K.COPY_MIN_STATEMENTS):
        assert not restates(x, y)


def _may_restate_per_fact(copy: Sketch, source: Sketch, overlap: float, least: int) -> bool:
    """`may_restate` as it was before its one-set-operation bound: each fact tested alone."""
    if len(copy.facts) < least:
        return False
    if least <= 0:
        return True
    close = [f for f in copy.facts if len(f.high & source.words) >= overlap * len(f.low) - 1e-9]
    found = 0
    for f in close:
        if any(s.negated == f.negated and len(f.high & s.high) >= overlap * len(f.low | s.low) - 1e-9
               for s in source.sentences):
            found += 1
    return found >= least


@settings(max_examples=1000, deadline=None)
@given(_near(), st.sampled_from([0.0, 0.3, K.COPY_OVERLAP, 1.0]), st.integers(0, 4))
def test_may_restate_bounds_a_pair_by_all_facts_words_as_each_fact_would(pair: tuple[str, str], overlap: float,
                                                                          least: int) -> None:
    sx, sy = sketch(pair[0]), sketch(pair[1])
    assert sx.fact_words == frozenset().union(*[f.high for f in sx.facts])
    assert sx.fact_lows == tuple(sorted(len(f.low) for f in sx.facts))
    for a, b in ((sx, sy), (sy, sx)):
        assert may_restate(a, b, overlap, least) == _may_restate_per_fact(a, b, overlap, least)


def _read(text: str, split_already: bool) -> K.PassageRead:
    return K.PassageRead(text, lambda: claims(text), claims(text) if split_already else None)


@settings(max_examples=1000, deadline=None)
@given(_near(), st.booleans(), st.booleans())
def test_reads_answer_as_the_claims(pair: tuple[str, str], split_x: bool, split_y: bool) -> None:
    x, y = pair
    cx, cy = claims(x), claims(y)
    for overlap in (0.3, K.YEAR_OVERLAP):
        for anaphora in (True, False):
            for similar in (None, _similar):
                rx, ry = _read(x, split_x), _read(y, split_y)
                assert K.contradiction_read(rx, ry, overlap, anaphora, similar) == \
                    contradiction(cx, cy, overlap, anaphora, similar)
    rx, ry = _read(x, split_x), _read(y, split_y)
    assert K.restates_read(rx, ry) == restates(cx, cy)
    assert K.restates_read(ry, rx) == restates(cy, cx)


def test_a_pair_ruled_out_splits_neither_passage() -> None:
    split: list[str] = []

    def read(text: str) -> K.PassageRead:
        return K.PassageRead(text, lambda: split.append(text) or claims(text))

    a = read("Wangcun is a town in Jimo. It had 30,000 inhabitants in 2010.")
    b = read("The bridge over the river opened in 1998. Its main span is 300 metres long.")
    assert K.contradiction_read(a, b) is None and not K.restates_read(a, b) and not K.restates_read(b, a)
    assert split == []


def test_a_pair_left_open_is_split_once_and_compared() -> None:
    split: list[str] = []

    def read(text: str) -> K.PassageRead:
        return K.PassageRead(text, lambda: split.append(text) or claims(text))

    a = read("Staff are reimbursed up to 40 EUR a day for meals abroad.")
    b = read("Staff are reimbursed up to 50 EUR a day for meals abroad.")
    assert K.contradiction_read(a, b) is not None
    assert K.contradiction_read(a, b) is not None
    assert sorted(split) == sorted([a.text, b.text])


def test_a_passage_read_again_by_another_assembly_is_split_then() -> None:
    split: list[str] = []
    text = "Wangcun is a town in Jimo. It had 30,000 inhabitants in 2010."
    r = K.PassageRead(text, lambda: split.append(text) or claims(text))
    first, second = object(), object()
    assert r.seen_by(first) is r and r.seen_by(first) is r
    assert split == [] and r.passage is None  # one assembly, however many pairs: the sketch only
    r.seen_by(second)
    assert split == [text] and r.passage == K.passage_claims(claims(text))
    r.seen_by(first)
    assert split == [text]  # split once
