"""docket.rescore: title, lexical and link signals; untrusted text earns nothing; floor scale kept."""

from __future__ import annotations

import pytest

from docket.assemble import assemble, rank_by_cosine
from docket.context import Context
from docket.demo import REFUND_QUESTION
from docket.embed import HashEmbedder
from docket.model import Candidate, parse_chunk
from docket.policy import Policy
from docket.rescore import bm25_scores, rescore, title_match
from docket.tokens import WordCounter


def cand(cid, text, score, rank, title="", **kw):
    return Candidate(parse_chunk({"id": cid, "doc": cid, "text": text, "title": title, **kw}), score, rank)


def ctx(question, **rescore_kw):
    pol = Policy().updated(rescore={"enabled": True, **rescore_kw})
    return Context(question=question, store=None, policy=pol, counter=WordCounter())  # type: ignore[arg-type]


def test_title_match():
    assert title_match("Kiss and Tell (1945 film)", "the woman who portrayed Corliss Archer in the film Kiss and Tell?") == 1.0
    assert title_match("Arthur's Magazine", "Which was started first, Arthur's Magazine or First for Women?") == 1.0
    assert title_match("Shirley Temple", "Who portrayed Corliss Archer?") == 0.0
    # half the title's content words: (1/2)^2
    assert title_match("Nimbus policy", "What is the Nimbus refund rule?") == pytest.approx(0.25)
    assert title_match("", "anything") == 0.0


def test_bm25_prefers_rare_matching_words():
    docs = ["the cat sat", "zyx the dog", "the the the"]
    s = bm25_scores("zyx dog", docs)
    assert s[1] > 0 and s[0] == 0 and s[2] == 0


def test_title_named_in_question_moves_up_and_score_stays_on_cosine_scale():
    cands = [
        cand("a", "A paragraph about something else entirely.", 0.60, 1, title="Other"),
        cand("b", "Started in 1844 in Philadelphia.", 0.50, 2, title="Arthur's Magazine"),
    ]
    out = rescore(cands, ctx("When was Arthur's Magazine started?", lexical_weight=0.0, link_weight=0.0))
    assert [c.chunk.id for c in out] == ["b", "a"]
    assert [c.rank for c in out] == [1, 2]
    b = out[0]
    assert b.score == pytest.approx(0.50 + Policy().rescore.title_weight)  # cosine + title_weight * 1.0
    assert out[1].score == pytest.approx(0.60)  # no extra evidence: the cosine unchanged


def test_link_from_a_top_passage_promotes_the_bridge():
    cands = [
        cand("film", "Kiss and Tell stars Shirley Temple as Corliss Archer.", 0.7, 1, title="Kiss and Tell (1945 film)"),
        cand("noise1", "A radio programme about Corliss Archer.", 0.6, 2, title="Meet Corliss Archer"),
        cand("noise2", "Another actress from the radio era.", 0.5, 3, title="Janet Waldo"),
        cand("bridge", "She later served as Chief of Protocol.", 0.4, 4, title="Shirley Temple"),
    ]
    q = "What position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
    on = rescore(cands, ctx(q, lexical_weight=0.0, link_top=1))
    off = rescore(cands, ctx(q, lexical_weight=0.0, link_weight=0.0))
    assert [c.chunk.id for c in on].index("bridge") < [c.chunk.id for c in off].index("bridge")
    assert next(c for c in on if c.chunk.id == "bridge").score == pytest.approx(0.4 + Policy().rescore.link_weight)


def test_untrusted_text_earns_no_bonus():
    cands = [
        cand("official", "Annual plans can be cancelled within 30 days.", 0.6, 1),
        cand("forum", "refund annual plan after 30 days refund refund", 0.55, 2, status="user-generated"),
    ]
    out = rescore(cands, ctx("refund on my annual plan after 30 days"))
    assert [c.chunk.id for c in out] == ["official", "forum"]
    assert out[1].score == pytest.approx(0.55)


def test_trace_records_promotions():
    c = ctx("When was Arthur's Magazine started?")
    rescore([cand("a", "x", 0.6, 1, title="Other"), cand("b", "y", 0.5, 2, title="Arthur's Magazine")], c)
    ev = [e for e in c.trace.events if e.move == "rescore"]
    assert ev and ev[0].chunks == ["b"] and "rank 2 -> 1" in ev[0].reason


def test_on_by_default_and_nimbus_refund_brief_unchanged_when_off(nimbus, nimbus_store):
    assert Policy().rescore.enabled is True
    emb = HashEmbedder()
    ranked = rank_by_cosine(REFUND_QUESTION, nimbus, emb)
    off = assemble(REFUND_QUESTION, ranked, store=nimbus_store, embedder=emb, budget=250, floor=-1.0,
                   policy=Policy().updated(rescore={"enabled": False}))
    on = assemble(REFUND_QUESTION, ranked, store=nimbus_store, embedder=emb, budget=250, floor=-1.0)
    # the forum post echoes the question's words but is untrusted: it is never promoted
    assert not any(e["move"] == "rescore" and "forum-881" in e["chunks"] for e in on.trace)
    assert on.found and off.found


def test_title_match_ignores_accents():
    assert title_match("Akinoshū Kenji", "What plane bombed Akinoshu Kenji's birthplace?") == 1.0
    assert title_match("Aschenbrödel", "the composer of Aschenbrodel") == 1.0


def test_second_link_round_follows_the_chain_one_more_hop():
    """song -> band -> city: the band is linked from the song in round 1, the city from the band in
    round 2. With one round the city stays at the bottom."""
    cands = [
        cand("song", "Brother is a song by the rock band Pearl Jam.", 0.80, 1, title="Brother (song)"),
        cand("n1", "Boston gets heavy snow in winter.", 0.70, 2, title="Boston"),
        cand("n2", "Detroit has moderate precipitation.", 0.69, 3, title="Detroit"),
        cand("n3", "Richmond is dry in late summer.", 0.68, 4, title="Richmond"),
        cand("band", "Pearl Jam is a rock band formed in 1990 in Seattle.", 0.30, 5, title="Pearl Jam"),
        cand("city", "Seattle typically receives some snowfall.", 0.30, 6, title="Seattle"),
    ]
    kw = dict(title_weight=0.0, lexical_weight=0.0, link_top=3)
    one = rescore(cands, ctx("What is the snowfall where the performers of Brother were formed?", link_rounds=1, **kw))
    two = rescore(cands, ctx("What is the snowfall where the performers of Brother were formed?", link_rounds=2, **kw))
    assert [c.chunk.id for c in one][-1] == "city"
    assert [c.chunk.id for c in two][:3] == ["song", "band", "city"]
