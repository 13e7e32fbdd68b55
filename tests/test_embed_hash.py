"""The hash embedder's vectors are byte-identical to the word-by-word loop it replaced: stores built
with it hold those vectors, and a question embedded now must meet them exactly."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.embed import HashEmbedder
from docket.safeio import scrub


def reference(texts: Sequence[str], dim: int) -> np.ndarray:
    """docket.embed.HashEmbedder.embed as it was before the memo (main 3deb547)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", scrub(text).lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[row, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


WORDS = st.sampled_from(["the", "The", "river", "Straße", "ǅemal", "日本", "x1", "_", "a\ud800b", "İstanbul", "", " "])
TEXTS = st.lists(st.one_of(st.text(max_size=40), st.lists(WORDS, max_size=60).map(" ".join)), max_size=8)


@settings(max_examples=200, deadline=None)
@given(texts=TEXTS, dim=st.sampled_from([1, 7, 256, 384]))
def test_vectors_are_byte_identical_to_the_loop(texts: list[str], dim: int) -> None:
    emb = HashEmbedder(dim)
    got = emb.embed(texts)
    want = reference(texts, dim)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert emb.embed(texts).tobytes() == want.tobytes()  # from the memo the second time


def test_identical_on_the_recorded_decision_pools() -> None:
    """Every string of the recorded hash-embedder briefs (tests/fixtures: messages, passages,
    trace reasons), in batches of 64."""
    import gzip
    import json
    from pathlib import Path

    raw = json.loads(gzip.decompress((Path(__file__).parent / "fixtures" / "decisions-hash.json.gz").read_bytes()))
    texts: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            texts.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(raw)
    texts = list(dict.fromkeys(texts))
    assert len(texts) > 1000
    emb = HashEmbedder(256)
    for i in range(0, len(texts), 64):
        batch = texts[i:i + 64]
        assert emb.embed(batch).tobytes() == reference(batch, 256).tobytes()


def test_a_word_repeated_past_float32_steps_still_sums_exactly() -> None:
    text = "river " * 5000 + "band " * 3
    assert HashEmbedder(16).embed([text]).tobytes() == reference([text], 16).tobytes()


def test_the_memo_is_bounded() -> None:
    emb = HashEmbedder(32)
    emb.MEMO_WORDS = 50
    texts = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(10)]
    assert emb.embed(texts).tobytes() == reference(texts, 32).tobytes()
    assert len(emb._memo) <= 50
    assert emb.embed(texts).tobytes() == reference(texts, 32).tobytes()


RUNS = st.lists(st.sampled_from(["word", "ǅemal", "日本", "x1", "_", "–", "\u00a0", "\u3000", "\u2028", "\x1f", "é", "'",
                                 "\u0307", "٣", "-", " ", "\n", "ß"]), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=60), RUNS))
def test_words_are_the_patterns_words(text: str) -> None:
    """The embedder's C-speed word split reads the words `\\w+` finds, as a multiset (the sums do
    not depend on their order): runs outside ASCII, dashes and spaces outside ASCII included."""
    from docket.embed import _words_of

    lowered = scrub(text).lower()
    find = re.compile(r"\w+").findall
    assert sorted(_words_of(lowered, find)) == sorted(find(lowered))
