"""Shared fixtures: the spec's Nimbus store and the path to the shared public data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docket.demo import nimbus_chunks
from docket.store.base import MemoryStore

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DOCKET_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session", autouse=True)
def _fallback_vocabs_loaded() -> None:
    """tiktoken's vocabularies loaded once, before any test (~0.8 s). A text holding a code point
    toktok cannot count (unassigned in Unicode 14) falls back to them, and otherwise the first
    such text pays the load inside whichever hypothesis example meets it: a DeadlineExceeded
    that depends on test order, not on the code under test."""
    from docket import tokens

    for name in ("o200k_base", "cl100k_base"):
        tokens._encoding(name)


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


#: the local models the slow end-to-end tests run against (DOCKET_E2E_MODELS=0.5b,1.5b)
E2E_MODELS = [m for m in os.environ.get("DOCKET_E2E_MODELS", "0.5b").split(",") if m]


@pytest.fixture(scope="module", params=E2E_MODELS)
def local_llm(request: pytest.FixtureRequest):
    """A local llama.cpp server per model for the module, stopped after it; skips when the
    model parts are not installed."""
    pytest.importorskip("openai")
    from docket.llm import local

    if not local.available(request.param):
        pytest.skip(f"llama-cpp-python or the {request.param} model parts are not installed (scripts/install_local_llm.sh)")
    info = local.start_server(request.param, wait=300)
    yield info
    assert local.stop_server(info)
