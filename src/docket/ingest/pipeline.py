"""The index run: files or document versions in, store updated, report out.

Order of work per batch: read and chunk every file (cheap), decide per document version whether
it is new, changed or unchanged (content hash), refuse lower versions, then embed what must be
embedded in large batches (the embedder is the slow part) and write each version in its own
transaction. A problem with one file or one version is reported and the rest goes on; nothing
already in the store is touched unless a version replaces it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from docket.embed import Embedder
from docket.errors import DocketError, InputError
from docket.ingest.batch import BatchMeta
from docket.ingest.chunking import ChunkSize
from docket.ingest.contextualize import FATAL, Contextualizer, search_text
from docket.ingest.readers import Found, Problem, discover, problem_of, read_file
from docket.ingest.report import IndexReport
from docket.store.protocol import DocumentVersion, Store, StoredVersion, check_version
from docket.tokens import TokenCounter, default_counter

#: called with (chunks done, chunks total) once the work is planned and after each embedded batch
ProgressFn = Callable[[int, int], None]
#: called with (files read, files in all, chunks read so far) after each file
ReadingFn = Callable[[int, int, int], None]


@dataclass
class IndexOptions:
    embedder: Embedder
    counter: TokenCounter = field(default_factory=default_counter)
    chunk: ChunkSize = field(default_factory=ChunkSize)
    batch_chunks: int = 256
    progress: ProgressFn | None = None
    reading: ReadingFn | None = None
    #: fields and a doc-id prefix imposed on every version the run writes (docket.ingest.batch)
    batch: BatchMeta = field(default_factory=BatchMeta)
    #: write a context per chunk with a model before embedding (docket.ingest.contextualize)
    contextualizer: Contextualizer | None = None


def index_paths(store: Store, paths: Sequence[str | Path], options: IndexOptions) -> IndexReport:
    """Index files and directories into `store`; see the module docstring."""
    started = time.perf_counter()
    report = IndexReport()
    versions: list[DocumentVersion] = []
    problems: list[Problem] = []
    own = Path(os.path.realpath(store.location)) if "://" not in store.location else None
    items: list[Found | Problem] = []
    for item in discover(paths):  # walked first, so progress can say "file 12 of 120"
        # realpath, not Path.resolve: it never raises, not even on a symlink loop
        where = Path(os.path.realpath(item.path if isinstance(item, Found) else item.where))
        if own is not None and where.parent == own.parent and where.name.startswith(own.name):
            continue  # the store's own file (and its -wal/-shm) when it lives among the documents
        items.append(item)
    files = sum(isinstance(item, Found) for item in items)
    chunks = 0
    for item in items:
        if isinstance(item, Problem):
            problems.append(item)
            continue
        report.files += 1
        before = len(versions)
        try:
            versions.extend(read_file(item, options.chunk, options.counter, report.removed, problems))
        except InputError as e:
            problems.append(problem_of(e, str(item.path), suffix="; file skipped"))
        except Exception as e:  # noqa: BLE001 - one file must never cost the rest of the batch
            problems.append(Problem(str(item.path), f"could not be read ({type(e).__name__}: {e}); file skipped "
                                                    "(a docket bug: please report it with this file)"))
        chunks += sum(len(dv.chunks) for dv in versions[before:])
        if options.reading:
            options.reading(report.files, files, chunks)
    for p in problems:
        report.problem(p.where, p.message)
    index_versions(store, versions, options, report)
    report.seconds = time.perf_counter() - started
    return report


def check_embedder(store: Store, embedder: Embedder) -> None:
    """A store holds vectors of one model: the first run fixes it, later runs must match."""
    meta = store.meta()
    name, dim = meta.get("embedder"), meta.get("dim")
    if name is None:
        mine = {"embedder": embedder.name, "dim": str(embedder.dim)}
        claim = getattr(store, "claim_meta", None)  # set-if-unset: another first run may be starting too
        if claim is None:
            store.set_meta(mine)
            return
        meta = claim(mine)
        name, dim = meta.get("embedder"), meta.get("dim")
    if name != embedder.name or dim != str(embedder.dim):
        raise InputError(
            f"was built with embedder {name!r} (dim {dim}); index it with the same embedder, not "
            f"{embedder.name!r} (dim {embedder.dim}) - vectors of different models are not comparable",
            where=store.location,
        )


def index_versions(store: Store, versions: Iterable[DocumentVersion], options: IndexOptions,
                   report: IndexReport | None = None) -> IndexReport:
    """Write document versions (new or changed ones only), embedding those without vectors."""
    started = time.perf_counter()
    report = report if report is not None else IndexReport()
    report.embedder = options.embedder.name
    check_embedder(store, options.embedder)
    if options.batch:
        versions = options.batch.applied(versions)
        report.imposed = options.batch.describe()
    if options.contextualizer is not None:
        # contexts change what is indexed: a version indexed without them (or by another model) is
        # not unchanged, one indexed by the same model with the same prompt is
        versions = (_with_context_hash(dv, options.contextualizer) for dv in versions)
        report.contexts = options.contextualizer.stats.to_json()
    pending = _plan(store, versions, report)
    total = sum(len(dv.chunks) for dv in pending if dv.vectors is None)
    done = 0
    if options.progress:
        options.progress(0, total)
    batch: list[DocumentVersion] = []
    bulk = getattr(store, "bulk", None)  # a backend may load an empty store faster (PostgreSQL: HNSW at the end)
    with bulk() if bulk is not None and len(pending) > 100 else nullcontext():
        for dv in pending:
            batch.append(dv)
            if sum(len(b.chunks) for b in batch) >= options.batch_chunks:
                done = _flush(store, batch, options, report, done, total)
                batch = []
        if batch:
            _flush(store, batch, options, report, done, total)
    if not report.seconds:
        report.seconds = time.perf_counter() - started
    return report


def _with_context_hash(dv: DocumentVersion, ctx: Contextualizer) -> DocumentVersion:
    dv.content_hash = ctx.content_hash(dv.content_hash)
    return dv


def _plan(store: Store, versions: Iterable[DocumentVersion], report: IndexReport) -> list[DocumentVersion]:
    """The versions that must be written, lowest version first per document."""
    by_key: dict[tuple[str, int], DocumentVersion] = {}
    for dv in versions:
        key = (dv.doc, dv.version)
        if key in by_key:
            report.problem(dv.source, f"document {dv.doc!r} v{dv.version} is also given by {by_key[key].source}; "
                                      "this copy skipped")
            continue
        by_key[key] = dv
    pending: list[DocumentVersion] = []
    many = getattr(store, "stored_versions_of", None)  # one query for the batch, not one per document
    docs = sorted({d for d, _ in by_key})
    states: dict[str, list[StoredVersion]] = many(docs) if many is not None else {}
    for key in sorted(by_key):
        dv = by_key[key]
        existing = states[dv.doc] if dv.doc in states else states.setdefault(dv.doc, store.stored_versions(dv.doc))
        same = next((v for v in existing if v.version == dv.version), None)
        if same is not None and same.content_hash == dv.content_hash:
            report.unchanged += 1
            continue
        try:
            check_version(existing, dv)
        except InputError as e:
            report.problem(dv.source, problem_of(e, dv.source).message + "; version rejected, the store keeps its versions")
            continue
        # later versions of this doc in this batch are checked against this one too
        states[dv.doc] = [v for v in existing if v.version != dv.version] + [
            StoredVersion(dv.doc, dv.version, dv.status, dv.date, dv.effective_to, dv.content_hash, len(dv.chunks), dv.source)
        ]
        pending.append(dv)
    return pending


def _own_vectors(dv: DocumentVersion, dim: int) -> np.ndarray | None:
    """The records' own vectors (normalised) when every chunk has one of the store's size."""
    vecs = [c.vector for c in dv.chunks]
    if any(v is None for v in vecs):
        return None
    bad = next((c for c in dv.chunks if c.vector is not None and len(c.vector) != dim), None)
    if bad is not None:
        raise InputError(f"has {len(bad.vector or ())} dimensions, the store's embedder has {dim}",
                         where=f"{dv.source} (id {bad.id!r})", field="vector")
    mat = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise InputError("is all zeros", where=dv.source, field="vector")
    return mat / norms


def _flush(store: Store, batch: list[DocumentVersion], options: IndexOptions, report: IndexReport,
           done: int, total: int) -> int:
    ready: list[DocumentVersion] = []
    to_embed: list[DocumentVersion] = []
    for dv in batch:
        try:
            if dv.vectors is None:
                own = _own_vectors(dv, options.embedder.dim)
                if own is not None:
                    dv.vectors = own
            if dv.vectors is None:
                to_embed.append(dv)
            else:
                ready.append(dv)
        except InputError as e:
            report.problem(dv.source, problem_of(e, dv.source).message + "; version rejected")
    if options.contextualizer is not None:
        ready, to_embed = _contextualize(ready, options.contextualizer, report), _contextualize(
            to_embed, options.contextualizer, report)
    texts = [search_text(dv.contexts[i] if dv.contexts else None, c.text) for dv in to_embed
             for i, c in enumerate(dv.chunks)]
    if texts:
        vecs = options.embedder.embed(texts)
        report.chunks_embedded += len(texts)
        at = 0
        for dv in to_embed:
            dv.vectors = vecs[at : at + len(dv.chunks)]
            at += len(dv.chunks)
        ready.extend(to_embed)
        done += len(texts)
        if options.progress:
            options.progress(done, total)
    order = {id(dv): i for i, dv in enumerate(batch)}
    ready.sort(key=lambda dv: order[id(dv)])  # batch order: a document's lower version is written first
    for dv in ready:
        if dv.tokens is None:
            dv.tokens = [options.counter.count(c.text) for c in dv.chunks]
        _write(store, dv, report)
    return done


def _contextualize(versions: list[DocumentVersion], ctx: Contextualizer, report: IndexReport) -> list[DocumentVersion]:
    """Give each version its chunks' contexts; a version whose contexts cannot be written is
    reported and left out (the store keeps what it had). An endpoint that cannot answer at all
    stops the run: every further version would fail the same way."""
    out = []
    for dv in versions:
        if dv.contexts is None:
            try:
                dv.contexts = ctx.contexts(dv.chunks, dv.title)
            except FATAL:
                raise
            except DocketError as e:
                report.problem(dv.source, f"no contexts for {dv.doc!r} v{dv.version} ({e}); version not indexed")
                continue
        out.append(dv)
    report.contexts = ctx.stats.to_json()
    return out


def _write(store: Store, dv: DocumentVersion, report: IndexReport) -> None:
    try:
        result = store.write_version(dv)
    except InputError as e:
        report.problem(dv.source, problem_of(e, dv.source).message + "; version rejected")
        return
    label = f"{dv.doc} v{dv.version}"
    (report.updated if result.replaced else report.added).append(label)
    report.superseded.extend(f"{dv.doc} v{v}" for v in result.superseded)
    report.acl.update(result.acl)
    report.chunks_written += len(dv.chunks)
    report.source_types.update(c.source_type for c in dv.chunks if c.source_type is not None)


__all__ = ["Found", "IndexOptions", "check_embedder", "index_paths", "index_versions", "ProgressFn"]
