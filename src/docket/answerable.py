"""Decide "not found" from more than the top cosine (issue 4 fills this in).

Contract: a pure function returning (answerable, signals); signals go into the trace.
"""

from __future__ import annotations

from typing import Any

from docket.context import Context
from docket.model import Candidate


def judge(candidates: list[Candidate], ctx: Context) -> tuple[bool, dict[str, Any]]:
    top = max((c.score for c in candidates), default=float("-inf"))
    return top >= ctx.policy.pack.floor, {"top_score": top}
