"""Versions are resolved per reader and per date at query time (issues 25 §1, 24 §2): indexing
a newer version never rewrites an older one's status, so a newer version restricted to a group
leaves the older one in force for everybody else (and their trace says nothing of it), and a
version published ahead of time leaves today's rule `current` until its date. Both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401

from docket.api import Session
from docket.store.access import Principal

ANN = Principal("ann", frozenset({"finance"}))
OLD = "Annual plans are refunded within 30 days of the purchase."
NEW = "Annual plans are refunded within 14 days of the purchase, under the finance rule."
NEXT_YEAR = date.today().replace(month=1, day=1) + timedelta(days=400)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path) -> str:
    return str(tmp_path / "s.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def _session(location: str, records: list[dict]) -> Iterator[Session]:
    s = Session.open(location, create=True, new_store_embedder="hash")
    rep = s.index(records=records)
    assert rep.ok, rep.problems
    return s


def _rec(v: int, text: str, **extra: object) -> dict:
    return {"id": f"refunds-v{v}", "doc": "refunds", "version": v, "text": text, "title": "Refunds",
            "source_type": "policy", **extra}


Q = "How many days do I have to get a refund on an annual plan?"


def test_a_restricted_newer_version_leaves_the_older_one_in_force_for_everybody_else(location: str) -> None:
    s = _session(location, [_rec(1, OLD, date="2024-01-01"), _rec(2, NEW, date="2025-01-01", acl=["group:finance"])])
    try:
        assert [(v.version, v.status) for v in s.store.versions("refunds")] == [(1, "current"), (2, "current")]
        for who in (None, Principal("bob"), Principal("ann")):
            brief = s.ask(Q, principal=who, floor=0.0).brief
            out = json.dumps(brief.to_json())
            assert brief.found and [src["version"] for src in brief.sources.values()] == [1]
            assert OLD in out and NEW not in out
            assert "superseded" not in out and "v2" not in out and "refunds-v2" not in out
        member = s.ask(Q, principal=ANN, floor=0.0).brief
        assert [src["version"] for src in member.sources.values()] == [2]
        assert OLD not in json.dumps([m for m in member.messages])  # v1 is not in force for finance
    finally:
        s.close()


def test_a_version_published_ahead_of_time_leaves_todays_rule_current(location: str) -> None:
    s = _session(location, [_rec(3, OLD, date="2024-01-01"), _rec(4, NEW, date=NEXT_YEAR.isoformat())])
    try:
        assert [(v.version, v.status) for v in s.store.versions("refunds")] == [(3, "current"), (4, "current")]
        today = s.ask(Q, floor=0.0).brief
        [src] = today.sources.values()
        assert (src["version"], src["status"]) == (3, "current")
        prompt = "\n".join(m["content"] for m in today.messages)
        assert OLD in prompt and NEW not in prompt and "superseded" not in prompt
        later = s.ask(Q, as_of=NEXT_YEAR + timedelta(days=1), floor=0.0).brief
        assert [(x["version"], x["status"]) for x in later.sources.values()] == [(4, "current")]
    finally:
        s.close()
