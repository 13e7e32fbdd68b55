"""A chunk's re-scoring index built straight from its text (first sight) holds what the one built
from its RescoreTerms (a feature record) holds: the same head, and the same (id, code) pairs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.features import ChunkFeatures, Vocabulary, content_key

from helpers import mk

VOCAB = ["the", "of", "one", "first", "Kiss", "Tell", "(1945", "film)", "film", "Kenji's", "Akinoshū", "a", "band's",
         "''", "and", "Tell's", "x", "2001", "is", "Name", "named", "(", ")"]
phrases = st.lists(st.sampled_from(VOCAB), max_size=12).map(" ".join)


def _pairs(index_body: bytes) -> list[tuple[int, int]]:
    return sorted(map(tuple, np.frombuffer(index_body, dtype=np.int32).reshape(-1, 2).tolist()))


@settings(max_examples=300, deadline=None)
@given(title=phrases, text=phrases, untrusted=st.booleans())
def test_index_from_text_is_the_index_from_terms(title: str, text: str, untrusted: bool) -> None:
    c = mk("c", text=text or "x", title=title, trust="untrusted" if untrusted else None)
    vocab = Vocabulary()
    direct = ChunkFeatures(c, content_key(c)).rescore_index(c, vocab)
    loaded = ChunkFeatures(c, content_key(c))
    loaded.rescore_terms(c)  # what a feature record gives
    via_terms = loaded.rescore_index(c, vocab)
    assert direct.head == via_terms.head
    assert _pairs(direct.body) == _pairs(via_terms.body)
    assert (direct.title_phrases, direct.title_words) == (via_terms.title_phrases, via_terms.title_words)


def _title_terms_reference(title: str) -> tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]:
    from docket.text import content_words, phrase, title_variants

    variants = title_variants(title)
    phrases = tuple(phrase(v) for v in variants)
    probes = tuple(max(p.split(), key=len) for p in phrases)
    tw = frozenset(content_words(variants[-1] if variants else title)) if title.strip() else frozenset()
    return phrases, tw, probes


@settings(max_examples=300, deadline=None)
@given(title=st.one_of(phrases, st.text(max_size=30)))
def test_title_terms_read_each_variant_once_and_find_the_same(title: str) -> None:
    from docket.features import title_terms

    assert title_terms.__wrapped__(title) == _title_terms_reference(title)
