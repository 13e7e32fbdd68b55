"""`docket index`, `docket ask`, `docket export`, `docket delete` and `docket principal`:
building a store from files, moving it between backends, and answering from it.

A `--db` value starting with `postgresql://` selects PostgreSQL + pgvector; anything else is a
SQLite file (created on first index). Exit status of `index`: 0 when every input was indexed or
was unchanged, 1 when some inputs were skipped or rejected (each reported with its file and
line), 2 on bad arguments.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.cli.terminal import json_text
from docket.cli.terminal import show as escape  # control characters visible, then markup escaped
from docket.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
else:  # rich loads when a command prints (docket.cli.richlazy)
    from docket.cli.richlazy import Console, Table

if TYPE_CHECKING:  # loaded inside the commands: `docket --help` starts without numpy (tests/test_cli_startup.py)
    from docket.embed import Embedder
    from docket.ingest import IndexOptions, IndexReport
    from docket.ingest.contextualize import Contextualizer
    from docket.store.protocol import Store

EMBEDDERS = ("minilm", "hash")


def open_store(location: str, *, create: bool = True, read_only: bool = False, file_mode: int | None = None,
               records: Any = None) -> Store:
    """docket.store.factory.open_store, imported when a command runs (it brings numpy)."""
    from docket.store.factory import open_store as _open

    return _open(location, create=create, read_only=read_only, file_mode=file_mode, records=records)


def _embedder(name: str | None, store: Store) -> Embedder:
    """`--embedder` if given, else the one the store was built with, else MiniLM."""
    from docket.embed import HashEmbedder, default_embedder

    if name is None:
        recorded = store.meta().get("embedder")
        name = "hash" if recorded == HashEmbedder.name else "minilm"
    if name == "hash":
        return HashEmbedder(int(store.meta().get("dim", "256")))
    if name == "minilm":
        return default_embedder()
    raise InputError(f"must be one of {', '.join(EMBEDDERS)}, got {name!r}", field="--embedder")


def _split(values: list[str] | None, option: str = "--groups", allow_empty: bool = False) -> tuple[str, ...]:
    """Repeatable options that also accept comma-separated lists (opt.split_names): an option
    given with no name in it is refused (it would silently filter nothing) unless `allow_empty`
    (`principal --groups ""` clears the groups)."""
    return opt.split_names(values, option, clear=allow_empty)


def _print_report(console: Console, report: IndexReport) -> None:
    t = Table(title="Index report", show_header=False)
    t.add_column("what")
    t.add_column("n", justify="right")
    rows: list[tuple[str, object]] = [("files read", report.files), ("document versions added", len(report.added)),
            ("document versions updated (re-embedded)", len(report.updated)),
            ("document versions unchanged (skipped)", report.unchanged),
            ("older versions superseded from the new date", len(report.superseded)),
            ("chunks written", report.chunks_written), ("chunks embedded", report.chunks_embedded)]
    rows += [(f"removed: {k.replace('_', ' ')}", n) for k, n in sorted(report.removed.items())]
    if report.contexts is not None:
        c = report.contexts
        rows += [("contexts written by the model", c["generated"]), ("contexts from the cache", c["from_cache"]),
                 ("context prefix caching", c["prefix_cache"])]
    rows += [("problems", len(report.problems)), ("seconds", f"{report.seconds:.1f}")]
    if report.imposed:
        rows.append(("set on every document", escape(report.imposed)))
    for k, v in rows:
        t.add_row(k, str(v))
    console.print(t)
    for where, msg in report.problems:
        console.print(f"[yellow]skipped[/yellow] {escape(where)}: {escape(msg)}")
    acl = report.acl.to_json()
    for key, what in (("as_user", "read as registered users (user:NAME)"), ("as_group", "read as groups (group:NAME)"),
                      ("ambiguous", "registered as a user and as a group, read as the group")):
        if acl[key]:
            console.print(f"acl entries without user:/group: {what}: {escape(', '.join(acl[key]))}", soft_wrap=True)


@app.command("index")
def index_cmd(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files or directories: .jsonl, .md, .html, .txt.")] = None,
    db: Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.",
                                       callback=opt.db_path)] = "docket.db",
    source: Annotated[str | None, typer.Option("--from", help="Copy every document of another store (file or URL).",
                                               callback=opt.db_path)] = None,
    chunk_size: Annotated[int, typer.Option("--chunk-size", help="Max tokens per chunk (files only).",
                                            callback=opt.int_range(16, opt.MAX_COUNT))] = 300,
    overlap: Annotated[int, typer.Option("--overlap", help="Tokens shared by consecutive chunks of a section.",
                                         callback=opt.non_negative)] = 40,
    embedder_name: Annotated[str | None, typer.Option("--embedder", help="minilm (default) or hash (tests only).",
                                                      callback=opt.choice(*EMBEDDERS))] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    sets: Annotated[list[str] | None, typer.Option(
        "--set", help="KEY=VALUE set on every chunk this run writes, over front matter, sidecars and records "
        "(status, date, effective_to, source_type, trust, acl as a comma list; 'none' clears). Repeatable. "
        "For files from people you would not let write those fields: --set trust=untrusted.")] = None,
    doc_prefix: Annotated[str | None, typer.Option(
        "--doc-prefix", help="Prefix every document and chunk id of this run (e.g. uploads/), so no file can "
        "claim to be a version of a document outside the prefix.", callback=opt.text)] = None,
    contextualize: Annotated[bool | None, typer.Option(
        "--contextualize/--no-contextualize",
        help="Have a model (--llm) write a short context per chunk that situates it in its document; the context is "
             "embedded and keyword-indexed with the chunk, the prompt still shows the chunk's own text. Default: as "
             "the store was built.")] = None,
    llm: opt.Llm = None,
    model: opt.Model = None,
    file_mode: Annotated[str | None, typer.Option(
        "--file-mode", "--mode", help="Permission bits of the store's files, octal (default 0600 for a new store, "
        "whatever the umask: the chunks may be restricted). Given, they are set on an existing store too.",
        callback=opt.file_mode)] = None,
    context_tokens: Annotated[int, typer.Option("--context-tokens", help="Longest context a model may write (tokens).",
                                                callback=opt.int_range(1, 4000))] = 100,
    context_window: Annotated[int, typer.Option(
        "--context-window", help="Documents longer than this many tokens are shown to the model in windows of whole "
                                 "chunks (fit it to the model's context).", callback=opt.int_range(50, opt.MAX_COUNT))] = 3000,
) -> None:
    """Index files (or another store) into a store: cleaned, chunked, embedded once, incremental."""
    from docket.cli.progress import IndexProgress
    from docket.ingest import IndexOptions, IndexReport, index_paths
    from docket.ingest.batch import batch_meta
    from docket.ingest.chunking import ChunkSize
    from docket.store.sqlite_file import parse_mode

    opt.requires(model, llm, "--model", "--llm")
    if not paths and not source:
        raise InputError("give files or directories to index, or --from STORE", field="PATH")
    if source is not None and opt.same_location(source, db):
        raise InputError("is the store being written (--db); copying a store into itself does nothing - give "
                         "another store", where=source, field="--from")
    batch = batch_meta(sets or [], doc_prefix)
    try:
        size = ChunkSize(chunk_size, overlap)
    except InputError as e:
        raise InputError(e.detail, field="--overlap" if e.field == "overlap" else "--chunk-size") from None
    if file_mode is not None and "://" in db:
        raise InputError("applies to a SQLite file; a PostgreSQL store's access is the database's", field="--file-mode")
    # the source first: a source that is not a store must not leave a new, empty target behind
    src = open_store(source, create=False, read_only=True) if source else None
    from docket.brief.sizer import feature_record  # the rendered counts go with each row's features

    try:
        store = open_store(db, file_mode=parse_mode(file_mode), records=feature_record)
    except BaseException:
        if src is not None:
            src.close()
        raise
    try:
        embedder = _embedder(embedder_name, store)
        contextualizer = _contextualizer(store, contextualize, llm, model, context_tokens, context_window)
        # with --json and no terminal, stderr stays quiet: a program reads the report, and a
        # caller that merges the streams (2>&1) gets JSON alone
        with IndexProgress(quiet=as_json and not sys.stderr.isatty()) as shown:
            if contextualizer is not None:
                contextualizer.progress = shown.contexts
            options = IndexOptions(embedder=embedder, chunk=size, progress=shown.progress, reading=shown.reading,
                                   batch=batch, contextualizer=contextualizer)
            report = index_paths(store, list(paths or []), options) if paths else IndexReport()
            if src is not None:
                report = _copy(src, store, options, report)
        if contextualizer is not None and report.contexts is not None:
            store.set_meta({"contextualized": contextualizer.identity})
    finally:
        store.close()
        if src is not None:
            src.close()
    if as_json:
        sys.stdout.write(json_text(report.to_json()) + "\n")
    else:
        _print_report(terminal_console(), report)
    if report.problems:
        raise typer.Exit(1)


def _contextualizer(store: Store, wanted: bool | None, llm: str | None, model: str | None, tokens: int,
                    window: int) -> Contextualizer | None:
    """--contextualize: on when asked, or (without the flag) when the store was built that way."""
    recorded = store.meta().get("contextualized")
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


def _copy(src: Store, target: Store, options: IndexOptions, report: IndexReport) -> IndexReport:
    """Every document version of `src` (opened for reading) into `target`, vectors and token counts included."""
    from docket.ingest import IndexOptions, index_versions

    meta = src.meta()
    if "embedder" in meta and meta["embedder"] != options.embedder.name:
        options = IndexOptions(embedder=_named(meta["embedder"], int(meta.get("dim", "0"))), counter=options.counter,
                               chunk=options.chunk, progress=options.progress,
                               contextualizer=options.contextualizer)
    if not src.documents():
        report.problem(src.location, "holds no documents; nothing copied")
        return report
    if meta.get("contextualized") and not target.meta().get("contextualized"):
        target.set_meta({"contextualized": meta["contextualized"]})  # the copied chunks carry their contexts
    return index_versions(target, src.export(), options, report)


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


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="JSONL file to write (chunk records with vectors).",
                                        callback=opt.output_file)],
    db: Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.",
                                       callback=opt.db_path)] = "docket.db",
) -> None:
    """Write every chunk of a store as JSONL records (the contract in docs/store.md, `vector` included).

    The file is written next to OUT and renamed over it at the end: a failed export leaves OUT as it was."""
    from docket.safeio import atomic_write

    if "://" not in db:
        opt.check_not_same_file(out, db, "OUT", "store")
    store = open_store(db, create=False, read_only=True)
    n = 0
    try:
        with atomic_write(out) as fh:
            for dv in store.export():
                for c, vec in zip(dv.chunks, dv.vectors if dv.vectors is not None else [None] * len(dv.chunks)):
                    rec = c.to_record()
                    if vec is not None:
                        rec["vector"] = [round(float(x), 7) for x in vec]
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    n += 1
    finally:
        store.close()
    terminal_console(stderr=True).print(f"exported {n} chunks to {escape(str(out))}" if n else
                               f"the store holds no chunks; wrote an empty {escape(str(out))}")


@app.command("delete")
def delete_cmd(
    doc: Annotated[str, typer.Argument(help="Document id.", callback=opt.name)],
    db: Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.",
                                       callback=opt.db_path)] = "docket.db",
    version: Annotated[int | None, typer.Option("--version", help="Only this version.", callback=opt.non_negative)] = None,
) -> None:
    """Remove a document (or one version of it) from the store."""
    store = open_store(db, create=False)
    try:
        stored = [v.version for v in store.stored_versions(doc)]
        if not stored:
            raise InputError("is not in the store; nothing deleted (`docket export` lists what is)",
                             where=f"document {doc!r}")
        if version is not None and version not in stored:
            raise InputError(f"has no version {version}; stored: {', '.join(f'v{v}' for v in stored)}. Nothing deleted",
                             where=f"document {doc!r}", field="--version")
        n = store.delete(doc, version)
    finally:
        store.close()
    terminal_console(stderr=True).print(f"deleted {n} chunks of {escape(doc)}" + (f" v{version}" if version else ""))


@app.command("principal")
def principal_cmd(
    name: Annotated[str, typer.Argument(help="User or service name, as listed in chunk acls.", callback=opt.name)],
    db: Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.",
                                       callback=opt.db_path)] = "docket.db",
    groups: Annotated[list[str] | None, typer.Option("--groups", help="Set the groups (comma-separated).")] = None,
) -> None:
    """Show or set a principal's groups (the `principals` table used by `docket ask --principal`)."""
    store = open_store(db, create=groups is not None, read_only=groups is None)
    try:
        if groups is not None:
            store.set_principal(name, _split(groups, allow_empty=True))
        p = store.principal(name)
    finally:
        store.close()
    print(json.dumps({"name": p.name, "groups": sorted(p.groups)}))


@app.command("ask")
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The user's question.", callback=opt.question)],
    db: Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.",
                                       callback=opt.db_path)] = "docket.db",
    principal: Annotated[str | None, typer.Option("--principal", help="Who asks; without it only public chunks.",
                                                  callback=opt.name)] = None,
    groups: Annotated[list[str] | None, typer.Option("--groups", help="Extra groups of the principal (comma-separated).")] = None,
    budget: opt.Budget = None,
    floor: opt.Floor = None,
    as_of: opt.AsOf = None,
    policy_path: opt.PolicyPath = None,
    candidates: Annotated[int, typer.Option("--candidates", help="How many retrieved chunks go to the assembler.",
                                            callback=opt.int_range(1, 100_000))] = 50,
    mode: Annotated[str, typer.Option("--mode", help="fused (default), dense or bm25.",
                                      callback=opt.choice("fused", "dense", "bm25"))] = "fused",
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Only these documents (repeatable).")] = None,
    source_type: Annotated[list[str] | None, typer.Option("--source-type", help="Only these source types.")] = None,
    status: Annotated[list[str] | None, typer.Option("--status", help="Only these statuses.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only chunks dated on or after (YYYY-MM-DD).",
                                              callback=opt.iso_date)] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only chunks dated on or before (YYYY-MM-DD).",
                                              callback=opt.iso_date)] = None,
    as_json: opt.AsJson = False,
    explain: opt.Explain = False,
    exact: opt.Exact = False,
    llm: opt.Llm = None,
    model: opt.Model = None,
    allow_domain: opt.AllowDomain = None,
    strip_links: opt.StripLinks = False,
    history: opt.History = None,
    whole_corpus: opt.WholeCorpus = None,
    model_preset: opt.ModelPreset = None,
    route: opt.Route = False,
    route_llm: opt.RouteLlm = None,
    html_path: opt.Html = None,
    structured: opt.Structured = False,
) -> None:
    """Retrieve (dense + BM25, access-controlled) and assemble the brief for one question."""
    from docket.api import Session
    from docket.cli.core import emit_json, load_policy_with, parse_date
    from docket.cli.show import print_brief, print_ranking
    from docket.history import load_history
    from docket.store.protocol import Filters

    opt.requires(model, llm or route_llm, "--model", "--llm")
    opt.requires(allow_domain, llm, "--allow-domain", "--llm")
    opt.requires(strip_links, llm, "--strip-links", "--llm")
    opt.requires(structured, llm, "--structured", "--llm")
    if groups and not principal:
        raise InputError("needs --principal (groups belong to someone)", field="--groups")
    date_from, date_to = parse_date(since, "--since"), parse_date(until, "--until")
    if date_from and date_to and date_from > date_to:
        raise InputError(f"{since} is after --until {until}: no chunk can match", field="--since")
    filter_docs = _split(doc, "--doc")
    filter_types = _split(source_type, "--source-type")
    filter_statuses = tuple(s.lower() for s in _split(status, "--status"))
    policy = opt.mode_policy(load_policy_with(policy_path), model_preset, route, route_llm)
    router = opt.router_for(route_llm, model)
    turns = load_history(history) if history else None
    filters = Filters(docs=filter_docs, source_types=filter_types, statuses=filter_statuses,
                      date_from=date_from, date_to=date_to, exact=exact)
    with Session.open(db, policy=policy, read_only=True) as session:
        res = session.ask(question, principal=principal, groups=_split(groups), filters=filters, k=candidates,
                          mode=mode, history=turns, budget=budget, floor=floor, as_of=parse_date(as_of),
                          whole_corpus=whole_corpus, router=router,
                          generator=opt.summary_generator(policy, llm, model))
    ranked, brief = res.candidates, res.brief
    opt.write_html(html_path, brief, ranked)
    if llm:  # exit 0 clean answer, 1 check findings, 3 model failed (the brief is printed anyway)
        from docket.cli.answer_show import answer_cli

        def show(console: Console) -> None:
            if ranked:  # no retrieval ran (routing, the whole corpus): nothing was ranked
                print_ranking(console, ranked[:10], floor if floor is not None else policy.pack.floor)
            print_brief(console, brief, explain=explain)

        raise typer.Exit(answer_cli(brief, llm, model, as_json=as_json, print_brief=show,
                                    allowed_domains=allow_domain or [], strip=strip_links, structured=structured))
    if as_json:
        emit_json(brief.to_json())
        return
    console = terminal_console()
    if ranked:  # no retrieval ran (routing, the whole corpus): nothing was ranked
        print_ranking(console, ranked[:10], floor if floor is not None else policy.pack.floor)
    print_brief(console, brief, explain=explain)
