"""`docket index`, behind its options: the options as one frozen `IndexArgs`, checked, and the
files (or another store) written through a `Session` that owns the target store. The command in
docket.cli.store only declares them."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docket.cli import options as opt
from docket.errors import InputError

if TYPE_CHECKING:  # loaded when the command runs: `docket --help` starts without numpy (tests/test_cli_startup.py)
    from docket.api import Session
    from docket.embed import Embedder
    from docket.ingest import IndexOptions, IndexReport
    from docket.ingest.batch import BatchMeta
    from docket.ingest.chunking import ChunkSize
    from docket.ingest.contextualize import Contextualizer
    from docket.store.protocol import Store

EMBEDDERS = ("minilm", "hash")

# --- the options only `docket index` takes ----------------------------------------------------------
Paths = Annotated[list[Path] | None, typer.Argument(help="Files or directories: .jsonl, .md, .html, .txt, .pdf, .docx.")]
Source = Annotated[str | None, typer.Option("--from", help="Copy every document of another store (file or URL).",
                                            callback=opt.db_path)]
ChunkTokens = Annotated[int, typer.Option("--chunk-size", help="Max tokens per chunk (files only).",
                                          callback=opt.int_range(16, opt.MAX_COUNT))]
Overlap = Annotated[int, typer.Option("--overlap", help="Tokens shared by consecutive chunks of a section.",
                                      callback=opt.non_negative)]
EmbedderName = Annotated[str | None, typer.Option("--embedder", help="minilm (default) or hash (tests only).",
                                                  callback=opt.choice(*EMBEDDERS))]
ReportJson = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]
Sets = Annotated[list[str] | None, typer.Option(
    "--set", help="KEY=VALUE set on every chunk this run writes, over front matter, sidecars and records "
    "(status, date, effective_to, source_type, trust, acl as a comma list; 'none' clears). Repeatable. "
    "For files from people you would not let write those fields: --set trust=untrusted.")]
DocPrefix = Annotated[str | None, typer.Option(
    "--doc-prefix", help="Prefix every document and chunk id of this run (e.g. uploads/), so no file can "
    "claim to be a version of a document outside the prefix.", callback=opt.text)]
Contextualize = Annotated[bool | None, typer.Option(
    "--contextualize/--no-contextualize",
    help="Have a model (--llm) write a short context per chunk that situates it in its document; the context is "
         "embedded and keyword-indexed with the chunk, the prompt still shows the chunk's own text. Default: as "
         "the store was built.")]
FileMode = Annotated[str | None, typer.Option(
    "--file-mode", "--mode", help="Permission bits of the store's files, octal (default 0600 for a new store, "
    "whatever the umask: the chunks may be restricted). Given, they are set on an existing store too.",
    callback=opt.file_mode)]
ContextTokens = Annotated[int, typer.Option("--context-tokens", help="Longest context a model may write (tokens).",
                                            callback=opt.int_range(1, 4000))]
ContextWindow = Annotated[int, typer.Option(
    "--context-window", help="Documents longer than this many tokens are shown to the model in windows of whole "
                             "chunks (fit it to the model's context).", callback=opt.int_range(50, opt.MAX_COUNT))]


@dataclass(frozen=True)
class IndexArgs:
    """Every option of `docket index`, as parsed (names as the command's parameters)."""

    paths: list[Path] | None = None
    db: str = "docket.db"
    source: str | None = None
    chunk_size: int = 300
    overlap: int = 40
    embedder_name: str | None = None
    as_json: bool = False
    sets: list[str] | None = None
    doc_prefix: str | None = None
    contextualize: bool | None = None
    llm: str | None = None
    model: str | None = None
    file_mode: str | None = None
    context_tokens: int = 100
    context_window: int = 3000


def run_index(a: IndexArgs) -> IndexReport:
    """Check the options, open the source (first: a source that is not a store must not leave a
    new, empty target behind), then index through a Session that owns the target."""
    from docket.api import Session
    from docket.store.sqlite_file import parse_mode

    batch, size = _checked(a)
    src = open_source(a.source) if a.source else None
    new_file = Path(a.db) if "://" not in a.db and not os.path.lexists(a.db) else None
    try:
        with Session.open(a.db, create=True, file_mode=parse_mode(a.file_mode)) as session:
            report = _index(session, a, batch, size, src)
            # the count, not this run's report alone: another writer may have filled the new file meanwhile
            empty = new_file is not None and report.problems and session.stats()["chunks"] == 0
    finally:
        if src is not None:
            src.close()
    if new_file is not None and empty and not report.chunks_written and not report.added:
        _remove_empty_store(new_file)
        report.problem(a.db, "the new store, removed again: nothing was indexed into it (see the problems above)")
    return report


def source_type_warnings(report: IndexReport) -> list[str]:
    """One line per source_type this run wrote that the default authority table does not name:
    such a chunk ranks at default_authority, below a help article, so a typo ("polcy") would
    quietly demote a policy. A policy file that names the type ([versions.authority]) ranks it."""
    from docket.policy import VersionsPolicy
    from docket.safeio import shown

    pol = VersionsPolicy()
    out = []
    for st, n in sorted(report.source_types.items()):
        if pol.ranks_source_type(st):
            continue
        meant = pol.source_type_meant(st)
        out.append(f"source_type {shown(st)} ({n} chunk{'s' if n != 1 else ''}) is not in the default authority "
                   f"table, so it ranks at default_authority {pol.default_authority}"
                   + (f"; did you mean {meant!r}?" if meant else "")
                   + f" (known: {', '.join(sorted(pol.authority))}; a policy's [versions.authority] can rank it)")
    return out


def _remove_empty_store(path: Path) -> None:
    """A store this run created and then wrote nothing to (every file it was given failed) would
    only make `ask` answer "not found": take it back, with the files SQLite keeps beside it."""
    from docket.store.sqlite_file import beside

    for p in beside(path, ("-journal",)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def open_source(location: str) -> Store:
    from docket.store.factory import open_store

    return open_store(location, create=False, read_only=True)


def _checked(a: IndexArgs) -> tuple[BatchMeta, ChunkSize]:
    from docket.ingest.batch import batch_meta
    from docket.ingest.chunking import ChunkSize

    opt.requires(a.model, a.llm, "--model", "--llm")
    if not a.paths and not a.source:
        raise InputError("give files or directories to index, or --from STORE", field="PATH")
    _refuse_if_nothing_readable(a.paths or [], a.source)
    if a.source is not None and opt.same_location(a.source, a.db):
        raise InputError("is the store being written (--db); copying a store into itself does nothing - give "
                         "another store", where=a.source, field="--from")
    batch = batch_meta(a.sets or [], a.doc_prefix)
    try:
        size = ChunkSize(a.chunk_size, a.overlap)
    except InputError as e:
        raise InputError(e.detail, field="--overlap" if e.field == "overlap" else "--chunk-size") from None
    if a.file_mode is not None and "://" in a.db:
        raise InputError("applies to a SQLite file; a PostgreSQL store's access is the database's", field="--file-mode")
    return batch, size


def _refuse_if_nothing_readable(paths: list[Path], source: str | None) -> None:
    """Every PATH missing (a typo, most often) would open - and so create - the store only to
    index nothing, leaving an empty store that `ask` then answers "not found" from. Refuse before
    the store is touched. With one good PATH among bad ones the batch goes on and reports each
    bad one (exit 1), as for a bad file inside a folder."""
    from docket.safeio import input_problem

    if source is not None or not paths:
        return
    problems = [(p, input_problem(p, "any")) for p in paths]
    if all(why for _, why in problems):
        listed = "; ".join(f"{p}: {why}" for p, why in problems)
        raise InputError(f"nothing to index, so no store was opened ({listed}); check the path", field="PATH")


def _index(session: Session, a: IndexArgs, batch: BatchMeta, size: ChunkSize, src: Store | None) -> IndexReport:
    from docket.cli.progress import IndexProgress
    from docket.ingest import IndexOptions

    meta = session.meta()
    embedder = embedder_for(a.embedder_name, meta)
    contextualizer = _contextualizer(meta, a.contextualize, a.llm, a.model, a.context_tokens, a.context_window)
    # with --json and no terminal, stderr stays quiet: a program reads the report, and a caller
    # that merges the streams (2>&1) gets JSON alone
    with IndexProgress(quiet=a.as_json and not sys.stderr.isatty()) as shown:
        if contextualizer is not None:
            contextualizer.progress = shown.contexts
        options = IndexOptions(embedder=embedder, chunk=size, progress=shown.progress, reading=shown.reading,
                               batch=batch, contextualizer=contextualizer)
        report = session.index(list(a.paths or []), options=options)
        if src is not None:
            report = _copy(src, session, options, report)
    return report


def embedder_for(name: str | None, meta: Mapping[str, str]) -> Embedder:
    """`--embedder` if given, else the one the store was built with (its `meta`), else MiniLM."""
    from docket.embed import HashEmbedder, default_embedder

    if name is None:
        recorded = meta.get("embedder")
        name = "hash" if recorded == HashEmbedder.name else "minilm"
    if name == "hash":
        return HashEmbedder(int(meta.get("dim", "256")))
    if name == "minilm":
        return default_embedder()
    raise InputError(f"must be one of {', '.join(EMBEDDERS)}, got {name!r}", field="--embedder")


def _contextualizer(meta: Mapping[str, str], wanted: bool | None, llm: str | None, model: str | None, tokens: int,
                    window: int) -> Contextualizer | None:
    """--contextualize: on when asked, or (without the flag) when the store was built that way."""
    recorded = meta.get("contextualized")
    if wanted is None:
        wanted = bool(recorded)
        if recorded and not llm:
            raise InputError(f"this store's chunks carry contexts written by {recorded.split('|')[0]}: pass --llm URL "
                             "to write them for new and changed documents too, or --no-contextualize to index without "
                             "(changed documents then lose theirs)", field="--llm")
    from docket.ingest.contextualize import Contextualizer

    if not wanted:
        if llm:
            raise InputError("is only used with --contextualize (the model that writes a context per chunk)", field="--llm")
        return None
    if not llm:
        raise InputError("needs --llm URL: the model that writes a context per chunk (e.g. --llm local)",
                         field="--contextualize")
    from docket.llm import generator_from_url

    return Contextualizer(generator_from_url(llm, model=model), max_tokens=tokens, max_document_tokens=window)


def _copy(src: Store, session: Session, options: IndexOptions, report: IndexReport) -> IndexReport:
    """Every document version of `src` (opened for reading) into the session's store, vectors and
    token counts included."""
    from docket.ingest import IndexOptions

    meta = src.meta()
    if "embedder" in meta and meta["embedder"] != options.embedder.name:
        options = IndexOptions(embedder=_named(meta["embedder"], int(meta.get("dim", "0"))), counter=options.counter,
                               chunk=options.chunk, progress=options.progress,
                               contextualizer=options.contextualizer)
    if not src.documents():
        report.problem(src.location, "holds no documents; nothing copied")
        return report
    # the copied chunks carry their contexts: the store says who wrote them
    carried = meta.get("contextualized") if not session.meta().get("contextualized") else None
    return session.index(versions=src.export(), options=options, report=report,
                         meta={"contextualized": carried} if carried else None)


class _Named:
    """Stands for the source store's embedder when copying: vectors come with the chunks."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def embed(self, texts: object) -> object:
        raise InputError("a copied chunk has no vector; the source store is damaged")


def _named(name: str, dim: int) -> Embedder:
    from docket.embed import HashEmbedder

    if name == HashEmbedder.name:
        return HashEmbedder(dim)
    return _Named(name, dim)  # type: ignore[return-value]


__all__ = ["IndexArgs", "embedder_for", "run_index", "source_type_warnings"]
