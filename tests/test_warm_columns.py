"""The warm path's column-wise checks (issue 21, warm at 200) decide as the per-item loops they
replaced: each is compared with that loop, kept here as the reference, on generated inputs."""

from __future__ import annotations

from datetime import date as Date
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket import answerable
from docket.context import Context, stack
from docket.model import Passage
from docket.moves import reach, versions
from docket.moves.authority import authority_order
from docket.policy import Policy, VersionsPolicy
from docket.store.base import MemoryStore, VersionInfo
from docket.tokens import default_counter

from helpers import mk

SOURCES = st.sampled_from([None, "policy", "help", "forum", "blog"])
TRUST = st.sampled_from([None, "trusted", "untrusted", "user-provided"])
STATUS = st.sampled_from(["current", "user-generated", "superseded", "external"])


@st.composite
def chunk_lists(draw: Any, max_size: int = 12) -> list[Any]:
    n = draw(st.integers(0, max_size))
    return [mk(f"c{i}", doc=f"d{draw(st.integers(0, 3))}", source_type=draw(SOURCES), trust=draw(TRUST),
               status=draw(STATUS), version=draw(st.integers(1, 3))) for i in range(n)]


@settings(max_examples=80, deadline=None)
@given(chunk_lists())
def test_authorities_are_each_chunks_authority(chunks: list[Any]) -> None:
    pol = VersionsPolicy()
    assert versions.authorities(chunks, pol) == [versions.authority(c, pol) for c in chunks]
    assert versions.authorities(iter(chunks), pol) == [versions.authority(c, pol) for c in chunks]


def _in_pack_order_loop(passages: list[Passage]) -> bool:
    """reach.applies' rank-order check as it was: one Python step per passage."""
    rank, score, cid = -(1 << 62), float("inf"), ""
    for p in passages:
        c = p.chunks
        if len(c) != 1 or p.text_override is not None or p.score > score or p.rank < rank or \
                (p.rank == rank and c[0].id <= cid):
            return False
        rank, score, cid = p.rank, p.score, c[0].id
    return True


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.sampled_from([0.9, 0.5, 0.5, 0.1, float("nan")]),
                          st.sampled_from(["a", "b", "c"]), st.integers(1, 2), st.booleans()), min_size=1, max_size=8))
def test_pack_order_check_matches_the_loop(rows: list[tuple[int, float, str, int, bool]]) -> None:
    passages = []
    for k, (rank, score, cid, width, override) in enumerate(rows):
        chunks = tuple(mk(f"{cid}{k}-{j}" if width > 1 else cid) for j in range(width))
        passages.append(Passage(chunks=chunks, score=score, rank=rank, hits=(chunks[0].id,),
                                text_override="short" if override else None))
    assert reach._in_pack_order(passages) == _in_pack_order_loop(passages)


def _all_in_force_loop(passages: list[Passage], in_force: dict[str, VersionInfo | None], as_of: Date) -> bool:
    return all((now := in_force[p.doc]) is not None and (c := p.first).version == now.version and
               (c.date is None or not c.date > as_of) for p in passages)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["d0", "d1", "d2"]), st.integers(1, 3),
                          st.sampled_from([None, "2024-01-01", "2026-06-01"])), max_size=8),
       st.dictionaries(st.sampled_from(["d0", "d1", "d2"]), st.one_of(st.none(), st.integers(1, 3))))
def test_in_force_check_matches_the_loop(rows: list[tuple[str, int, str | None]], force: dict[str, int | None]) -> None:
    passages = [Passage(chunks=(c,), score=0.5, rank=k + 1, hits=(c.id,)) for k, c in enumerate(
        mk(f"c{k}", doc=doc, version=v, **({"date": d} if d else {})) for k, (doc, v, d) in enumerate(rows))]
    in_force: dict[str, VersionInfo | None] = {
        d: None if force.get(d) is None else VersionInfo(d, force[d], "current", None, None)  # type: ignore[arg-type]
        for d in ("d0", "d1", "d2")}
    as_of = Date(2025, 1, 1)
    assert versions._all_in_force(passages, in_force, as_of) == _all_in_force_loop(passages, in_force, as_of)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([(3,), (4,), (3, 1), ()]), min_size=1, max_size=5),
       st.sampled_from([np.float32, np.float64]))
def test_stack_gives_what_np_stack_gives(shapes: list[tuple[int, ...]], dtype: Any) -> None:
    rows = [np.arange(int(np.prod(s)) or 1, dtype=dtype).reshape(s) if s else dtype(1.0) for s in shapes]
    try:
        want = np.stack(rows)
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)[:20]):
            stack(rows)
        return
    got = stack(rows)
    assert got.shape == want.shape and got.dtype == want.dtype and (got == want).all()


def test_context_entries_are_looked_up_once_per_list() -> None:
    chunks = [mk(f"c{i}") for i in range(5)]
    ctx = Context(question="q", store=MemoryStore(chunks), policy=Policy(), counter=default_counter())
    first = ctx.entries(chunks)
    assert [e.chunk for e in first] == chunks
    assert ctx.entries(list(chunks)) is first  # the same chunks in the same order: the same look-up
    backwards = ctx.entries(chunks[::-1])
    assert [e.chunk for e in backwards] == chunks[::-1]
    assert ctx.entries(chunks) is first and ctx.entries(chunks[::-1]) is backwards  # the last two lists kept
    copies = [c.model_copy() for c in chunks]  # equal chunks, other objects: looked up again
    assert [e.chunk for e in ctx.entries(copies)] == copies


def test_authority_order_keeps_rank_order_for_one_level() -> None:
    chunks = [mk(f"c{i}", source_type="policy") for i in range(6)]
    ps = [Passage(chunks=(c,), score=1.0 - 0.1 * k, rank=k + 1, hits=(c.id,)) for k, c in enumerate(chunks)]
    ctx = Context(question="q", store=MemoryStore(chunks), policy=Policy(), counter=default_counter())
    ordered, notes = authority_order(ps[::-1], ctx)
    assert ordered == ps and notes == []


def test_the_ascii_lookalikes_are_all_there_are() -> None:
    """answerable._folded writes these four as their ASCII letter; any other character that `re`
    matched with an ASCII character ignoring case would let the pre-filter skip a real match."""
    import re
    import sys

    # a character without case (and no letter) is matched with itself only: the rest, in one string
    cased = "".join(ch for ch in map(chr, range(0x80, sys.maxunicode + 1))
                    if ch.isalpha() or ch.lower() != ch or ch.upper() != ch)
    found = {m.group(0): a for a in map(chr, range(0x20, 0x7F))
             for m in re.finditer(re.escape(a), cased, re.IGNORECASE)}
    assert found == {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
    assert {ch: ch.translate(answerable._ASCII_LOOKALIKES) for ch in found} == found


TEXT_CHARS = st.sampled_from(list("abkisKIS -_1.") + ["\u0130", "\u0131", "\u017f", "\u212a", "\u00e9", "\u00df",
                                                       "\u03a3", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(list("abkisKIS-1")), min_size=1, max_size=3), min_size=1, max_size=2),
       st.lists(st.text(TEXT_CHARS, max_size=12), max_size=4))
def test_holding_finds_what_the_search_finds(terms: list[str], texts: list[str]) -> None:
    assert answerable._holding(terms, texts) == [any(answerable._holds(t, x) for t in terms) for x in texts]
