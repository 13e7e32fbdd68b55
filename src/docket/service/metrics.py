"""The Prometheus metrics of one app (its own registry, so tests and apps do not share counts)."""

from __future__ import annotations

import os

#: the prompt sections whose tokens /metrics histograms (the spec's "log the tokens of each
#: prompt section per request and watch p50 and p95")
SECTIONS = ("system", "history", "documents", "tags", "question")


class Metrics:
    """Requests, latency, stage times and prompt tokens of one app.

    With several uvicorn workers set PROMETHEUS_MULTIPROC_DIR: /metrics then adds up every worker.
    """

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("docket_requests", "HTTP requests by endpoint, method and status",
                                ["endpoint", "method", "status"], registry=self.registry)
        self.latency = Histogram("docket_request_duration_seconds", "Request latency by endpoint", ["endpoint"],
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
                                 registry=self.registry)
        self.stage = Histogram("docket_stage_duration_seconds", "Time per stage of a request (retrieve, assemble, "
                               "generate, check)", ["stage"],
                               buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30),
                               registry=self.registry)
        self.tokens = Histogram("docket_prompt_tokens", "Tokens per prompt section per brief (system, history, "
                                "documents, tags, question)", ["section"],
                                buckets=(0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600),
                                registry=self.registry)
        self.gc_pause = Histogram("docket_gc_pause_seconds", "Pauses of the serving process's garbage-collection "
                                  "policy between requests: collect (after a response), sweep (the whole heap), "
                                  "startup", ["kind"],
                                  buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
                                  registry=self.registry)
        self.gc_collected = Counter("docket_gc_collected_objects", "Unreachable objects the policy's passes freed, "
                                    "by kind", ["kind"], registry=self.registry)
        self.gc_frozen = Gauge("docket_gc_frozen_objects", "Objects frozen out of the collector's view after the "
                               "last sweep (or start-up)", registry=self.registry)

    def gc_observed(self, kind: str, seconds: float, collected: int) -> None:
        """One pass of docket.service.collector (its `on_pause`). The frozen count walks the whole
        frozen list (~10 ms at 600k objects), so only the rare passes read it."""
        import gc

        self.gc_pause.labels(kind).observe(seconds)
        self.gc_collected.labels(kind).inc(collected)
        if kind != "collect":
            self.gc_frozen.set(gc.get_freeze_count())

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            reg = CollectorRegistry()
            multiprocess.MultiProcessCollector(reg)
            return generate_latest(reg), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


__all__ = ["SECTIONS", "Metrics"]
