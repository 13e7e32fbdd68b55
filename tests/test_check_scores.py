"""Caller-built candidates: every score must be a finite number, named when it is not; the
all-plain-floats shortcut gives the same answers as the check of each one."""

from __future__ import annotations

import numpy as np
import pytest

from docket.errors import InputError
from docket.model import Candidate, check_scores

from helpers import mk


def _cands(scores: list[object]) -> list[Candidate]:
    return [Candidate(chunk=mk(f"c{i}"), score=s, rank=i + 1) for i, s in enumerate(scores)]  # type: ignore[arg-type]


@pytest.mark.parametrize("scores", [[0.9, 0.5], [1, 0.5, -2], [1e308, 1e308], [-1e308, 1e308, 5e-324], [0.0]])
def test_finite_scores_pass(scores: list[object]) -> None:
    check_scores(_cands(scores))
    check_scores(tuple(_cands(scores)))  # any iterable, not only a list


@pytest.mark.parametrize(("scores", "bad"), [
    ([0.9, float("nan")], 2), ([float("inf"), 0.1], 1), ([0.2, float("-inf")], 2),
    ([float("inf"), float("-inf")], 1), ([0.5, True], 2), ([0.5, "high"], 2), ([0.5, None], 2),
    ([np.float64("nan"), 0.3], 1), ([np.float64(0.5), 10**400], 2), ([np.float32(0.5)], 1),
])
def test_a_bad_score_is_named(scores: list[object], bad: int) -> None:
    with pytest.raises(InputError, match=rf"candidate {bad} \(id 'c{bad - 1}'\).*must be a finite number"):
        check_scores(_cands(scores))
