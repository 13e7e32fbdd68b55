from hypothesis import given, settings
from hypothesis import strategies as st

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
    ps = [P(a5, 1), P(b, 2), P(a1, 2)]  # a1 within the authority window (0.1) of a5
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


def test_best_first_never_puts_a_strangers_post_last_before_the_question():
    """Best first used to put strangers' posts last, the slot right before the question; they go
    after the official passages but before the last one, never first, never last."""
    offs = [mk(f"o{i}", doc=f"o{i}", source_type="policy") for i in range(3)]
    forum = mk("f", doc="forum", status="user-generated")
    web = mk("w", doc="web", status="user-generated")
    for mode in ("best_first", "chronological"):
        pol = Policy().updated(order={"mode": mode})
        for at in range(len(offs) + 1):
            chunks = offs[:]
            chunks.insert(at, forum)
            ps = [P(c, r) for r, c in enumerate(chunks, 1)]
            ctx = context(chunks, policy=pol)
            out = [p.first.id for p in arrange(ps, ctx)]
            assert out[0] != "f" and out[-1] != "f", (mode, at, out)
            if out != [c.id for c in chunks]:
                assert "never first or last" in ctx.trace.events[-1].reason
    ps = [P(c, r) for r, c in enumerate([forum, offs[0], web, offs[1], offs[2]], 1)]
    out = [p.first.id for p in arrange(ps, context(offs + [forum, web]))]
    assert out == ["o0", "o1", "f", "w", "o2"]


def test_best_first_with_one_official_passage_says_the_stranger_takes_the_last_slot():
    o = mk("o", doc="o")
    f = mk("f", doc="forum", status="user-generated")
    ctx = context([o, f])
    out = arrange([P(f, 1), P(o, 2)], ctx)
    assert [p.first.id for p in out] == ["o", "f"]
    assert "there is no middle" in ctx.trace.events[-1].reason


def test_a_document_group_is_placed_by_its_best_passage_and_led_by_it():
    """A document's passage far weaker than its best one (more than the authority window) does not
    take the group's first slot by document order: the best passage leads, the rest follow in
    document order (the Nimbus demo put "Monthly plans", 0.49, ahead of the 0.91 answer)."""
    a_weak = mk("a2", doc="A", position=2)
    a_near = mk("a3", doc="A", position=3)
    a_best = mk("a7", doc="A", position=7)
    a_tail = mk("a9", doc="A", position=9)
    b = mk("b", doc="B")
    ps = [Passage(chunks=(a_best,), score=1.13, rank=1, hits=("a7",)),
          Passage(chunks=(b,), score=0.9, rank=2, hits=("b",)),
          Passage(chunks=(a_near,), score=1.05, rank=3, hits=("a3",)),
          Passage(chunks=(a_tail,), score=0.6, rank=4, hits=("a9",)),
          Passage(chunks=(a_weak,), score=0.5, rank=5, hits=("a2",))]
    ctx = context([a_weak, a_near, a_best, a_tail, b])
    out = [p.first.id for p in arrange(ps, ctx)]
    assert out == ["a3", "a7", "a2", "a9", "b"]
    assert "a2 (0.50) after a7 (1.13), the best passage of A" in ctx.trace.events[-1].reason
    # a group stands where its best passage stands: B's 1.2 goes ahead of A's whole group
    ps[1] = ps[1].with_(score=1.2, rank=0)
    out = [p.first.id for p in arrange(ps, context([a_weak, a_near, a_best, a_tail, b]))]
    assert out == ["b", "a3", "a7", "a2", "a9"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9), st.booleans(),
                          st.floats(0.0, 2.0, allow_nan=False)), min_size=1, max_size=8),
       st.sampled_from(["best_first", "edges", "chronological"]))
def test_order_is_a_permutation_and_strangers_avoid_the_ends(spec, mode):
    chunks, ps = [], []
    for i, (doc, pos, stranger, score) in enumerate(spec):
        c = mk(f"c{i}", doc=f"f{doc}" if stranger else f"d{doc}", position=pos * 10 + i,
               status="user-generated" if stranger else "current")
        chunks.append(c)
        ps.append(Passage(chunks=(c,), score=score, rank=i + 1, hits=(c.id,)))
    out = arrange(ps, context(chunks, policy=Policy().updated(order={"mode": mode})))
    assert sorted(p.first.id for p in out) == sorted(c.id for c in chunks)
    official_docs = {c.doc for c in chunks if not c.untrusted}
    if len(official_docs) >= 2:
        assert not out[0].untrusted and not out[-1].untrusted
    for doc in {c.doc for c in chunks}:  # one document's passages stay together
        at = [i for i, p in enumerate(out) if p.doc == doc]
        assert at == list(range(at[0], at[0] + len(at)))
