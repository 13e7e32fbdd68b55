"""docket.counting: counts from cached segments equal the real o200k_base count, on any text and on
rendered briefs; a rendered passage's count depends only on its label's length."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket import counting
from docket.brief.render import documents_block, label_for, render_passage
from docket.brief.sizer import RenderSizer
from docket.context import Context
from docket.model import Passage, parse_chunk
from docket.moves.pack import passage_cost
from docket.policy import Policy
from docket.store.base import MemoryStore
from docket.tokens import WordCounter, default_counter

COUNTER = default_counter()
# the characters where pre-token boundaries are decided: newlines, "/", punctuation, spaces,
# letters of several scripts, digits, marks
ALPHABET = st.sampled_from(list("\n\n\n\r/ \t.,;:!?'\"<>&|=-_()[]{}*#aAbBzZ019éßЖж中文ʼ\u0301\u00a0\u2028"))
TEXT = st.text(ALPHABET, max_size=300) | st.text(max_size=120)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=12))
def test_segmented_count_is_exact_on_any_text(parts: list[str]) -> None:
    text = "\n".join(parts) * 3  # long enough to be segmented
    assert counting.count(COUNTER, text) == len(COUNTER._enc.encode(text, disallowed_special=()))


def _chunk(i: int, text: str, title: str, section: str, status: str, version: int) -> object:
    rec = {"id": f"c{i}", "doc": f"d{i % 3}", "text": text if text.strip() else "x", "title": title, "section": section,
           "status": status, "version": version}
    return parse_chunk(rec)


PASSAGE = st.tuples(TEXT, st.text(ALPHABET, max_size=30), st.text(max_size=20),
                    st.sampled_from(["current", "superseded", "user-generated"]), st.integers(1, 3))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(PASSAGE, min_size=1, max_size=8), st.sampled_from(["xml", "lines"]),
       st.sampled_from(["off", "datamark"]), st.text(max_size=60))
def test_documents_block_and_user_message_counts_are_exact(specs: list, fmt: str, spotlight: str, question: str) -> None:
    pol = Policy().updated(render={"format": fmt, "spotlight": spotlight})
    chunks = [_chunk(i, *s) for i, s in enumerate(specs)]
    blocks = [render_passage(Passage((c,), 1.0, n, (c.id,)), label_for(n), pol.render).block  # type: ignore[arg-type]
              for n, c in enumerate(chunks, 1)]
    documents = documents_block(blocks, fmt)
    ctx = Context(question=question or "q", store=MemoryStore(chunks), policy=pol, counter=COUNTER)  # type: ignore[arg-type]
    exact = len(COUNTER._enc.encode(documents, disallowed_special=()))
    assert ctx.tokens(documents) == exact
    user = documents + "\n\nQuestion: " + question + "\n\nAnswer in a short paragraph."
    assert ctx.tokens(user) == len(COUNTER._enc.encode(user, disallowed_special=()))


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(PASSAGE, st.sampled_from(["xml", "lines"]), st.integers(1, 99999), st.integers(1, 99999))
def test_rendered_count_depends_only_on_the_label_length(spec: tuple, fmt: str, a: int, b: int) -> None:
    pol = Policy().updated(render={"format": fmt})
    c = _chunk(0, *spec)
    p = Passage((c,), 1.0, 1, (c.id,))  # type: ignore[arg-type]
    la, lb = label_for(a), label_for(b)
    ca = COUNTER.count(render_passage(p, la, pol.render).block)
    cb = COUNTER.count(render_passage(p, lb, pol.render).block)
    assert (ca == cb) or (len(la) != len(lb))
    assert counting.label_class(COUNTER, la) == len(la)
    # the cached cost of a whole-chunk passage equals the exact one, whichever label came first
    ctx = Context(question="q", store=MemoryStore([c]), policy=pol, counter=COUNTER,  # type: ignore[arg-type, list-item]
                  sizer_factory=RenderSizer)
    exact_b = COUNTER.count(render_passage(p, lb, pol.render).block) + COUNTER.count("\n\n")
    ctx.sizer.cost(p, la)
    if len(la) == len(lb):
        assert passage_cost(p, ctx, lb) == exact_b


def test_other_counters_are_asked_for_the_whole_text() -> None:
    w = WordCounter()
    text = "one two\nthree four\n" * 50
    assert counting.count(w, text) == w.count(text) == 200
    assert counting.label_class(w, "S12") == "S12"
    assert not counting.segmented(w) and counting.segmented(COUNTER)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(TEXT | st.sampled_from(["", "\n", "\n\n", "/", " x", "x\n", "\u00a0", "\r\n"]), max_size=12))
def test_count_of_parts_is_the_count_of_their_join(parts: list[str]) -> None:
    joined = "".join(parts)
    want = len(COUNTER._enc.encode(joined, disallowed_special=()))
    assert counting.count_parts(COUNTER, parts) == want
    assert counting.count_parts(COUNTER, [p + "\n" for p in parts]) == len(COUNTER._enc.encode(
        "".join(p + "\n" for p in parts), disallowed_special=()))
    assert counting.count_parts(WordCounter(), parts) == len(joined.split())


def test_count_of_parts_never_cuts_where_the_tokenizer_would_merge() -> None:
    # "x\n" then " y": the newline and the space belong to one pre-token; "a\n" then "/b": "\n/" is one
    for parts in (["x\n", " y"], ["a.\n", "/b"], ["a\n", "\n\nb"], ["</documents>", "\n\nNote"], ["a\n", "", " b"]):
        joined = "".join(parts)
        assert counting.count_parts(COUNTER, parts) == len(COUNTER._enc.encode(joined, disallowed_special=()))


def test_repeated_counts_are_memoised_only_for_pure_counters() -> None:
    calls = []

    class Counting:
        name = "mine"

        def count(self, text: str) -> int:
            calls.append(text)
            return len(text)

    mine = Counting()
    assert counting.count_repeated(mine, "abc") == counting.count_repeated(mine, "abc") == 3
    assert len(calls) == 2  # a caller's counter is asked every time
    text = "Ground rules:\n" + "1. Answer only from the documents.\n" * 20
    assert counting.count_repeated(COUNTER, text) == len(COUNTER._enc.encode(text, disallowed_special=()))


def test_safe_start_is_the_class_of_the_safe_cut() -> None:
    import re

    klass = re.compile(r"[^\s/]")
    for cp in range(0x110000):
        ch = chr(cp)
        assert counting._safe_start(ch) == bool(klass.match(ch)), hex(cp)
    assert not counting._safe_start("")
