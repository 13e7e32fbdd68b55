from docket.model import Passage
from docket.moves.order import arrange, edge_order
from docket.policy import Policy

from helpers import context, mk


def P(c, rank):
    return Passage(chunks=(c,), score=1.0 - rank / 10, rank=rank, hits=(c.id,))


def test_edge_order_matches_spec():
    assert edge_order(["U1", "U2", "U3", "U4", "U5", "U6"]) == ["U1", "U3", "U5", "U6", "U4", "U2"]
    assert edge_order(["U1", "U2", "U3", "U4", "U5"]) == ["U1", "U3", "U5", "U4", "U2"]


def test_best_first_keeps_document_passages_together_in_document_order():
    a5 = mk("a5", doc="A", position=5)
    a1 = mk("a1", doc="A", position=1)
    b = mk("b", doc="B")
    ps = [P(a5, 1), P(b, 2), P(a1, 3)]
    ctx = context([a5, a1, b])
    out = arrange(ps, ctx)
    assert [p.first.id for p in out] == ["a1", "a5", "b"]
    assert ctx.trace.events[-1].action == "reorder"


def test_edges_mode_and_chronological_mode():
    cs = [mk(f"c{i}", doc=f"d{i}", date=f"202{i}-01-01") for i in range(1, 5)]
    ps = [P(c, r) for r, c in enumerate(reversed(cs), 1)]  # c4 best ... c1 worst
    out = arrange(ps, context(cs, policy=Policy().updated(order={"mode": "edges"})))
    assert [p.first.id for p in out] == ["c4", "c2", "c1", "c3"]
    out = arrange(ps, context(cs, policy=Policy().updated(order={"mode": "chronological"})))
    assert [p.first.id for p in out] == ["c1", "c2", "c3", "c4"]


def test_untrusted_passages_go_after_official_ones():
    forum = mk("f", doc="forum", status="user-generated")
    pol = mk("p", doc="policy")
    ps = [P(forum, 1), P(pol, 2)]
    out = arrange(ps, context([forum, pol]))
    assert [p.first.id for p in out] == ["p", "f"]
    # without the untrusted rule the authority window still puts the policy first (scores 0.9 and
    # 0.8 are within 0.1); with a zero window the order is the ranker's
    out = arrange(ps, context([forum, pol], policy=Policy().updated(order={"untrusted_last": False})))
    assert [p.first.id for p in out] == ["p", "f"]
    flat = Policy().updated(order={"untrusted_last": False}, versions={"authority_window": 0.0})
    out = arrange(ps, context([forum, pol], policy=flat))
    assert [p.first.id for p in out] == ["f", "p"]


def test_edges_never_put_a_strangers_post_first_or_last():
    """Edge order gives the ends to the strongest evidence; a stranger's post, however well it
    ranked, goes in the middle (it used to land last, right next to the question)."""
    offs = [mk(f"o{i}", doc=f"o{i}", source_type="policy") for i in range(4)]
    forum = mk("f", doc="forum", status="user-generated")
    pol = Policy().updated(order={"mode": "edges"})
    for rank_of_forum in range(1, 6):
        chunks = offs[:]
        chunks.insert(rank_of_forum - 1, forum)
        ps = [P(c, r) for r, c in enumerate(chunks, 1)]
        ctx = context(chunks, policy=pol)
        out = [p.first.id for p in arrange(ps, ctx)]
        assert out[0] != "f" and out[-1] != "f", (rank_of_forum, out)
        assert out[0] == "o0"
        assert "never first or last" in ctx.trace.events[-1].reason
    # official passages keep the edge shape: best first, second best last
    ps = [P(c, r) for r, c in enumerate([offs[0], offs[1], forum, offs[2], offs[3]], 1)]
    assert [p.first.id for p in arrange(ps, context(offs + [forum], policy=pol))] == ["o0", "o2", "f", "o3", "o1"]


def test_edges_with_one_official_passage_says_the_stranger_must_take_the_last_slot():
    o = mk("o", doc="o")
    f = mk("f", doc="forum", status="user-generated")
    ctx = context([o, f], policy=Policy().updated(order={"mode": "edges"}))
    out = arrange([P(f, 1), P(o, 2)], ctx)
    assert [p.first.id for p in out] == ["o", "f"]
    assert "there is no middle" in ctx.trace.events[-1].reason
