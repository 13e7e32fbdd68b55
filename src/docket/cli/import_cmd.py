"""`docket import`: chunks with vectors embedded elsewhere (Parquet or JSONL) into a new store."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from docket.cli.app import app
from docket.errors import DocketError, InputError

#: the embedders a file's vectors can be declared to come from (`--embedder`)
_MODELS = ("minilm", "hash")


def _stored_as(model: str) -> tuple[str, int]:
    """The (name, dimension) a store records for `model`: the embedder classes' own, so an import
    and `docket index` always agree on them."""
    from docket.embed import HashEmbedder, MiniLMEmbedder

    return (MiniLMEmbedder.name, MiniLMEmbedder.dim) if model == "minilm" else (HashEmbedder.name, HashEmbedder().dim)


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="A Parquet (.parquet) or JSONL (.jsonl) file: one chunk a row with "
                                              "id, doc, text and vector (see docs/store.md, Bulk import).")],
    db: Annotated[str, typer.Option("--db", help="The new store: a SQLite file or a postgresql:// URL. "
                                                 "It must hold no documents yet.")],
    fmt: Annotated[str | None, typer.Option("--format", help="parquet or jsonl (default: from the file name).")] = None,
    embedder: Annotated[str, typer.Option("--embedder", help="The model that made the vectors: minilm (default, "
                                                              "384 dimensions) or hash (tests only, 256).")] = "minilm",
    features: Annotated[bool, typer.Option("--features", help="After the load commits, write each chunk's feature "
                                                              "record (what `docket features` does), so no question "
                                                              "pays for them on a chunk's first sight.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Bulk-load a file of chunks with their vectors (the output of a Spark, Ray or Dask embedding job):
    all rows in one transaction, or none; the ANN and keyword indexes are built once, after the load."""
    import json

    from docket.store.bulk import import_file
    from docket.store.factory import open_store

    if embedder not in _MODELS:
        raise InputError(f"must be one of {', '.join(_MODELS)}, got {embedder!r}", field="--embedder")
    made = _new_sqlite_files(db)
    try:
        store = open_store(db)
        try:
            report = import_file(store, file, fmt=fmt, embedder=_stored_as(embedder))
        finally:
            store.close()
    except BaseException:
        made()  # a refused file leaves no empty store behind (nothing was written into one)
        raise
    out = report.to_json()
    if not as_json:
        typer.echo(f"imported {out['rows']} chunks ({out['versions']} document versions) in {out['seconds']} s "
                   f"({out['chunks_per_s']} chunks/s), embedder {out['embedder']} (dim {out['dim']})")
        if out["normalised"]:
            typer.echo(f"{out['normalised']} vectors were not of unit length and were stored scaled to it (the "
                       "store scores by cosine); if your embedding job normalises, check its output")
        if not features and out["rows"]:
            from docket.session_stores import redact

            typer.echo(f"no feature records were written: each chunk computes its features on first sight; write "
                       f"them now with `docket features --db {redact(db)}` (or import with --features)")
    filled = None
    if features:
        try:
            filled = _fill(db, create=True, quiet=as_json)
        except DocketError as e:  # the load is committed and stays
            raise DocketError(f"{e} (the import of {out['rows']} chunks is committed; write the records with "
                          "`docket features --db ...`)") from None
    if as_json:
        typer.echo(json.dumps(out if filled is None else {**out, "features": filled}, sort_keys=True))
    elif filled is not None:
        _say(filled)


@app.command("features")
def features_cmd(
    db: Annotated[str, typer.Option("--db", help="The store: a SQLite file or a postgresql:// URL.")],
    workers: Annotated[int | None, typer.Option("--workers", min=0, help="Worker processes that compute the "
                                                                         "records (default: one a core, at most 8, "
                                                                         "for more than 2,048 chunks; 0: none).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Write the feature record of every chunk that has none (a store made by `docket import`): the
    features `docket index` writes, so no question pays for them on a chunk's first sight. Safe
    beside readers and writers; a rerun writes only what is still missing."""
    import json

    filled = _fill(db, create=False, quiet=as_json, workers=workers)
    if as_json:
        typer.echo(json.dumps(filled, sort_keys=True))
    else:
        _say(filled)


def _fill(db: str, *, create: bool, quiet: bool, workers: int | None = None) -> dict[str, object]:
    """docket.store.fill_records with the records `docket index` writes (the brief's, with rendered
    token counts), under a progress bar."""
    from docket.brief.sizer import feature_record
    from docket.cli.progress import FeaturesProgress
    from docket.store.factory import open_store
    from docket.store.fill_records import fill_records

    if not db.startswith(("postgres://", "postgresql://")):
        if not create and not Path(db).is_file():
            raise InputError("no such store (build one with `docket index` or `docket import`)", where=db)
        if Path(db).is_file() and not os.access(db, os.W_OK):  # before opening: SQLite's own error is vaguer
            raise InputError("cannot be written (a read-only file): feature records are written into the store; "
                             "run this as a user who may write it", where=db)
    store = open_store(db, create=create)
    try:
        with FeaturesProgress(quiet=quiet) as shown:
            return fill_records(store, feature_record, workers=workers, progress=shown).to_json()
    finally:
        store.close()


def _workers(n: object) -> str:
    return "in this process" if n == 0 else f"{n} worker process{'' if n == 1 else 'es'}"


def _say(filled: dict[str, object]) -> None:
    rate = f" ({filled['records_per_s']} records/s, {_workers(filled['workers'])})" if filled["written"] else ""
    changed = f"; {filled['changed']} chunks changed meanwhile (run it again)" if filled["changed"] else ""
    typer.echo(f"wrote {filled['written']} feature records in {filled['seconds']} s{rate}{changed}")


def _new_sqlite_files(db: str) -> Callable[[], None]:
    """A function that removes the files of a SQLite store `db` that did not exist before this call
    (the database, its journal, snapshot and index files); a no-op for PostgreSQL or an existing store."""
    if db.startswith(("postgres://", "postgresql://")) or Path(db).exists():
        return lambda: None
    path = Path(db)
    before = set(path.parent.glob(path.name + "*")) if path.parent.is_dir() else set()

    def remove() -> None:
        for f in set(path.parent.glob(path.name + "*")) - before if path.parent.is_dir() else ():
            if f.is_file():
                f.unlink(missing_ok=True)

    return remove
