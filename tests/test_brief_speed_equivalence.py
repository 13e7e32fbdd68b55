"""The faster brief build (memoised rendering, counts from parts) writes byte for byte what the
build before it wrote (tests/brief_reference.py): prompts, sources, every token count, trace,
conflicts and the Anthropic request, on hostile passages in every format, cold and warm."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import brief_reference as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fence_properties import Case, cases

from docket.brief import formats, layout, render
from docket.model import Passage, parse_chunk
from docket.policy import Policy, RenderPolicy
from docket.steps import Run, fit

from helpers import context, mk


def everything(brief: Any) -> dict[str, Any]:
    """What a caller can read of a brief, as exact text (JSON key order kept)."""
    return {
        "json": json.dumps(brief.to_json(), ensure_ascii=False),
        "request": json.dumps(brief.anthropic_request, ensure_ascii=False),
        "tokens": json.dumps(brief.tokens.to_json()),
        "sources": repr([(k, dict(s), s.key_order) for k, s in brief.sources.items()]),
        "passages": [p.ids for p in brief.passages],
        "texts": (brief.system, brief.user, brief.documents),
    }


def briefs(name: str, case: Case, budget: int, as_of: dict[str, Any] | None, build: Any, extras: int = 0,
           reverse: bool = False) -> dict[str, Any]:
    """The brief of a hostile case; `extras` bit 1: the first passage carries folded copies
    (dedup's provenance), bit 2: the last one is a summary passage (compress.summary);
    `reverse`: the passages in the opposite order (so each gets another label)."""
    render_pol = dict(case.render, format=name if name in formats.text_formats() else "xml")
    policy = Policy().updated(render=render_pol, compress={"summary": bool(extras & 2)})
    chunks, passages = [], []
    for n, (recs, override) in enumerate(zip(case.chunks, case.overrides), 1):
        cs = tuple(parse_chunk(r) for r in recs)
        chunks.extend(cs)
        passages.append(Passage(chunks=cs, score=1.0 / n, rank=n, hits=(cs[0].id,), text_override=override))
    if extras & 1:
        c = passages[-1].first
        copy = {"chunks": [c.id + "-copy"], "doc": c.doc, "version": 2, "title": c.title, "section": c.section,
                "status": c.status, "cosine": 0.97}
        passages[0] = passages[0].with_(also_in=(copy, {**copy, "source_type": "forum", "extra_key": [1]}))
    if extras & 2:
        last = passages[-1]
        covers = ({"doc": last.first.doc, "version": 1, "chunks": list(last.ids), "title": last.first.title,
                   "trust": "untrusted"},)
        summary = last.first.model_copy(update={"id": "docket-summary-1", "status": "derived"})
        passages[-1] = Passage(chunks=(summary,), score=last.score, rank=last.rank, hits=(), covers=covers)
    if reverse:
        passages.reverse()
    ctx = context(chunks, question=case.question, policy=policy)
    ctx.conflicts = [dict(c) for c in case.conflicts]
    ctx.as_of = as_of
    return everything(build(passages, ctx, budget))


def build_brief(passages: list[Passage], ctx: Any, budget: int) -> Any:
    """The assembler's last step (fit: the exact budget check) and the brief build, which the
    reference did in one function."""
    run = Run(list(passages), budget=budget)
    fit(run, ctx)
    return layout.build_brief(run.passages, ctx, budget)


AS_OF = st.sampled_from([None, {"date": date(2025, 1, 2), "source": "question"}, {"date": date(2025, 1, 2), "source": "default"}])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.sampled_from(formats.text_formats()), st.sampled_from([10**9, 120, 40]), AS_OF, st.booleans(),
       st.integers(0, 3))
def test_same_brief_as_the_reference(case: Case, name: str, budget: int, as_of: Any, clear: bool, extras: int) -> None:
    if clear:
        render._RENDERED.clear()
        render._PREPARED.clear()
    want = briefs(name, case, budget, as_of, ref.build_brief, extras)
    assert briefs(name, case, budget, as_of, build_brief, extras) == want  # cold (or warm from an earlier case)
    assert briefs(name, case, budget, as_of, build_brief, extras) == want  # warm: every passage memoised
    # the same passages under other labels: only their headers are new
    assert (briefs(name, case, budget, as_of, build_brief, extras, reverse=True)
            == briefs(name, case, budget, as_of, ref.build_brief, extras, reverse=True))


def test_memo_keys_on_content_and_settings() -> None:
    """A chunk whose text or header metadata changed under the same id, or a render setting
    changed in place, is rendered anew."""
    a = mk("c1", doc="d", text="Refunds take 14 days.", title="Refunds", section="Billing")
    b = mk("c1", doc="d", text="Refunds take 30 days.", title="Refunds", section="Billing")
    c = mk("c1", doc="d", text="Refunds take 30 days.", title="Refunds", section="Billing", status="superseded")
    pol = RenderPolicy(repeated_title=True)

    def block(x: Any) -> str:
        return render.render_all([Passage.of_chunk(x, 1.0, 1)], pol)[0]

    blocks = [block(x) for x in (a, b, c)]
    assert "14 days" in blocks[0] and "30 days" in blocks[1] and 'status="superseded"' in blocks[2]
    pol.format = "lines"
    assert "ID: S1" in block(c)
    pol.fields.remove("section")  # a list edited in place
    assert "SECTION" not in block(c)
    for x in (a, b, c):
        assert block(x) == ref.render_all([Passage.of_chunk(x, 1.0, 1)], pol)[0]


def test_memo_is_bounded() -> None:
    memo = type(render._RENDERED)(4)  # the memo's own class, at a small capacity
    for i in range(100):
        memo.put(i, str(i))
    assert len(memo.young) + len(memo.old) <= 4
    assert memo.get(99) == "99" and memo.get(0) is None
