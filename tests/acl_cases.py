"""The access-control rule as a test (issue 20 §1): a principal's brief is byte-identical to the
brief from a store that never held what it may not read — versions, duplicates, conflicts,
retrieval slots (k), BM25 statistics and caches included.

Shared by the fast property test (tests/test_acl_equivalence.py) and the red team
(tests/test_redteam_acl_versions.py): random small corpora (public and restricted chunks,
restricted newer versions, versions dated ahead of time, copies of one text in several
documents, the same rule with different values), random principals and request options, and
one runner per way in: the Python API (Session), the HTTP service (/v1/ask and /v1/assemble),
and the LangChain, LlamaIndex and Haystack adapters. Each runner returns the exact bytes a
caller receives (the brief as JSON, the prompt messages), minus what is random by design (the
trace id of the service)."""

from __future__ import annotations

import json
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from docket.api import Session
from docket.store.access import Principal, may_read
from docket.store.protocol import Filters
from docket.store.sqlite_ann import AnnSettings

DOCS = ("refund-policy", "refund-faq", "travel", "salary")
#: sentences with a value slot: the same sentence with two values is a conflict, with one value a copy
SENTENCES = (
    "Annual plans are refunded within {n} days of the purchase.",
    "Refund requests are answered within {n} working days.",
    "The travel per diem in Paris is {n} EUR a day.",
    "Salary band F3 pays {n} thousand EUR a year.",
    "Monthly plans can be cancelled with {n} days of notice.",
)
VALUES = (14, 30, 45)
ACLS: tuple[tuple[str, ...] | None, ...] = (None, None, ("group:finance",), ("user:ann",), ("group:hr", "user:bob"), ())
DATES = (None, date(2023, 1, 1), date(2025, 6, 1), date(2099, 1, 1))  # 2099: published ahead of time
SOURCES = ("policy", "help", "forum", None)
PRINCIPALS: tuple[Principal | None, ...] = (None, Principal("ann", frozenset({"finance"})), Principal("ann"),
                                            Principal("bob"), Principal("carol", frozenset({"hr"})))
QUESTIONS = ("How many days do I have to get a refund on an annual plan?", "What is the per diem in Paris?",
             "What does salary band F3 pay?",
             "How many days did I have to get a refund on an annual plan in 2024?")  # a date: as-of from the question
AS_OF = (None, date(2024, 1, 1), date(2026, 1, 1))


def _chunk(doc: str, v: int, i: int, text: str, acl: tuple[str, ...] | None, when: date | None,
           source: str | None, status: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": f"{doc}-v{v}-{i}", "doc": doc, "text": text, "version": v, "status": status,
                           "position": i, "title": doc.replace("-", " ").title(), "section": f"s{i // 2}"}
    if acl is not None:
        rec["acl"] = list(acl)
    if when is not None:
        rec["date"] = when.isoformat()
    if source is not None:
        rec["source_type"] = source
    return rec


@st.composite
def corpora(draw: st.DrawFn) -> list[dict[str, Any]]:
    """1-4 documents of 1-3 versions (each version its acl, date, status), 1-3 chunks each."""
    records: list[dict[str, Any]] = []
    names = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=4, unique=True))
    for doc in names:
        source = draw(st.sampled_from(SOURCES))
        status_ugc = source == "forum"
        for v in range(1, draw(st.integers(1, 3)) + 1):
            acl = draw(st.sampled_from(ACLS))
            when = draw(st.sampled_from(DATES))
            status = "user-generated" if status_ugc else draw(st.sampled_from(("current", "current", "current",
                                                                               "draft")))
            for i in range(draw(st.integers(1, 3))):
                text = draw(st.sampled_from(SENTENCES)).format(n=draw(st.sampled_from(VALUES)))
                chunk_acl = draw(st.sampled_from(ACLS)) if draw(st.integers(0, 4)) == 0 else acl
                records.append(_chunk(doc, v, i, text, chunk_acl, when, source, status))
    return records


@dataclass(frozen=True)
class Request:
    """One caller's request options (the /v1/ask body, and Session.ask's arguments)."""

    question: str
    mode: str = "fused"
    k: int = 50
    format: str | None = None
    history: tuple[tuple[str, str], ...] = ()
    budget: int | None = None
    whole_corpus: bool | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    as_of: date | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"question": self.question, "mode": self.mode, "k": self.k}
        if self.format:
            out["format"] = self.format
        if self.history:
            out["history"] = [{"role": r, "content": c} for r, c in self.history]
        for name in ("budget", "whole_corpus"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.filters:
            out["filters"] = dict(self.filters)
        if self.as_of is not None:
            out["as_of"] = self.as_of.isoformat()
        return out


HISTORY = (("user", "I bought an annual plan last week."), ("assistant", "Thanks, noted."))
FILTERS: tuple[dict[str, list[str]], ...] = ({}, {"docs": ["refund-policy", "refund-faq"]}, {"statuses": ["current"]},
                                             {"source_types": ["policy", "help"]})


@st.composite
def requests(draw: st.DrawFn) -> Request:
    return Request(
        question=draw(st.sampled_from(QUESTIONS)),
        mode=draw(st.sampled_from(("fused", "fused", "bm25"))),
        k=draw(st.sampled_from((50, 50, 3))),
        format=draw(st.sampled_from((None, None, "lines"))),
        history=draw(st.sampled_from(((), (), HISTORY))),
        budget=draw(st.sampled_from((None, None, 60))),
        whole_corpus=draw(st.sampled_from((None, None, True))),
        filters=draw(st.sampled_from(FILTERS)),
        as_of=draw(st.sampled_from(AS_OF)),
    )


principals = st.sampled_from(PRINCIPALS)


def readable(records: list[dict[str, Any]], who: Principal | None) -> list[dict[str, Any]]:
    """What a store that never held anything `who` may not read holds."""
    return [r for r in records if may_read(who, r.get("acl"))]


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


# -- the stores -----------------------------------------------------------------------------------

Locate = Callable[[], str]  # a fresh, empty store location


#: dense search through the approximate index whatever the store's size (issue 22: the ACL
#: properties must hold on the ANN path too): every SQLite store opened meanwhile searches it
APPROXIMATE = AnnSettings(min_rows=0, exact_below=0, cheaper_exact=False)


@contextmanager
def approximate_dense(settings: AnnSettings = APPROXIMATE) -> Iterator[None]:
    """SQLite stores whose settings are read inside the block search through the IVF index."""
    import pytest

    with pytest.MonkeyPatch.context() as m:
        m.setattr(AnnSettings, "from_env", classmethod(lambda cls: settings))
        yield


@contextmanager
def sqlite_locations() -> Iterator[Locate]:
    with tempfile.TemporaryDirectory(prefix="docket-acl-") as tmp:
        n = iter(range(1 << 30))
        yield lambda: str(Path(tmp) / f"s{next(n)}.db")


def indexed(location: str, records: list[dict[str, Any]]) -> Session:
    """A session over a new store holding `records` (hash embedder: fast, offline)."""
    s = Session.open(location, create=True, new_store_embedder="hash")
    if records:
        rep = s.index(records=records)
        assert rep.ok, rep.problems
    return s


def filters_of(req: Request) -> Filters | None:
    if not req.filters:
        return None
    f = req.filters
    return Filters(docs=tuple(f.get("docs", ())), source_types=tuple(f.get("source_types", ())),
                   statuses=tuple(f.get("statuses", ())))


def via_session(session: Session, who: Principal | None, req: Request) -> str:
    from docket.policy import Policy

    policy = Policy().updated(render={"format": req.format}) if req.format else None
    res = session.ask(req.question, principal=who, filters=filters_of(req), k=req.k, mode=req.mode,
                      history=[{"role": r, "content": c} for r, c in req.history] or None, policy=policy,
                      budget=req.budget, as_of=req.as_of, whole_corpus=req.whole_corpus)
    return dump(res.brief.to_json())


# -- the service ----------------------------------------------------------------------------------

#: key name -> (principal, groups): one key per principal of PRINCIPALS (None: no key)
KEYS = {"ann-finance": ("ann", ("finance",)), "ann": ("ann", ()), "bob": ("bob", ()), "carol-hr": ("carol", ("hr",))}


def key_name(who: Principal | None) -> str | None:
    if who is None:
        return None
    return next(k for k, (p, g) in KEYS.items() if p == who.name and frozenset(g) == who.groups)


def key_file(folder: Path) -> tuple[str, dict[str, str]]:
    from docket.keys import KeyFile

    path = folder / "keys.json"
    kf = KeyFile(path)
    tokens = {name: kf.add(name, p, g) for name, (p, g) in KEYS.items()}
    return str(path), tokens


def client(location: str, keys: str) -> Any:
    from fastapi.testclient import TestClient

    from docket.server import ServerConfig, create_app

    session = Session.open(location, new_store_embedder="hash")
    return TestClient(create_app(ServerConfig(db=location, keys=keys), session=session))


def via_http(c: Any, tokens: dict[str, str], who: Principal | None, req: Request, route: str = "/v1/ask",
             body: dict[str, Any] | None = None) -> str:
    name = key_name(who)
    headers = {"Authorization": f"Bearer {tokens[name]}"} if name else {}
    r = c.post(route, json=body if body is not None else req.body(), headers=headers)
    out = r.json()
    trace_id = out.pop("trace_id", None) if isinstance(out, dict) else None
    page = ""
    if trace_id is not None:
        page = c.get(f"/v1/trace/{trace_id}", headers=headers).text
    return dump({"status": r.status_code, "body": out}) + "\n" + page


# -- the integrations -----------------------------------------------------------------------------

def framework_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chunk records as a framework holds them: id, text, metadata (acl, version, ... in metadata),
    with a retriever's score (best first, as given)."""
    out = []
    for r in records:  # a score of the record itself (not of its place), so leaving records out changes no score
        meta = {k: v for k, v in r.items() if k not in ("id", "text", "score")}
        score = r.get("score", round(0.4 + (zlib.crc32(r["id"].encode()) % 1000) / 2000, 4))
        out.append({"id": r["id"], "text": r["text"], "metadata": meta, "score": score})
    return sorted(out, key=lambda r: (-r["score"], r["id"]))


def via_langchain(records: list[dict[str, Any]], who: Principal | None, req: Request, prompt: Any = None) -> str:
    from langchain_core.documents import Document

    from docket.integrations.langchain import DocketPrompt

    fr = framework_records(records)
    docs = [(Document(id=r["id"], page_content=r["text"], metadata=r["metadata"]), r["score"]) for r in fr]
    store = [d for d, _ in docs]
    p = prompt or DocketPrompt(floor=0.0, docstore=store, budget=req.budget, as_of=req.as_of or date(2026, 1, 1))
    value = p.invoke({"question": req.question, "documents": docs, "principal": who,
                      "history": [{"role": r, "content": c} for r, c in req.history] or None})
    return dump({"messages": [m.content for m in value.messages], "brief": value.brief, "trace": value.trace})


def via_llamaindex(records: list[dict[str, Any]], who: Principal | None, req: Request, post: Any = None) -> str:
    from llama_index.core.schema import NodeWithScore, TextNode

    from docket.integrations.llamaindex import DocketPostprocessor

    fr = framework_records(records)
    nodes = [NodeWithScore(node=TextNode(id_=r["id"], text=r["text"], metadata=r["metadata"]), score=r["score"])
             for r in fr]
    pp = post or DocketPostprocessor(floor=0.0, budget=req.budget, as_of=req.as_of or date(2026, 1, 1))
    outcome = pp.assemble(req.question, nodes, principal=who)
    return dump(outcome.brief_json())


def via_haystack(records: list[dict[str, Any]], who: Principal | None, req: Request, comp: Any = None) -> str:
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from docket.integrations.haystack import DocketAssembler

    fr = framework_records(records)
    docs = [Document(id=r["id"], content=r["text"], meta=r["metadata"], score=r["score"]) for r in fr]
    if comp is None:
        store = InMemoryDocumentStore()
        store.write_documents([Document(id=d.id, content=d.content, meta=d.meta) for d in docs])
        comp = DocketAssembler(floor=0.0, budget=req.budget, as_of=req.as_of or date(2026, 1, 1), document_store=store)
    out = comp.run(req.question, docs, principal=who)
    return dump({"prompt": [m.text for m in out["prompt"]], "brief": out["brief"]})


INTEGRATIONS: dict[str, Callable[[list[dict[str, Any]], Principal | None, Request], str]] = {
    "langchain": via_langchain, "llamaindex": via_llamaindex, "haystack": via_haystack}


def via_memory(records: list[dict[str, Any]], who: Principal | None, req: Request) -> str:
    """`docket.assemble` over a MemoryStore of the records (what `assemble --store FILE.jsonl`
    reads), ranking the readable chunks by cosine, without and with caller candidates."""
    from docket.assemble import assemble
    from docket.embed import HashEmbedder
    from docket.model import Candidate, parse_chunk
    from docket.policy import Policy
    from docket.store.base import MemoryStore

    chunks = [parse_chunk(r) for r in records]
    emb = HashEmbedder(64)
    policy = Policy().updated(render={"format": req.format}) if req.format else None
    history = [{"role": r, "content": c} for r, c in req.history] or None
    store = MemoryStore(chunks)
    ranked = [Candidate(chunk=c, score=round(0.3 + (zlib.crc32(c.id.encode()) % 1000) / 1500, 4), rank=0)
              for c in chunks]
    ranked = sorted(ranked, key=lambda c: (-c.score, c.chunk.id))
    ranked = [Candidate(chunk=c.chunk, score=c.score, rank=n) for n, c in enumerate(ranked, 1)]
    out = [assemble(req.question, cands, store=store, policy=policy, embedder=emb, budget=req.budget, floor=0.0,
                    as_of=req.as_of, principal=who, history=history, whole_corpus=req.whole_corpus).to_json()
           for cands in (None, ranked)]
    return dump(out)
