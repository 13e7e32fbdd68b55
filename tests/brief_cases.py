"""The brief build on hostile passages, recorded: tests/fixtures/record_briefs.py writes the
cases (inputs and every output a caller can read) and tests/test_brief_speed_equivalence.py
replays them against the current code, cold (render memo cleared) and warm. This replaces a copy
of the older production code kept in the tests: the record is the reference.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from datetime import date
from pathlib import Path
from typing import Any

from docket.brief import formats, layout
from docket.model import Passage, parse_chunk
from docket.policy import Policy
from docket.steps import Run, fit

from helpers import context

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "briefs-hostile.json.gz"
RERECORD = ".venv/bin/python tests/fixtures/record_briefs.py"


def everything(brief: Any) -> dict[str, Any]:
    """What a caller can read of a brief, as exact text (JSON key order kept)."""
    return {
        "json": json.dumps(brief.to_json(), ensure_ascii=False),
        "request": json.dumps(brief.anthropic_request, ensure_ascii=False),
        "tokens": json.dumps(brief.tokens.to_json()),
        "sources": repr([(k, dict(s), s.key_order) for k, s in brief.sources.items()]),
        "passages": [list(p.ids) for p in brief.passages],
        "texts": [brief.system, brief.user, brief.documents],
    }


def build_brief(passages: list[Passage], ctx: Any, budget: int) -> Any:
    """The assembler's last step (fit: the exact budget check) and the brief build."""
    run = Run(list(passages), budget=budget)
    fit(run, ctx)
    return layout.build_brief(run.passages, ctx, budget)


def briefs(name: str, case: Any, budget: int, as_of: dict[str, Any] | None, extras: int = 0,
           reverse: bool = False) -> dict[str, Any]:
    """The brief of a hostile case (test_fence_properties.Case); `extras` bit 1: the first passage
    carries folded copies (dedup's provenance), bit 2: the last one is a summary passage
    (compress.summary); `reverse`: the passages in the opposite order (so each gets another label)."""
    render_pol = dict(case.render, format=name if name in formats.text_formats() else "xml")
    policy = Policy().updated(render=render_pol, compress={"summary": bool(extras & 2)})
    chunks, passages = [], []
    for n, (recs, override) in enumerate(zip(case.chunks, case.overrides), 1):
        cs = tuple(parse_chunk(r) for r in recs)
        chunks.extend(cs)
        passages.append(Passage(chunks=cs, score=1.0 / n, rank=n, hits=(cs[0].id,), text_override=override))
    if extras & 1:
        c = passages[-1].first
        copy = {"chunks": [c.id + "-copy"], "doc": c.doc, "version": 2, "title": c.title, "section": c.section,
                "status": c.status, "cosine": 0.97}
        passages[0] = passages[0].with_(also_in=(copy, {**copy, "source_type": "forum", "extra_key": [1]}))
    if extras & 2:
        last = passages[-1]
        covers = ({"doc": last.first.doc, "version": 1, "chunks": list(last.ids), "title": last.first.title,
                   "trust": "untrusted"},)
        summary = last.first.model_copy(update={"id": "docket-summary-1", "status": "derived"})
        passages[-1] = Passage(chunks=(summary,), score=last.score, rank=last.rank, hits=(), covers=covers)
    if reverse:
        passages.reverse()
    ctx = context(chunks, question=case.question, policy=policy)
    ctx.conflicts = [dict(c) for c in case.conflicts]
    ctx.as_of = as_of
    return everything(build_brief(passages, ctx, budget))


def entry_inputs(case: Any, name: str, budget: int, as_of: dict[str, Any] | None, extras: int) -> dict[str, Any]:
    return {"case": dataclasses.asdict(case), "format": name, "budget": budget, "extras": extras,
            "as_of": None if as_of is None else {"date": as_of["date"].isoformat(), "source": as_of["source"]}}


def replay(entry: dict[str, Any]) -> tuple[Any, str, int, dict[str, Any] | None, int]:
    """The arguments of `briefs` that an entry's inputs stand for."""
    from test_fence_properties import Case

    a = entry["as_of"]
    as_of = None if a is None else {"date": date.fromisoformat(a["date"]), "source": a["source"]}
    return Case(**entry["case"]), entry["format"], entry["budget"], as_of, entry["extras"]


def save(entries: list[dict[str, Any]], path: Path = FIXTURE) -> None:
    # key order kept (it reaches the output); \\u escapes keep lone surrogates the cases hold
    raw = json.dumps({"cases": entries}, separators=(",", ":")).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw)


def load(path: Path = FIXTURE) -> list[dict[str, Any]]:
    with gzip.open(path, "rb") as f:
        return list(json.loads(f.read())["cases"])
