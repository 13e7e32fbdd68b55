"""Copies and conflicts both ways (issue 24): a copied table of values per role is not a
conflict; a changed value in a reworded copy, a number word, a hyphenated unit or a currency
code is read as the value it is."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.claims import claims, contradiction

TABLE = "| Role | Daily allowance |\n|---|---|\n"


def conflict(a: str, b: str) -> str | None:
    return contradiction(claims(a), claims(b))


@pytest.mark.parametrize("a, b", [
    ("Meal allowance per role:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |",
     "FAQ, from the policy:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |"),
    ("Staff receive a daily allowance of EUR 40. Managers receive a daily allowance of EUR 60.",
     "Staff receive a daily allowance of EUR 40. Managers receive a daily allowance of EUR 60."),
    ("| Plan | Storage |\n|---|---|\n| Basic | 50 GB |\n| Pro | 200 GB |",
     "| Plan | Storage |\n|---|---|\n| Pro | 200 GB |\n| Basic | 50 GB |"),
    ("The hotel allowance in Paris is EUR 150 per night.", "Hotels in Paris are reimbursed up to €150 per night."),
    ("Parental leave is twenty-six weeks.", "Parental leave is 26 weeks."),
    ("Certifications must be renewed every three years.", "Certifications must be renewed on a three-year cycle."),
])
def test_copies_and_agreeing_rewordings_are_not_conflicts(a: str, b: str) -> None:
    assert conflict(a, b) is None
    assert conflict(b, a) is None


@pytest.mark.parametrize("a, b, shown", [
    ("Meal allowance:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |",
     "FAQ copy:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 70 |", "60 vs 70"),
    ("The hotel allowance in Paris is EUR 150 per night.", "Hotels in Paris are reimbursed up to €180 per night.",
     "150 vs 180"),
    ("The training budget is EUR 500 per employee.", "Each employee has a training budget of €300.", "500 vs 300"),
    ("The home-office stipend is USD 1,200 a year.", "The home-office stipend is $1,500 a year.", "1,200 vs 1,500"),
    ("Certifications must be renewed every three years.", "Certifications must be renewed on a four-year cycle.",
     "three years vs four-year"),
    ("Parental leave is twenty-six weeks.", "Parental leave is 20 weeks.", "twenty-six weeks vs 20 weeks"),
])
def test_changed_values_are_conflicts_and_the_reason_names_both(a: str, b: str, shown: str) -> None:
    why = conflict(a, b)
    assert why is not None and shown in why, why
    assert conflict(b, a) is not None


def test_a_currency_code_before_the_amount_is_its_unit() -> None:
    (c,) = claims("The budget is EUR 500.")
    assert [(q.value, q.unit) for q in c.quantities] == [(500.0, "eur")]
    assert "eur" not in c.words
    (c,) = claims("The stipend is USD 1,200 a year.")
    assert (c.quantities[0].value, c.quantities[0].unit) == (1200.0, "usd")


def test_different_currencies_are_not_compared() -> None:
    assert conflict("The hotel allowance is EUR 150 per night.", "The hotel allowance is GBP 180 per night.") is None


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Staff", "Manager", "Director", "Intern", "Contractor"]),
                          st.integers(1, 999)), min_size=1, max_size=5, unique_by=lambda r: r[0]),
       st.randoms(use_true_random=False))
def test_a_table_copied_in_any_row_order_is_never_a_conflict(rows: list[tuple[str, int]], rnd) -> None:
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    a = TABLE + "\n".join(f"| {r} | EUR {v} |" for r, v in rows)
    b = "FAQ:\n" + TABLE + "\n".join(f"| {r} | EUR {v} |" for r, v in shuffled)
    assert conflict(a, b) is None
    # one cell changed in the copy is a conflict
    role, value = rows[0]
    changed = b.replace(f"| {role} | EUR {value} |", f"| {role} | EUR {value + 1000} |")
    why = conflict(a, changed)
    assert why is not None and str(value + 1000) in why


def test_restates_needs_every_value_and_at_least_two() -> None:
    from docket.claims import restates

    policy = claims("Meal allowance:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |")
    faq = claims("How much can I spend on meals? The policy's table:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |")
    assert restates(faq, policy)
    changed = claims("FAQ:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 70 |")
    assert not restates(changed, policy)
    one = claims("FAQ: staff get EUR 40 a day.")
    assert not restates(one, policy)  # one shared value is not a copy
    extra = claims("FAQ:\n" + TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\nReceipts are needed above EUR 25.")
    assert not restates(extra, policy)  # it says something of its own


def test_a_pasted_table_is_folded_as_a_duplicate_not_sent_twice() -> None:
    import docket
    from docket.model import parse_chunk

    table = TABLE + "| Staff | EUR 40 |\n| Manager | EUR 60 |\n| Director | EUR 80 |"
    chunks = [parse_chunk({"id": "pol-1", "doc": "travel-policy", "title": "Travel policy", "source_type": "policy",
                           "text": "Meal allowance per role, per travel day:\n" + table}),
              parse_chunk({"id": "faq-1", "doc": "travel-faq", "title": "Travel FAQ", "source_type": "faq",
                           "text": "How much can I spend on meals? The policy's table:\n" + table})]
    brief = docket.assemble("What is the meal allowance for a manager?", store=docket.MemoryStore(chunks))
    assert [s.chunks for s in brief.sources.values()] == [["pol-1"]]
    assert not brief.conflicts
    drop = [e for e in brief.trace if e.move == "dedup" and e.action == "drop"]
    assert drop and drop[0].chunks == ["faq-1"] and "copied table" in drop[0].reason


def test_two_entities_written_from_one_template_are_not_copies() -> None:
    from docket.claims import restates

    a = ("Aspermont High School is a public high school located in Aspermont, Texas and classified as a 1A school. "
         "In 2015, the school was rated Met Standard by the Texas Education Agency.")
    b = a.replace("Aspermont", "Baird")
    assert not restates(claims(a), claims(b)) and not restates(claims(b), claims(a))
