"""Shared fixtures: the spec's Nimbus store and the path to the shared public data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docket.demo import nimbus_chunks
from docket.store.base import MemoryStore

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DOCKET_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA} (set DOCKET_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture()
def nimbus():
    return nimbus_chunks()


@pytest.fixture()
def nimbus_store(nimbus):
    return MemoryStore(nimbus)
