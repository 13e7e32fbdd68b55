"""Exact token counts of long, mostly repeated text, from cached counts of its pieces.

A brief's documents block is made of passages the counter has seen before (the same chunk is
retrieved again and again), but as one new string per query: counting it whole tokenises every
passage again. For o200k_base the count of a text is the sum of the counts of its segments when
it is cut only at *safe* positions, so the segments' counts can come from the counter's cache.

Why a cut is safe (o200k_base): the tokenizer first splits text into pre-tokens with a regex and
then merges bytes only inside a pre-token. A position p is cut safely when text[p-1] is a newline
and text[p] is neither whitespace nor "/":

- no pre-token contains both characters: the letter and digit alternatives never contain a
  newline; the punctuation alternative ` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*` carries a newline on only
  into more newlines or "/"; the whitespace alternatives stop before a non-space;
- the pre-tokens before p are the same when the text ends at p: no alternative that matches
  there depends on what follows, except `\\s+(?!\\S)`, which is reached only after `\\s*[\\r\\n]+`
  has failed, and that one matches any whitespace run ending in the newline at p-1;
- the pattern has no look-behind, so the pre-tokens from p on are those of text[p:].

Counting is exact either way; tests/test_counting.py checks it with hypothesis against the real
counter on rendered briefs. Any other counter is asked for the whole text.

`count_parts` uses the same argument for a text the caller builds from pieces (the documents
block from its passages, the user message from the documents, notes, question and format): where
a piece ends with a newline and the next starts with neither whitespace nor "/", the join is a
safe cut, so the text's count is the sum of the pieces' counts, each from the counter's cache
when the piece was seen before. A join that is not a safe cut is never assumed to be one: those
pieces are counted together.

The same argument makes a passage's label cheap: in `label="S12"` (or `ID: S12 |`) the digits are
a pre-token of their own (or two, past three digits), and o200k_base has one token for every
string of one to three digits, so a rendered passage's count depends on its label's *length*
only. `label_class` says which key a cached count may be shared under.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from docket.tokens import Cl100kCounter, O200kCounter, TokenCounter, WordCounter

#: cut after a newline that is followed by neither whitespace nor "/"
_SAFE_CUT = re.compile(r"(?<=\n)(?=[^\s/])")
#: shorter texts are counted whole (a segment look-up is not cheaper than tokenising them)
MIN_SEGMENTED = 400


def _safe_start(part: str) -> bool:
    """A piece may be cut from the one before it (when that one ends with "\n") if it starts with
    neither "/" nor whitespace: _SAFE_CUT's class, as str.isspace is exactly the \\s of a str
    pattern (tests/test_counting.py checks every code point)."""
    ch = part[:1]
    return ch != "" and ch != "/" and not ch.isspace()


def segmented(counter: TokenCounter) -> bool:
    """True when cuts at safe positions keep the count exact (the o200k_base counter)."""
    return type(counter) is O200kCounter


def count(counter: TokenCounter, text: str) -> int:
    """`counter.count(text)`, from cached segment counts where that is exact."""
    if len(text) < MIN_SEGMENTED or type(counter) is not O200kCounter or "\n" not in text:
        return counter.count(text)
    c = counter.count
    return sum(c(part) for part in _SAFE_CUT.split(text))


def count_parts(counter: TokenCounter, parts: list[str]) -> int:
    """`counter.count("".join(parts))`, from the counts of the parts where the joins are safe cuts
    (o200k_base; the module docstring says why that is exact); any other counter counts the join."""
    if type(counter) is not O200kCounter:
        return count(counter, "".join(parts))
    c = counter.count
    total = 0
    pending: str | None = None
    for part in parts:
        if pending is None:
            pending = part
        elif pending.endswith("\n") and _safe_start(part):
            total += c(pending)
            pending = part
        else:
            pending += part
    return total + (c(pending) if pending else 0)


#: counters whose count is a function of the text alone (so a count may be memoised)
_PURE: tuple[type, ...] = (O200kCounter, Cl100kCounter, WordCounter)


@lru_cache(maxsize=512)
def _repeated(counter: Any, text: str) -> int:  # Any: lru_cache needs a hashable counter (docket's are)
    return count(counter, text)


def count_repeated(counter: TokenCounter, text: str) -> int:
    """`count(counter, text)` for text that recurs verbatim from query to query (the system
    message, the answer format): memoised by the exact text for docket's own counters."""
    if type(counter) in _PURE:
        return _repeated(counter, text)  # type: ignore[arg-type]  # docket's counters hash by identity
    return count(counter, text)


@lru_cache(maxsize=8)
def _digits_are_single_tokens(counter_type: type) -> bool:
    if counter_type is not O200kCounter:
        return False
    from docket.tokens import default_counter

    c = default_counter()
    if type(c) is not O200kCounter:  # pragma: no cover - default is o200k
        c = O200kCounter()
    return all(c.count(f"{n:0{w}d}") == 1 for w in (1, 2, 3) for n in range(10**w))


def label_class(counter: TokenCounter, label: str) -> str | int:
    """The key under which a passage's rendered count may be cached for `label`: its length when
    every label of that length counts the same (o200k_base, labels "S" + digits), else the label."""
    if type(counter) is O200kCounter and label[:1] == "S" and label[1:].isdigit() and _digits_are_single_tokens(O200kCounter):
        return len(label)
    return label


__all__ = ["MIN_SEGMENTED", "count", "count_parts", "count_repeated", "label_class", "segmented"]
