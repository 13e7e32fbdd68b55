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

from docket.cli import asking
from docket.cli import indexing as ix
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
    from docket.ingest import IndexReport
    from docket.store.protocol import Store


def open_store(location: str, *, create: bool = True, read_only: bool = False, file_mode: int | None = None,
               records: Any = None) -> Store:
    """docket.store.factory.open_store, imported when a command runs (it brings numpy)."""
    from docket.store.factory import open_store as _open

    return _open(location, create=create, read_only=read_only, file_mode=file_mode, records=records)


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
    paths: ix.Paths = None,
    db: opt.Db = "docket.db",
    source: ix.Source = None,
    chunk_size: ix.ChunkTokens = 300,
    overlap: ix.Overlap = 40,
    embedder_name: ix.EmbedderName = None,
    as_json: ix.ReportJson = False,
    sets: ix.Sets = None,
    doc_prefix: ix.DocPrefix = None,
    contextualize: ix.Contextualize = None,
    llm: opt.Llm = None,
    model: opt.Model = None,
    file_mode: ix.FileMode = None,
    context_tokens: ix.ContextTokens = 100,
    context_window: ix.ContextWindow = 3000,
) -> None:
    """Index files (or another store) into a store: cleaned, chunked, embedded once, incremental."""
    report = ix.run_index(ix.IndexArgs(**locals()))
    warnings = ix.source_type_warnings(report)
    if as_json:
        sys.stdout.write(json_text({**report.to_json(), "warnings": warnings}) + "\n")
    else:
        _print_report(terminal_console(), report)
    if warnings and not (as_json and not sys.stderr.isatty()):  # --json into a pipe: the report's "warnings"
        err = terminal_console(stderr=True)
        for w in warnings:
            err.print(f"docket: warning: {escape(w)}", soft_wrap=True)
    if report.problems:
        raise typer.Exit(1)


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Argument(help="JSONL file to write (chunk records with vectors).",
                                        callback=opt.output_file)],
    db: opt.Db = "docket.db",
) -> None:
    """Write every chunk of a store as JSONL records (the contract in docs/store.md, `vector` included).

    The file is written next to OUT and renamed over it at the end: a failed export leaves OUT as it was."""
    from docket.api import Session
    from docket.safeio import atomic_write

    if "://" not in db:
        opt.check_not_same_file(out, db, "OUT", "store")
    n = 0
    with Session.open(db, read_only=True) as session, atomic_write(out) as fh:
        for dv in session.export():
            for c, vec in zip(dv.chunks, dv.vectors if dv.vectors is not None else [None] * len(dv.chunks)):
                rec = c.to_record()
                if vec is not None:
                    rec["vector"] = [round(float(x), 7) for x in vec]
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
    terminal_console(stderr=True).print(f"exported {n} chunks to {escape(str(out))}" if n else
                               f"the store holds no chunks; wrote an empty {escape(str(out))}")


@app.command("delete")
def delete_cmd(
    doc: Annotated[str, typer.Argument(help="Document id.", callback=opt.name)],
    db: opt.Db = "docket.db",
    version: Annotated[int | None, typer.Option("--version", help="Only this version.", callback=opt.non_negative)] = None,
) -> None:
    """Remove a document (or one version of it) from the store."""
    from docket.api import Session

    with Session.open(db) as session:
        try:
            n = session.delete(doc, version)
        except InputError as e:  # the option by its flag, and where to look
            hint = " (`docket export` lists what is)" if e.field is None else ""
            raise InputError(e.detail + hint, where=e.where, field="--version" if e.field else None) from None
    terminal_console(stderr=True).print(f"deleted {n} chunks of {escape(doc)}" + (f" v{version}" if version else ""))


@app.command("principal")
def principal_cmd(
    name: Annotated[str, typer.Argument(help="User or service name, as listed in chunk acls.", callback=opt.name)],
    db: opt.Db = "docket.db",
    groups: Annotated[list[str] | None, typer.Option("--groups", help="Set the groups (comma-separated).")] = None,
) -> None:
    """Show or set a principal's groups (the `principals` table used by `docket ask --principal`)."""
    fresh = groups is not None and "://" not in db and not Path(db).exists()
    store = open_store(db, create=groups is not None, read_only=groups is None)
    if fresh:  # a mistyped --db (or none, in the wrong folder) would set the groups in a store nobody reads
        typer.echo(f"docket: {db} did not exist: made a new store holding only this principal (index documents "
                   "into it with `docket index PATH --db ...`); check --db if you meant an existing store", err=True)
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
    db: opt.Db = "docket.db",
    principal: asking.Principal = None,
    groups: asking.Groups = None,
    budget: opt.Budget = None,
    floor: opt.Floor = None,
    as_of: opt.AsOf = None,
    policy_path: opt.PolicyPath = None,
    candidates: asking.Candidates = 50,
    mode: asking.SearchMode = "fused",
    doc: asking.Doc = None,
    source_type: asking.SourceType = None,
    status: asking.Status = None,
    since: asking.Since = None,
    until: asking.Until = None,
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
    asking.run_ask(asking.AskArgs(**locals()))
