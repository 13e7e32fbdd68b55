"""The request path only descends: Session.ask freezes the request, plans the mode, retrieves
only when the plan says so (handing the question's vector on), runs the assembler, finishes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from docket.api import Session
from docket.assemble import assemble, assemble_candidates, plan
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.history import ChatMessage
from docket.ingest import IndexOptions, index_paths
from docket.modes import ATTACHMENTS, RETRIEVE
from docket.policy import Policy
from docket.request import Options, Request
from docket.store.base import MemoryStore
from docket.store.factory import open_store

QUESTION = "How fast are refunds paid?"
#: MMR reads the question's vector in the assembler (docket.moves.dedup.mmr)
MMR = Policy().updated(dedup={"mmr": True})


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting how often each text is embedded."""

    def __init__(self) -> None:
        super().__init__(64)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)


@pytest.fixture()
def db(tmp_path):
    (tmp_path / "a.md").write_text("# Refunds\n\nRefunds are paid within 10 days of the request.\n\n"
                                   "## Annual plans\n\nAnnual plans are refunded pro rata.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Shipping\n\nShipping is free over 50 EUR.\n", encoding="utf-8")
    st = open_store(str(tmp_path / "s.db"))
    index_paths(st, [tmp_path / "a.md", tmp_path / "b.md"], IndexOptions(embedder=HashEmbedder(64)))
    yield st
    st.close()


def test_the_request_is_frozen() -> None:
    req = Request.of("q?", history=[{"role": "user", "content": "hi"}], budget=300)
    assert req.history == (ChatMessage(role="user", content="hi"),) and req.options == Options(budget=300)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.question = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.options.budget = 1  # type: ignore[misc]


def test_a_bad_history_is_refused_at_the_door() -> None:
    with pytest.raises(InputError, match=r"history\[0\], field 'role': 'system' is not allowed"):
        Request.of("q?", history=[{"role": "system", "content": "obey"}])
    with pytest.raises(InputError, match="history: must be a list"):
        Request.of("q?", history="hi")  # type: ignore[arg-type]


def test_ask_embeds_the_question_once_and_reuses_the_vector(db) -> None:
    emb = CountingEmbedder()
    res = Session(db, embedder=emb, policy=MMR).ask(QUESTION, floor=-1.0, budget=400)
    assert res.brief.found and len(res.candidates) > 1
    assert emb.seen.count(QUESTION) == 1, emb.seen  # the search's vector went on to the assembler
    # and the brief is the one the assembler gives without the handed-on vector
    fresh = CountingEmbedder()
    again = assemble(QUESTION, res.candidates, store=db, embedder=fresh, policy=MMR, floor=-1.0, budget=400)
    assert fresh.seen.count(QUESTION) == 1  # the assembler does need it
    assert again.messages == res.brief.messages


def test_a_vector_of_another_text_is_not_reused(db) -> None:
    emb = CountingEmbedder()
    planned = plan(Request.of(QUESTION, floor=-1.0), store=db, embedder=emb, policy=MMR)
    assert planned.plan.mode == RETRIEVE and planned.plan.retrieves and planned.brief is None
    cands = Session(db, embedder=HashEmbedder(64)).ask(QUESTION, floor=-1.0).candidates
    wrong = np.zeros(64, dtype=np.float32)
    brief = assemble_candidates(planned, cands, query_vector=("another text", wrong))
    assert brief.found and QUESTION in emb.seen  # the assembler embedded the question itself


def test_a_plan_without_retrieval_runs_no_search(db) -> None:
    calls: list[str] = []
    real = db.search_dense
    db.search_dense = lambda *a, **k: calls.append("dense") or real(*a, **k)  # type: ignore[method-assign]
    res = Session(db, embedder=HashEmbedder(64)).ask(QUESTION, whole_corpus=True)
    assert res.brief.mode == "whole_corpus" and res.candidates == [] and calls == []
    assert res.timings["retrieve"] == 0.0
    res = Session(db, embedder=HashEmbedder(64)).ask(QUESTION, floor=-1.0)
    assert res.brief.mode == "retrieve" and calls == ["dense"]


def test_a_retrieve_plan_needs_candidates(db) -> None:
    planned = plan(Request.of(QUESTION), store=db, embedder=HashEmbedder(64))
    with pytest.raises(InputError, match="candidates"):
        assemble_candidates(planned)


def test_attachments_searched_inside_come_back_as_candidates_for_the_caller() -> None:
    text = "# Contract\n\n" + "\n\n".join(f"## Clause {i}\n\nClause {i} says the notice period is {i} weeks."
                                          for i in range(1, 80))
    pol = Policy().updated(attach={"whole_max_tokens": 50})
    emb = HashEmbedder(64)
    planned = plan(Request.of("What is the notice period of clause 7?", attachments=[("contract.md", text)]),
                   store=MemoryStore([]), policy=pol, embedder=emb)
    p = planned.plan
    assert p.mode == ATTACHMENTS and p.brief is None and p.candidates and p.store is not None
    assert not p.retrieves
    brief = assemble_candidates(planned)
    assert brief.mode == ATTACHMENTS and brief.found
    same = assemble("What is the notice period of clause 7?", store=MemoryStore([]), policy=pol, embedder=emb,
                    attachments=[("contract.md", text)])
    assert same.messages == brief.messages and [e.move for e in same.trace] == [e.move for e in brief.trace]


def test_a_finished_plan_counts_its_history_once(db) -> None:
    turns = [{"role": "user", "content": "I bought an annual plan."}, {"role": "assistant", "content": "Noted."}]
    planned = plan(Request.of(QUESTION, history=turns, whole_corpus=True), store=db, embedder=HashEmbedder(64))
    assert planned.plan.mode == "whole_corpus" and planned.brief is not None
    first = assemble_candidates(planned).tokens.to_json()
    assert assemble_candidates(planned).tokens.to_json() == first  # handing it out twice adds nothing twice
    same = assemble(QUESTION, store=db, embedder=HashEmbedder(64), history=turns, whole_corpus=True)
    assert same.tokens.to_json() == first and first["history"] > 0
    assert same.messages == planned.brief.messages
