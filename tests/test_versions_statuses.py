"""Status words: a store's own words for "not in force" retire a version as "superseded" does,
and a status docket does not know is read as current but never silently."""

from __future__ import annotations

import pytest

from docket.assemble import assemble
from docket.model import CURRENT_STATUSES, RETIRED_STATUSES, UNTRUSTED_STATUSES, parse_chunk
from docket.store.base import MemoryStore

Q = "Can I get a refund on my annual plan?"


def _brief(status: str):
    chunks = [parse_chunk({"id": "now", "doc": "policy", "text": "Annual plans are refundable within 30 days.",
                           "status": "current"}),
              parse_chunk({"id": "odd", "doc": "old-policy", "text": "Annual plans are refundable at any time.",
                           "status": status})]
    return assemble(Q, store=MemoryStore(chunks), budget=500, floor=0.0)


@pytest.mark.parametrize("status", ["obsolete", "Expired", "REVOKED", "rescinded", "inactive", "outdated", "replaced",
                                    "superseded", "draft"])
def test_a_status_that_means_not_in_force_drops_the_version(status: str) -> None:
    brief = _brief(status)
    assert "at any time" not in brief.documents
    assert any(e.action == "drop" and e.chunks == ["odd"] for e in brief.trace)


@pytest.mark.parametrize("status", ["retird", "superceded", "v2-old"])
def test_an_unknown_status_is_kept_as_current_and_said_in_the_trace(status: str) -> None:
    brief = _brief(status)
    assert "at any time" in brief.documents and f'status="{status}"' in brief.documents  # shown on the tag
    notes = [e for e in brief.trace if e.action == "note" and e.chunks == ["odd"]]
    assert len(notes) == 1 and repr(status) in notes[0].reason


@pytest.mark.parametrize("status", ["current", "active", "published", "user-generated", "community"])
def test_a_known_status_gets_no_note(status: str) -> None:
    assert not [e for e in _brief(status).trace if e.action == "note" and "not one docket knows" in e.reason]


def test_the_status_sets_are_disjoint() -> None:
    assert not (RETIRED_STATUSES & UNTRUSTED_STATUSES or RETIRED_STATUSES & CURRENT_STATUSES
                or UNTRUSTED_STATUSES & CURRENT_STATUSES)
