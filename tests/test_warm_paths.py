"""The warm assembly's shortcuts decide what the long way decides (issue 21): each is checked
here against the code it replaced, on generated inputs."""

from __future__ import annotations

import unicodedata
from datetime import date as Date
from types import SimpleNamespace
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from docket import answerable, dates
from docket.errors import InputError
from docket.features import ChunkFeatures, content_key
from docket.model import Passage, Trace
from docket.moves import expand

from helpers import mk

TODAY = Date(2026, 3, 1)

#: words that make the date patterns fire (years, months, cues, relative words) and words that do not
_WORDS = ["in", "on", "before", "after", "since", "until", "the", "update", "2024", "1995", "2199", "1799", "3000",
          "March", "1st", "q3", "third", "quarter", "of", "last", "year", "years", "ago", "two", "letztes", "Jahr",
          "l'année", "dernière", "el", "año", "pasado", "l'anno", "scorso", "vorig", "jaar", "2025-03-01",
          "01.03.2025", "2025年3月1日", "2024's", "and", "vs", "files", "%", "what", "was", "refund", "window",
          "Straße", "İstanbul", "١٩٩٥", "２０２４", "’s", "-"]


def _fold_reference(text: str) -> str:
    """docket.dates.fold before its ASCII shortcut."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


questions = st.one_of(
    st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join),
    st.text(max_size=60),
    st.text(alphabet="0123456789 -/.年月日yearnojhJa", max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(questions)
def test_fold_takes_the_ascii_shortcut_to_the_same_text(text: str) -> None:
    assert dates.fold(text) == _fold_reference(text)


@settings(max_examples=400, deadline=None)
@given(questions)
def test_find_dates_skips_only_questions_no_pattern_matches(question: str) -> None:
    assert dates.find_dates(question, TODAY) == dates._dates_in(_fold_reference(question), TODAY)


def test_the_shortcut_still_finds_dates() -> None:
    assert [r.text for r in dates.find_dates("What was the refund window in 2024?", TODAY)] == ["in 2024"]
    assert dates.find_dates("What is the refund window?", TODAY) == []
    assert dates.find_dates("What changed two years ago?", TODAY)


# --- expand (Move 3): the passes skipped when no chunk repeats -----------------------------------

def _absorb_reference(merged: list[Passage], remaining: list[Passage], ctx: Any) -> list[Passage]:
    """expand._absorb before its shortcut."""
    out = list(merged)
    holding: dict[str, list[int]] = {}
    for pos, m in enumerate(out):
        for cid in m.ids:
            holding.setdefault(cid, []).append(pos)
    ids = [p.ids[0] for p in remaining if len(p.chunks) == 1]
    register = len(ids) != len(remaining) or len(set(ids)) != len(ids)
    for p in remaining:
        at = None
        for pos in holding.get(p.first.id, ()):
            if out[pos].doc == p.doc and out[pos].version == p.version:
                at = pos
                break
        if at is not None:
            holder = out[at]
            out[at] = holder.with_(hits=holder.hits + p.hits, score=max(holder.score, p.score),
                                   also_in=holder.also_in + p.also_in)
            ctx.trace.add(expand.MOVE, "absorb", [p.first.id], f"{p.first.id} (rank {p.rank}) is already inside the "
                          f"passage grown from {holder.hits[0]}")
            continue
        if register:
            n = len(out)
            for cid in p.ids:
                holding.setdefault(cid, []).append(n)
        out.append(p)
    return out


def _drop_repeats_reference(out: list[Passage], ctx: Any) -> list[Passage]:
    """expand._drop_repeats before its shortcut."""
    seen: set[str] = set()
    final: list[Passage] = []
    for p in sorted(out, key=lambda x: (x.rank, x.ids)):
        if not seen.isdisjoint(p.ids):
            rest = tuple(c for c in p.chunks if c.id not in seen)
            shared = [i for i in p.ids if i in seen]
            if not rest:
                ctx.trace.add(expand.MOVE, "absorb", list(p.ids), "every chunk of this passage is already in a "
                              "better-ranked one")
                continue
            ctx.trace.add(expand.MOVE, "trim", shared, f"already in a better-ranked passage; kept "
                          f"{', '.join(c.id for c in rest)}")
            p = p.with_(chunks=rest)
        seen.update(p.ids)
        final.append(p)
    return final


def _dropped_copies_reference(passages: list[Passage]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in passages:
        for extra in p.also_in:
            for cid in extra.get("chunks", []):
                if cid not in p.ids:
                    out.setdefault(cid, p.first.id)
    return out


_CHUNKS = [mk(f"c{i}", f"text {i}", doc=f"d{i % 3}", version=1 + i % 2) for i in range(8)]


@st.composite
def _passages(draw: Any, size: int) -> list[Passage]:
    out = []
    for rank in draw(st.lists(st.integers(1, 30), min_size=0, max_size=size)):
        ks = draw(st.lists(st.integers(0, len(_CHUNKS) - 1), min_size=1, max_size=3))
        chunks = tuple(_CHUNKS[k] for k in ks)
        also = draw(st.sampled_from([(), ({"chunks": ["c1", "c5"]},), ({"chunks": ["c7"]},)]))
        out.append(Passage(chunks=chunks, score=draw(st.floats(0, 1)), rank=rank, hits=(chunks[0].id,), also_in=also))
    return out


def _events(trace: Trace) -> list[Any]:
    return trace.to_json()


@settings(max_examples=300, deadline=None)
@given(_passages(4), _passages(8))
def test_absorb_and_drop_repeats_match_the_loops(merged: list[Passage], remaining: list[Passage]) -> None:
    got, ref = SimpleNamespace(trace=Trace()), SimpleNamespace(trace=Trace())
    a, b = expand._absorb(merged, remaining, got), _absorb_reference(merged, remaining, ref)  # type: ignore[arg-type]
    assert a == b and _events(got.trace) == _events(ref.trace)
    a, b = expand._drop_repeats(a, got), _drop_repeats_reference(b, ref)  # type: ignore[arg-type]
    assert a == b and _events(got.trace) == _events(ref.trace)
    assert expand.dropped_copies(merged + remaining) == _dropped_copies_reference(merged + remaining)


# --- the not-found floor's exact-term test: every candidate's text searched side by side --------

_TERM_WORDS = ["ABC-12", "abc-12", "x9", "X9", "Kelvin", "\u212aelvin", "\u0130stanbul", "istanbul", "ſtar", "star",
               "a b", "\x00", "\n", "-", "é", "ΣΑΣ", "q", ""]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TERM_WORDS[:-1]) | st.text(min_size=1, max_size=4), max_size=3),
       st.lists(st.tuples(st.one_of(st.none(), st.lists(st.sampled_from(_TERM_WORDS), max_size=3).map(" ".join)),
                          st.lists(st.sampled_from(_TERM_WORDS) | st.text(max_size=5), max_size=8).map(" ".join)),
                max_size=6))
def test_chunks_holding_matches_the_search_of_each_text(terms: list[str], rows: list[tuple[str | None, str]]) -> None:
    try:
        chunks = [mk(f"c{k}", x or "-", title=t or "") for k, (t, x) in enumerate(rows)]
    except InputError:
        assume(False)  # not a chunk docket accepts
    texts = [f"{c.title or ''}\n{c.text}" for c in chunks]
    feats = [ChunkFeatures(c, content_key(c)) for c in chunks]
    assert answerable._chunks_holding(terms, chunks, feats) == answerable._holding(terms, texts)
    assert answerable._chunks_holding(terms, chunks, feats) == answerable._holding(terms, texts)  # the kept folds
