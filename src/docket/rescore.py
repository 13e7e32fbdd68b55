"""Re-score the candidate pool with signals the retriever's cosine ignores (issue 4 fills this in).

Contract: a pure function over the candidates; it may reorder them (new `rank`s) but the
`score` it returns stays on the floor's scale, so `pack.floor` keeps its meaning.
"""

from __future__ import annotations

from docket.context import Context
from docket.model import Candidate


def rescore(candidates: list[Candidate], ctx: Context) -> list[Candidate]:
    return candidates
