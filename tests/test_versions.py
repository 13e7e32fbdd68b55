from datetime import date

from docket.moves.versions import authority, disagree, resolve
from docket.policy import Policy
from docket.store.base import VersionInfo, version_in_force

from helpers import FixedEmbedder, context, mk, passages


def test_version_in_force_by_status_and_by_date():
    vs = [VersionInfo("p", 1, "superseded", date(2020, 1, 1), None),
          VersionInfo("p", 2, "superseded", date(2023, 5, 10), None),
          VersionInfo("p", 3, "current", date(2026, 3, 1), None),
          VersionInfo("p", 4, "draft", date(2026, 5, 1), None)]
    assert version_in_force(vs).version == 3
    assert version_in_force(vs, date(2024, 6, 1)).version == 2
    assert version_in_force(vs, date(2026, 3, 1)).version == 3
    assert version_in_force(vs, date(2019, 1, 1)) is None
    # effective_to ends a version even before the next one starts
    vs2 = [VersionInfo("p", 1, "current", date(2020, 1, 1), date(2021, 1, 1))]
    assert version_in_force(vs2, date(2021, 6, 1)) is None


def test_drops_older_version_and_traces_why():
    old = mk("a2", doc="p", version=2, status="superseded", section="S", date="2023-05-10")
    new = mk("a3", doc="p", version=3, status="current", section="S", date="2026-03-01")
    ctx = context([old, new])
    out = resolve(passages([old, new]), ctx)
    assert [p.first.id for p in out] == ["a3"]
    ev = [e for e in ctx.trace.events if e.action == "drop"]
    assert ev and ev[0].chunks == ["a2"] and "v3" in ev[0].reason and "in force" in ev[0].reason


def test_only_old_version_retrieved_fetches_same_section_of_current():
    old = mk("a2", doc="p", version=2, status="superseded", section="Annual", position=3)
    cur_other = mk("b3", doc="p", version=3, section="Monthly", position=2)
    cur_same = mk("a3", doc="p", version=3, section="Annual", position=3)
    ctx = context([old, cur_other, cur_same])
    out = resolve(passages([old], [0.8]), ctx)
    assert [p.first.id for p in out] == ["a3"]
    assert out[0].score == 0.8
    assert any(e.action == "replace" and e.chunks == ["a2", "a3"] for e in ctx.trace.events)
    assert not ctx.warnings


def test_only_old_version_and_current_lacks_section_warns():
    old = mk("a2", doc="p", version=2, status="superseded", section="Annual")
    cur = mk("x3", doc="p", version=3, section="Other")
    ctx = context([old, cur])
    out = resolve(passages([old]), ctx)
    assert out == []
    assert ctx.warnings and "current rule was not found" in ctx.warnings[0]


def test_as_of_keeps_old_version_and_drops_later_documents():
    old = mk("a2", doc="p", version=2, status="superseded", section="S", date="2023-05-10")
    new = mk("a3", doc="p", version=3, section="S", date="2026-03-01")
    later = mk("f1", doc="forum", date="2026-06-14", status="user-generated")
    undated = mk("u1", doc="u")
    ctx = context([old, new, later, undated], policy=Policy(as_of=date(2024, 6, 1)))
    out = resolve(passages([new, later, old, undated]), ctx)
    assert [p.first.id for p in out] == ["a2", "u1"]


def test_authority_by_source_type_and_trust():
    pol = Policy().versions
    assert authority(mk("p", source_type="policy"), pol) > authority(mk("h", source_type="help"), pol)
    assert authority(mk("h", source_type="help"), pol) > authority(mk("f", status="user-generated"), pol)
    assert authority(mk("x", source_type="unknown-kind"), pol) == pol.default_authority


def test_disagree_detects_numbers_and_negation():
    assert disagree("Refunds within 30 days.", "Refunds within 14 days.")
    assert disagree("Refunds are available.", "Refunds are not available.")
    assert disagree("Refunds within 30 days.", "Refunds within 30 days, always.") is None


def test_equal_authority_conflict_keeps_both_and_reports_pair():
    a = mk("a", doc="pol-a", text="Annual plans can be refunded within 30 days.", source_type="policy")
    b = mk("b", doc="pol-b", text="Annual plans can be refunded within 14 days.", source_type="policy")
    emb = FixedEmbedder({a.text: [1, 0.1, 0, 0, 0, 0, 0, 0], b.text: [1, 0.2, 0, 0, 0, 0, 0, 0]})
    ctx = context([a, b], embedder=emb)
    out = resolve(passages([a, b]), ctx)
    assert [p.first.id for p in out] == ["a", "b"]
    assert ctx.conflicts and ctx.conflicts[0]["kind"] == "equal_authority"
    assert set(ctx.conflicts[0]["chunks"]) == {"a", "b"}


def test_unequal_authority_conflict_is_reported_as_outranked():
    a = mk("a", doc="pol", text="Refund within 30 days.", source_type="policy")
    b = mk("b", doc="faq", text="Refund within 14 days.", source_type="help")
    emb = FixedEmbedder({a.text: [1, 0, 0, 0, 0, 0, 0, 0], b.text: [1, 0.1, 0, 0, 0, 0, 0, 0]})
    ctx = context([a, b], embedder=emb)
    resolve(passages([a, b]), ctx)
    assert ctx.conflicts[0]["kind"] == "outranked"


def test_disagree_compares_statements_not_whole_passages():
    """Two careers share a style, not a statement: different numbers in different statements are
    not a conflict. The same statement with another number, or negated, is."""
    busby = "Sir Matt Busby was born in 1909. He managed Manchester United from 1945 to 1969."
    ferguson = "Sir Alex Ferguson was born in 1941. He won 13 league titles between 1986 and 2013."
    assert disagree(busby, ferguson) is None
    eu = "Customers are welcome. Annual plans can be refunded within 30 days of purchase."
    world = "Annual plans can be refunded within 14 days of purchase. Support answers by email."
    why = disagree(eu, world)
    assert why and "30 days" in why and "14 days" in why and "same statement" in why
    assert "negates" in disagree("Refunds are available for annual plans.", "Refunds are not available for annual plans.")
    assert disagree("Refunds within 30 days.", "Refunds within 30 days.") is None


def test_passages_that_name_their_own_different_titles_are_not_in_conflict():
    a = mk("a", doc="t2009", title="2009 Colorado Buffaloes football team",
           text="The 2009 Colorado Buffaloes football team represented the University of Colorado in 2009.")
    b = mk("b", doc="t2011", title="2011 Colorado Buffaloes football team",
           text="The 2011 Colorado Buffaloes football team represented the University of Colorado in 2011.")
    emb = FixedEmbedder({a.text: [1, 0.1, 0, 0, 0, 0, 0, 0], b.text: [1, 0.15, 0, 0, 0, 0, 0, 0]})
    ctx = context([a, b], embedder=emb)
    resolve(passages([a, b]), ctx)
    assert ctx.conflicts == []
    # the same texts under titles they do not name are compared, and disagree
    c = mk("c", doc="eu", title="EU terms", text="Annual plans can be refunded within 30 days.")
    d = mk("d", doc="world", title="Global terms", text="Annual plans can be refunded within 14 days.")
    emb = FixedEmbedder({c.text: [1, 0.1, 0, 0, 0, 0, 0, 0], d.text: [1, 0.15, 0, 0, 0, 0, 0, 0]})
    ctx = context([c, d], embedder=emb)
    resolve(passages([c, d]), ctx)
    assert ctx.conflicts and ctx.conflicts[0]["kind"] == "equal_authority"


def test_disagree_reads_statements_in_other_scripts():
    assert disagree("Jahrespläne können innerhalb von 30 Tagen erstattet werden.",
                    "Jahrespläne können innerhalb von 14 Tagen erstattet werden.")
    assert disagree("年度计划可在购买后30天内退款。", "年度计划可在购买后14天内退款。")
    assert disagree("年度计划可在购买后30天内退款。", "客服通过电子邮件在2天内回复。") is None
