"""One caller never slows another (issue 26 §1): a Session holds the store's snapshot (which holds
the shared SQLite reader) for the search and fetch only, never across assembly, attachments or
generation. And the session's caches are bounded (issue 19 §4): many distinct questions do not
grow them past their capacity."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from docket.api import Session
from docket.demo import nimbus_chunks
from docket.embed import CachedEmbedder, HashEmbedder
from docket.policy import Policy

QUESTION = "Can I get a refund on my annual plan after 30 days?"


class SlowSummary:
    """A summariser that takes `delay` seconds: the slow part of a request, after retrieval."""

    name = "slow-summary"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.started = threading.Event()

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        self.started.set()
        time.sleep(self.delay)
        return "Refunds are allowed within 30 days of purchase."


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    path = str(tmp_path / "s.db")
    with Session.open(path, create=True, embedder=HashEmbedder()) as s:
        rep = s.index(records=[c.to_record() for c in nimbus_chunks()])
        assert rep.ok, rep.problems
    return path


def test_a_slow_request_does_not_hold_the_store_for_the_others(db: str) -> None:
    slow = SlowSummary(delay=3.0)
    with Session.open(db, embedder=HashEmbedder()) as s:
        s.ask(QUESTION, budget=400, floor=0.0)  # warm: the index is loaded before the clock starts
        summary_policy = Policy().updated(compress={"summary": True, "summary_tokens": 40})
        t = threading.Thread(target=lambda: s.ask(QUESTION, budget=250, floor=0.0, policy=summary_policy,
                                                  generator=slow))
        t.start()
        assert slow.started.wait(30), "the slow request never reached its summariser"
        times = []
        for _ in range(8):  # every fast ask runs while the slow one is inside its summary
            t0 = time.perf_counter()
            res = s.ask(QUESTION, budget=400, floor=0.0)
            times.append(time.perf_counter() - t0)
            assert res.brief.found
        t.join()
    p95 = statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0]
    assert max(times) < 2.5, f"fast asks waited behind the slow one: {[round(x, 2) for x in times]} s (p95 {p95:.2f})"


def test_the_embedder_cache_is_bounded() -> None:
    emb = CachedEmbedder(HashEmbedder(), capacity=100)
    for i in range(1_000):
        emb.embed([f"question number {i} about refunds"])
    assert len(emb) == 100
    again = emb.embed(["question number 999 about refunds", "a new one"])
    assert again.shape == (2, HashEmbedder().dim)
    with pytest.raises(ValueError):
        CachedEmbedder(HashEmbedder(), capacity=0)


def test_a_batch_larger_than_the_cache_still_embeds_every_text() -> None:
    emb = CachedEmbedder(HashEmbedder(), capacity=3)
    texts = [f"t{i}" for i in range(10)]
    assert (emb.embed(texts) == HashEmbedder().embed(texts)).all()
    assert len(emb) == 3


@pytest.mark.slow
def test_memory_stops_growing_over_10000_distinct_questions(db: str) -> None:
    """A service's session over 10,000 distinct questions: after the caches fill, the traced
    Python memory stays flat (within 8 MB between the 5,000th and the 10,000th question)."""
    import tracemalloc

    with Session.open(db, embedder=CachedEmbedder(HashEmbedder(), capacity=2_000)) as s:
        tracemalloc.start()
        marks = []
        for i in range(10_000):
            s.ask(f"refund rule {i} for plan q{i * 7919 % 100_003} after {i % 90} days?", budget=300, floor=0.0)
            if i in (4_999, 9_999):
                marks.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
    growth = marks[1] - marks[0]
    assert growth < 8 * 2**20, f"memory grew {growth / 2**20:.1f} MB over the second 5,000 questions"
