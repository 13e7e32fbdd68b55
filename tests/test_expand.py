from docket.moves.expand import restore
from docket.policy import Policy

from helpers import context, mk, passages


def doc(n: int, section=lambda i: "S", d="p", v=1, words=5):
    return [mk(f"{d}{i}", doc=d, version=v, position=i, section=section(i), text=" ".join([f"w{i}"] * words) + ".")
            for i in range(n)]


def ids(ps):
    return [list(p.ids) for p in ps]


def test_top_hit_grows_to_neighbours_in_document_order():
    ch = doc(6)
    ctx = context(ch)
    out = restore(passages([ch[3], ch[0]]), ctx)
    assert ids(out) == [["p2", "p3", "p4"], ["p0"]]
    assert out[0].hits == ("p3",)


def test_hit_inside_span_is_absorbed_not_repeated():
    ch = doc(6)
    out = restore(passages([ch[3], ch[4]]), context(ch))
    assert ids(out) == [["p2", "p3", "p4"]]
    assert set(out[0].hits) == {"p3", "p4"}


def test_touching_expanded_spans_merge_and_overlaps_never_repeat():
    ch = doc(10)
    pol = Policy().updated(expand={"top_n": 2, "window": 1})
    out = restore(passages([ch[2], ch[5]]), context(ch, policy=pol))
    assert ids(out) == [["p1", "p2", "p3", "p4", "p5", "p6"]]
    out = restore(passages([ch[2], ch[4]]), context(ch, policy=pol))
    assert ids(out) == [["p1", "p2", "p3", "p4", "p5"]]


def test_separate_hit_next_to_a_span_stays_its_own_passage():
    ch = doc(8)
    out = restore(passages([ch[3], ch[5]]), context(ch))
    assert ids(out) == [["p2", "p3", "p4"], ["p5"]]


def test_no_expansion_across_versions_or_documents():
    v1 = doc(3, v=1)
    v2 = [mk(f"q{i}", doc="p", version=2, position=i, text=f"v2 {i}.") for i in range(3)]
    out = restore(passages([v2[1]]), context(v1 + v2))
    assert ids(out) == [["q0", "q1", "q2"]]


def test_cap_shrinks_span_around_hit():
    ch = doc(5, words=60)
    pol = Policy().updated(expand={"max_passage_tokens": 260})
    ctx = context(ch, policy=pol)
    out = restore(passages([ch[2]]), ctx)
    assert "p2" in out[0].ids and len(out[0].ids) == 2
    assert any(e.action == "cap" for e in ctx.trace.events)


def test_section_mode_and_fallback_to_window():
    ch = doc(6, section=lambda i: "A" if i < 4 else "B")
    pol = Policy().updated(expand={"mode": "section"})
    assert ids(restore(passages([ch[1]]), context(ch, policy=pol))) == [["p0", "p1", "p2", "p3"]]
    pol = Policy().updated(expand={"mode": "section", "max_section_tokens": 5})
    ctx = context(ch, policy=pol)
    assert ids(restore(passages([ch[1]]), ctx)) == [["p0", "p1", "p2"]]
    assert any(e.action == "fallback" for e in ctx.trace.events)


def test_expansion_off_by_top_n_zero():
    ch = doc(3)
    pol = Policy().updated(expand={"top_n": 0})
    assert ids(restore(passages([ch[1]]), context(ch, policy=pol))) == [["p1"]]


# --- issue 9 §5: copies, caps that work for real chunk sizes, section boundaries ---------------


def test_expansion_never_pastes_back_a_copy_that_dedup_dropped():
    """faq-7 is a copy of the policy's pol-4 (Move 2 keeps the policy); growing the top hit
    faq-8 by its neighbour faq-7 would paste the copy back ("faq-8 grown by faq-7")."""
    from docket.assemble import assemble
    from docket.store.base import MemoryStore

    from helpers import cands

    rule = "Annual plans can be cancelled within 30 days of purchase for a full refund."
    faq = [mk(f"faq-{i}", doc="faq", position=i, section="Billing", source_type="help",
              text=rule if i == 7 else f"Billing answer number {i} about invoices and receipts.") for i in (6, 7, 8)]
    pol = mk("pol-4", doc="pol", position=4, section="Annual plans", source_type="policy", text=rule)
    chunks = faq + [pol]
    ranked = cands([faq[2], faq[1], pol, faq[0]], [0.9, 0.8, 0.7, 0.3])
    p = Policy().updated(rescore={"enabled": False}, versions={"authority_window": 0.0})
    b = assemble("Billing answer?", ranked, store=MemoryStore(chunks), policy=p, budget=2000, floor=0.0)
    spans = [s["chunks"] for s in b.sources.values()]
    assert all("faq-7" not in s for s in spans), spans
    assert ["faq-8"] in spans
    assert any(e["move"] == "dedup" and e["chunks"] == ["faq-7"] for e in b.trace)
    assert any(e["move"] == "expand" and e["action"] == "boundary" and "faq-7: Move 2 dropped it as a copy of pol-4"
               in e["reason"] for e in b.trace)


def _long(i: int, section: str = "S", d: str = "m") -> object:
    # about 390 tokens: a typical chunk (the spec's 350-385)
    text = " ".join(f"Clause {i}.{k}: the customer may ask for a refund of the unused months." for k in range(22))
    return mk(f"{d}{i}", doc=d, position=i, section=section, text=text)


def test_default_cap_lets_typical_390_token_chunks_expand():
    ch = [_long(i) for i in range(5)]
    ctx = context(ch)
    assert 350 < ctx.tokens(ch[2].text) < 450
    out = restore(passages([ch[2]]), ctx)
    assert ids(out) == [["m1", "m2", "m3"]]
    assert not any(e.action == "cap" for e in ctx.trace.events)


def test_a_tight_budget_caps_expansion_and_the_trace_says_why():
    ch = [_long(i) for i in range(5)]
    ctx = context(ch, policy=Policy().updated(pack={"budget": 1000}))
    out = restore(passages([ch[2]]), ctx)
    assert ids(out) == [["m2"]]
    cap = next(e for e in ctx.trace.events if e.action == "cap")
    assert "m1, m3 left out" in cap.reason and "0.5 of the evidence budget 1000" in cap.reason
    assert "no neighbour fits" in cap.reason and cap.numbers["cap"] == 500
    # at 2000 one neighbour fits (the nearer end is kept, ties keep the leading chunk)
    ctx = context(ch, policy=Policy().updated(pack={"budget": 2000}))
    out = restore(passages([ch[2]]), ctx)
    assert len(out[0].ids) == 2 and "m2" in out[0].ids
    # the explicit cap is named when it is the one that binds
    ctx = context(ch, policy=Policy().updated(pack={"budget": 8000}, expand={"max_passage_tokens": 600}))
    restore(passages([ch[2]]), ctx)
    assert "expand.max_passage_tokens" in next(e for e in ctx.trace.events if e.action == "cap").reason


def test_window_does_not_cross_a_section_boundary():
    ch = doc(6, section=lambda i: "Monthly plans" if i < 3 else "Annual plans")
    ctx = context(ch)
    out = restore(passages([ch[2]]), ctx)
    assert ids(out) == [["p1", "p2"]]
    assert any(e.action == "boundary" and "p3: section 'Annual plans', not 'Monthly plans'" in e.reason
               for e in ctx.trace.events)
    # two grown spans that touch across the boundary stay two passages, one section each
    pol = Policy().updated(expand={"top_n": 2})
    out = restore(passages([ch[2], ch[3]]), context(ch, policy=pol))
    assert ids(out) == [["p1", "p2"], ["p3", "p4"]]
    assert [{c.section for c in p.chunks} for p in out] == [{"Monthly plans"}, {"Annual plans"}]


def test_nimbus_monthly_question_keeps_monthly_plans_in_its_own_passage():
    """The spec's "They can be cancelled" ambiguity: pol3-2 (Monthly plans) must never share a
    header with the Annual plans chunk next to it."""
    from docket.assemble import assemble
    from docket.demo import nimbus_chunks
    from docket.store.base import MemoryStore

    b = assemble("Can I cancel my monthly plan at any time?", store=MemoryStore(nimbus_chunks()), budget=1000)
    for s in b.sources.values():
        assert " / " not in s["section"], s
    monthly = next(s for s in b.sources.values() if "pol3-2" in s["chunks"])
    assert monthly["section"] == "Monthly plans" and monthly["chunks"] == ["pol3-2"]
    assert 'section="Monthly plans / Annual plans"' not in b.user
