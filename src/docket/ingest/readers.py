"""Files to document versions: find the files, read each by its type, attach its metadata.

Supported: `.jsonl` (chunk records, the contract in docs/store.md), `.md`/`.markdown`, `.html`/`.htm`
and `.txt`/`.text`. Problems that concern one file (unreadable, not UTF-8, unsupported type,
broken front matter, no text left after cleaning) raise `InputError` naming the file, so the
caller can report it and go on with the rest of the batch.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.errors import InputError
from docket.ingest.chunking import ChunkSize, Piece, chunk_text
from docket.ingest.html import clean_html
from docket.ingest.markdown import visible_markdown
from docket.ingest.meta import DocMeta, is_sidecar, read_sidecar, resolve_meta, split_front_matter
from docket.ingest.office import OfficeLimits, OfficeText, Segment, paged_pieces, read_docx, read_pdf
from docket.ingest.unicode import strip_invisible
from docket.model import Chunk, parse_chunk
from docket.safeio import input_problem, iter_json_lines, read_bytes, scrub_counted
from docket.safeio import read_text as _read_text
from docket.store.protocol import DocumentVersion
from docket.tokens import TokenCounter

KINDS = {".jsonl": "jsonl", ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
         ".txt": "text", ".text": "text", ".pdf": "pdf", ".docx": "docx"}
#: what one PDF or DOCX may cost when indexed: more than an attachment (a manual of a thousand
#: pages is an ordinary document to index), still bounded before the parser runs
INDEX_OFFICE = OfficeLimits(max_unzipped_bytes=200_000_000, max_pages=5_000, max_chars=20_000_000, keys="")
INDEX_OFFICE_BYTES = 200_000_000


@dataclass(frozen=True)
class Found:
    path: Path
    root: Path  # document ids of files are their path relative to this


@dataclass(frozen=True)
class Problem:
    where: str
    message: str


def discover(paths: Iterable[str | Path]) -> Iterator[Found | Problem]:
    """Every file under `paths` (directories recursively, sorted; hidden files and metadata
    sidecars skipped). A path that does not exist, loops, has an unsupported type or (a folder)
    holds nothing to index is a Problem; so is a link inside a folder that leads nowhere."""
    for raw in paths:
        p = Path(raw)
        problem = input_problem(p, "any")
        if problem:
            yield Problem(str(p), problem)
        elif p.is_dir():
            found = 0
            for item in _walk(p):
                if isinstance(item, Path):
                    found += 1
                    yield _supported(item, p)
                else:
                    yield item
            if not found:
                kinds = ", ".join(sorted(KINDS))
                yield Problem(str(p), f"holds no files to index (supported: {kinds}; hidden files are skipped)")
        elif p.is_file():
            yield _supported(p, p.parent)
        else:
            yield Problem(str(p), "is not a regular file or folder")


def _walk(root: Path) -> Iterator[Path | Problem]:
    """The regular files under `root` in sorted order (hidden names and sidecars skipped), and a
    Problem for each folder that cannot be read and each link that leads nowhere or to a folder:
    nothing under `root` is left out without a word."""
    unreadable: list[OSError] = []
    entries: list[tuple[Path, str]] = []  # (path, "file" | "link-to-folder" | "bad-link")
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable.append):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for d in list(dirnames):
            if (here / d).is_symlink():
                entries.append((here / d, "link-to-folder"))
        for f in filenames:
            path = here / f
            if f.startswith(".") or is_sidecar(path):
                continue
            entries.append((path, "file" if path.is_file() else "bad-link" if path.is_symlink() else "special"))
    for e in unreadable:
        entries.append((Path(e.filename or root), "unreadable"))
    for path, kind in sorted(entries):
        if kind == "file":
            yield path
        elif kind == "link-to-folder":
            yield Problem(str(path), "is a link to a folder, which is not followed; give it as its own PATH")
        elif kind == "bad-link":
            yield Problem(str(path), input_problem(path, "file") or "is a broken link")
        elif kind == "unreadable":
            yield Problem(str(path), "cannot be read (permission denied); the files in it were not indexed")
        else:
            yield Problem(str(path), "is not a regular file (a pipe, socket or device); skipped")


def _supported(path: Path, root: Path) -> Found | Problem:
    if path.suffix.lower() not in KINDS:
        kinds = ", ".join(sorted(KINDS))
        return Problem(str(path), f"unsupported file type {path.suffix or '(none)'!r}; supported: {kinds}")
    return Found(path, root)


def problem_of(e: InputError, fallback: str, suffix: str = "") -> Problem:
    """An InputError as (where, message) without repeating the location."""
    where = e.where or fallback
    text = str(e)
    msg = text[len(where) + 2 :] if e.where and text.startswith(where + ", ") or text.startswith(where + ": ") else text
    return Problem(where, msg + suffix)


def read_text(path: Path, removed: Counter[str] | None = None) -> str:
    """The file as text (strict UTF-8; a lone surrogate's bytes become U+FFFD, counted in
    `removed`); see docket.safeio for what is refused."""
    return _read_text(path, removed)


def read_file(found: Found, size: ChunkSize, counter: TokenCounter, removed: Counter[str],
              problems: list[Problem]) -> list[DocumentVersion]:
    """The document versions in one file. Whole-file problems raise InputError; problems with
    single records of a JSONL file are appended to `problems` and the rest is kept."""
    kind = KINDS[found.path.suffix.lower()]
    if kind in ("pdf", "docx"):
        return [read_office(found, kind, size, counter, removed)]
    text = read_text(found.path, removed)
    if kind == "jsonl":
        return read_jsonl(text, str(found.path), removed, problems)
    return [read_document(found, kind, text, size, counter, removed)]


def read_document(found: Found, kind: str, text: str, size: ChunkSize, counter: TokenCounter,
                  removed: Counter[str], *, sidecar: dict[str, Any] | None = None) -> DocumentVersion:
    """One Markdown, HTML or text file as one document version, chunked. `sidecar` given (a
    document sent over the API) stands for the metadata file; no file is read then."""
    where = str(found.path)
    front, body = split_front_matter(text, where) if kind != "html" else ({}, text)
    side = sidecar if sidecar is not None else read_sidecar(found.path)[0]
    meta = resolve_meta(front, side, where)
    local: Counter[str] = Counter()
    title = str(meta.fields.get("title", ""))
    if kind == "html":
        cleaned = clean_html(body, local)
        body, title = cleaned.text, title or cleaned.title
    elif kind == "markdown":  # its raw HTML is a web page's: hidden text goes as it does from an HTML file
        body = visible_markdown(body, local, where=where)
    body = strip_invisible(scrub_counted(body, local), local)  # lone surrogates: U+FFFD, counted
    if not title and kind == "markdown":
        title = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), "")
    title = strip_invisible(scrub_counted(title or found.path.stem, local), local)
    removed.update(local)
    pieces = [(p, meta.metadata) for p in chunk_text(body, counter, size, title=title)]
    return _version(found, meta, title, pieces, local)


def read_office(found: Found, kind: str, size: ChunkSize, counter: TokenCounter,
                removed: Counter[str]) -> DocumentVersion:
    """One PDF or DOCX file as one document version: the text a viewer shows (docket.ingest.office
    leaves out what it hides, counted in `removed`), chunked page by page, never across a page;
    the page in the section path ("Terms > page 4") and in `metadata.page`. Metadata comes from
    a sidecar file (a binary file has no front matter); the title from it, else the file's own."""
    where = str(found.path)
    data = read_bytes(found.path, INDEX_OFFICE_BYTES, f"the {INDEX_OFFICE_BYTES // 1_000_000} MB limit of a file to index")
    local: Counter[str] = Counter()
    office = (read_pdf if kind == "pdf" else read_docx)(data, where, INDEX_OFFICE, local)
    meta = resolve_meta({}, read_sidecar(found.path)[0], where)
    title = str(meta.fields.get("title", "")) or office.title
    title = strip_invisible(scrub_counted(title or found.path.stem, local), local)
    cleaned = OfficeText(title, [Segment(strip_invisible(scrub_counted(s.text, local), local), s.page)
                                 for s in office.segments])
    pieces = [(p, meta.metadata if page is None else {**meta.metadata, "page": page})
              for p, page in paged_pieces(cleaned, counter, size, title)]
    removed.update(local)
    return _version(found, meta, title, pieces, local)


def _version(found: Found, meta: DocMeta, title: str, pieces: list[tuple[Piece, dict[str, Any]]],
             removed: Counter[str]) -> DocumentVersion:
    """The document version of a file's chunks; a file that kept no text is refused, saying what
    cleaning removed."""
    where = str(found.path)
    if not pieces:
        gone = ", ".join(f"{n} {k}" for k, n in sorted(removed.items()))
        raise InputError("holds no text to index" + (f" after cleaning (removed {gone})" if gone else ""), where=where)
    doc = str(meta.fields.get("doc") or found.path.relative_to(found.root).as_posix())
    version = int(meta.fields.get("version", 1))
    f = meta.fields
    chunks = [
        Chunk(id=f"{doc}@v{version}#{i}", doc=doc, text=p.text, version=version, status=f.get("status", "current"),
              date=f.get("date"), effective_to=f.get("effective_to"), title=title, section=p.section, position=i,
              source_type=f.get("source_type"), trust=f.get("trust"), acl=f.get("acl"), metadata=md)
        for i, (p, md) in enumerate(pieces)
    ]
    c0 = chunks[0]
    return DocumentVersion(doc=doc, version=version, status=c0.status, date=c0.date, effective_to=c0.effective_to,
                           title=title, source=where, chunks=chunks, supersedes=meta.supersedes)


def read_jsonl(text: str, where: str, removed: Counter[str], problems: list[Problem]) -> list[DocumentVersion]:
    """Chunk records grouped into document versions (in file order).

    A line that is not JSON is reported and skipped (its document cannot be known). A record that
    is JSON but breaks the contract rejects its whole document version, as does a duplicate id:
    half a version in the store would look complete to the assembler.
    """
    groups: dict[tuple[str, int], list[tuple[int, Chunk]]] = {}
    rejected: set[tuple[str, int]] = set()
    seen: dict[str, int] = {}
    for n, rec in iter_json_lines(text, where):
        loc = f"{where}:{n}"
        if isinstance(rec, InputError):
            problems.append(problem_of(rec, loc, suffix="; line skipped"))
            continue
        key = _group_key(rec)
        try:
            if isinstance(rec, dict):
                for f in ("text", "title", "section"):
                    if isinstance(rec.get(f), str):
                        rec[f] = strip_invisible(rec[f], removed)
            chunk = parse_chunk(rec, where=loc)
            if chunk.id in seen:
                raise InputError(f"duplicate id (first on line {seen[chunk.id]})", where=loc, field="id")
            seen[chunk.id] = n
        except InputError as e:
            what = f"; document {key[0]!r} v{key[1]} rejected" if key else "; record skipped"
            problems.append(problem_of(e, loc, suffix=what))
            if key:
                rejected.add(key)
            continue
        groups.setdefault(chunk.doc_version, []).append((n, chunk))
    out: list[DocumentVersion] = []
    for key, items in groups.items():
        if key in rejected:
            continue
        try:
            out.append(_jsonl_version(items, where))
        except InputError as e:
            problems.append(problem_of(e, f"{where}:{items[0][0]}"))
    return out


def _group_key(rec: object) -> tuple[str, int] | None:
    if not isinstance(rec, dict) or not isinstance(rec.get("doc"), str):
        return None
    try:
        return (rec["doc"], int(rec.get("version", 1)))
    except (TypeError, ValueError, OverflowError):
        return None


def _jsonl_version(items: list[tuple[int, Chunk]], where: str) -> DocumentVersion:
    chunks = [c for _, c in items]
    first = chunks[0]
    for n, c in items[1:]:
        for f in ("status", "date", "effective_to"):
            if getattr(c, f) != getattr(first, f):
                raise InputError(
                    f"{getattr(c, f)!r} differs from {getattr(first, f)!r} on line {items[0][0]}; the chunks of "
                    f"document {first.doc!r} v{first.version} must agree; document rejected",
                    where=f"{where}:{n}", field=f,
                )
    supersedes = all(c.metadata.get("supersedes", True) is not False for c in chunks)
    return DocumentVersion(doc=first.doc, version=first.version, status=first.status, date=first.date,
                           effective_to=first.effective_to, title=first.title,
                           source=f"{where}:{items[0][0]}", chunks=chunks, supersedes=supersedes)
