"""What `docket serve` takes (ServerConfig, Limits) and the session a config opens."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from docket.api import Session, embedder_named
from docket.policy import Policy, load_policy
from docket.safeio import loads_json
from docket.service.collector import GcSettings

CONFIG_ENV = "DOCKET_SERVER_CONFIG"


@dataclass
class Limits:
    """What one request may carry; over a limit is 413 (body) or 422 naming the field."""

    body_bytes: int = 8 * 1024 * 1024
    candidates: int = 1000
    text_chars: int = 50_000
    question_chars: int = 4_000
    history_turns: int = 200
    history_chars: int = 200_000
    index_items: int = 20_000
    #: distinct versions of one document among a request's candidates (resolving and comparing
    #: versions grows faster than their number)
    versions_per_doc: int = 100
    #: seconds /readyz waits for the store before it says not ready
    ready_seconds: float = 5.0
    #: seconds a request's body may take to arrive, from its head (then 408; a slow upload must
    #: not hold a connection and a task for as long as it likes; docket.http_guard bounds the head)
    body_seconds: float = 30.0
    #: the work of one request (retrieval and assembly, not the model call): wall seconds, and CPU
    #: seconds of its worker thread; over either it stops with 503 `over_budget` naming the limit
    wall_seconds: float = 30.0
    cpu_seconds: float = 15.0


@dataclass
class ServerConfig:
    """Everything `docket serve` takes; JSON-serialisable so worker processes can rebuild it."""

    db: str = "docket.db"
    keys: str | None = None
    require_key: bool = False
    llm: str | None = None
    model: str | None = None
    generator_timeout: float = 60.0
    policy: str | None = None
    embedder: str = "minilm"
    create: bool = True
    #: requests handled at once per process (sync handlers run in threads; the assembler is
    #: CPU-bound Python, so more threads than cores only interleave under the GIL)
    threads: int = 8
    log_level: str = "info"
    #: briefs kept per process for GET /v1/trace/{id} (the oldest go first)
    traces: int = 256
    limits: Limits = field(default_factory=Limits)
    #: the garbage-collection policy of the serving process (docket.service.collector)
    gc: GcSettings = field(default_factory=GcSettings)

    def __post_init__(self) -> None:
        self.gc.check()

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServerConfig:
        data = loads_json(text, CONFIG_ENV)  # an operator may write it: no key given twice, like any input
        data["limits"] = Limits(**data.get("limits", {}))
        data["gc"] = GcSettings(**data.get("gc", {}))
        return cls(**data)


def session_from_config(config: ServerConfig) -> Session:
    generator = None
    if config.llm:
        from docket.llm import generator_from_url

        generator = generator_from_url(config.llm, model=config.model, timeout=config.generator_timeout)
    embedder_named(config.embedder)  # a bad name fails at start-up, not on the first request
    policy = load_policy(config.policy) if config.policy else Policy()
    return Session.open(config.db, create=config.create, policy=policy, generator=generator,
                        generator_timeout=config.generator_timeout, new_store_embedder=config.embedder)


__all__ = ["CONFIG_ENV", "Limits", "ServerConfig", "session_from_config"]
