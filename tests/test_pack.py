import pytest

from docket.brief.render import label_for
from docket.errors import InputError
from docket.moves.pack import pack, passage_cost, wrapper_cost
from docket.policy import Policy

from helpers import context, mk, passages


def units(words: list[int]):
    return [mk(f"U{i}", doc=f"d{i}", text=" ".join(["word"] * n) + ".") for i, n in enumerate(words, 1)]


def test_spec_example_skip_misfit_take_smaller_stop_at_floor():
    # the spec's U1..U6: sizes vary, U4 does not fit, U5 still does, U6 is below the floor
    ch = units([42, 61, 38, 54, 15, 30])
    scores = [0.91, 0.88, 0.80, 0.77, 0.52, 0.31]
    ctx0 = context(ch)
    ps = passages(ch, scores)
    costs = [passage_cost(p, ctx0, label_for(6)) for p in ps]
    budget = wrapper_cost(ctx0) + costs[0] + costs[1] + costs[2] + costs[4] + 2
    pol = Policy().updated(pack={"budget": budget, "floor": 0.40})
    ctx = context(ch, policy=pol)
    chosen, b = pack(ps, ctx)
    assert b == budget
    assert [p.first.id for p in chosen] == ["U1", "U2", "U3", "U5"]
    actions = [(e.action, e.chunks[0]) for e in ctx.trace.events]
    assert ("skip", "U4") in actions and ("stop", "U6") in actions


def test_packing_off_stops_at_first_misfit():
    ch = units([42, 61, 38, 54, 15])
    ctx0 = context(ch)
    ps = passages(ch)
    costs = [passage_cost(p, ctx0, label_for(5)) for p in ps]
    budget = wrapper_cost(ctx0) + costs[0] + costs[1] + costs[4]
    pol = Policy().updated(pack={"budget": budget, "enabled": False})
    chosen, _ = pack(ps, context(ch, policy=pol))
    assert [p.first.id for p in chosen] == ["U1", "U2"]


def test_untrusted_packed_after_official():
    forum = mk("f", doc="f", text="short tip.", status="user-generated")
    pol_chunks = units([30, 30])
    ps = passages([forum] + pol_chunks)
    ctx0 = context([forum] + pol_chunks)
    cost_official = sum(passage_cost(p, ctx0, "S3") for p in ps[1:])
    pol = Policy().updated(pack={"budget": wrapper_cost(ctx0) + cost_official})
    ctx = context([forum] + pol_chunks, policy=pol)
    chosen, _ = pack(ps, ctx)
    assert [p.first.id for p in chosen] == ["U1", "U2"]
    assert any(e.action == "reorder" and e.chunks == ["f"] for e in ctx.trace.events)


def test_budget_smaller_than_any_passage_warns_and_packs_nothing():
    ch = units([40])
    ctx = context(ch, policy=Policy().updated(pack={"budget": 5}))
    chosen, _ = pack(passages(ch), ctx)
    assert chosen == []
    assert "smaller than every passage" in ctx.warnings[0]


def test_budget_derived_backward_from_input_target():
    ch = units([10])
    pol = Policy().updated(pack={"budget": None, "input_target": 1000, "answer_reserve": 200, "history_tokens": 100})
    ctx = context(ch, policy=pol)
    _, budget = pack(passages(ch), ctx)
    from docket.brief.layout import fixed_tokens

    assert budget == 1000 - 200 - 100 - fixed_tokens(ctx)
    assert any(e.action == "budget" for e in ctx.trace.events)


def test_input_target_too_small_is_a_clear_error():
    pol = Policy().updated(pack={"budget": None, "input_target": 50})
    with pytest.raises(InputError, match="input_target"):
        pack(passages(units([5])), context(units([5]), policy=pol))
