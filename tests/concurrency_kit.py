"""Concurrent writers into one store, as several `docket index` runs at once would be: threads or
processes, each indexing, re-indexing and deleting its own documents (chunks of mixed ACL classes,
so the writers share the statistics rows of those classes) and racing the others for a shared pool
of chunk ids. After the race the store is checked against what every writer was told happened.

An *escape* is a writer that raised (a lost batch), a problem reported on a writer's own
documents (nothing but the id race may refuse a version), a document whose stored state is not
the last one its writer wrote (a lost or half-applied version), a claimed document stored in part,
or PostgreSQL's per-class BM25 statistics differing from the rows they count.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conftest_pg import term_df_mismatch
from store_cases import EMB, version

from docket.ingest import IndexOptions, index_versions
from docket.store.factory import open_store
from docket.store.protocol import DocumentVersion, Store

#: the ACL classes the writers mix inside their versions (public, groups, a user, two groups)
ACLS: list[tuple[str, ...] | None] = [None, ("group:a",), ("group:b",), ("user:x",), ("group:a", "group:b")]
WORDS = "refund policy annual plan salary merger holiday payout budget office travel expense".split()
#: a version id race is lost with one of these messages, and only with these
CLASH = ("already belongs to document", "taken by another document being written at the same time")
#: bounds every wait of a race (a hung writer fails the test instead of hanging it)
TIMEOUT_S = 120.0


@dataclass
class Outcome:
    """What one writer saw: its expected final documents, the problems and errors it met."""

    worker: int
    expected: dict[str, dict[int, list[tuple[str, tuple[str, ...] | None]]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    versions: int = 0
    retried: int = 0


def _version(rng: random.Random, doc: str, v: int, tag: str) -> DocumentVersion:
    n = rng.randint(1, 4)
    texts = [" ".join(rng.choices(WORDS, k=6)) + f" {tag} {doc} c{i}" for i in range(n)]
    dv = version(doc, v, texts)
    dv.chunks = [c.model_copy(update={"acl": rng.choice(ACLS)}) for c in dv.chunks]
    return dv


def _claim(rng: random.Random, doc: str, pool: int) -> DocumentVersion:
    """A version whose chunk ids come from the shared pool, in a random order (two writers that
    take the same ids in opposite orders are the classic deadlock)."""
    ids = rng.sample([f"pool-{k}" for k in range(pool)], rng.randint(2, min(5, pool)))
    dv = version(doc, 1, [f"claimed {doc} part {i}" for i in range(len(ids))])
    dv.chunks = [c.model_copy(update={"id": i, "acl": rng.choice(ACLS)}) for c, i in zip(dv.chunks, ids, strict=True)]
    return dv


def run_writer(location: str, worker: int, rounds: int, seed: int, pool: int) -> Outcome:
    """One writer's whole run (opens its own store connection, as a separate `docket index` would)."""
    rng = random.Random(seed * 1000 + worker)
    out = Outcome(worker)
    try:
        store = open_store(location)
        try:
            for r in range(rounds):
                batch: list[DocumentVersion] = []
                for j in range(3):
                    doc = f"w{worker}-d{j}"
                    have = out.expected.setdefault(doc, {})
                    v = max(have) + 1 if have and rng.random() < 0.3 else max(have, default=1)
                    dv = _version(rng, doc, v, f"r{r}")
                    batch.append(dv)
                    have[v] = [(c.text, c.acl) for c in dv.chunks]
                claim = f"claim-w{worker}-r{r}"
                batch.append(_claim(rng, claim, pool))
                report = index_versions(store, batch, IndexOptions(embedder=EMB))
                out.versions += len(batch)
                for where, message in report.problems:
                    if where == f"test:{claim}" and any(m in message for m in CLASH):
                        continue
                    out.problems.append(f"{where}: {message}")
                out.problems += _claim_state(store, claim, won=f"{claim} v1" in report.added, n=len(batch[-1].chunks))
                store.delete(claim)  # the pool stays contested
                if rng.random() < 0.25:  # delete one of its documents, sometimes one version only
                    doc = f"w{worker}-d{rng.randrange(3)}"
                    have = out.expected.get(doc, {})
                    if have and rng.random() < 0.5 and len(have) > 1:
                        v = min(have)
                        store.delete(doc, v)
                        del have[v]
                    else:
                        store.delete(doc)
                        out.expected[doc] = {}
            out.retried = int(getattr(store, "retried", 0))
        finally:
            store.close()
    except BaseException:  # noqa: BLE001 - the race reports every failure
        out.errors.append(traceback.format_exc(limit=6))
    return out


def _claim_state(store: Store, doc: str, *, won: bool, n: int) -> list[str]:
    """A claimed version is stored whole when its writer was told it was written, else not at all."""
    stored = store.stored_versions(doc)
    got = len(store.chunks_of(doc, 1)) if stored else 0
    if won and (len(stored) != 1 or got != n):
        return [f"{doc}: reported written, but {got} of {n} chunks are stored"]
    if not won and (stored or got):
        return [f"{doc}: reported refused, but {got} chunks are stored"]
    return []


def _thread_race(location: str, writers: int, rounds: int, seed: int, pool: int) -> list[Outcome]:
    barrier = threading.Barrier(writers)
    results: list[Outcome] = []

    def go(w: int) -> None:
        try:
            barrier.wait(TIMEOUT_S)
        except threading.BrokenBarrierError:
            results.append(Outcome(w, errors=["the start barrier broke"]))
            return
        results.append(run_writer(location, w, rounds, seed, pool))

    threads = [threading.Thread(target=go, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    hung = [w for w, t in enumerate(threads) if t.is_alive()]
    return results + [Outcome(w, errors=[f"writer {w} still running after {TIMEOUT_S:.0f} s"]) for w in hung]


def _process_main(location: str, worker: int, rounds: int, seed: int, pool: int, barrier: Any, queue: Any) -> None:
    try:
        barrier.wait(TIMEOUT_S)
    except threading.BrokenBarrierError:
        queue.put(Outcome(worker, errors=["the start barrier broke"]))
        return
    queue.put(run_writer(location, worker, rounds, seed, pool))


def _process_race(location: str, writers: int, rounds: int, seed: int, pool: int) -> list[Outcome]:
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter, like a second `docket index`
    barrier, queue = ctx.Barrier(writers), ctx.Queue()
    procs = [ctx.Process(target=_process_main, args=(location, w, rounds, seed, pool, barrier, queue), daemon=True)
             for w in range(writers)]
    for p in procs:
        p.start()
    results: list[Outcome] = []
    import queue as queue_mod

    for _ in procs:
        try:
            results.append(queue.get(timeout=TIMEOUT_S))
        except queue_mod.Empty:
            break
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    seen = {o.worker for o in results}
    return results + [Outcome(w, errors=[f"writer process {w} gave no result"]) for w in range(writers) if w not in seen]


RACES: dict[str, Callable[[str, int, int, int, int], list[Outcome]]] = {"threads": _thread_race,
                                                                        "processes": _process_race}


def race(location: str, how: str, writers: int, rounds: int, seed: int, pool: int = 6) -> list[Outcome]:
    """Run `writers` writers at once (threads or processes) into the store at `location`, which
    may not exist yet (then they also race to create it)."""
    return RACES[how](location, writers, rounds, seed, pool)


def escapes(location: str, outcomes: list[Outcome]) -> list[str]:
    """Every way the race lost or broke something, one line each (empty: nothing escaped)."""
    bad: list[str] = []
    for o in outcomes:
        bad += [f"writer {o.worker} raised: {e.strip().splitlines()[-1]}" for e in o.errors]
        bad += [f"writer {o.worker} problem: {p}" for p in o.problems]
    store = open_store(location)
    try:
        for o in outcomes:
            if o.errors:
                continue  # its expected state is unknown; the error is counted already
            for doc, want in o.expected.items():
                got = {v.version: [(c.text, c.acl) for c in store.chunks_of(doc, v.version)]
                       for v in store.stored_versions(doc)}
                if got != want:
                    bad.append(f"{doc}: stored versions {sorted(got)} differ from the last ones written {sorted(want)}")
    finally:
        store.close()
    return bad + _stats_mismatch(location)


def _stats_mismatch(location: str) -> list[str]:
    """PostgreSQL keeps per-class BM25 statistics and per-(term, class) document frequencies
    beside the rows: they must still add up."""
    if not location.startswith(("postgresql://", "postgres://")):
        return []
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(location, autocommit=True, row_factory=dict_row) as conn:
        rows = conn.execute(
            "SELECT coalesce(a.id, c.cls) AS id, a.n, a.total_len, coalesce(c.n, 0) AS cn, coalesce(c.l, 0) AS cl "
            "FROM acl_classes a FULL JOIN (SELECT cls, count(*) AS n, sum(len) AS l FROM chunks GROUP BY cls) c "
            "ON c.cls = a.id WHERE a.n IS DISTINCT FROM coalesce(c.n, 0) OR a.total_len IS DISTINCT FROM coalesce(c.l, 0)"
        ).fetchall()
        df = term_df_mismatch(conn)
    return [f"acl class {r['id']}: statistics say n={r['n']} len={r['total_len']}, the rows n={r['cn']} len={r['cl']}"
            for r in rows] + df
