"""The offline support check (issue 24 §6): a negation flip is unsupported without a judge model,
and a number the passage's own numbers give by one sum or difference of the same unit is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.check import check_answer
from docket.checks.facts import PassageFacts, sentence_facts

FLIPS = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "check_flips.jsonl"


def unsupported(answer: str, passage: str) -> list[dict]:
    return check_answer(answer, {"sources": {"S1": {"text": passage}}}).unsupported


@pytest.mark.parametrize("passage, flipped", [
    ("Annual plans can be refunded within 30 days of purchase.", "Annual plans cannot be refunded within 30 days of purchase [S1]."),
    ("Student plans are not refundable.", "Student plans are refundable [S1]."),
    ("Contractors do not receive a laptop.", "Contractors receive a laptop [S1]."),
    ("The VPN is required for the finance systems.", "The VPN is never required for the finance systems [S1]."),
])
def test_a_negation_flip_is_unsupported_without_a_judge(passage: str, flipped: str) -> None:
    (u,) = unsupported(flipped, passage)
    assert u["by"] == "negation" and "opposite" in u["reason"] and passage.rstrip(".") in u["reason"]
    # the statement as the passage makes it passes
    same = flipped.replace(" [S1].", "")
    assert unsupported(passage.rstrip(".") + " [S1].", passage) == []
    assert same != passage.rstrip(".")


@pytest.mark.parametrize("passage, answer", [
    ("Parents get 16 weeks of paid leave and 4 more weeks of unpaid leave.", "Parents get 20 weeks of leave [S1]."),
    ("The base fee is EUR 30 a month. Students get EUR 5 off.", "Students pay EUR 25 a month [S1]."),
    ("The trial lasts 14 days. It can be extended once by 7 days.", "The extended trial lasts 21 days [S1]."),
    ("Rates rose from 12% to 15%.", "Rates rose by 3% [S1]."),
])
def test_a_sum_or_difference_of_two_amounts_of_one_unit_is_supported(passage: str, answer: str) -> None:
    assert unsupported(answer, passage) == []


@pytest.mark.parametrize("passage, answer", [
    ("Parents get 16 weeks of paid leave and 4 more weeks of unpaid leave.", "Parents get 22 weeks of leave [S1]."),
    ("The office has 16 desks and 4 employees.", "There are 20 desks [S1]."),   # 16 desks + 4 employees: two units
    ("The trial lasts 14 days and costs 7 dollars.", "The trial lasts 21 days [S1]."),
])
def test_numbers_of_other_units_or_other_values_are_not_derived(passage: str, answer: str) -> None:
    (u,) = unsupported(answer, passage)
    assert u["by"] == "lexical"


def test_units_are_read_past_modifiers_and_from_currency_codes() -> None:
    p = PassageFacts.of("Parents get 16 paid weeks and 4 more weeks. The fee is EUR 30 or $12.")
    assert set(p.amounts) >= {(16, "week"), (4, "week"), (30, "eur"), (12, "$")}
    (f,) = sentence_facts("about 20 weeks")
    assert f.unit == "week" and p.derives(f) == "16 + 4"


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 500), st.integers(1, 500), st.sampled_from(["weeks", "days", "euros", "seats"]))
def test_a_derived_value_is_exactly_a_sum_or_difference(a: int, b: int, unit: str) -> None:
    p = PassageFacts.of(f"The plan gives {a} {unit} and then {b} {unit} more.")
    for n in range(0, 1100, 37):
        (f,) = [x for x in sentence_facts(f"It comes to {n} {unit}.") if x.kind == "number"] or [None]
        if f is None:
            continue
        # one amount written twice is one amount: never summed with itself
        want = {a} if a == b else {a, b, a + b, abs(a - b)}
        assert p.supports(f) == (n in want)


def test_the_flip_set_figures() -> None:
    rows = [json.loads(x) for x in FLIPS.read_text().splitlines() if x.strip()]
    flagged = {(r["answer"], r["passage"]): bool(unsupported(r["answer"], r["passage"])) for r in rows}
    neg_bad = [flagged[(r["answer"], r["passage"])] for r in rows if r["kind"] == "negation" and not r["supported"]]
    neg_good = [flagged[(r["answer"], r["passage"])] for r in rows if r["kind"] == "negation" and r["supported"]]
    ar_good = [flagged[(r["answer"], r["passage"])] for r in rows if r["kind"] == "arithmetic" and r["supported"]]
    # every flip caught but one: "They can be paused" is about its passage's subject (a pronoun),
    # which the sentence comparison does not resolve
    assert sum(neg_bad) == len(neg_bad) - 1
    assert not flagged[("Student plans can never be paused [S1].",
                        "Student plans are not refundable. They can be paused for up to three months a year.")]
    assert not any(neg_good) and not any(ar_good)  # no supported answer flagged
