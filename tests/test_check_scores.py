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
    ([np.float64("nan"), 0.3], 1), ([np.float64(0.5), 10**400], 2), ([np.float32("nan")], 1),
    ([0.2, np.float32("inf")], 2),
])
def test_a_bad_score_is_named(scores: list[object], bad: int) -> None:
    with pytest.raises(InputError, match=rf"candidate {bad} \(id 'c{bad - 1}'\).*must be a finite number"):
        check_scores(_cands(scores))


def test_numpy_scores_and_ranks_are_read_as_plain_numbers() -> None:
    """What a reranker or np.argsort hands back (np.float32 is no Python float) is the number it
    holds: the list returned holds plain floats and ints, so the brief's JSON is the same."""
    given = [Candidate(chunk=mk("c0"), score=np.float32(0.5), rank=np.int64(1)),  # type: ignore[arg-type]
             Candidate(chunk=mk("c1"), score=np.float64(0.25), rank=2)]
    out = check_scores(given)
    assert [type(c.score) for c in out] == [float, float] and [type(c.rank) for c in out] == [int, int]
    assert [c.score for c in out] == [0.5, 0.25]
    plain = _cands([0.9, 0.5])
    assert check_scores(plain) is plain  # nothing to convert: the same list


# --- the candidates themselves: each a Candidate holding a Chunk, named by position -----------------

@pytest.mark.parametrize(("given", "where", "field", "says"), [
    (["c0"], "candidate 1", "candidates", "got str"),
    ([("c0", 0.9, 1)], "candidate 1", "candidates", "got tuple"),
    ([{"chunk": "c0", "score": 0.9, "rank": 1}], "candidate 1", "candidates", "got dict"),
    ("c0", None, "candidates", "must be a list of docket Candidate"),
    ({"c0": 0.9}, None, "candidates", "must be a list of docket Candidate"),
    (5, None, "candidates", "must be a list of docket Candidate"),
    ("two", 2, "chunk", "must be a docket Chunk, got str"),
    ("none", 2, "candidates", "got NoneType"),
])
def test_a_candidate_of_another_kind_is_named(given: object, where: object, field: str, says: str) -> None:
    import docket
    from docket.embed import HashEmbedder
    from docket.store.base import MemoryStore

    good = _cands([0.9])
    if given == "two":
        given = [good[0], Candidate(chunk="c1", score=0.5, rank=2)]  # type: ignore[arg-type]
        where = "candidate 2"
    elif given == "none":
        given = [good[0], None]
        where = "candidate 2"
    with pytest.raises(InputError) as e:
        docket.assemble("refund?", given, store=MemoryStore([good[0].chunk]), embedder=HashEmbedder())  # type: ignore[arg-type]
    msg = str(e.value)
    assert f"'{field}'" in msg and says in msg, msg
    assert (where is None) == ("candidate " not in msg) and (where is None or str(where) in msg), msg
    assert "c0" not in msg  # named by position, never by id: the check runs before the access filter


def test_candidates_of_the_right_kind_pass_in_any_iterable() -> None:
    from docket.model import check_kinds

    good = _cands([0.9, 0.5])
    assert check_kinds(good) is good  # a list is returned as it is
    assert check_kinds(iter(good)) == good and check_kinds(tuple(good)) == good


# --- Candidate(chunk, score) without its rank -------------------------------------------------------


def test_a_candidate_without_a_rank_says_what_rank_is() -> None:
    """The rank stays required (the moves break score ties and choose what to drop by it; docket
    never guesses it from list order): the error names it and says how to give it."""
    with pytest.raises(TypeError) as e:
        Candidate(mk("c0"), 0.9)  # type: ignore[call-arg]
    assert str(e.value) == ("Candidate(chunk, score, rank) needs rank: the candidate's 1-based place in your ranking "
                            "(1 = best), e.g. [Candidate(c, s, r) for r, (c, s) in enumerate(ranked, 1)]")
    with pytest.raises(TypeError, match="needs rank"):
        Candidate(chunk=mk("c0"), score=0.9)  # type: ignore[call-arg]


def test_a_candidate_with_its_rank_is_the_dataclass_it_was() -> None:
    import dataclasses
    import pickle

    a, b = Candidate(mk("c0"), 0.9, 1), Candidate(chunk=mk("c0"), score=0.9, rank=1)
    assert a == b and a.rank == 1 and repr(a).startswith("Candidate(chunk=")
    assert [f.name for f in dataclasses.fields(a)] == ["chunk", "score", "rank"]
    assert dataclasses.replace(a, rank=2).rank == 2 and pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.rank = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="score"):
        Candidate(mk("c0"))  # type: ignore[call-arg]


@pytest.mark.parametrize("rank", [None, "1", True, float("nan"), float("inf"), 10**400],
                         ids=["None", "str", "bool", "nan", "inf", "huge"])
def test_a_rank_that_is_no_number_is_named(rank: object) -> None:
    """A rank of None or "1" failed deep inside a move ("'<' not supported between instances of
    'int' and 'NoneType'"); it is refused by position and id, as a bad score is."""
    import docket
    from docket.store.base import MemoryStore

    given = _cands([0.9, 0.5])
    given[1] = Candidate(given[1].chunk, 0.5, rank)  # type: ignore[arg-type]
    with pytest.raises(InputError) as e:
        docket.assemble("refund?", given, store=MemoryStore([c.chunk for c in given]), floor=0.0)
    assert str(e.value).startswith("candidate 2 (id 'c1'), field 'rank': must be a number, the candidate's 1-based "
                                   "place in the ranking (1 = best), got ")


@pytest.mark.parametrize("ranks", [[1, 2], [0, 1], [1.0, 2.5], [np.int64(1), np.int32(2)]])
def test_ranks_that_are_numbers_pass_as_before(ranks: list[object]) -> None:
    given = [Candidate(mk(f"c{i}"), 0.5, r) for i, r in enumerate(ranks)]  # type: ignore[arg-type]
    assert [c.rank for c in check_scores(given)] == [int(r) if isinstance(r, np.integer) else r for r in ranks]
