"""Ingestion: read JSONL chunk records and Markdown/HTML/text files, clean them, chunk them,
and write each document version to a store (embedded and token-counted once, at index time).

One module per job: `unicode` (invisible characters), `html` (markup and hidden text),
`meta` (front matter and sidecars), `chunking` (headings, paragraphs, token windows),
`readers` (files -> document versions), `report` (what happened), `pipeline` (the index run).
"""

from docket.ingest.pipeline import IndexOptions, index_paths, index_versions
from docket.ingest.report import IndexReport

__all__ = ["IndexOptions", "IndexReport", "index_paths", "index_versions"]
