"""Re-scoring decisions, recorded: tests/fixtures/record_rescore.py writes generated and HotpotQA
pools (inputs and outputs) and tests/test_rescore_fast.py replays them against the current code.
The record replaces a copy of the older loops kept in the tests: it is the reference.

A pool's output is what re-scoring decides and says: the order, the rounded scores bit for bit
(as repr, so NaN and -0.0 count), the trace events in order, and the title / lexical / link
signals `rescore.signals` reports.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from docket import rescore
from docket.context import Context
from docket.features import FeatureCache
from docket.model import Candidate, parse_chunk
from docket.policy import Policy
from docket.tokens import WordCounter

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "rescore-pools.json.gz"
RERECORD = ".venv/bin/python tests/fixtures/record_rescore.py"


def ctx(question: str, pol: Policy, features: FeatureCache) -> Context:
    return Context(question=question, store=None, policy=pol, counter=WordCounter(), features=features)  # type: ignore[arg-type]


def decide(candidates: list[Candidate], question: str, pol: Policy, features: FeatureCache) -> dict[str, Any]:
    c = ctx(question, pol, features)
    order, scores = rescore.rescore_order(candidates, c) if candidates else ([], [])
    return {
        "order": list(order),
        "scores": [repr(x) for x in scores],
        "trace": [[e.move, e.action, list(e.chunks), e.reason, repr(e.numbers)] for e in c.trace.events],
        "signals": [repr((s["title"], s["lexical"], s["link"])) for s in rescore.signals(candidates, question)],
    }


def score_json(s: Any) -> dict[str, Any]:
    if isinstance(s, np.float32):
        return {"f32": repr(float(s))}
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        raise TypeError(f"unexpected score {s!r}")
    return {"int": s} if isinstance(s, int) else {"float": repr(s)}


def score_of(d: dict[str, Any]) -> Any:
    if "f32" in d:
        return np.float32(float(d["f32"]))
    if "int" in d:
        return int(d["int"])
    return float(d["float"])


def pool_json(question: str, cands: list[Candidate], pol: Policy) -> dict[str, Any]:
    return {"question": question, "rescore": pol.rescore.model_dump(exclude_unset=True),
            "candidates": [[c.chunk.to_record(), score_json(c.score), c.rank] for c in cands]}


def pool_of(d: dict[str, Any]) -> tuple[str, list[Candidate], Policy]:
    pol = Policy().updated(rescore=d["rescore"]) if d["rescore"] else Policy()
    cands = [Candidate(parse_chunk(rec), score_of(s), r) for rec, s, r in d["candidates"]]
    return d["question"], cands, pol


def hotpot(data: Path) -> tuple[list[str], list[Any]]:
    rows = [json.loads(line) for line in (data / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8")]
    seen: dict[str, Any] = {}
    for r in rows:
        for c in r["contexts"]:
            if c["paragraph_text"] not in seen:
                seen[c["paragraph_text"]] = parse_chunk({"id": f"{r['question_id']}-{c['id']}", "doc": r["question_id"],
                                                         "title": c["title"], "text": c["paragraph_text"]})
    return [r["question_text"] for r in rows], list(seen.values())


def hotpot_pools(data: Path, size: int) -> list[tuple[str, list[Candidate]]]:
    """Twelve real pools of `size` paragraphs (some untrusted, some float32 scores), seeded."""
    questions, chunks = hotpot(data)
    rng = random.Random(size)
    out = []
    for qi, q in enumerate(questions[:: len(questions) // 12][:12]):
        pool = rng.sample(chunks, size)
        if qi % 3 == 1:  # some untrusted chunks among them
            pool = [c.model_copy(update={"trust": "untrusted"}) if rng.random() < 0.2 else c for c in pool]
        scores = sorted((round(rng.random(), 6) for _ in pool), reverse=True)
        if qi % 3 == 2:
            scores = [float(np.float32(s)) for s in scores]
        out.append((q, [Candidate(c, s, r) for r, (c, s) in enumerate(zip(pool, scores), 1)]))
    return out


def save(data: dict[str, Any], path: Path = FIXTURE) -> None:
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw)


def load(path: Path = FIXTURE) -> dict[str, Any]:
    with gzip.open(path, "rb") as f:
        return dict(json.loads(f.read()))
