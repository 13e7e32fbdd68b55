from docket.brief.render import label_for
from docket.moves.compress import compress, leans_back, protected, split_sentences
from docket.moves.pack import pack, passage_cost, wrapper_cost
from docket.policy import Policy

from helpers import context, mk, passages

POLICY_TEXT = ("Annual plans are billed once a year and renew automatically on the purchase date. "
               "Annual plans: you can cancel within 30 days of purchase for a full refund. "
               "After 30 days, we refund the unused whole months, minus an early-termination fee. "
               "The early-termination fee is 15% of the refunded amount. "
               "It is waived for customers in the EU and the UK, where statutory cancellation rules apply.")


def test_guard_and_referent_rules():
    s = split_sentences(POLICY_TEXT)
    assert len(s) == 5
    assert protected(s[3], []) == "number"
    assert protected("It is waived for customers in the EU.", ["waived"]) == "keyword 'waived'"
    assert protected("Plans renew automatically.", ["waived"]) is None
    assert leans_back(s[4]) and not leans_back(s[3])


def test_compression_keeps_numbers_exceptions_and_referents():
    c = mk("p", text=POLICY_TEXT)
    ctx = context([c], question="Can I get a refund on my annual plan after 30 days?")
    p = passages([c])[0]
    full = passage_cost(p, ctx, "S1")
    out = compress(p, full - 5, ctx, "S1")
    assert out is not None and out.compressed
    assert "15%" in out.text and "It is waived" in out.text and "The early-termination fee is 15%" in out.text
    assert "billed once a year" not in out.text
    assert passage_cost(out, ctx, "S1") <= full - 5


def test_compression_refuses_when_guarded_sentences_do_not_fit():
    c = mk("p", text=POLICY_TEXT)
    ctx = context([c])
    assert compress(passages([c])[0], 20, ctx, "S1") is None
    assert any(e.action == "fail" for e in ctx.trace.events)


def test_compression_only_inside_packing_and_only_when_enabled():
    big = mk("big", doc="a", text=POLICY_TEXT)
    ctx0 = context([big])
    cost = passage_cost(passages([big])[0], ctx0, label_for(1))
    budget = wrapper_cost(ctx0) + cost - 10
    off = Policy().updated(pack={"budget": budget})
    chosen, _ = pack(passages([big]), context([big], policy=off))
    assert chosen == []  # never by default
    on = off.updated(compress={"enabled": True})
    ctx = context([big], question="refund after 30 days", policy=on)
    chosen, _ = pack(passages([big]), ctx)
    assert len(chosen) == 1 and chosen[0].compressed
    assert chosen[0].ids == ("big",)  # label and metadata survive
