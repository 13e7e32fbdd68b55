"""Search terms for the SQLite store's keyword search: words, lower-cased, diacritics removed,
common English function words dropped, Snowball English stems (PyStemmer, C). PostgreSQL's
`english` text search configuration uses the same stemmer, so both backends match the same
word forms. Documents and questions go through the same function, so they always agree.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from docket.store.protocol import STOPWORDS

_WORD = re.compile(r"\w+")
_CACHE_MAX = 500_000
_cache: dict[str, str] = {}
_stemmer = None


def _stem_words(words: list[str]) -> list[str]:
    global _stemmer
    if _stemmer is None:
        import Stemmer

        _stemmer = Stemmer.Stemmer("english")
    missing = [w for w in dict.fromkeys(words) if w not in _cache]
    if missing:
        if len(_cache) > _CACHE_MAX:
            _cache.clear()
        _cache.update(zip(missing, _stemmer.stemWords(missing)))
    return [_cache[w] for w in words]


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold(text: str) -> str:
    """Lower case, compatibility-decomposed (NFKD), combining marks dropped."""
    text = text.lower()
    if text.isascii():
        return text
    # only the non-ASCII runs can hold a combining mark: a text's ASCII is not walked in Python
    return _NON_ASCII.sub(_unmarked, unicodedata.normalize("NFKD", text))


def _unmarked(run: re.Match[str]) -> str:
    return "".join(ch for ch in run.group() if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """The content words of `text`, folded, in order (stopwords and one-letter words dropped)."""
    return [w for w in _WORD.findall(_fold(text)) if len(w) > 1 and w not in STOPWORDS]


def term_counts(text: str) -> Counter[str]:
    """Stem -> frequency for one document's text."""
    return Counter(_stem_words(words(text)))


def query_terms(question: str, limit: int = 32) -> list[str]:
    """Distinct stems of the question's content words, in order (at most `limit`)."""
    return list(dict.fromkeys(_stem_words(words(question))))[:limit]
