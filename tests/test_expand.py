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
