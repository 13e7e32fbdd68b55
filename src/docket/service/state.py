"""The state one app shares among its requests, as one object on `app.state.service`: the
config and its limits, the session, the keys, the metrics, the trace store, the policy per
output format; and the helpers that read it (the checks on a request, the brief's JSON, a
request's work run under its budget). Routes get it through the `state_of` dependency."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from docket import deadline
from docket.api import Session
from docket.brief.result import Brief
from docket.errors import DocketError
from docket.keys import ApiKey, KeyFile
from docket.policy import Policy
from docket.schemas import AskRequest, CandidateIn
from docket.service.auth import Identity, owner_of
from docket.service.collector import Collector
from docket.service.config import Limits, ServerConfig
from docket.service.errors import ApiError
from docket.service.metrics import Metrics
from docket.store.protocol import Filters
from docket.trace_store import TraceStore, candidate_rows

log = logging.getLogger("docket.server")
T = TypeVar("T")


async def state_of(request: Request) -> ServiceState:
    """The app's state (a FastAPI dependency; async, so it runs on the event loop and never
    waits for a worker thread: /readyz must not queue behind the requests' work)."""
    state: ServiceState = request.app.state.service
    return state


def ignored_identity_fields(req: Any) -> list[str]:
    """Warnings for `principal`/`groups` sent in a body: who asks comes from the key only."""
    sent = [f for f in ("principal", "groups") if getattr(req, f, None) is not None]
    return [f"{f!r} in the body is ignored: who asks comes from the API key only" for f in sent]


@dataclass
class ServiceState:
    config: ServerConfig
    session: Session
    keys: KeyFile | None
    metrics: Metrics = field(default_factory=Metrics)
    traces: TraceStore = field(init=False)
    #: the session's policy per output format (`format` in a request), made once each
    policies: dict[str | None, Policy] = field(init=False)
    #: readiness never waits behind the requests' threads
    ready_threads: anyio.CapacityLimiter = field(init=False)
    #: the GC policy; it acts only once the process owner activates it (`docket serve`)
    collector: Collector = field(init=False)

    def __post_init__(self) -> None:
        self.collector = Collector(self.config.gc, on_pause=self.metrics.gc_observed)
        self.traces = TraceStore(self.config.traces)
        self.policies = {None: self.session.policy}
        self.ready_threads = anyio.CapacityLimiter(2)

    @property
    def limits(self) -> Limits:
        return self.config.limits

    def policy_for(self, fmt: str | None) -> Policy:
        if fmt not in self.policies:
            self.policies[fmt] = self.session.policy.updated(render={"format": fmt})
        return self.policies[fmt]

    def verify(self, request: Request, token: str) -> ApiKey | None:
        """The key's identity; a key file that broke while the server runs is the operator's
        problem: the path and reason go to the log, the caller gets a generic 503."""
        if self.keys is None:
            return None
        try:
            return self.keys.verify(token)
        except DocketError as e:
            rid = request.state.request_id
            log.error(json.dumps({"ts": round(time.time(), 3), "id": rid, "event": "key_file_unreadable",
                                  "error": str(e)}, ensure_ascii=False))
            raise ApiError(503, "unavailable", f"the server cannot check API keys right now; the operator is told "
                           f"(request id {rid})") from None

    # --- the checks on a request ---------------------------------------------------------------

    def check_question(self, q: str) -> None:
        limits = self.limits
        if not q.strip():
            raise ApiError(422, "invalid", "question is empty; ask a question", "question")
        if len(q) > limits.question_chars:
            raise ApiError(422, "too_long", f"question has {len(q)} characters, the limit is {limits.question_chars}",
                           "question")

    def check_history(self, req: Any) -> None:
        limits = self.limits
        hist = req.history or []
        if len(hist) > limits.history_turns:
            raise ApiError(422, "too_many", f"history has {len(hist)} turns, the limit is {limits.history_turns}",
                           "history")
        total = 0
        for i, m in enumerate(hist):
            total += len(m.content)
            if total > limits.history_chars:
                raise ApiError(422, "too_long", f"history holds more than {limits.history_chars} characters",
                               f"history[{i}].content")

    def check_candidates(self, items: list[CandidateIn]) -> None:
        """Their number, each text's length, the versions per document."""
        limits = self.limits
        if len(items) > limits.candidates:
            raise ApiError(422, "too_many", f"{len(items)} candidates, the limit is {limits.candidates}",
                           "candidates")
        for i, c in enumerate(items):
            if c.text is not None and len(c.text) > limits.text_chars:
                raise ApiError(422, "too_long", f"text has {len(c.text)} characters, the limit is {limits.text_chars}",
                               f"candidates[{i}].text")
        self.check_versions(items)

    def check_versions(self, items: list[CandidateIn]) -> None:
        limits = self.limits
        seen: dict[str, set[int | None]] = {}
        for i, c in enumerate(items):
            if c.doc is None:
                continue
            versions = seen.setdefault(c.doc, set())
            versions.add(c.version)
            if len(versions) > limits.versions_per_doc:
                raise ApiError(422, "too_many", f"more than {limits.versions_per_doc} versions of document {c.doc!r} "
                               "among the candidates (the limit per document); send the versions that matter",
                               f"candidates[{i}].version")

    # --- a brief in and out ----------------------------------------------------------------------

    def attachments_of(self, req: Any) -> list[Any] | None:
        """The request's files as docket Attachments (the reading errors come from docket.modes)."""
        from docket.modes.attach import Attachment

        if not req.attachments:
            return None
        out = []
        for i, a in enumerate(req.attachments):
            where = f"attachments[{i}]"
            if (a.text is None) == (a.data_base64 is None):
                raise ApiError(422, "invalid", "give the file's content as text or as data_base64, exactly one", where)
            if a.text is not None:
                data = a.text.encode("utf-8", "surrogatepass")  # a lone surrogate: replaced and counted when read
            else:
                try:
                    data = base64.b64decode(a.data_base64, validate=True)
                except (binascii.Error, ValueError):
                    raise ApiError(422, "invalid", "is not valid base64", f"{where}.data_base64") from None
            out.append(Attachment(name=a.name, data=data, kind=a.kind))
        return out

    def run_ask(self, req: AskRequest, ident: Identity) -> Any:
        """Session.ask for a request, as the key's principal."""
        self.check_question(req.question)
        self.check_history(req)
        f = req.filters
        filters = Filters(docs=tuple(f.docs), source_types=tuple(f.source_types), statuses=tuple(f.statuses),
                          date_from=f.since, date_to=f.until) if f else None
        return self.session.ask(req.question, principal=ident.principal, filters=filters, k=req.k, mode=req.mode,
                                history=req.history, policy=self.policy_for(req.format), budget=req.budget,
                                floor=req.floor, as_of=req.as_of, attachments=self.attachments_of(req),
                                whole_corpus=req.whole_corpus)

    def brief_json(self, brief: Brief, warnings: list[str], ident: Identity | None = None,
                   candidates: Any = None) -> dict[str, Any]:
        out = brief.to_json()
        if warnings:
            out["warnings"] = list(out["warnings"]) + warnings
        owner = owner_of(ident) if ident is not None else None
        if owner is not None:  # kept for GET /v1/trace/{id}, readable by this key only
            out["trace_id"] = self.traces.put(owner, dict(out), candidate_rows(candidates))
        return out

    @staticmethod
    def record(request: Request, brief: Brief, ms: dict[str, float], extra: dict[str, Any] | None = None) -> None:
        """The brief's figures for the request's log line and metrics."""
        tk = brief.tokens
        request.state.info.update({
            "found": brief.found, "passages": tk.passages,
            "tokens": {"system": tk.system, "history": tk.history or 0, "documents": tk.documents, "tags": tk.tags or 0,
                       "question": tk.question, "total": tk.total},
            "stages": ms, **(extra or {}),
        })

    # --- a request's work ----------------------------------------------------------------------

    async def bounded(self, request: Request, work: Callable[[], T]) -> T:
        """`work()` in a worker thread (the event loop, and /healthz with it, stays free) under the
        request's budget (docket.deadline: wall and CPU seconds), stopped when the client goes."""
        budget = deadline.Budget(wall_seconds=self.limits.wall_seconds, cpu_seconds=self.limits.cpu_seconds)

        def run() -> T:
            with budget.active():
                return work()

        async def watch() -> None:
            gone = getattr(request.state, "client_gone", None)  # set by BodyLimit (a TestClient may lack it)
            if gone is not None:
                await gone.wait()
                budget.cancel()

        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                result = await anyio.to_thread.run_sync(run)
            except Exception as e:  # raised below, outside the task group (which would wrap it)
                failed = e
            tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return result


__all__ = ["ServiceState", "ignored_identity_fields", "state_of"]
