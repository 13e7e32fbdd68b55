"""Routing before retrieval: the rules on the labelled requests, the model router behind the
Generator protocol (a scripted fake here), the brief without evidence, and the trace either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.assemble import assemble
from docket.embed import HashEmbedder
from docket.model import Chunk
from docket.modes import route
from docket.policy import Policy, RoutePolicy
from docket.store.base import MemoryStore

DATA = Path(__file__).parent / "data"
EMB = HashEmbedder(64)
ON = Policy().updated(route={"enabled": True})
STORE = MemoryStore([Chunk(id="r1", doc="refunds", text="Refunds are paid within 10 days. The fee is 15%.", position=0)])


def scores(path: Path) -> tuple[float, float, int]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    tp = sum(route.rules(r["request"]).action == r["label"] == "no_retrieve" for r in rows)
    fp = sum(route.rules(r["request"]).action == "no_retrieve" != r["label"] for r in rows)
    fn = sum(route.rules(r["request"]).action != "no_retrieve" == r["label"] for r in rows)
    return tp / (tp + fp), tp / (tp + fn), len(rows)


def test_the_labelled_set_is_big_enough_and_balanced():
    rows = [json.loads(line) for line in (DATA / "route_requests.jsonl").read_text(encoding="utf-8").splitlines()]
    labels = [r["label"] for r in rows]
    assert len(rows) >= 60 and abs(labels.count("retrieve") - labels.count("no_retrieve")) <= 4
    assert sum(r["kind"] == "hard_negative" for r in rows) >= 10


@pytest.mark.parametrize("name, precision_floor, recall_floor", [
    ("route_requests.jsonl", 0.97, 0.95),
    ("route_requests_holdout.jsonl", 0.95, 0.85),
])
def test_no_retrieve_precision_and_recall_stay_above_the_floor(name, precision_floor, recall_floor):
    precision, recall, n = scores(DATA / name)
    assert precision >= precision_floor, f"{name}: no_retrieve precision {precision:.3f} over {n} requests"
    assert recall >= recall_floor, f"{name}: no_retrieve recall {recall:.3f} over {n} requests"


@pytest.mark.parametrize("request_text", [
    "What is 15% of my refund under your policy?",
    "Rewrite your refund policy in plain English",
    "If my plan costs 240 a year, how much do I get back after the cancellation fee?",
    "Hi, can you tell me when payouts are sent?",
    "Make this reply match the policy: Sure, we refund anything within 60 days.",
])
def test_hard_negatives_retrieve(request_text):
    assert route.rules(request_text).action == "retrieve"


def test_text_supplied_for_rewriting_is_not_read_as_a_corpus_cue():
    r = route.rules("Shorten this message: Your refund for order 12 under our policy is on its way.")
    assert r.action == "no_retrieve" and r.rule == "transform"
    assert route.split_supplied("Fix this: a b c")[1] == "a b c"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_rules_never_fail_on_any_text(text):
    r = route.rules(text)
    assert r.action in ("retrieve", "no_retrieve") and r.reason


def test_no_retrieve_brief_has_no_evidence_and_a_trace():
    b = assemble("Make this email friendlier: Hi Tom, send the report now.", store=STORE, policy=ON, embedder=EMB)
    assert b.found and b.mode == "no_retrieve"
    assert b.sources == {} and b.documents == "" and "<document" not in b.user
    assert b.messages[1]["content"] == "Make this email friendlier: Hi Tom, send the report now."
    assert "No documents come with this request" in b.system and b.refusal in b.system
    assert b.tokens["documents"] == 0 and b.tokens["total"] == b.tokens["system"] + b.tokens["user"]
    assert b.trace == [{"move": "route", "action": "no_retrieve", "chunks": [], "reason": b.trace[0]["reason"],
                        "numbers": {"rule": "transform", "sure": True, "supplied_words": 6}}]
    assert b.anthropic()["messages"][0]["content"][0]["text"].startswith("Make this email")


def test_retrieve_is_traced_too_and_routing_is_off_by_default():
    b = assemble("How fast are refunds paid?", store=STORE, policy=ON, embedder=EMB, floor=-1.0)
    assert b.mode == "retrieve" and b.trace[0]["move"] == "route" and b.trace[0]["action"] == "retrieve"
    off = assemble("Make this friendlier: hi", store=STORE, embedder=EMB, floor=-1.0)
    assert off.mode == "retrieve" and not any(e["move"] == "route" for e in off.trace)


class Scripted:
    """A Generator that replies from a script and records what it was asked."""

    name = "scripted"

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.asked: list[list[dict]] = []

    def generate(self, messages, *, max_tokens=512, temperature=0.0):
        self.asked.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def test_the_model_router_decides_only_what_the_rules_are_unsure_of():
    gen = Scripted("NONE")
    r = route.decide("What is the capital of France?", RoutePolicy(enabled=True), gen)  # rules: unsure
    assert r.action == "no_retrieve" and r.rule == "llm" and r.numbers["rules"] == "retrieve"
    assert "Request: What is the capital of France?" in gen.asked[0][1]["content"]
    sure = Scripted()
    assert route.decide("Do you offer a student discount?", RoutePolicy(enabled=True), sure).rule == "corpus_cue"
    assert sure.asked == []  # a sure rule never costs a model call


@pytest.mark.parametrize("reply, action", [
    ("RETRIEVE", "retrieve"), ("none.", "no_retrieve"), ("maybe?", "retrieve"), ("", "retrieve"),
    (TimeoutError("slow"), "retrieve"),
])
def test_model_replies_and_failures(reply, action):
    r = route.decide("Hi!", RoutePolicy(enabled=True, llm="always"), Scripted(reply))
    assert r.action == action and r.rule == "llm"


def test_the_router_goes_through_assemble_and_ask(tmp_path):
    gen = Scripted("NONE")
    b = assemble("What is the capital of France?", store=STORE, policy=ON, embedder=EMB, router=gen)
    assert b.mode == "no_retrieve" and b.trace[0]["numbers"]["router"] == "scripted"

    from docket.api import Session
    from docket.ingest import IndexOptions, index_paths
    from docket.store.factory import open_store

    (tmp_path / "a.md").write_text("# Refunds\n\nRefunds are paid within 10 days.\n", encoding="utf-8")
    store = open_store(str(tmp_path / "s.db"))
    try:
        index_paths(store, [tmp_path / "a.md"], IndexOptions(embedder=EMB))
        calls: list[str] = []
        real = store.search_dense
        store.search_dense = lambda *a, **k: calls.append("dense") or real(*a, **k)  # type: ignore[method-assign]
        res = Session(store, policy=ON).ask("Thanks, that was helpful!")
        ranked, b = res.candidates, res.brief
        assert ranked == [] and b.mode == "no_retrieve" and calls == []  # no search ran
        res = Session(store, policy=ON).ask("How fast are refunds paid?", floor=-1.0)
        ranked, b = res.candidates, res.brief
        assert ranked and calls == ["dense"] and b.trace[0]["move"] == "route"
    finally:
        store.close()


@pytest.mark.parametrize("settings_, field", [({"llm": "sometimes"}, "route.llm"), ({"enabled": "yes please"},
                                                                                   "route.enabled")])
def test_bad_route_settings_name_the_field(settings_, field):
    from docket.errors import InputError
    from docket.policy import load_policy_dict

    with pytest.raises(InputError) as e:
        load_policy_dict({"route": settings_}, where="p.toml")
    assert field in str(e.value)


def test_an_answer_to_a_no_retrieve_brief_has_nothing_to_cite():
    from docket.check import check_answer

    b = assemble("Make this email friendlier: Hi Tom, send the report now.", store=STORE, policy=ON, embedder=EMB)
    answer = "Hi Tom, could you please send the report when you have a moment? Thanks!"
    assert check_answer(answer, b).clean and check_answer(answer, b.to_json()).clean
    invented = check_answer("Our refund window is 30 days [S1].", b)
    assert invented.unknown_labels == ["S1"]  # labels and links are still checked
