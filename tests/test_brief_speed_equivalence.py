"""The brief build (memoised rendering, counts from parts) writes byte for byte what the recorded
build wrote (tests/brief_cases.py, recorded by tests/fixtures/record_briefs.py): prompts, sources,
every token count, trace, conflicts and the Anthropic request, on hostile passages in every
format, cold and warm, under their labels and reversed."""

from __future__ import annotations

from typing import Any

import brief_cases as bc
import pytest

from docket.brief import render
from docket.caches import default_caches
from docket.model import Passage
from docket.policy import RenderPolicy

from helpers import mk

ENTRIES = bc.load() if bc.FIXTURE.exists() else []


def test_the_record_exists() -> None:
    assert ENTRIES, f"{bc.FIXTURE} is missing; record it with {bc.RERECORD}"


@pytest.mark.parametrize("i", range(0, len(ENTRIES), 1))
def test_same_brief_as_recorded(i: int) -> None:
    entry = ENTRIES[i]
    case, name, budget, as_of, extras = bc.replay(entry)
    hint = f" (if intended, re-record with {bc.RERECORD} and say why in the commit message)"
    if i % 2:
        default_caches().rendered.clear()
        default_caches().prepared.clear()
    assert bc.briefs(name, case, budget, as_of, extras) == entry["forward"], "cold or warm" + hint
    assert bc.briefs(name, case, budget, as_of, extras) == entry["forward"], "warm: every passage memoised" + hint
    # the same passages under other labels: only their headers are new
    assert bc.briefs(name, case, budget, as_of, extras, reverse=True) == entry["reverse"], "reversed" + hint


def _cold(x: Any, pol: RenderPolicy) -> str:
    default_caches().rendered.clear()
    default_caches().prepared.clear()
    return render.render_all([Passage.of_chunk(x, 1.0, 1)], pol)[0]


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
        warm = block(x)
        assert warm == _cold(x, pol)  # a memoised block is the one rendered afresh


def test_memo_is_bounded() -> None:
    memo = type(default_caches().rendered)(4)  # the memo's own class, at a small capacity
    for i in range(100):
        memo.put(i, str(i))
    assert len(memo.young) + len(memo.old) <= 4
    assert memo.get(99) == "99" and memo.get(0) is None
