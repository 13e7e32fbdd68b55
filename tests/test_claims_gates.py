"""The exact pre-gates of the conflict search (issue 21) decide what the plain code decides:

- `contradiction` skips a sentence pair on `disagreement`'s own early exits before calling it;
  checked against the plain loop (every pair through `disagreement`), with and without a memo;
- `restates` given a copy's facts and a source's names (kept per passage by Move 2) decides as
  it does when it works them out;
- Moves 1 and 2 skip a pair whose passages open with different subjects before splitting their
  claims: `contradiction` is then None and `restates` False both ways, and `ChunkFeatures.subject`
  is the subject every claim of the chunk carries;
- `_quantities` looks for dates only in a sentence that names a month: no date without one.

on generated texts full of what the gates reason about, and on the paragraphs of real questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from docket.claims import Claim, claims, contradiction, different_subjects, disagreement, restates, subject
from docket.claims import compare as K
from docket.claims import quantities as Q
from docket.claims import words as W
from docket.features import FeatureCache
from docket.model import Chunk

_UNSEEN: Any = object()


def plain_contradiction(sa: list[Claim], sb: list[Claim], overlap: float = K.YEAR_OVERLAP, anaphora: bool = True,
                        memo: dict[tuple[str, str], str | None] | None = None) -> str | None:
    """`contradiction` as it was before the gates: every sentence pair goes to `disagreement`."""
    if sa and sb and different_subjects(sa[0].subject, sb[0].subject):
        return None
    for a in sa:
        if a.anaphoric and not anaphora:
            continue
        for b in sb:
            if b.anaphoric and not anaphora:
                continue
            if memo is None:
                why = disagreement(a, b, overlap)
            else:
                why = memo.get((a.text, b.text), _UNSEEN)
                if why is _UNSEEN:
                    why = memo[(a.text, b.text)] = disagreement(a, b, overlap)
            if why is not None and not (K._stated_in(a, sb) or K._stated_in(b, sa)):
                return why
    return None


def check_pair(a: str, b: str) -> None:
    ca, cb = claims(a), claims(b)
    for overlap in (0.0, 0.3, K.YEAR_OVERLAP):
        for anaphora in (True, False):
            assert contradiction(ca, cb, overlap, anaphora) == plain_contradiction(ca, cb, overlap, anaphora)
    memo_a: dict[tuple[str, str], str | None] = {}
    memo_b: dict[tuple[str, str], str | None] = {}
    for x, y in ((ca, cb), (cb, ca), (ca, ca)):
        assert contradiction(x, y, memo=memo_a) == plain_contradiction(x, y, memo=memo_b)
    for x, y in ((ca, cb), (cb, ca), (ca, ca)):  # what Move 2 keeps per passage, handed in
        assert restates(x, y, K.copy_facts(x), K.all_names(y)) == restates(x, y)
    if different_subjects(subject(a), subject(b)):  # the gate of Moves 1 and 2
        assert contradiction(ca, cb) is None and contradiction(cb, ca) is None
        assert not restates(ca, cb) and not restates(cb, ca)


def check_features(text: str) -> None:
    chunk = Chunk(id="c", doc="d", text=text)
    f = FeatureCache().features(chunk)
    opening = f.subject(chunk)  # asked before the claims are split, as Move 1 asks
    found = f.statements(chunk)
    assert found == claims(text)
    assert all(c.subject == opening for c in found)


_PIECES = ["Sir Matt Busby", "Alex Ferguson", "The Berlin office", "The Lisbon office", "Nirvana", "was", "is", "an",
           "American", "band", "He", "It", "They", "managed", "from", "1945", "1986", "Refunds", "are", "not",
           "refundable", "non-refundable", "never", "up to", "40", "50", "EUR", "€", "a day", "for each day", "20 weeks",
           "18 weeks", "of paid leave", "21 october 1992", "May", "june 2000", "twice", "fifteen percent", "2-3 weeks",
           "Staff", "Managers", "receive", "a daily allowance of", "| Staff | EUR 40 |", "| Manager | EUR 60 |", ".",
           ". ", "\n", ";", ",", "(", ")", "Paris", "NASA", "中文", "。", "1,200", "20.4 %", "km", "square", "m"]
_TEXT = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=24).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_gated_conflict_search_decides_as_the_plain_one(a: str, b: str) -> None:
    check_pair(a, b)
    check_pair(a, a + " " + b)  # shared sentences: pairs that get past the word gate


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_a_chunks_subject_is_its_claims_subject(text: str) -> None:
    assume(any(ch.isalnum() for ch in text))  # (a chunk's text must hold words)
    check_features(text)


_NOT_MONTHS = ["1", "31", "12", ",", "1999", "2020", "the", "day", "of", "-", "twice", "twenty", "five", "eur", "in"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_NOT_MONTHS), st.text(min_size=1, max_size=5)), min_size=1, max_size=10))
def test_no_date_without_a_month(raw: list[str]) -> None:
    tokens = [t for r in raw for t in W._TOKEN.findall(W.fold(r))]
    if tokens and Q._MONTHS.keys().isdisjoint(tokens):
        assert all(Q._date_at(tokens, i) is None for i in range(len(tokens)))


def test_a_digit_that_is_not_decimal_is_no_date_and_no_crash() -> None:
    """"፩" (Ethiopic one) is a digit to str.isdigit but not to int(): it used to raise in the date reader."""
    assert [q.text for c in claims("፩ may 2020 was a fine day for the whole team.") for q in c.quantities] == \
        ["may 2020"]  # the month and year, not a day
    assert [q.text for c in claims("The office opened on 3 may 2020 in the city centre.") for q in c.quantities] == \
        ["3 may 2020"]


def _hotpot_groups(root: Path, limit: int) -> list[list[str]]:
    groups = []
    with (root / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8") as f:
        for line in list(f)[:limit]:
            groups.append([c["paragraph_text"] for c in json.loads(line)["contexts"]])
    return groups


def test_gates_on_the_paragraphs_of_real_questions(shared_data: Path) -> None:
    """Every pair of the 10 paragraphs of 25 HotpotQA questions (1,125 pairs), each paragraph also
    against itself plus another (shared sentences)."""
    for group in _hotpot_groups(shared_data, 25):
        for i, a in enumerate(group):
            check_features(a)
            for b in group[i + 1:]:
                check_pair(a, b)


@pytest.mark.slow
def test_gates_on_every_hotpotqa_question(shared_data: Path) -> None:
    for group in _hotpot_groups(shared_data, 250):
        for i, a in enumerate(group):
            check_features(a)
            for b in group[i + 1:]:
                check_pair(a, b)


_TITLES = ["", " ", "2009 Colorado Buffaloes football team", "2011 Colorado Buffaloes football team",
           "Sullivan County, New Hampshire", "Pike County", "Refund policy", "refund policy ", "Travel FAQ",
           "Kent County Cricket Club in 2010", "Kent County Cricket Club in 2011"]
_BODIES = ["Sullivan County is a county in New Hampshire.", "The 2009 Colorado Buffaloes football team played.",
           "Pike County has 4,000 inhabitants.", "Refunds are paid within 30 days.", "The team won 8 games in 2011.",
           "Kent County Cricket Club played in 2010."]


def _different_subjects(a: Any, b: Any) -> bool:
    """The pair-at-a-time test Move 1 used before versions._Titles read each title once per pool
    (kept here as the reference it must decide as)."""
    from docket.moves import versions as V

    ta, tb = a.first.title.strip(), b.first.title.strip()
    if not ta or not tb or V._title_phrase(ta) == V._title_phrase(tb):
        return False
    if V._series(ta) == V._series(tb):
        return True
    return V._names_title(ta, a.text) and V._names_title(tb, b.text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_TITLES), st.sampled_from(_BODIES)), min_size=2, max_size=6))
def test_move_1_reads_each_title_once_and_decides_as_before(rows: list[tuple[str, str]]) -> None:
    """versions._Titles (a pool's titles read once per passage) against _different_subjects."""
    from docket.model import Passage
    from docket.moves import versions as V

    pool = [Passage(chunks=(Chunk(id=f"c{k}", doc=f"d{k}", title=title, text=body),), score=1.0, rank=k + 1,
                    hits=(f"c{k}",)) for k, (title, body) in enumerate(rows)]
    titles = V._Titles(pool)
    for i in range(len(pool)):
        for j in range(len(pool)):
            assert titles.different_subjects(i, j) == _different_subjects(pool[i], pool[j])
