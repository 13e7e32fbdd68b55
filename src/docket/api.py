"""The session: one store, one policy and the models, kept warm, behind typed methods.

    with Session.open("docket.db") as s:                  # or Session(store=MemoryStore(chunks))
        res = s.ask("Can I get a refund after 30 days?", principal="ann")
        res.brief.messages, res.brief.sources["S1"].doc, res.brief.trace
        rep = s.answer("...", principal="ann")             # with a generator: answer + check
        s.check(answer_text, res.brief), s.index(["docs/"]), s.delete("refund-policy")

The command line and the HTTP service are thin adapters over this class: what a question needs
(who asks and with which groups, filters, the policy and its overrides, the store's lifetime,
the embedder the store was built with, generator time-outs) is decided here once, so `docket
ask` and `POST /v1/ask` cannot drift apart. Nothing here prints.

Warm state: the embedder, the token counter and the store connections are loaded once; the
SQLite store keeps its vector matrix in memory until its write generation changes, and the
session re-reads the store's settings (which embedder built it) on the same signal, so a `docket
index` run by another process is picked up without a restart. Each request gets a fresh
principal-scoped view and a fresh assembler context: nothing of one request leaks into the
next, so any number of worker processes can serve one PostgreSQL store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date as Date
from pathlib import Path
from typing import Any, Literal

from docket.assemble import Planned, as_policy, assemble_candidates
from docket.assemble import assemble as assemble_brief
from docket.assemble import plan as plan_request
from docket.brief.result import Brief
from docket.caches import Caches
from docket.check import CheckReport, SupportJudge, check_answer
from docket.embed import Embedder, HashEmbedder, default_embedder, minilm
from docket.errors import DocketError, InputError, UnavailableError
from docket.features import FeatureCache
from docket.followup import searched_query
from docket.history import ChatMessage, Condenser, generator_condenser
from docket.ingest import IndexOptions, IndexReport, index_paths, index_versions
from docket.ingest.chunking import ChunkSize
from docket.llm.answer import AnswerReport, checked_reply, generate_answer, not_called
from docket.llm.base import Answer, Citation, Generator
from docket.model import Candidate, parse_chunk
from docket.policy import Policy
from docket.presets import counter_for
from docket.request import Request
from docket.retrieve import Hits, search, snapshot_of
from docket.session_stores import StoreHandles, nolock, redact
from docket.store.base import ChunkLookup, MemoryStore
from docket.store.protocol import DocumentVersion, Filters, Principal, ScopedView, Store, may_read
from docket.timeouts import call_within, stream_within
from docket.tokens import TokenCounter, default_counter

HistoryArg = Sequence[ChatMessage | Mapping[str, Any]] | None
EMBEDDERS = ("minilm", "hash")


@dataclass
class AskResult:
    """What `Session.ask` returns: the retrieved candidates (best first) and the brief."""

    brief: Brief
    candidates: list[Candidate]
    principal: Principal | None = None
    #: milliseconds per stage: retrieve, assemble
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The brief's JSON (the `docket ask --json` contract)."""
        return self.brief.to_json()


@dataclass
class AnswerEvent:
    """One step of a streamed answer: `brief`, `delta` (a piece of text), `answer`, `check`,
    `error` (the model call failed; the brief stands) or `done`."""

    kind: Literal["brief", "delta", "answer", "check", "error", "done"]
    data: Any = None


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def embedder_named(name: str, dim: int = 256) -> Embedder:
    """`minilm` (the default all-MiniLM-L6-v2) or `hash` (tests only)."""
    if name == "hash":
        return HashEmbedder(dim)
    if name == "minilm":
        return default_embedder()
    raise InputError(f"must be one of {', '.join(EMBEDDERS)}, got {name!r}", field="embedder")


def _index_inputs(paths: Any, records: Any) -> tuple[list[str | Path], list[Mapping[str, Any]] | None]:
    """`Session.index` as a new caller writes it: one path given as a string is that path (iterated,
    its characters would be paths: "/" the file system's root); chunk records may be `Chunk`s
    (what `load_chunks` returns); anything else is refused by position before any write."""
    from os import PathLike

    from docket.model import Chunk

    if isinstance(paths, (str, PathLike)):
        paths = [paths]
    elif isinstance(paths, (bytes, Mapping)) or not isinstance(paths, Iterable):
        raise InputError(f"must be a list of files or folders, got {type(paths).__name__}", field="paths")
    paths = list(paths)
    for n, p in enumerate(paths):
        if not isinstance(p, (str, PathLike)):
            raise InputError(f"must be a file or folder path, got {type(p).__name__}", field=f"paths[{n}]")
    if records is None:
        return paths, None
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise InputError(f"must be a list of chunk records (dicts with id, doc, text), got {type(records).__name__}",
                         field="records")
    out: list[Mapping[str, Any]] = []
    for n, r in enumerate(records):
        if isinstance(r, Chunk):
            out.append(r.to_record(with_vector=True))
        elif isinstance(r, Mapping):
            out.append(r)
        else:
            raise InputError(f"must be a chunk record (a dict with id, doc, text) or a docket Chunk, got "
                             f"{type(r).__name__}", field=f"records[{n}]")
    return paths, out


class Session:
    """A store, a policy, a token counter, an embedder and optionally a generator (see the module
    docstring). Build it from objects, or with `Session.open(location)` to let it own the store.

    `embedder` None means: the one the store was indexed with (MiniLM for an empty store or a
    store-less session). `generator_timeout` bounds every model call in seconds, whatever the
    client's own time-out; `condense` lets the generator summarise history that does not fit.

    `caches` (docket.caches): the session's own bounded caches (per-chunk features, conflict pair
    decisions, rendered passages, the default embedder's question vectors), made here when not
    given; nothing of them is shared with another session. A store handed in that fills a feature
    cache of its own (`store.features`) shares that one with the session.
    """

    def __init__(
        self,
        store: Store | ChunkLookup | None = None,
        *,
        policy: Policy | None = None,
        counter: TokenCounter | None = None,
        embedder: Embedder | str | None = None,
        generator: Generator | None = None,
        judge: SupportJudge | None = None,
        generator_timeout: float = 120.0,
        max_tokens: int = 512,
        new_store_embedder: str = "minilm",
        router: Generator | None = None,
        caches: Caches | None = None,
    ) -> None:
        self.policy = as_policy(policy)  # a dict of sections or a TOML path too, read as --policy reads it
        if isinstance(embedder, str):  # "minilm" or "hash", as `--embedder` and new_store_embedder take it
            embedder = embedder_named(embedder)
        if caches is None:
            filled = getattr(store, "features", None)  # a store object offers its rows to this cache
            caches = Caches(features=filled if isinstance(filled, FeatureCache) else None)
        #: the session's caches (docket.caches), handed to its stores, contexts and renderer
        self.caches = caches
        self.counter = counter or default_counter()
        self._counter_given = counter is not None
        #: decides what the routing rules are unsure of (route.enabled; docket.modes.route)
        self.router = router
        self._embedder = embedder
        self.generator = generator
        self.judge = judge
        self.generator_timeout = generator_timeout
        self.max_tokens = max_tokens
        self.new_store_embedder = new_store_embedder
        self._stores: StoreHandles | None = None
        self._store = store
        self._generation: str | None = None
        self._store_embedder: Embedder | None = None
        self._refresh_lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._pool_: ThreadPoolExecutor | None = None

    @classmethod
    def open(cls, location: str | Path, *, create: bool = False, read_only: bool = False, file_mode: int | None = None,
             **options: Any) -> Session:
        """A session that owns the store at `location` (SQLite file or postgresql:// URL).
        `read_only`: searches and fetches read the SQLite file without ever writing it (no tables
        made in a file that is not a store, nothing migrated); writing through the session still
        opens a writer. `file_mode`: the SQLite files' permission bits (docket.store.factory)."""
        s = cls(None, **options)
        s._stores = StoreHandles(str(location), create, read_only=read_only and not create, file_mode=file_mode,
                                 caches=s.caches)
        return s

    @property
    def _pool(self) -> ThreadPoolExecutor:
        """Threads for model calls, so a call can be abandoned at its time-out (made on first use)."""
        with self._pool_lock:
            if self._pool_ is None:
                self._pool_ = ThreadPoolExecutor(max_workers=8, thread_name_prefix="docket-llm")
            return self._pool_

    # --- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        if self._stores is not None:
            self._stores.close()
        if self._pool_ is not None:
            self._pool_.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the store and the models ---------------------------------------------------------------
    @property
    def store(self) -> Store | ChunkLookup | None:
        """The store this thread reads through (None for a store-less session)."""
        if self._stores is not None:
            return self._stores.reader()
        return self._store

    def _full_store(self) -> Store:
        st = self.store
        if st is None:
            raise InputError("this session has no searchable store: open one with Session.open(PATH or URL)",
                             field="store")
        if not hasattr(st, "search_dense"):  # a MemoryStore of chunks: assembly, not retrieval
            raise InputError(f"this session's {type(st).__name__} cannot be searched: ask retrieves from a store "
                             "built by `docket index` (Session.open(PATH or URL)); to rank these chunks yourself, "
                             "call session.assemble(question, candidates) or docket.assemble", field="store")
        return st  # type: ignore[return-value]

    def generation(self) -> str | None:
        """The store's write generation (None when it has none), refreshing the session's view
        of the store's settings when it changed."""
        st = self.store
        gen_fn = getattr(st, "generation", None)
        if gen_fn is None:
            return None
        gen = str(gen_fn())
        if gen != self._generation:
            with self._refresh_lock:
                if gen != self._generation:
                    self._store_embedder = None
                    self._generation = gen
        return gen

    def embedder(self) -> Embedder:
        """The embedder questions and new chunks must use: the configured one, else the one the
        store was built with, else the default for a new store."""
        if self._embedder is not None:
            return self._embedder
        self.generation()
        if self._store_embedder is None:
            st = self.store
            meta: dict[str, str] = st.meta() if st is not None and hasattr(st, "meta") else {}  # type: ignore[union-attr,attr-defined]
            name = meta.get("embedder")
            if name is None:
                emb = self._embedder_named(self.new_store_embedder)
            elif name == HashEmbedder.name:
                emb = HashEmbedder(int(meta.get("dim", "256") or 256))
            else:
                emb = self._embedder_named("minilm")
                if name != emb.name or str(emb.dim) != str(meta.get("dim", emb.dim)):
                    raise UnavailableError(f"the store was indexed with embedder {name!r} (dim {meta.get('dim')}), "
                                           "which this docket cannot load")
            self._store_embedder = emb
        return self._store_embedder

    def _embedder_named(self, name: str) -> Embedder:
        """`embedder_named`, MiniLM behind this session's own cache of question vectors."""
        return self.caches.embedder(minilm()) if name == "minilm" else embedder_named(name)

    def warm_up(self) -> None:
        """Load the models and the store's vectors now, so the first request is not the slow one."""
        self.counter.count("warm up")
        self.embedder().embed(["warm up"])
        st = self.store
        if isinstance(st, Store) and st.meta().get("embedder"):
            st.search_dense(self.embedder().embed(["warm up"])[0], 1, Filters())

    def principal(self, name: str | Principal | None, groups: Sequence[str] = ()) -> Principal | None:
        """Who asks: a name gets its groups from the store's principals table plus `groups`."""
        if name is None:
            if groups:
                raise InputError("needs a principal (groups belong to someone)", field="groups")
            return None
        if isinstance(name, Principal):
            return Principal(name.name, name.groups | frozenset(groups))
        st = self.store
        lookup = getattr(st, "principal", None)
        if lookup is not None:
            return lookup(name, tuple(groups))  # type: ignore[no-any-return]
        return Principal(name, frozenset(groups))

    def _counter(self, policy: Policy) -> TokenCounter:
        """The session's counter when it was given one, else the one the policy names (a model
        preset picks cl100k_base for GPT-4, for instance)."""
        return self.counter if self._counter_given else counter_for(policy)

    def _condenser(self) -> Condenser | None:
        if self.generator is None or not self.policy.history.condense:
            return None
        inner = generator_condenser(self.generator)

        def bounded(turns: Sequence[ChatMessage], room: int) -> str:
            return self._call(lambda: inner(turns, room), what="history summary")

        return bounded

    # --- assemble ---------------------------------------------------------------------------------
    def assemble(
        self,
        question: str,
        candidates: Sequence[Candidate] | None = None,
        *,
        store: ChunkLookup | None = None,
        history: HistoryArg = None,
        principal: Principal | None = None,
        policy: Policy | None = None,
        budget: int | None = None,
        floor: float | None = None,
        as_of: Date | None = None,
        attachments: Sequence[Any] | None = None,
        whole_corpus: bool | None = None,
        router: Generator | None = None,
        generator: Generator | None = None,
    ) -> Brief:
        """The brief from the caller's ranked candidates (best first), read through `store` (default:
        the session's store, or the candidates themselves for a store-less session). Only what
        `principal` may read takes part (None: public chunks only), as in `docket.assemble`.

        `attachments` (files the user handed over) are the context instead; `whole_corpus` sends
        everything `principal` may read when it fits; `router` (default: the session's `router`)
        decides for `route.enabled` what the routing rules are unsure of (docs/modes.md);
        `generator` (default: the session's) writes `compress.summary`'s passage."""
        lookup = store
        if lookup is None:
            lookup = self.store if self.store is not None else MemoryStore([c.chunk for c in candidates or []])
        pol = policy or self.policy
        return assemble_brief(question, candidates, store=lookup, policy=pol, counter=self._counter(pol),
                              embedder=self.embedder(), budget=budget, floor=floor, as_of=as_of, principal=principal,
                              history=history, condenser=self._condenser(), attachments=attachments,
                              whole_corpus=whole_corpus, router=router or self.router,
                              generator=generator or self.generator, caches=self.caches)

    def candidates_from(self, records: Sequence[Mapping[str, Any]], *, where: str = "candidates") -> list[Candidate]:
        """Ranked candidates from records: each a full chunk record with a `score`, best first."""
        out: list[Candidate] = []
        seen: set[str] = set()
        for n, rec in enumerate(records):
            loc = f"{where}[{n}]"
            data = dict(rec)
            score = data.pop("score", None)
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise InputError(f"must be a number, got {score!r}", where=loc, field="score")
            chunk = parse_chunk(data, where=loc)
            if chunk.id in seen:
                raise InputError("is ranked twice", where=loc, field="id")
            seen.add(chunk.id)
            out.append(Candidate(chunk=chunk, score=float(score), rank=n + 1))
        return out

    def candidates_by_id(self, ranked: Sequence[tuple[str, float]], principal: Principal | None, *,
                         where: str = "candidates") -> tuple[list[Candidate], ScopedView]:
        """Ranked `(chunk id, score)` pairs resolved in the session's store as `principal` sees it.
        An id it may not read is reported like an unknown one, so existence does not leak."""
        base = self._full_store()
        view = ScopedView(base, principal)
        found = base.get_many([cid for cid, _ in ranked])
        out: list[Candidate] = []
        seen: set[str] = set()
        for n, (cid, score) in enumerate(ranked):
            c = found.get(cid)
            if cid in seen:
                raise InputError("is ranked twice", where=f"{where}[{n}]", field="id")
            seen.add(cid)
            if c is None or not may_read(principal, c.acl):
                raise InputError(f"{cid!r} is not in the store (or not readable with this key)", where=f"{where}[{n}]",
                                 field="id")
            out.append(Candidate(chunk=c, score=float(score), rank=n + 1))
        return out, view

    # --- ask ----------------------------------------------------------------------------------------
    def ask(
        self,
        question: str,
        *,
        principal: str | Principal | None = None,
        groups: Sequence[str] = (),
        filters: Filters | None = None,
        k: int = 50,
        mode: str = "fused",
        history: HistoryArg = None,
        policy: Policy | None = None,
        budget: int | None = None,
        floor: float | None = None,
        as_of: Date | None = None,
        attachments: Sequence[Any] | None = None,
        whole_corpus: bool | None = None,
        router: Generator | None = None,
        generator: Generator | None = None,
    ) -> AskResult:
        """Plan the request, retrieve only when the plan says so, assemble, finish.

        The request (question, principal, filters, history, attachments, options) is frozen first
        (docket.request). docket.modes then plans its mode: `attachments`, routing (`route.enabled`)
        and the whole corpus (`whole_corpus`, `corpus.mode`) can each make retrieval unnecessary;
        then `candidates` is empty and `timings["retrieve"]` is 0. Otherwise the store is searched as
        `principal` (dense + BM25, access-controlled in the query; `filters` narrow it, their own
        principal replaced by the one given here), the question's vector is handed on, and the
        assembler runs through the principal-scoped view. `generator` (default: the session's)
        writes `compress.summary`'s passage."""
        store = self._full_store()
        self.generation()
        f = self._filters(filters, principal, groups)
        request = Request.of(question, principal=f.principal, filters=f, history=history, attachments=attachments,
                             budget=budget, floor=floor, as_of=as_of, whole_corpus=whole_corpus, k=k, search=mode)
        embedder = self.embedder()
        pol = policy or self.policy
        gen = generator or self.generator
        t0 = time.perf_counter()
        planned = plan_request(request, store=ScopedView(store, f.principal), policy=pol, counter=self._counter(pol),
                               embedder=embedder, condenser=self._condenser(), router=router or self.router,
                               generator=gen, caches=self.caches)
        hits = self._retrieve(planned, store, embedder) if planned.plan.retrieves else None
        t_retrieve = hits[1] if hits is not None else 0.0
        found = hits[0].candidates if hits is not None else []
        vector = (hits[0].query, hits[0].vector) if hits is not None else None
        brief = assemble_candidates(planned, found, query_vector=vector)
        return AskResult(brief=brief, candidates=found, principal=f.principal,
                         timings={"retrieve": t_retrieve, "assemble": round(_ms(t0) - t_retrieve, 3)})

    def _filters(self, filters: Filters | None, principal: str | Principal | None, groups: Sequence[str]) -> Filters:
        """The request's filters with the principal who asks (never unrestricted: that is for export)."""
        f = filters or Filters()
        if f.unrestricted:
            raise InputError("unrestricted filters are for administration (export, copying a store), not for answering "
                             "a question; pass the principal who asks", field="filters")
        who = self.principal(principal, groups) if principal is not None or groups else f.principal
        return replace(f, principal=who)  # every other filter as given (a field-by-field copy once dropped `exact`)

    def _retrieve(self, planned: Planned, store: Store, embedder: Embedder) -> tuple[Hits, float]:
        """The search the plan asked for, and its milliseconds. A follow-up searches with the
        conversation (docket.followup). The search and the fetch of its rows see one state of the
        store, and the snapshot (which holds the shared reader) is released before assembly, so a
        slow request never makes another caller wait (Move 1 and 3's look-ups read live, each
        through the principal's scoped view)."""
        req = planned.request
        t0 = time.perf_counter()
        query = searched_query(req.question, req.history, planned.generator, planned.ctx.trace)
        with snapshot_of(store):
            hits = search(store, query, k=req.options.k, mode=req.options.search, filters=req.filters,
                          embedder=embedder, features=self.caches.features)
        return hits, _ms(t0)

    # --- answer ------------------------------------------------------------------------------------
    def _need_generator(self) -> Generator:
        if self.generator is None:
            raise UnavailableError("no generator configured: pass generator=... (or `--llm URL` to `docket serve`)")
        return self.generator

    def _call(self, fn: Callable[[], Any], *, what: str) -> Any:
        """`fn()` within the generator time-out; a late answer is abandoned as a time-out."""
        return call_within(self._pool, fn, self.generator_timeout, getattr(self.generator, "name", "the generator"),
                           what)

    def generate(self, brief: Brief, *, allowed_domains: Sequence[str] = (), strip: bool = False,
                 structured: bool = False) -> AnswerReport:
        """Answer `brief` with the session's generator and check the answer (links against
        `allowed_domains`); with `structured`, a JSON answer or a typed refusal (docket.llm.structured).
        A model failure (time-out included) is carried in the report, never raised: the brief stands."""
        report = AnswerReport(brief=brief)
        for ev in self.stream(brief, deltas=False, allowed_domains=allowed_domains, strip=strip, structured=structured):
            if ev.kind == "answer":
                report.answer = ev.data
            elif ev.kind == "check":
                report.check = ev.data
            elif ev.kind == "error":
                report.error, report.error_kind = ev.data["message"], ev.data["kind"]
        report.skipped = not brief.found
        report.generator = None if report.skipped else getattr(self.generator, "name", None)
        return report

    def answer(self, question: str, *, structured: bool = False, **ask_options: Any) -> AnswerReport:
        """`ask`, then `generate`: the answer, its check and the brief, in one report."""
        self._need_generator()
        return self.generate(self.ask(question, **ask_options).brief, structured=structured)

    def stream(self, brief: Brief, *, deltas: bool = True, allowed_domains: Sequence[str] = (),
               strip: bool = False, structured: bool = False) -> Iterator[AnswerEvent]:
        """The answer to `brief` as events: `delta`s while the model writes (when it streams and
        `deltas`), then `answer` and `check`, or `error`; always `done` last.

        With `structured` the model answers in JSON (sentences with their citations, or a typed
        refusal) and that is what is checked; no deltas (a partial JSON object is no use to a
        reader). Nothing above the floor: the model is not called and the answer is the refusal
        sentence (structured: the typed refusal).
        """
        if not brief.found:
            ans = not_called(brief, structured)
            yield AnswerEvent("answer", ans)
            yield AnswerEvent("check", self.check(checked_reply(ans, structured), brief, allowed_domains=allowed_domains,
                                                  strip=strip))
            yield AnswerEvent("done")
            return
        gen = self._need_generator()
        try:
            streams = (deltas and not structured and callable(getattr(gen, "stream", None))
                       and not callable(getattr(gen, "answer_brief", None)))
            if streams:
                t0 = time.perf_counter()
                pieces: list[str] = []
                for piece in self._bounded_stream(lambda: gen.stream(brief.messages, max_tokens=self.max_tokens,  # type: ignore[attr-defined]
                                                                     temperature=0.0)):
                    pieces.append(piece)
                    yield AnswerEvent("delta", piece)
                text = "".join(pieces).strip()
                from docket.checks.sentences import labels_in

                ans = Answer(text=text, model=getattr(gen, "name", ""), seconds=time.perf_counter() - t0,
                             citations=[Citation(label=lab) for lab in labels_in(text)])
            else:
                ans = self._call(lambda: generate_answer(gen, brief, max_tokens=self.max_tokens, structured=structured),
                                 what="answer")
                if deltas and not structured:
                    yield AnswerEvent("delta", ans.text)
        except DocketError as e:
            yield AnswerEvent("error", {"message": str(e), "kind": getattr(e, "kind", type(e).__name__)})
            yield AnswerEvent("done")
            return
        yield AnswerEvent("answer", ans)
        try:
            yield AnswerEvent("check", self.check(checked_reply(ans, structured), brief, allowed_domains=allowed_domains,
                                                  strip=strip))
        except DocketError as e:  # a judge's model call can fail too; the answer stays
            yield AnswerEvent("error", {"message": f"check: {e}", "kind": getattr(e, "kind", type(e).__name__)})
        yield AnswerEvent("done")

    def _bounded_stream(self, start: Callable[[], Iterator[str]]) -> Iterator[str]:
        """The generator's stream, read in a worker thread, within the generator time-out."""
        return stream_within(self._pool, start, self.generator_timeout,
                             getattr(self.generator, "name", "the generator"))

    # --- check ---------------------------------------------------------------------------------------
    def check(self, answer: Any, brief: Any, *, allowed_domains: Sequence[str] = (), strip: bool = False,
              names: bool = True, judge: SupportJudge | None = None) -> CheckReport:
        """Check an answer's citations against its brief (a Brief, its JSON, or a path). `answer` is
        text, or a structured answer (`{"sentences": [...], "refusal": ...}`, docket.llm.structured)."""
        return check_answer(answer, brief, judge=judge or self.judge, allowed_domains=allowed_domains, strip=strip,
                            names=names)

    # --- index / delete ------------------------------------------------------------------------------
    def _write_store(self) -> tuple[Store, threading.Lock | None]:
        if self._stores is not None:
            return self._stores.writer(), self._stores.write_lock
        return self._full_store(), None

    def index(
        self,
        paths: Sequence[str | Path] = (),
        *,
        records: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        versions: Iterable[DocumentVersion] | None = None,
        chunk_size: int = 300,
        overlap: int = 40,
        progress: Callable[[int, int], None] | None = None,
        set_fields: Mapping[str, Any] | None = None,
        doc_prefix: str | None = None,
        options: IndexOptions | None = None,
        meta: Mapping[str, str] | None = None,
        report: IndexReport | None = None,
    ) -> IndexReport:
        """Index files (`paths`), chunk `records` (the JSONL contract as dicts), `documents`
        (`{"name", "text", "kind": markdown|html|text, "meta": {...}}`) or whole document
        `versions` (another store's export, vectors included) into the store. `set_fields` and
        `doc_prefix` are imposed on every version written, over what the documents say about
        themselves (docket.ingest.batch). `options` replaces the keywords that build the
        IndexOptions (`docket index` passes its own: terminal progress, a contextualizer); `meta`
        is recorded on the store first. A contextualizer that wrote contexts is recorded too.
        `report`: an earlier call's report to add records, documents and versions to."""
        paths, records = _index_inputs(paths, records)
        if options is None:
            from docket.ingest.batch import batch_meta

            batch = batch_meta(dict(set_fields or {}), doc_prefix, field_name="set_fields")
            store, lock = self._write_store()
            options = IndexOptions(embedder=self.embedder(), counter=self.counter,
                                   chunk=ChunkSize(chunk_size, overlap), progress=progress, batch=batch)
        else:
            store, lock = self._write_store()
        with lock if lock is not None else nolock():
            if meta:
                store.set_meta(dict(meta))
            if paths:
                report = index_paths(store, list(paths), options)
            report = report if report is not None else IndexReport()
            if records or documents:
                from docket.ingest.inline import read_inline

                index_versions(store, read_inline(records or [], documents or [], options, report), options, report)
            if versions is not None:
                report = index_versions(store, versions, options, report)
            c = options.contextualizer
            if c is not None and report.contexts is not None:
                store.set_meta({"contextualized": c.identity})
        self.generation()
        return report

    def export(self) -> Iterator[DocumentVersion]:
        """Every document version of the store, every chunk with its vector (administration: no
        access filter; `docket export`, copying a store)."""
        yield from self._full_store().export()

    def delete(self, doc: str, version: int | None = None) -> int:
        """Remove a document (or one version); InputError when the store does not hold it (naming
        the versions it does hold)."""
        store, lock = self._write_store()
        with lock if lock is not None else nolock():
            stored = [v.version for v in store.stored_versions(doc)]
            if not stored:
                raise InputError("is not in the store; nothing deleted", where=f"document {doc!r}")
            if version is not None and version not in stored:
                raise InputError(f"has no version {version}; stored: {', '.join(f'v{v}' for v in stored)}. Nothing "
                                 "deleted", where=f"document {doc!r}", field="version")
            n = store.delete(doc, version)
        self.generation()
        return n

    def meta(self) -> dict[str, str]:
        """The store's settings: the embedder (and dim) it was built with, whether its chunks carry
        contexts (`contextualized`)."""
        return self._full_store().meta()

    def stats(self) -> dict[str, Any]:
        """What /readyz reports: chunks, documents' embedder, generation."""
        st = self._full_store()
        meta = st.meta()
        return {"chunks": st.count(), "embedder": meta.get("embedder"), "generation": self.generation(),
                "location": redact(st.location)}


__all__ = ["AnswerEvent", "AskResult", "Session", "embedder_named"]
