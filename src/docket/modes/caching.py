"""Prompt caching: where the stable prefix ends, what it saves, and the whole-corpus arithmetic.

Providers cache a prompt's prefix, not its parts: OpenAI automatically, for prompts from 1,024
tokens, as long as the prefix is byte-identical; Anthropic where the request carries a
`cache_control` breakpoint (everything up to and including that block). docket's brief keeps its
stable text first (the system message; in whole-corpus mode also the corpus block, which does not
depend on the question), so both work. This module adds the Anthropic breakpoints and reports the
cacheable tokens and the expected cost of one query with and without the cache.

Cost model (input tokens only; output is the same either way): uncached = tokens x price;
warm cache = cacheable x read + the rest x price; first call = cacheable x write + the rest.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from docket.policy import CachePolicy

EPHEMERAL = {"type": "ephemeral"}


def add_breakpoints(request: dict[str, Any], *, corpus: bool) -> dict[str, Any]:
    """A copy of an Anthropic request with `cache_control` after the system prompt and, when
    `corpus`, after the last document block (the end of the corpus). At most 2 of the API's 4.
    Only the containers on the path to a changed block are copied (a deep copy of every
    document block was ~5% of an assembly); `request` itself is left as it was."""
    if not request:
        return request
    out = dict(request)
    system = out.get("system")
    if isinstance(system, str) and system:
        out["system"] = [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}]
    elif isinstance(system, list) and system and isinstance(system[-1], dict):
        out["system"] = [*system[:-1], {**system[-1], "cache_control": dict(EPHEMERAL)}]
    if corpus:
        messages = list(out.get("messages", []))
        for m, msg in enumerate(messages):
            content = msg.get("content") if isinstance(msg, dict) else None
            if not isinstance(content, list):
                continue
            docs = [k for k, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "document"]
            if docs:
                content = list(content)
                content[docs[-1]] = {**content[docs[-1]], "cache_control": dict(EPHEMERAL)}
                messages[m] = {**msg, "content": content}
                out["messages"] = messages
                break
    return out


def prefix_key(*parts: str) -> str:
    """A short hash of the exact prefix text: two briefs share a provider cache entry only when
    these are equal (a different readable set gives a different corpus block, hence key)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def per_query(total: int, cacheable: int, pol: CachePolicy) -> dict[str, float]:
    """USD for one query's input tokens: uncached, with a warm cache, and on the call that writes it."""
    rest = total - cacheable
    usd = pol.price / 1e6
    return {
        "uncached": round(total * usd, 8),
        "cached": round((cacheable * pol.read + rest) * usd, 8),
        "first_call": round((cacheable * pol.write + rest) * usd, 8),
    }


def report(*, prefix: str, prefix_tokens: int, total_tokens: int, key: str, pol: CachePolicy) -> dict[str, Any]:
    """The brief's `cache` entry."""
    cacheable = prefix_tokens if prefix_tokens >= pol.min_tokens else 0
    out: dict[str, Any] = {
        "prefix": prefix,
        "prefix_tokens": prefix_tokens,
        "cacheable_tokens": cacheable,
        "min_tokens": pol.min_tokens,
        "prefix_key": key,
        "price_per_m": pol.price,
        "read": pol.read,
        "write": pol.write,
        "usd_per_query": per_query(total_tokens, cacheable, pol),
    }
    if not cacheable:
        out["note"] = (f"the stable prefix ({prefix_tokens} tokens) is shorter than the {pol.min_tokens} tokens "
                       "providers start caching at: nothing is cached")
    return out


# --- the spec's arithmetic: whole corpus in every prompt against retrieval -------------------

def miss_rate(per_day: float, ttl_minutes: float) -> float:
    """Share of queries that find the cache expired, for arrivals spread evenly at random over
    the day (Poisson): the gap since the previous query is longer than the cache's lifetime."""
    if per_day <= 0:
        return 1.0
    return math.exp(-(per_day / 1440.0) * ttl_minutes)


def break_even_per_day(read: float, write: float, ttl_minutes: float) -> float | None:
    """Queries a day above which caching the prefix costs less than not caching it (None: never
    pays; 0.0: always pays). Expected multiplier = read + (write - read) x miss rate; it equals 1
    at miss rate (1 - read) / (write - read)."""
    if read >= 1.0:
        return None
    if write <= 1.0:
        return 0.0
    p = (1.0 - read) / (write - read)
    return -math.log(p) / ttl_minutes * 1440.0


def whole_vs_retrieval(*, corpus_tokens: int, rag_tokens: int, price: float, read: float, write: float,
                       per_day: int, ttl_minutes: float = 5.0) -> dict[str, Any]:
    """Per 1,000 queries and per day: the whole corpus uncached, with a warm cache, with the cache
    writes that this traffic causes, and retrieval with a `rag_tokens` prompt; the break-evens."""

    def per_1000(tokens: float, multiplier: float = 1.0) -> float:
        return 1_000 * tokens * multiplier * price / 1e6

    miss = miss_rate(per_day, ttl_minutes)
    amortised = read + (write - read) * miss
    rows = {
        "whole_uncached": per_1000(corpus_tokens),
        "whole_cached": per_1000(corpus_tokens, read),
        "whole_cached_with_writes": per_1000(corpus_tokens, amortised),
        "retrieval": per_1000(rag_tokens),
    }
    return {
        "per_1000": rows,
        "per_day": {k: v * per_day / 1_000 for k, v in rows.items()},
        "cached_over_retrieval": rows["whole_cached"] / rows["retrieval"] if rows["retrieval"] else None,
        "miss_rate": miss,
        "break_even_queries_per_day": break_even_per_day(read, write, ttl_minutes),
        "break_even_corpus_tokens": rag_tokens / read if read > 0 else None,
        "inputs": {"corpus_tokens": corpus_tokens, "rag_tokens": rag_tokens, "price": price, "read": read,
                   "write": write, "per_day": per_day, "ttl_minutes": ttl_minutes},
    }
