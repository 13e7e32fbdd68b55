"""Brief.from_json reads back what Brief.to_json wrote (the --json contract), and refuses what is
not a brief with the field named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from docket.assemble import assemble
from docket.brief.result import Brief
from docket.demo import REFUND_QUESTION, nimbus_chunks
from docket.errors import InputError
from docket.policy import Policy
from docket.store.base import MemoryStore

HISTORY = [{"role": "user", "content": "Can I get a refund on my annual plan?"},
           {"role": "assistant", "content": "Yes, within 30 days [S1]."}]


def briefs() -> list[Any]:
    store = MemoryStore(nimbus_chunks())
    return [
        assemble(REFUND_QUESTION, store=store, budget=250),
        assemble("Do you offer a student discount?", store=store, budget=250),
        assemble("And for monthly plans?", store=store, budget=400, history=HISTORY),
        assemble(REFUND_QUESTION, store=store, budget=400, policy=Policy().updated(render={"format": "lines"})),
        assemble(REFUND_QUESTION, store=store, whole_corpus=True),
        assemble("And for monthly plans?", store=store, whole_corpus=True, history=HISTORY),
    ]


@pytest.mark.parametrize("i", range(6))
def test_round_trip(i: int) -> None:
    brief = briefs()[i]
    wire = json.loads(json.dumps(brief.to_json()))
    back = Brief.from_json(wire)
    assert json.dumps(back.to_json(), ensure_ascii=False) == json.dumps(brief.to_json(), ensure_ascii=False)
    assert back.messages == brief.messages and back.anthropic() == (brief.anthropic() if brief.found else {})
    assert back.sources == brief.sources and back.tokens == brief.tokens and back.found == brief.found


@pytest.mark.parametrize("bad, field", [
    ([], "brief"),
    ({"found": "yes"}, "brief.found"),
    ({**json.loads(json.dumps(briefs()[0].to_json())), "budget": "250"}, "brief.budget"),
    ({**json.loads(json.dumps(briefs()[0].to_json())), "messages": [{"content": "x"}]}, "brief.messages[0]"),
])
def test_what_is_not_a_brief_is_refused_by_field(bad: Any, field: str) -> None:
    with pytest.raises(InputError) as e:
        Brief.from_json(bad)
    assert e.value.field == field
