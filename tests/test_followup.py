"""Chat follow-ups search with the conversation (issue 24 §1): docket.followup builds the query,
Session.ask searches with it and the trace says which query and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.followup import carry, elliptical, previous_question, rewrite, searched_query
from docket.model import Trace

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def hist(*questions: str) -> list[dict[str, str]]:
    out = []
    for q in questions:
        out += [{"role": "user", "content": q}, {"role": "assistant", "content": "As the policy says [S1]."}]
    return out


@pytest.mark.parametrize("prev, follow, query", [
    ("What is the per diem in Berlin?", "And in Paris?", "What is the per diem in Paris?"),
    ("What is the hotel allowance in New York?", "What about London?", "What is the hotel allowance in London?"),
    ("Can I get a refund on my annual plan?", "And for monthly plans?", "Can I get a refund on my monthly plans?"),
    ("How many days of annual leave do I get?", "What about sick leave?", "How many days of sick leave do I get?"),
    ("How do I reset my VPN password?", "And if it is locked?", "How do I reset my VPN password? it is locked?"),
    ("How do I reset my VPN password?", "And?", "How do I reset my VPN password?"),
])
def test_elliptical_follow_ups_carry_the_previous_question(prev: str, follow: str, query: str) -> None:
    got = carry(follow, hist(prev))
    assert got.query == query and got.method == "carried" and got.previous == prev
    assert got.reason


@pytest.mark.parametrize("follow", ["What is the capital of France?", "And how do I reset my VPN password?",
                                    "Which laptops do engineers receive for their work?"])
def test_questions_that_stand_alone_are_searched_as_asked(follow: str) -> None:
    got = carry(follow, hist("What is the per diem in Berlin?"))
    assert got.query == follow and got.method == "as_asked"


def test_without_history_the_question_is_searched_as_asked_and_nothing_is_traced() -> None:
    trace = Trace()
    assert searched_query("And in Paris?", [], None, trace) == "And in Paris?"
    assert searched_query("And in Paris?", None, None, trace) == "And in Paris?"
    assert not trace.events


def test_a_chain_of_follow_ups_goes_back_to_the_question_they_continue() -> None:
    h = hist("What is the per diem in Berlin?", "And in Paris?")
    assert previous_question(h) == "What is the per diem in Berlin?"
    assert carry("And Rome?", h).query == "What is the per diem in Rome?"


def test_a_docket_prompt_sent_back_as_a_user_turn_counts_by_its_question() -> None:
    h = [{"role": "user", "content": "<documents>\n...\n</documents>\n\nQuestion: What is the per diem in Berlin?"},
         {"role": "assistant", "content": "EUR 42 [S1]."}]
    assert carry("And in Paris?", h).query == "What is the per diem in Paris?"


class Stub:
    name = "stub-model"

    def __init__(self, reply: Any) -> None:
        self.reply, self.calls = reply, []

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        self.calls.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return str(self.reply)


def test_a_generator_rewrites_when_configured_and_sees_the_recent_turns() -> None:
    gen = Stub("per diem rate for business trips to Paris")
    got = rewrite("And in Paris?", hist("What is the per diem in Berlin?"), gen)
    assert got.method == "generator" and got.query == "per diem rate for business trips to Paris"
    assert "stub-model" in got.reason
    assert "What is the per diem in Berlin?" in gen.calls[0][-1]["content"]


@pytest.mark.parametrize("reply, why", [
    ("", "empty"), ("line one\nline two", "several lines"), ("x" * 500, "longer than"),
    ("The per diem in Paris is EUR 45 [S1].", "cites sources"), ("per diem rates", "drops the follow-up's own words"),
    (RuntimeError("endpoint down"), "generator failed (RuntimeError)"),
])
def test_an_unusable_or_failing_generator_falls_back_to_the_carry(reply: Any, why: str) -> None:
    got = rewrite("And in Paris?", hist("What is the per diem in Berlin?"), Stub(reply))
    assert got.method == "carried" and got.query == "What is the per diem in Paris?"
    assert why in got.reason


def test_a_question_that_stands_alone_costs_no_model_call() -> None:
    gen = Stub("anything")
    assert rewrite("What is the capital of France?", hist("What is the per diem in Berlin?"), gen).method == "as_asked"
    assert not gen.calls


_WORDS = st.sampled_from(["and", "what", "about", "Paris", "plans", "the", "per", "diem", "it", "?", "monthly",
                          "refund", "Berlin", "how", "do", "I", "leave", "for", "in", "New", "York", "5", "days"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, min_size=0, max_size=10).map(" ".join), st.lists(_WORDS, min_size=1, max_size=10).map(" ".join))
def test_the_query_is_deterministic_never_empty_and_bounded(prev: str, follow: str) -> None:
    h = hist(prev) if prev.strip() else []
    a, b = carry(follow, h), carry(follow, h)
    assert a == b
    if follow.strip():
        assert a.query.strip()
    assert len(a.query) <= max(len(follow), 400)
    assert elliptical(follow) in (True, False)


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (DATA / "followup_corpus.jsonl").read_text().splitlines() if x.strip()]


def test_session_ask_searches_a_follow_up_with_the_history_and_traces_it(tmp_path: Path) -> None:
    import docket

    with docket.Session.open(tmp_path / "f.db", create=True) as s:
        s.index(records=_corpus())
        h = hist("What is the per diem in Berlin?")
        res = s.ask("And in Paris?", history=h)
        assert res.brief.found
        assert "pd-paris" in {c for src in res.brief.sources.values() for c in src.chunks}
        (ev,) = [e for e in res.brief.trace if e.move == "followup"]
        assert ev.action == "rewrite" and ev.numbers["query"] == "What is the per diem in Paris?"
        assert "names replace" in ev.reason
        # the model still reads the user's own question, after the history
        assert "Question: And in Paris?" in res.brief.messages[-1]["content"]
        res = s.ask("And for monthly plans?", history=hist("Can I get a refund on my annual plan?"))
        assert "refund-monthly" in {c for src in res.brief.sources.values() for c in src.chunks}
        # no history: searched as asked, nothing traced
        res = s.ask("What is the per diem in Paris?")
        assert not [e for e in res.brief.trace if e.move == "followup"]


def test_the_follow_up_set_is_large_enough_and_well_formed() -> None:
    convs = [json.loads(x) for x in (DATA / "followup_conversations.jsonl").read_text().splitlines() if x.strip()]
    ids = {c["id"] for c in _corpus()}
    assert len(convs) >= 30
    for c in convs:
        assert c["history"] and c["question"] and all(g in ids for g in c["gold"])


def test_assemble_over_a_store_ranks_a_follow_up_with_the_history() -> None:
    """`docket assemble --store FILE --history ...` (assemble() ranking a whole store, no
    candidates given) searches the follow-up with the conversation, as Session.ask does."""
    from docket.assemble import assemble
    from docket.model import parse_chunk
    from docket.store.base import MemoryStore

    store = MemoryStore([parse_chunk(r) for r in _corpus()])
    brief = assemble("And in Paris?", store=store, history=hist("What is the per diem in Berlin?"), budget=400)
    assert brief.found
    assert "pd-paris" in {c for src in brief.sources.values() for c in src.chunks}
    assert [e for e in brief.trace if e.move == "followup"]
    given = assemble("And in Paris?", [], store=store, history=hist("What is the per diem in Berlin?"), budget=400)
    assert not [e for e in given.trace if e.move == "followup"]  # the caller's own ranking is not re-searched
