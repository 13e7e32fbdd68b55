"""Moves 1 and 2 read each passage's claims once (`compare.passage_claims`) and let a claim's
`stated_key` settle what the sentence scans settled (issue 22):

- `restates_read` decides as `restates`, both ways, and `contradiction` given the passages'
  `PassageClaims` returns what it returns without them (the same first pair), on generated
  claims built to collide (equal fields on distinct objects, values that are no finite number,
  negative or NaN steps, -0.0) and on generated texts that share sentences;
- a value that is no finite number gives no key: such a sentence is not stated even in a copy
  of its own passage, and the keyed paths must say so too;
- end to end, a chunk changed under the same id, a second session and another conflict_overlap
  are each compared afresh (what a stale key or memo would get wrong).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import docket
from docket.api import Session
from docket.claims import Claim, claims, contradiction, restates
from docket.claims import compare as K
from docket.claims.quantities import Quantity
from docket.embed import HashEmbedder
from docket.model import parse_chunk
from docket.policy import Policy
from docket.store.base import MemoryStore

from helpers import cands, mk

_INF, _NAN = math.inf, math.nan

_QUANTITY = st.builds(
    Quantity,
    st.sampled_from([0.0, -0.0, 14.0, 14.4, 30.0, 1994.0, 1996.0, _INF, -_INF, _NAN]),
    st.sampled_from(["days", "year", "eur"]),
    st.just("n"),
    st.sampled_from([1.0, 0.1, 0.0, 2.0, -1.0, _NAN, _INF]),
    st.sampled_from(["", "leave", "fee"]),
)
_WORDS = ["refund", "paid", "day", "staff", "leave", "annual", "fee", "bridge"]
_NAMES = ["paris", "berlin", "nasa"]
_CLAIM = st.builds(
    Claim,
    words=st.frozensets(st.sampled_from(_WORDS), min_size=1, max_size=4),
    names=st.frozensets(st.sampled_from(_NAMES), max_size=2),
    quantities=st.lists(_QUANTITY, max_size=3).map(tuple),
    negated=st.booleans(),
    text=st.sampled_from(["s1", "s2", "s3"]),
    anaphoric=st.booleans(),
)


@st.composite
def _variant(draw: st.DrawFn, base: Claim) -> Claim:
    """`base` with a field or two edited (its names, negation, words, an amount): the near misses
    a key must tell apart, or a copy of it unchanged."""
    c = base
    for field in draw(st.lists(st.sampled_from(["names", "negated", "words", "quantity", "none"]), max_size=2)):
        if field == "names":
            c = dataclasses.replace(c, names=draw(st.frozensets(st.sampled_from(_NAMES), max_size=2)))
        elif field == "negated":
            c = dataclasses.replace(c, negated=not c.negated)
        elif field == "words":
            c = dataclasses.replace(c, words=c.words ^ {draw(st.sampled_from(_WORDS))} or c.words)
        elif field == "quantity":
            qs = list(c.quantities)
            new = draw(_QUANTITY)
            qs[draw(st.integers(0, len(qs))) if qs else 0:][:1] = [new]
            c = dataclasses.replace(c, quantities=tuple(qs))
    return dataclasses.replace(c)  # a fresh object, as another chunk's claim of one sentence is


@st.composite
def _passages(draw: st.DrawFn) -> tuple[list[Claim], list[Claim]]:
    """Two passages drawn from one small set of claims and their near misses, each pick a fresh
    object, so that keys collide often; one subject per passage, as `claims()` gives."""
    bases = draw(st.lists(_CLAIM, min_size=1, max_size=3))
    protos = bases + [draw(_variant(draw(st.sampled_from(bases)))) for _ in range(draw(st.integers(0, 4)))]
    subjects = st.sampled_from([frozenset(), frozenset({"paris"}), frozenset({"berlin"})])

    def passage() -> list[Claim]:
        subj = draw(subjects)
        picks = draw(st.lists(st.sampled_from(protos), max_size=6))
        return [dataclasses.replace(c, subject=subj) for c in picks]

    return passage(), passage()


def _similar(a: str, b: str) -> float:  # a deterministic stand-in for the sentence embedder
    return 0.9 if a == b else 0.5


def check(x: list[Claim], y: list[Claim]) -> None:
    rx, ry = K.passage_claims(x), K.passage_claims(y)
    assert K.restates_read(rx, ry) == restates(x, y)
    assert K.restates_read(ry, rx) == restates(y, x)
    for overlap in (0.0, 0.3, K.YEAR_OVERLAP):
        for anaphora in (True, False):
            for similar in (None, _similar):
                assert contradiction(x, y, overlap, anaphora, similar, read=(rx, ry)) == \
                    contradiction(x, y, overlap, anaphora, similar)
                assert contradiction(y, x, overlap, anaphora, similar, read=(ry, rx)) == \
                    contradiction(y, x, overlap, anaphora, similar)


@settings(max_examples=1500, deadline=None)
@given(_passages())
def test_keyed_reads_decide_as_the_scans_on_colliding_claims(pair: tuple[list[Claim], list[Claim]]) -> None:
    check(*pair)


_SENTENCES = ["Refunds are paid within 14 days.", "Refunds are paid within 30 days.", "Refunds are not paid.",
              "Staff receive EUR 40 a day.", "Managers receive EUR 60 a day.", "Managers receive EUR 70 a day.",
              "The bridge opened in 1994 in Paris.", "The bridge opened in 1996 in Paris.", "It was rebuilt in 2001.",
              "The Berlin office opened in 1994.", "Annual leave is 25 days.", "Annual leave is not 25 days.",
              "Sick leave is 10 days.", "| Staff | EUR 40 |", "| Manager | EUR 60 |", "The fee is 1e999 EUR.",
              "Managers receive EUR 60 a day in Paris.", "Managers receive EUR 70 a day in Paris.",
              "Refunds are paid by the shop.", "Refunds are not paid by the shop."]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_SENTENCES), min_size=1, max_size=6), st.lists(st.integers(0, 5), max_size=6),
       st.lists(st.sampled_from(_SENTENCES), max_size=2))
def test_keyed_reads_decide_as_the_scans_on_near_copies(sentences: list[str], order: list[int], own: list[str]) -> None:
    """A passage and a near-copy of it (its sentences picked again, in another order, plus a few of
    its own): the pairs Moves 1-2 meet in a pool of near-copies."""
    copy = [sentences[k % len(sentences)] for k in order] + own
    check(claims(" ".join(sentences)), claims(" ".join(copy)))


def _keyed(a: list[Claim], b: list[Claim]) -> str | None:
    return contradiction(a, b, read=(K.passage_claims(a), K.passage_claims(b)))


def test_a_sentence_stated_only_by_a_skipped_one_is_still_stated() -> None:
    """The claims `contradiction` skips are skipped as pairs, not as what `_stated_in` reads: "...
    EUR 60 a day in Paris" is stated in the other passage only by the sentence that passage
    shares with this one (a skipped pair), so its disagreement with "... EUR 70 ..." is none."""
    a = claims("Managers receive EUR 60 a day in Paris. Managers receive EUR 60 a day.")
    b = claims("Managers receive EUR 60 a day. Managers receive EUR 70 a day in Paris.")
    assert contradiction(a, b) is None
    assert _keyed(a, b) is None and _keyed(b, a) is None


def test_a_sentence_without_a_value_is_compared_even_when_the_other_passage_repeats_it() -> None:
    """Only statements with a value or a negation are stated by key: "Refunds are paid by the shop"
    is in both passages and still meets the other's negation of it."""
    a = claims("Refunds are paid by the shop. Staff receive EUR 40 a day.")
    b = claims("Staff receive EUR 40 a day. Refunds are paid by the shop. Refunds are not paid by the shop.")
    why = contradiction(a, b)
    assert why is not None and "negates" in why
    assert _keyed(a, b) == why


def test_names_tell_keys_apart() -> None:
    """Two statements alike but for who they name are not the same statement: the copy that names
    Paris where the source names Berlin does not restate it."""
    def row(name: str, value: float) -> Claim:
        return Claim(frozenset({"allowance", "daily"}), frozenset({name}), (Quantity(value, "eur", "x"),), False, "r")
    copy = [row("paris", 40.0), row("paris", 60.0)]
    source = [row("berlin", 40.0), row("paris", 60.0)]
    assert copy[0].stated_key() != source[0].stated_key()
    assert not restates(copy, source)
    assert not K.restates_read(K.passage_claims(copy), K.passage_claims(source))


def _claim(words: str, *quantities: Quantity, negated: bool = False, text: str = "s") -> Claim:
    return Claim(frozenset(words.split()), frozenset(), tuple(quantities), negated, text)


def test_a_value_that_is_no_finite_number_has_no_key_and_is_not_stated_even_in_a_copy() -> None:
    """|inf - inf| is no number: `_stated_in` never finds such a value, not even in the same claim.
    Its key is "" (never looked up), so the keyed paths scan it and agree."""
    huge = _claim("fee paid", Quantity(_INF, "eur", "1e999 eur"))
    fine = _claim("staff paid", Quantity(40.0, "eur", "40 eur"))
    assert huge.stated_key() == "" and fine.stated_key() != ""
    assert _claim("x y", Quantity(1.0, "eur", "1", step=-1.0)).stated_key() == ""  # a negative step
    assert _claim("x y", Quantity(1.0, "eur", "1", step=_NAN)).stated_key() == ""
    passage = [huge, fine]
    assert not restates(passage, list(passage))
    assert not K.restates_read(K.passage_claims(passage), K.passage_claims(list(passage)))
    # its twin in the other passage does not state it, so its disagreement with a third sentence stands
    other = _claim("fee paid", Quantity(1994.0, "eur", "1994 eur"), text="t")
    a, b = [huge], [dataclasses.replace(huge), other]
    why = contradiction(a, b, 0.0)
    assert why is not None
    assert contradiction(a, b, 0.0, read=(K.passage_claims(a), K.passage_claims(b))) == why


def test_equal_keys_are_equal_statements_and_unequal_values_are_not() -> None:
    a = claims("Staff receive EUR 40 a day. Managers receive EUR 60 a day.")
    b = claims("Managers receive EUR 60 a day. Staff receive EUR 40 a day.")
    assert {c.stated_key() for c in a} == {c.stated_key() for c in b}
    changed = claims("Managers receive EUR 70 a day.")
    assert changed[0].stated_key() not in {c.stated_key() for c in a}
    negated = claims("Managers do not receive EUR 60 a day.")
    assert negated[0].stated_key() not in {c.stated_key() for c in a}


def test_restating_is_asymmetric_and_either_way_folds_the_copy() -> None:
    """A copy of two of the source's three rows restates the source, not the reverse; Move 2 folds
    the pair whichever of the two is ranked first."""
    table = "| Role | Daily allowance |\n|---|---|\n"
    source = claims("Meal allowance:\n" + table + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |")
    copy = claims("FAQ, from the policy:\n" + table + "| Staff | EUR 40 |\n| Manager | EUR 60 |")
    rs, rc = K.passage_claims(source), K.passage_claims(copy)
    assert restates(copy, source) and K.restates_read(rc, rs)
    assert not restates(source, copy) and not K.restates_read(rs, rc)
    pol = {"id": "pol-1", "doc": "travel-policy", "title": "Travel policy", "source_type": "policy",
           "text": "Meal allowance per role, per travel day:\n" + table
                   + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |"}
    faq = {"id": "faq-1", "doc": "travel-faq", "title": "Travel FAQ", "source_type": "faq",
           "text": "How much can I spend on meals? The policy's table:\n" + table + "| Staff | EUR 40 |\n| Manager | EUR 60 |"}
    for rows in ([pol, faq], [faq, pol]):
        chunks = [parse_chunk(r) for r in rows]
        brief = docket.assemble("What is the meal allowance for a manager?", cands(chunks), store=MemoryStore(chunks),
                                floor=0.0)
        assert [s.chunks for s in brief.sources.values()] == [["pol-1"]], rows[0]["id"]
        assert any(e.move == "dedup" and e.chunks == ["faq-1"] for e in brief.trace)


_TABLE = "| Role | Daily allowance |\n|---|---|\n"
_POLICY = "Meal allowance per role:\n" + _TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |"
_COPY = "FAQ, from the policy:\n" + _TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |"
_CHANGED = "FAQ, from the policy:\n" + _TABLE + "| Staff | EUR 40 |\n| Manager | EUR 70 |\n| Director | EUR 80 |"


def _pair(faq_text: str) -> list[Any]:
    return [mk("pol-1", doc="policy", title="Meal allowance", source_type="policy", text=_POLICY),
            mk("faq-1", doc="faq", title="Meal allowance", source_type="policy", text=faq_text)]


def _outcome(brief: Any) -> tuple[list[list[str]], list[list[str]]]:
    return [s.chunks for s in brief.sources.values()], [c.to_json()["chunks"] for c in brief.conflicts]


def test_a_chunk_changed_under_the_same_id_is_compared_afresh() -> None:
    """The copy is folded; the same id with one value changed is a conflict, not a copy (its
    claims, keys and pair verdicts are the new text's); the copy again is folded again."""
    emb = HashEmbedder()
    pol = Policy().updated(versions={"conflict_similarity": 0.0})

    def run(faq_text: str) -> tuple[list[list[str]], list[list[str]]]:
        chunks = _pair(faq_text)
        return _outcome(docket.assemble("Meal allowance for a manager?", cands(chunks), store=MemoryStore(chunks),
                                        embedder=emb, policy=pol, floor=0.0))

    folded = run(_COPY)
    assert folded == ([["pol-1"]], [])
    changed = run(_CHANGED)
    assert changed[1] == [["pol-1", "faq-1"]] and sorted(changed[0]) == [["faq-1"], ["pol-1"]]
    assert run(_COPY) == folded


def test_two_sessions_each_compare_their_own_chunks() -> None:
    """Two sessions, one chunk id with two texts, asked in turn: each brief is its own store's."""
    pol = Policy().updated(versions={"conflict_similarity": 0.0})
    one, two = (Session(MemoryStore(_pair(t)), embedder=HashEmbedder(), policy=pol) for t in (_COPY, _CHANGED))
    for _ in range(2):
        a = _outcome(one.assemble("Meal allowance for a manager?", cands(_pair(_COPY)), floor=0.0))
        b = _outcome(two.assemble("Meal allowance for a manager?", cands(_pair(_CHANGED)), floor=0.0))
        assert a == ([["pol-1"]], [])
        assert b[1] == [["pol-1", "faq-1"]]


def test_another_conflict_overlap_is_compared_afresh() -> None:
    """Years ask for the policy's word overlap: a pair that conflicts under a loose overlap does
    not under a strict one, in either order within one process's caches."""
    chunks = [mk("a", doc="a", title="Bridge", text="The bridge opened in 1994 and carries the old road over the river."),
              mk("b", doc="b", title="Bridge", text="The bridge opened in 1996 and it carries two lanes of traffic.")]
    emb = HashEmbedder()

    def conflicts(overlap: float) -> list[list[str]]:
        pol = Policy().updated(versions={"conflict_similarity": 0.0, "conflict_overlap": overlap})
        brief = docket.assemble("When did the bridge open?", cands(chunks), store=MemoryStore(chunks), embedder=emb,
                                policy=pol, floor=0.0)
        return [c.to_json()["chunks"] for c in brief.conflicts]

    loose, strict = conflicts(0.1), conflicts(0.95)
    assert loose == [["a", "b"]] and strict == []
    assert conflicts(0.1) == loose and conflicts(0.95) == strict
