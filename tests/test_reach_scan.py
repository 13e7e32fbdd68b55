"""The reachable-set scan reads each candidate's bound and cost once and finds "related to an
earlier candidate" per batch of members; on generated pools it finds exactly the members of the
scan that asked one candidate at a time (tests/reach_reference.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reach_reference import Groups, check_every_scan
from test_reach import COUNTER, EMB, pools

from docket.assemble import assemble
from docket.moves.reach import _Groups
from docket.policy import Policy
from docket.store.base import MemoryStore

from helpers import cands

SEEN = {"compared": 0, "members": 0}


@pytest.fixture(autouse=True)
def _both_scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every scan the assembler runs is run by the reference too, on the same inputs."""

    def seen(members: list[int] | None) -> None:
        if members:
            SEEN["members"] += len(members)
        SEEN["compared"] += 1

    check_every_scan(monkeypatch, seen)
    yield


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(pools(), st.sampled_from(["default", "loose", "section", "notop"]))
def test_the_scan_finds_the_reference_members(pool: tuple[list[Any], int, bool], variant: str) -> None:
    chunks, budget, _mixed = pool
    policy = {
        "default": Policy(),
        "loose": Policy().updated(versions={"conflict_similarity": 0.3}, dedup={"threshold": 0.6}),
        "section": Policy().updated(expand={"mode": "section", "top_n": 3}),
        "notop": Policy().updated(expand={"enabled": False}),
    }[variant]
    assemble("What is the daily parking allowance?", cands(chunks), store=MemoryStore(chunks), budget=budget,
             floor=0.0, counter=COUNTER, embedder=EMB, policy=policy)


def test_the_scans_were_compared() -> None:
    """Run after the property (file order): the scan must have run, and found members."""
    assert SEEN["compared"] >= 10 and SEEN["members"] > 0, SEEN


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=30))
def test_groups_find_the_first_position_and_the_repeats(values: list[str]) -> None:
    fast, ref = _Groups(values), Groups(values)
    assert fast.first == ref.first and fast.more == ref.more

