"""Red team of the answer check (`docket check`, docket.check): answers built to pass unsupported
(a miss: reported clean) or to be flagged while faithful (a false alarm), class by class.

Each case is (name, answer, passage, want): the brief holds the passage as S1 (and nothing
else, so S9 is unknown); `want` is "flag" (the report must not be clean), "clean" (it must be),
or "unknown:S9" (that label must be reported unknown). The fast tests run every case in the
default run; the slow round counts per class what got through, for scripts/redteam.sh.

In scope, per the checker's docstring: a lexical check proves a hard fact (number, amount,
percentage, date, name) is missing from the cited passage, never that the rest is true. A unit
is part of an amount ("30 weeks" is not "30 days"); a reworded claim with the same facts is left
to a judge, and so are the cases listed in OUT_OF_SCOPE (kept here so the next red team sees
them, not asserted).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from redteam_log import record

from docket.check import MAX_ANSWER_CHARS, check_answer, load_brief
from docket.errors import InputError

PAYOUTS = "Refunds go back to the original payment method within 10 business days."
REFUSAL = "I do not know from the provided sources."


def brief(passage: str = PAYOUTS, question: str = "How long do refunds take?") -> dict[str, Any]:
    return {"found": True, "refusal": REFUSAL, "question": question, "sources": {"S1": {"text": passage}}}


Case = tuple[str, str, str, str]

# -- citation syntax: every form a reader sees as a citation is read as one ------------------------
CITATIONS: list[Case] = [
    ("fullwidth-brackets", "Refunds go back within 10 business days ［S9］.", PAYOUTS, "unknown:S9"),
    ("fullwidth-all", "Refunds go back within 10 business days ［Ｓ９］.", PAYOUTS, "unknown:S9"),
    ("cyrillic-s", "Refunds go back within 10 business days [Ѕ9].", PAYOUTS, "unknown:S9"),
    ("zero-width-inside", "Refunds go back within 10 business days [S\u200b9].", PAYOUTS, "unknown:S9"),
    ("zero-width-before", "Refunds go back within 10 business days [\u2060S9].", PAYOUTS, "unknown:S9"),
    ("soft-hyphen", "Refunds go back within 10 business days [S\u00ad9].", PAYOUTS, "unknown:S9"),
    ("slash", "Refunds go back within 10 business days [S1/S9].", PAYOUTS, "unknown:S9"),
    ("ampersand", "Refunds go back within 10 business days [S1 & S9].", PAYOUTS, "unknown:S9"),
    ("pipe", "Refunds go back within 10 business days [S1|S9].", PAYOUTS, "unknown:S9"),
    ("sources-lead", "Refunds go back within 10 business days (Sources: S9).", PAYOUTS, "unknown:S9"),
    ("see-lead", "Refunds go back within 10 business days (see S9).", PAYOUTS, "unknown:S9"),
    ("caret", "Refunds go back within 10 business days.[^S9]", PAYOUTS, "unknown:S9"),
    ("sup", "Refunds go back within 10 business days<sup>S9</sup>.", PAYOUTS, "unknown:S9"),
    ("tortoise", "Refunds go back within 10 business days 〔S9〕.", PAYOUTS, "unknown:S9"),
    ("white-square", "Refunds go back within 10 business days ⟦S9⟧.", PAYOUTS, "unknown:S9"),
    ("em-dash-range", "Refunds go back within 10 business days [S1 — S9].", PAYOUTS, "unknown:S9"),
    ("footnote-unknown", "Refunds go back within 10 business days [1].\n\n[1]: S9", PAYOUTS, "unknown:S9"),
    ("footnote-caret-unknown", "Refunds go back within 10 business days [^a].\n\n[^a]: Source S9", PAYOUTS, "unknown:S9"),
    ("after-stop-lookalike", "Refunds go back within 90 business days. ［S1］ Fine.", PAYOUTS, "flag"),
    # faithful answers in those forms are clean (a false alarm before: "uncited")
    ("fullwidth-faithful", "Refunds go back within 10 business days ［Ｓ１］.", PAYOUTS, "clean"),
    ("cyrillic-faithful", "Refunds go back within 10 business days [Ѕ1].", PAYOUTS, "clean"),
    ("zero-width-faithful", "Refunds go back within 10 business days [S\u200b1].", PAYOUTS, "clean"),
    ("footnote-faithful", "Refunds go back within 10 business days [1].\n\n[1]: S1", PAYOUTS, "clean"),
    ("footnote-caret-faithful", "Refunds go back within 10 business days.[^1]\n\n[^1]: [S1]", PAYOUTS, "clean"),
    ("sources-faithful", "Refunds go back within 10 business days (Sources: S1).", PAYOUTS, "clean"),
    ("already-read", "Refunds go back within 10 business days [S1, S9].", PAYOUTS, "unknown:S9"),
    ("already-read-2", "Refunds go back within 10 business days 【S9】.", PAYOUTS, "unknown:S9"),
    ("already-read-3", "Refunds go back within 10 business days [s9].", PAYOUTS, "unknown:S9"),
]

# -- sentence splitting: a claim hidden where the splitter does not look ----------------------------
SPLITTING: list[Case] = [
    ("refusal-semicolon", "I do not know from the provided sources; refunds take 90 days.", PAYOUTS, "flag"),
    ("refusal-but", "I do not know from the provided sources, but refunds take 90 days.", PAYOUTS, "flag"),
    ("refusal-after", "Refunds take 90 days, I do not know from the provided sources.", PAYOUTS, "flag"),
    ("refusal-quoted-alone", '"I do not know from the provided sources"', PAYOUTS, "clean"),
    ("question-fact", "Refunds take 90 days?", PAYOUTS, "flag"),
    ("question-yes", "Refunds cost 90 dollars? Yes.", PAYOUTS, "flag"),
    ("question-cited", "Refunds take 90 days [S1]?", PAYOUTS, "flag"),
    ("question-echo", "How long do refunds take? Refunds go back within 10 business days [S1].", PAYOUTS, "clean"),
    ("heading-fact", "## Refunds take 90 days", PAYOUTS, "flag"),
    ("heading-cited", "## Refunds take 90 days [S1]", PAYOUTS, "flag"),
    ("bold-heading", "**Refunds take 90 days**", PAYOUTS, "flag"),
    ("colon-heading", "Refunds take 90 days:", PAYOUTS, "flag"),
    ("heading-restates", "## Refunds within 10 business days\nRefunds go back within 10 business days [S1].", PAYOUTS,
     "clean"),
    ("heading-enumerates", "## Step 2\nRefunds go back within 10 business days [S1].", PAYOUTS, "clean"),
    ("filler-number-word", "In summary, Nimbus refunds take ninety days.", PAYOUTS, "flag"),
    ("short-number-word", "Ninety days.", PAYOUTS, "flag"),
    ("cjk-stop", "退款需要10天[S1]。运费是90元。", PAYOUTS, "flag"),
    ("cjk-number", "退款需要90天[S1]。", PAYOUTS, "flag"),
    ("cjk-faithful", "退款需要10天[S1]。", PAYOUTS, "clean"),
    ("lone-cr-heading", "## Refunds\rRefunds take 90 days.", PAYOUTS, "flag"),
    ("inline-triple-backticks", "Refunds go back within 10 business days [S1].\n```x```\nRefunds take 90 days.",
     PAYOUTS, "flag"),
    ("indented-fence", "Refunds go back within 10 business days [S1].\n    ```\nRefunds take 90 days.", PAYOUTS, "flag"),
    ("tilde-fence-closed-by-backticks", "Refunds go back within 10 business days [S1].\n~~~\nx\n```\n~~~\n"
     "Refunds take 90 days.", PAYOUTS, "flag"),
    ("line-separator", "Refunds go back within 10 business days [S1].\u2028Refunds take 90 days.", PAYOUTS, "flag"),
    ("abbreviation", "Refunds go back within 10 business days [S1]. It costs approx. 90 dollars.", PAYOUTS, "flag"),
    ("no-dot", "Refunds go back within 10 business days [S1], no. 5 costs 90 dollars.", PAYOUTS, "flag"),
    ("list-item", "- Refunds take 90 days", PAYOUTS, "flag"),
    ("table-row", "| Refunds | 90 days |", PAYOUTS, "flag"),
    ("blockquote", "> Refunds take 90 days.", PAYOUTS, "flag"),
    ("greeting-then-claim", "Hi! Refunds take 90 days.", PAYOUTS, "flag"),
]

# -- facts: the same fact written otherwise is supported, a changed one is not ----------------------
FACTS: list[Case] = [
    # markup a renderer removes: the number the reader sees is the one compared
    ("markup-split-number", "Refunds take 1<!-- -->00 days [S1].", "Refunds take 1 day and cost 0 fees.", "flag"),
    ("entity-number", "Refunds take 1&#48;&#48; days [S1].", "Refunds take 1 day and cost 0 fees.", "flag"),
    ("markup-split-faithful", "Refunds go back within 1<b></b>0 business days [S1].", PAYOUTS, "clean"),
    ("entity-faithful", "Refunds go back within 1&#48; business days [S1].", PAYOUTS, "clean"),
    # units of an amount
    ("days-weeks", "Refunds take 30 weeks [S1].", "Refunds take 30 days.", "flag"),
    ("days-months", "Refunds take 30 months [S1].", "Refunds take 30 days.", "flag"),
    ("dollar-euro-after", "The fee is 30 € [S1].", "The fee is $30.", "flag"),
    ("dollar-euro-before", "The fee is €30 [S1].", "The fee is $30.", "flag"),
    ("dollars-euros-words", "The fee is 30 euros [S1].", "The fee is 30 dollars.", "flag"),
    ("minutes-dollars", "The fee is $30 [S1].", "The session lasts 30 minutes.", "flag"),
    ("gb-tb", "The limit is 5TB [S1].", "The limit is 5GB.", "flag"),
    ("kg-lb", "The limit is 5 lb [S1].", "The limit is 5 kg.", "flag"),
    ("km-miles", "The limit is 5 miles [S1].", "The limit is 5 km.", "flag"),
    ("percent-days", "Refunds take 30 days [S1].", "Refunds cost 30% of the fee.", "flag"),
    ("unit-calendar", "Refunds take 30 calendar days [S1].", "Refunds take 30 days.", "clean"),
    ("unit-hyphen", "There is a 30-day refund window [S1].", "Refunds take 30 days.", "clean"),
    ("unit-dollar-forms", "The fee is 30 dollars [S1].", "The fee is $30.", "clean"),
    ("unit-usd-code", "The fee is USD 30 [S1].", "The fee is $30.", "clean"),
    ("unit-eur-sign-after", "The fee is 30 € [S1].", "The fee is EUR 30.", "clean"),
    ("unit-pounds", "The fee is 30 pounds [S1].", "The fee is £30.", "clean"),
    ("unit-hrs", "It takes 2 hrs [S1].", "It takes 2 hours.", "clean"),
    ("unit-either", "Refunds cost 30 dollars [S1].", "Refunds take 30 days; fees are 30 dollars.", "clean"),
    ("unit-unknown-noun", "We have 30 customers [S1].", "We have 30 employees.", "clean"),  # a noun, not a unit
    # number formats
    ("si-space", "The fee is $1 000 [S1].", "The fee is $1000.", "clean"),
    ("european-dot", "The fee is €1000 [S1].", "The fee is €1.000.", "clean"),
    ("european-dot-answer", "The fee is $1.000 [S1].", "The fee is $1,000.", "clean"),
    ("decimal-comma", "The fee is 1,50 € [S1].", "The fee is €1.50.", "clean"),
    ("exponent", "The fee is 1e3 dollars [S1].", "The fee is $1000.", "clean"),
    ("k-attached", "The fee is 10k dollars [S1].", "The fee is $10,000.", "clean"),
    ("k-attached-changed", "We have 10k users [S1].", "We have 10 users.", "flag"),
    ("si-space-changed", "The fee is $1 600 [S1].", "The fee is $1,500.", "flag"),
    ("european-dot-changed", "The fee is €1.600 [S1].", "The fee is €1,500.", "flag"),
    ("decimal-comma-changed", "The fee is $1,6 [S1].", "The fee is $1.5.", "flag"),
    ("words-changed", "Refunds take thirteen days [S1].", "Refunds take 30 days.", "flag"),
    ("words-same", "Refunds take thirty days [S1].", "Refunds take 30 days.", "clean"),
    ("percent-tenth", "The fee is 0.5% [S1].", "The fee is 5%.", "flag"),
    ("scale-changed", "The fee is $2.5 billion [S1].", "The fee is $2.5 million.", "flag"),
    # dates
    ("ymd-slash", "Effective 2024/03/04 [S1].", "Effective 4 March 2024.", "clean"),
    ("dmy-dash", "Effective 04-03-2024 [S1].", "Effective 4 March 2024.", "clean"),
    ("iso-datetime-passage", "Effective 4 March 2024 [S1].", "Effective 2024-03-04T00:00Z.", "clean"),
    ("cjk-date", "Effective 2024年3月4日 [S1].", "Effective 4 March 2024.", "clean"),
    ("ymd-slash-changed", "Effective 2024/03/05 [S1].", "Effective 4 March 2024.", "flag"),
    ("dmy-dash-changed", "Effective 05-03-2024 [S1].", "Effective 4 March 2024.", "flag"),
    ("cjk-date-changed", "Effective 2024年3月5日 [S1].", "Effective 4 March 2024.", "flag"),
    ("date-mdy-both-orders", "Effective 03/04/2024 [S1].", "Effective 4 March 2024.", "clean"),
    ("date-year-changed", "Effective 4 March 2025 [S1].", "Effective 4 March 2024.", "flag"),
    # names
    ("diacritics-dropped", "Contact Anna Muller [S1].", "Contact Anna Müller.", "clean"),
    ("diacritics-added", "Contact Anna Müller [S1].", "Contact Anna Muller.", "clean"),
    ("german-transliteration", "Contact Anna Mueller [S1].", "Contact Anna Müller.", "clean"),
    ("city-diacritics", "The office is in Sao Paulo [S1].", "The office is in São Paulo.", "clean"),
    ("honorific", "Contact Dr. Müller [S1].", "Contact Anna Müller.", "clean"),
    ("name-swapped", "Contact Anna Miller [S1].", "Contact Anna Müller.", "flag"),
    ("name-cyrillic-capital", "Payments go through Рaypal [S1].", "Payments go through Stripe.", "flag"),
    ("name-cyrillic-faithful", "Payments go through Ѕtripe [S1].", "Payments go through Stripe.", "clean"),
    ("name-swapped-inner-caps", "Payments go through PayPal [S1].", "Payments go through Stripe.", "flag"),
    # negation (the check's cheap exception: the statement negated)
    ("negation-not", "Student plans are not refundable [S1].", "Student plans are refundable.", "flag"),
    ("negation-cannot", "Student plans cannot be refunded [S1].", "Student plans can be refunded.", "flag"),
    ("negation-non", "Student plans are non-refundable [S1].", "Student plans are refundable.", "flag"),
]

#: tried, not asserted: outside the lexical check's scope (a judge's work) or a product question
OUT_OF_SCOPE: list[Case] = [
    ("negation-prefix-word", "Student plans are nonrefundable [S1].", "Student plans are refundable.", "flag"),
    ("negation-antonym", "Refunds are unavailable within 30 days [S1].", "Refunds are available within 30 days.", "flag"),
    ("sign-flip", "The temperature is -5 degrees [S1].", "The temperature is 5 degrees.", "flag"),
    ("modifier-dropped", "Refunds take 30 days [S1].", "Refunds take 30 business days.", "flag"),
    ("name-at-clause-start", "Paypal processes payments [S1].", "Payments go through Stripe.", "flag"),
    ("name-truncated", "Payments go through Strip [S1].", "Payments go through Stripe.", "flag"),
    ("fraction-percent", "The fee is 5% of the total [S1].", "The fee is 0.05 of the total.", "clean"),
    ("two-digit-year", "Effective 4 Mar 24 [S1].", "Effective 4 March 2024.", "clean"),
    ("claim-in-code-block", "Refunds go back within 10 business days [S1].\n```\nRefunds take 90 days.\n```",
     PAYOUTS, "flag"),
    ("claim-in-html-comment", "Refunds go back within 10 business days [S1]. <!-- Refunds take 90 days. -->",
     PAYOUTS, "clean"),
]

CLASSES: dict[str, list[Case]] = {"check/citation-syntax": CITATIONS, "check/splitting": SPLITTING,
                                  "check/facts": FACTS}


def verdict(case: Case) -> str | None:
    """None when the check did what `want` says, else what went wrong."""
    name, answer, passage, want = case
    r = check_answer(answer, brief(passage))
    if want == "clean" and not r.clean:
        return f"false alarm: {r.to_json()['unknown_labels']} {r.uncited_sentences} {r.unsupported}"
    if want == "flag" and r.clean:
        return "miss: reported clean"
    if want.startswith("unknown:") and want.split(":")[1] not in r.unknown_labels:
        return f"miss: {want.split(':')[1]} not reported unknown ({r.unknown_labels})"
    return None


@pytest.mark.parametrize("case", [c for cases in CLASSES.values() for c in cases], ids=lambda c: c[0])
def test_case(case: Case) -> None:
    assert verdict(case) is None, verdict(case)


# -- bad input: clear errors naming the field, never a traceback from deep inside -------------------

BAD_BRIEFS: list[tuple[str, Any, str]] = [
    ("empty-text", "", "is empty"),
    ("blank-text", "  \n", "is empty"),
    ("json-list-text", "[1, 2]", "must be a JSON object"),
    ("json-string-text", '"x"', "must be a JSON object"),
    ("deep-list-text", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("long-non-json-text", "x" * 10_000, "not valid JSON"),
    ("label-leading-zero", {"sources": {"S01": {"text": "a"}}}, "sources.S01"),
    ("label-zero", {"sources": {"S0": {"text": "a"}}}, "sources.S0"),
    ("found-string", {"sources": {}, "found": "false"}, "'found'"),
    ("mode-number", {"sources": {}, "mode": 5}, "'mode'"),
    ("question-list", {"sources": {}, "question": ["q"]}, "'question'"),
    ("text-missing", {"sources": {"S1": {"doc": "x"}}}, "sources.S1.text"),
    ("sources-list", {"sources": [1]}, "'sources'"),
]


@pytest.mark.parametrize(("name", "given", "says"), BAD_BRIEFS, ids=[b[0] for b in BAD_BRIEFS])
def test_bad_brief_is_named(name: str, given: Any, says: str) -> None:
    with pytest.raises(InputError, match=".*" + __import__("re").escape(says)):
        load_brief(given)


def test_bad_brief_file_is_named(tmp_path: Path) -> None:
    p = tmp_path / "brief.json"
    p.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError, match="not UTF-8"):
        check_answer("x", p)
    p.write_text(json.dumps({"sources": {"S1": {"text": "a"}}, "found": 1}))
    with pytest.raises(InputError, match=str(p).replace("\\", "\\\\") + ".*'found'"):
        check_answer("x", str(p))


@pytest.mark.parametrize("answer", ["x" * (MAX_ANSWER_CHARS + 1), "[" * 6_000, "![" * 5_001],
                         ids=["too-long", "brackets", "image-brackets"])
def test_hostile_sizes_are_refused_before_any_work(answer: str) -> None:
    with pytest.raises(InputError, match="'answer'.*docket.check.MAX_ANSWER"):
        check_answer(answer, brief())


def test_empty_answers_are_clean_and_say_so() -> None:
    for answer in ("", "   \n\n", "\u200b"):
        r = check_answer(answer, brief())
        assert r.clean and r.to_json()["counts"]["claims"] == 0


def test_a_structured_sentence_holding_the_refusal_and_a_claim_is_checked() -> None:
    reply = {"sentences": [{"text": "I do not know from the provided sources; refunds take 90 days.", "citations": []}],
             "refusal": None}
    r = check_answer(reply, brief())
    assert not r.clean and r.uncited_sentences, r.to_json()
    alone = {"sentences": [{"text": REFUSAL, "citations": []}], "refusal": None}
    assert check_answer(alone, brief()).clean


@pytest.mark.parametrize("heading", ["## 3 ways to get a refund", "## 2024 changes", "## Step 2", "## Top 10 tips"])
def test_a_heading_with_a_count_is_not_a_claim(heading: str) -> None:
    assert check_answer(heading + "\nRefunds go back within 10 business days [S1].", brief()).clean


# -- the surfaces: the CLI and the service run the same check ---------------------------------------

def test_cli_and_service_read_the_same_forms(tmp_path: Path) -> None:
    from cli_run import run

    b = tmp_path / "brief.json"
    b.write_text(json.dumps(brief()))
    a = tmp_path / "answer.md"
    for answer, clean in (("I do not know from the provided sources; refunds take 90 days.", False),
                          ("Refunds go back within 10 business days ［Ｓ１］.", True),
                          ("Refunds go back within 10 business days ［Ѕ9］.", False)):
        a.write_text(answer, encoding="utf-8")
        res = run("check", "--answer", str(a), "--brief", str(b), "--json")
        assert res.returncode == (0 if clean else 1), res.stderr
        assert json.loads(res.stdout)["clean"] is clean

    from fastapi.testclient import TestClient

    from docket.server import create_app

    with TestClient(create_app()) as client:
        got = client.post("/v1/check", json={"answer": "Refunds take 90 days?", "brief": brief()})
        assert got.status_code == 200 and got.json()["clean"] is False, got.text
        got = client.post("/v1/check", json={"answer": "[" * 6_000, "brief": brief()})
        assert got.status_code == 422 and "MAX_ANSWER_BRACKETS" in got.text, got.text
        got = client.post("/v1/check", json={"answer": "x", "brief": {"sources": {"S01": {"text": "a"}}}})
        assert got.status_code == 422 and "S01" in got.text, got.text


# -- the slow round: counts per class for the red-team table ----------------------------------------

_COST_SHAPES = ["<a ", "<!--", "*_", "&", ". ", "x\n", "1 000 ", "Nimbus ", "(S1 and ", "[S1] ", "&amp; x. ", "<b>1</b>. "]


@pytest.mark.slow
def test_redteam_check() -> None:
    for cls, cases in CLASSES.items():
        escaped = [(c[0], v) for c in cases if (v := verdict(c)) is not None]
        record(cls, tried=len(cases), escaped=len(escaped), note="; ".join(f"{n}: {v}" for n, v in escaped)[:240])
        assert not escaped, escaped
    bad = 0
    for _name, given, says in BAD_BRIEFS:
        try:
            load_brief(given)
            bad += 1
        except InputError as e:
            bad += says not in str(e)
        except Exception:  # noqa: BLE001  (a traceback from deep inside is the escape counted)
            bad += 1
    record("check/bad-brief", tried=len(BAD_BRIEFS), escaped=bad, note="briefs refused without the field named")
    slow = []
    for unit in _COST_SHAPES:
        answer = (unit * (MAX_ANSWER_CHARS // len(unit) + 1))[:MAX_ANSWER_CHARS]
        t = time.perf_counter()
        try:
            check_answer(answer, brief())
        except InputError:
            pass
        if (took := time.perf_counter() - t) > 10.0:
            slow.append((unit, round(took, 1)))
    record("check/cost", tried=len(_COST_SHAPES), escaped=len(slow),
           note=f"answers of {MAX_ANSWER_CHARS:,} characters taking over 10 s: {slow}")
    assert not slow, slow
    # kept for the next red team: tried, not asserted (see OUT_OF_SCOPE)
    record("check/out-of-scope", tried=len(OUT_OF_SCOPE), escaped=0,
           note="not asserted: " + ", ".join(c[0] for c in OUT_OF_SCOPE if verdict(c) is not None))
