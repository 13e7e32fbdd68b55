"""Chunking is linear in the text and cuts ordinary text byte-for-byte as before.

The old chunker re-counted its whole window after every word: a 200,000-word paragraph without a
sentence end took over 600 s and 9 GB (issue 20 §3). Its outputs on 497 texts (shared data and
derandomized hypothesis text, 7 sizes, 3 counters) are recorded in
tests/fixtures/chunking-recorded.json.gz; the new one must give the same pieces wherever the old
one was right. It differs on purpose in two places only, both checked here: fenced code longer
than a chunk keeps its newlines (issue 24 §7), and a word (or code line) longer than a chunk on
its own is cut between characters instead of becoming one oversized chunk.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docket.ingest.chunking import ChunkSize, _has_fence, _windows, chunk_text, heading
from docket.tokens import WordCounter, counter_named, default_counter

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from record_chunking import FIXTURE, digest  # noqa: E402

COUNTERS = {"o200k_base": counter_named("o200k_base"), "cl100k_base": counter_named("cl100k_base"),
            "words": WordCounter()}


def _recorded() -> dict:
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _compare(every: int) -> tuple[int, list[str]]:
    rec = _recorded()
    texts = rec["texts"]
    compared, bad = 0, []
    for key, want in rec["digests"].items():
        cname, i, s, o = key.split("/")
        if int(i) % every:
            continue
        t, counter, size, overlap = texts[int(i)], COUNTERS[cname], int(s), int(o)
        if _has_fence(t["text"]) or any(counter.count(w) > size - overlap for w in t["text"].split()):
            continue  # the two changes made on purpose (tested below)
        compared += 1
        if digest(chunk_text(t["text"], counter, ChunkSize(size, overlap), title=t["title"])) != want:
            bad.append(key)
    return compared, bad


def test_chunks_are_the_recorded_ones_on_a_sample() -> None:
    compared, bad = _compare(every=7)
    assert compared > 1000
    assert bad == []


@pytest.mark.slow
def test_chunks_are_the_recorded_ones_on_every_text() -> None:
    compared, bad = _compare(every=1)
    assert compared > 8000
    assert bad == []


# --- the window search against its definition ---------------------------------------------------


def _greedy(words: list[str], counter, size: int) -> list[str]:
    """The definition: from where the last window ended, the longest run of words that fits; a
    word too big alone is a window by itself (here; the chunker cuts it further)."""
    out, i = [], 0
    while i < len(words):
        j = i + 1
        while j < len(words) and counter.count(" ".join(words[i : j + 1])) <= size:
            j += 1
        out.append(" ".join(words[i:j]))
        i = j
    return out


_word = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1,
                max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(_word, max_size=120), size=st.integers(16, 64), counter=st.sampled_from(sorted(COUNTERS)))
def test_windows_are_the_longest_runs_that_fit(words: list[str], size: int, counter: str) -> None:
    c = COUNTERS[counter]
    assert _windows(words, " ", c, size, lambda w: [w]) == _greedy(words, c, size)


class _Lumpy:
    """A counter whose counts do not add up over words (so the fast sum is wrong both ways)."""

    name = "lumpy"

    def count(self, text: str) -> int:
        n = len(text.split())
        return n + (n // 3 if len(text) % 2 else -(n // 4))


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.sampled_from(["a", "bb", "ccc", "dddd"]), max_size=200), size=st.integers(16, 40))
def test_windows_settle_with_real_counts_when_the_sum_is_wrong(words: list[str], size: int) -> None:
    c = _Lumpy()
    got = _windows(words, " ", c, size, lambda w: [w])
    assert " ".join(got).split() == words
    assert all(c.count(w) <= size or len(w.split()) == 1 for w in got)  # every window fits


# --- linear time -----------------------------------------------------------------------------------


def _paragraph(n: int) -> str:
    vocab = ["refund", "policy", "annual", "plan", "12", "x-ray", "Zürich", "naïve", "within", "days"]
    return " ".join(vocab[(i * 7 + i // 10) % len(vocab)] for i in range(n))


def test_a_long_paragraph_without_a_sentence_end_is_chunked_in_linear_time() -> None:
    c, size = default_counter(), ChunkSize(300, 40)
    timings = []
    for n in (25_000, 100_000):
        text = _paragraph(n)
        t = time.perf_counter()
        pieces = chunk_text(text, c, size)
        timings.append(time.perf_counter() - t)
        assert all(c.count(p.text) <= size.size + 2 for p in pieces)  # + the breaks between units
        words = text.split()
        assert pieces[0].text.split() == words[: len(pieces[0].text.split())]
        assert pieces[-1].text.split() == words[-len(pieces[-1].text.split()) :]
    assert timings[1] < 8 * max(timings[0], 0.05), timings  # 4x the text: 4x the time, never 16x


def test_the_issue_paragraph_is_chunked_whole_size_in_seconds() -> None:
    # 200,000 words, no sentence end, at the size attachments go in whole: > 600 s and 9.1 GB before
    c, size = default_counter(), ChunkSize(100_000, 0)
    text = _paragraph(200_000)
    t = time.perf_counter()
    pieces = chunk_text(text, c, size)
    assert time.perf_counter() - t < 20
    assert len(pieces) >= 2 and all(c.count(p.text) <= size.size for p in pieces)
    assert " ".join(p.text for p in pieces) == text  # no overlap: the windows partition the words


def test_a_heading_line_of_many_spaces_is_read_at_once() -> None:
    # the regex it replaces backtracked cubically: 2,000 spaces took 32 s
    t = time.perf_counter()
    pieces = chunk_text("# a" + " " * 200_000 + "x\n\ntext", WordCounter(), ChunkSize(16, 0))
    assert time.perf_counter() - t < 2
    assert pieces[0].section.startswith("a") and pieces[0].section.endswith("x")


_HEADING_RX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(["#", " ", "\t", "a", "\u00a0", "\u3000", "b", "\x85"]), max_size=14))
def test_heading_reads_as_the_markdown_pattern(line: str) -> None:
    m = _HEADING_RX.match(line)
    assert heading(line) == ((len(m.group(1)), m.group(2).strip()) if m else None)


# --- the changes made on purpose ---------------------------------------------------------------------


def test_fenced_code_longer_than_a_chunk_keeps_its_lines() -> None:
    code = "\n".join(f"    if x{i} > {i}:\n        total += x{i}  # step {i}" for i in range(80))
    doc = f"# Guide\n\nIntro text.\n\n```python\n{code}\n```\n\nAfter the code."
    c = default_counter()
    pieces = chunk_text(doc, c, ChunkSize(120, 20), title="Guide")
    assert len(pieces) > 3
    lines = set(code.split("\n"))
    for p in pieces:
        assert c.count(p.text) <= 122
        for line in p.text.split("\n"):
            assert line in lines or line.startswith("```") or line in ("Intro text.", "After the code.", ""), line
    # every line of the block reaches a chunk as it was, indentation included
    assert lines <= {line for p in pieces for line in p.text.split("\n")}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.sampled_from(" \tab{}();=x1"), max_size=40), min_size=1, max_size=80),
       st.integers(16, 60))
def test_code_lines_survive_any_cut(lines: list[str], size: int) -> None:
    doc = "```\n" + "\n".join(lines) + "\n```"
    c = WordCounter()
    pieces = chunk_text(doc, c, ChunkSize(size, size // 4))
    seen = [line for p in pieces for line in p.text.split("\n")]
    for line in lines:
        if line.strip() and c.count(line) <= size - size // 4:
            assert line.strip() in {s.strip() for s in seen}


def test_a_word_longer_than_a_chunk_is_cut_between_characters() -> None:
    c = default_counter()
    blob = "QUJD" * 5000  # 20,000 characters of base64, no space
    pieces = chunk_text(f"before {blob} after", c, ChunkSize(100, 10))
    assert all(c.count(p.text) <= 102 for p in pieces)
    assert blob in "".join(p.text.replace(" ", "").replace("\n", "") for p in pieces)


def test_a_sentence_of_chinese_longer_than_a_chunk_is_bounded() -> None:
    c = default_counter()
    text = "".join(chr(0x4E00 + (i * 31) % 5000) for i in range(6000))
    pieces = chunk_text(text, c, ChunkSize(300, 40))
    assert len(pieces) > 10 and all(c.count(p.text) <= 302 for p in pieces)
