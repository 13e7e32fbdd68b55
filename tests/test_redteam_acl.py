"""Red team, access control (slow; `scripts/redteam.sh`): random principals x random acls x ask
options on both backends and through `assemble` with caller candidates, BM25 rankings with and
without restricted documents, and `ask` while another process flips ACLs. Every restricted chunk
carries a unique marker word; a leak is its id or marker in anything the brief carries."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from redteam_log import record
from store_cases import EMB, version

from docket.api import Session
from docket.assemble import assemble
from docket.model import Candidate
from docket.store.access import Principal, may_read
from docket.store.base import MemoryStore
from docket.store.factory import open_store
from docket.store.protocol import Filters, Store

pytestmark = pytest.mark.slow
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
ENTRIES = ["user:ann", "user:finance", "group:finance", "finance", "execs", "group:hr", "user:carol", "carol", "ann"]
NAMES = ["ann", "bob", "finance", "execs", "carol", "hr"]
GROUPS = ["finance", "execs", "hr", "ops"]
WORDS = "refund policy annual plan salary merger holiday payout budget office travel expense".split()


def _acl(rng: random.Random) -> tuple[str, ...] | None:
    r = rng.random()
    if r < 0.35:
        return None
    if r < 0.4:
        return ()
    return tuple(rng.sample(ENTRIES, rng.randint(1, 3)))


def _principal(rng: random.Random) -> Principal | None:
    if rng.random() < 0.2:
        return None
    return Principal(rng.choice(NAMES), frozenset(rng.sample(GROUPS, rng.randint(0, 2))))


def _corpus(rng: random.Random, n_docs: int) -> list:  # type: ignore[type-arg]
    out = []
    for d in range(n_docs):
        acl = _acl(rng)
        texts = [" ".join(rng.choices(WORDS, k=8)) + f" mark{d}x{i}" for i in range(rng.randint(1, 4))]
        dv = version(f"d{d}", 1, texts, acl=acl)
        if rng.random() < 0.3:  # per-chunk acls inside one version
            dv.chunks = [c.model_copy(update={"acl": _acl(rng)}) for c in dv.chunks]
        out.append(dv)
    return out


def _leaks(brief_json: str, chunks: list, who: Principal | None) -> int:  # type: ignore[type-arg]
    n = 0
    for c in chunks:
        if not may_read(who, c.acl):
            marker = c.text.rsplit(" ", 1)[1]
            n += (f'"{c.id}"' in brief_json) or (marker in brief_json)
    return n


def _backend(location: str) -> str:
    return "postgres" if "://" in location else "sqlite"


def _new_location(location: str, tmp_path, tag: str) -> str:  # noqa: ANN001
    """Another empty store of the same backend (a new schema beside the test's own on PostgreSQL)."""
    if "://" not in location:
        return str(tmp_path / f"{tag}.db")
    import re

    import psycopg

    old = re.search(r"search_path%3D([A-Za-z0-9_]+)%2C", location).group(1)  # type: ignore[union-attr]
    with psycopg.connect(location, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {old}_{tag}")
    return location.replace(f"search_path%3D{old}%2C", f"search_path%3D{old}_{tag}%2C")


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:  # noqa: ANN001
    yield str(tmp_path / "r.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def test_redteam_acl_random_principals_and_options(location: str) -> None:
    rng = random.Random(9)
    s = open_store(location)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    dvs = _corpus(rng, 60)
    for dv in dvs:
        s.write_version(dv)
    stored = [c for doc in s.documents() for v in s.versions(doc) for c in s.chunks_of(doc, v.version)]
    tried = leaked = 0
    for _ in range(300):
        who = _principal(rng)
        q = " ".join(rng.sample(WORDS, 3))
        filters = Filters(principal=who, docs=tuple(rng.sample([f"d{i}" for i in range(60)], 10)) if rng.random() < 0.2 else ())
        res = Session(s, embedder=EMB).ask(q, filters=filters, mode=rng.choice(["fused", "dense", "bm25"]),
                                           k=rng.choice([5, 20, 50]), floor=rng.choice([0.0, 0.2]),
                                           budget=rng.choice([200, 800, 3000]))
        cands, brief = res.candidates, res.brief
        out = json.dumps(brief.to_json()) + json.dumps([c.chunk.id for c in cands])
        tried += 1
        leaked += _leaks(out, stored, who)
    s.close()
    record(f"acl/ask-{_backend(location)}", tried, leaked=leaked)
    assert leaked == 0


def test_redteam_acl_caller_candidates() -> None:
    rng = random.Random(11)
    tried = leaked = 0
    for _ in range(400):
        chunks = [c for dv in _corpus(rng, 8) for c in dv.chunks]
        chunks = [c.model_copy(update={"vector": tuple(EMB.embed([c.text])[0].tolist())}) for c in chunks]
        rng.shuffle(chunks)
        cands = [Candidate(chunk=c, score=round(rng.uniform(0.3, 0.9), 3), rank=i + 1) for i, c in enumerate(chunks)]
        who = _principal(rng)
        brief = assemble(" ".join(rng.sample(WORDS, 3)), cands, store=MemoryStore(chunks), embedder=EMB, floor=0.0,
                         budget=rng.choice([150, 600, 2000]), principal=who)
        tried += 1
        leaked += _leaks(json.dumps(brief.to_json()), chunks, who)
    record("acl/assemble-candidates", tried, leaked=leaked)
    assert leaked == 0


def test_redteam_acl_bm25_statistics(location: str, tmp_path) -> None:  # noqa: ANN001
    """The public ranking of a random query is the same with and without random restricted docs."""
    rng = random.Random(13)
    tried = leaked = 0
    for trial in range(12):
        pub = _corpus(rng, 15)
        for dv in pub:
            dv.chunks = [c.model_copy(update={"acl": None}) for c in dv.chunks]
        secret = _corpus(rng, 10)
        for dv in secret:
            dv.doc = f"s{dv.doc}"
            dv.chunks = [c.model_copy(update={"acl": ("group:execs",), "doc": dv.doc, "id": "s" + c.id}) for c in dv.chunks]
        ranks = []
        for with_secret in (False, True):
            loc = _new_location(location, tmp_path, f"b{trial}{int(with_secret)}")
            st: Store = open_store(loc)
            st.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
            for dv in pub + (secret if with_secret else []):
                st.write_version(dv)
            ranks.append([st.search_bm25(" ".join(rng_q), 20, Filters())
                          for rng_q in [random.Random(trial * 7 + j).sample(WORDS, 2) for j in range(10)]])
            st.close()
        for a, b in zip(*ranks):
            tried += 1
            leaked += a != b
    record(f"acl/bm25-stats-{_backend(location)}", tried, leaked=leaked)
    assert leaked == 0


def test_redteam_acl_concurrent_acl_changes(location: str) -> None:
    rng = random.Random(17)
    s = open_store(location)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    fixed = _corpus(rng, 20)
    for dv in fixed:
        s.write_version(dv)
    flip_texts = ["refund policy annual flip marker flipa", "salary merger flip marker flipb"]
    s.write_version(version("flip", 1, flip_texts))
    stored = [c for dv in fixed for c in dv.chunks]
    stop = threading.Event()
    flips = [0]

    def flipper() -> None:
        w = open_store(location)
        i = 0
        while not stop.is_set():
            w.write_version(version("flip", 1, flip_texts, acl=("group:hr",) if i % 2 == 0 else None))
            i += 1
        flips[0] = i
        w.close()

    t = threading.Thread(target=flipper)
    t.start()
    tried = leaked = failed = 0
    try:
        for _ in range(150):
            who = _principal(rng)
            try:
                res = Session(s, embedder=EMB).ask(" ".join(rng.sample(WORDS, 3)) + " flip",
                                                   filters=Filters(principal=who), floor=0.0, budget=1000)
                cands, brief = res.candidates, res.brief
            except Exception:  # noqa: BLE001
                failed += 1
                continue
            tried += 1
            out = json.dumps(brief.to_json())
            leaked += _leaks(out, stored, who)
            leaked += sum(not may_read(who, c.chunk.acl) for c in cands)
    finally:
        stop.set()
        t.join()
        s.close()
    record(f"acl/concurrent-{_backend(location)}", tried + failed, escaped=failed, leaked=leaked,
           note=f"{flips[0]} acl flips meanwhile")
    assert failed == 0 and leaked == 0
