"""Contextual retrieval at index time (Move 3): a short context per chunk, written by a model.

A chunk cut from its document loses what the document knew: its subject, its section, what
"it" and "the fee" refer to. Anthropic's Contextual Retrieval (2024) asks a model, once per
chunk at indexing, for a sentence or two that situates the chunk in its whole document, and
indexes that context with the chunk. docket embeds and BM25-indexes `context + chunk`, stores
the context in its own column, and leaves the chunk's text alone: the prompt shows what the
document says, never what a model wrote about it.

The request is the spec's prompt: the document first, then the chunk. Consecutive chunks of one
document share everything up to the chunk, so a server with prefix caching evaluates the
document once: llama.cpp reuses the previous request's prefix (llama-cpp-python always,
llama-server with `cache_prompt`, which `--llm local` sends); OpenAI caches identical prefixes of
1,024 tokens or more by itself; for Anthropic the document block carries `cache_control`; other
servers (vLLM with prefix caching on, Ollama) reuse what they can, and the rest re-read the
document for each chunk. A document longer than `max_document_tokens` is cut into consecutive
windows of whole chunks, and each chunk is situated in its window (the same window for its
neighbours, so the prefix is still shared).

Calls go through docket.llm.cache (temperature 0, keyed by the request), and the store records
which model wrote the contexts in each version's content hash, so indexing unchanged documents
again calls the model for nothing.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from docket.errors import InputError
from docket.llm.errors import AuthError, EndpointUnreachable, ModelNotFound, NotConfigured
from docket.model import Chunk
from docket.store.protocol import search_text
from docket.tokens import TokenCounter, default_counter

#: the spec's prompt (Move 3), split where the shared prefix ends
DOCUMENT = "<document>\n{document}\n</document>\n"
CHUNK = ("<chunk>\n{chunk}\n</chunk>\nGive a short, succinct context that situates this chunk within the document, "
         "to improve search retrieval of the chunk. Answer only with the context.")
#: bumped when the prompt or the way the document is built changes: contexts then differ
PROMPT_VERSION = "1"

#: failures that every further call would repeat: stop the run instead of skipping each version
FATAL = (EndpointUnreachable, AuthError, ModelNotFound, NotConfigured)


@dataclass
class ContextStats:
    chunks: int = 0
    generated: int = 0
    cached: int = 0
    seconds: float = 0.0
    prefix_cache: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "generated": self.generated, "from_cache": self.cached,
                "seconds": round(self.seconds, 1), "prefix_cache": self.prefix_cache}


@dataclass
class Contextualizer:
    """Writes one context per chunk of a document version with `generator` (any docket.llm
    generator; wrapped in the on-disk cache unless it already is)."""

    generator: Any
    max_tokens: int = 100
    max_document_tokens: int = 3000
    counter: TokenCounter = field(default_factory=default_counter)
    progress: Callable[[int], None] | None = None
    stats: ContextStats = field(default_factory=ContextStats)

    def __post_init__(self) -> None:
        from docket.llm.cache import CachedGenerator

        if self.max_tokens < 1:
            raise InputError(f"must be at least 1, got {self.max_tokens}", field="context max tokens")
        if self.max_document_tokens < 50:
            raise InputError(f"must be at least 50, got {self.max_document_tokens}", field="max document tokens")
        if not isinstance(self.generator, CachedGenerator):
            self.generator = CachedGenerator(self.generator)
        self.stats.prefix_cache = prefix_cache_note(self.generator)

    @property
    def identity(self) -> str:
        """Who wrote the contexts and how: part of each version's content hash."""
        from docket.llm.cache import model_key

        return f"{model_key(self.generator)}|prompt {PROMPT_VERSION}|{self.max_tokens}|{self.max_document_tokens}"

    def content_hash(self, plain_hash: str) -> str:
        """A version's hash when its chunks carry contexts written this way."""
        return hashlib.sha256(f"{plain_hash}\ncontext: {self.identity}".encode()).hexdigest()

    def contexts(self, chunks: Sequence[Chunk], title: str = "") -> list[str]:
        """One context per chunk (in order), each chunk situated in its document (window)."""
        out: list[str] = []
        for window in self.windows(chunks):
            document = document_text(window, title)
            for c in window:
                out.append(self.one(document, c.text))
        return out

    def one(self, document: str, chunk_text: str) -> str:
        t0 = time.perf_counter()
        hits = self.generator.hits
        reply = self.generator.generate(self.messages(document, chunk_text), max_tokens=self.max_tokens, temperature=0.0)
        self.stats.seconds += time.perf_counter() - t0
        self.stats.chunks += 1
        if self.generator.hits != hits:
            self.stats.cached += 1
        else:
            self.stats.generated += 1
        if self.progress:
            self.progress(1)
        return clean_context(str(reply))

    def messages(self, document: str, chunk_text: str) -> list[dict[str, Any]]:
        """The request: one user message, the document first (the shared, cacheable prefix)."""
        head = DOCUMENT.format(document=document)
        tail = CHUNK.format(chunk=chunk_text)
        from docket.llm.anthropic_gen import AnthropicGenerator

        if isinstance(getattr(self.generator, "inner", self.generator), AnthropicGenerator):
            return [{"role": "user", "content": [{"type": "text", "text": head, "cache_control": {"type": "ephemeral"}},
                                                 {"type": "text", "text": tail}]}]
        return [{"role": "user", "content": head + tail}]

    def windows(self, chunks: Sequence[Chunk]) -> list[list[Chunk]]:
        """Consecutive runs of whole chunks of at most `max_document_tokens` (a longer chunk alone)."""
        out: list[list[Chunk]] = []
        cur: list[Chunk] = []
        used = 0
        for c in chunks:
            n = self.counter.count(c.text)
            if cur and used + n > self.max_document_tokens:
                out.append(cur)
                cur, used = [], 0
            cur.append(c)
            used += n
        if cur:
            out.append(cur)
        return out


def document_text(chunks: Sequence[Chunk], title: str = "") -> str:
    """The document as one text: the title line, then the chunks with the overlap between
    consecutive chunks (the chunker repeats a few sentences) written once."""
    parts: list[str] = []
    for c in chunks:
        text = c.text.strip()
        if parts:
            text = text[_overlap(parts[-1], text):].lstrip()
        if text:
            parts.append(text)
    body = "\n\n".join(parts)
    head = title.strip() or (chunks[0].title.strip() if chunks else "")
    return f"{head}\n\n{body}" if head and not body.startswith(head) else body


def _overlap(a: str, b: str, longest: int = 2000) -> int:
    """Length of the longest suffix of `a` that is a prefix of `b` (at least 20 characters)."""
    for n in range(min(len(a), len(b), longest), 19, -1):
        if a.endswith(b[:n]):
            return n
    return 0


def clean_context(reply: str) -> str:
    """The model's context on one line, without a "Context:" lead-in or surrounding quotes."""
    t = " ".join(reply.split())
    for lead in ("context:", "here is the context:", "the context:"):
        if t.lower().startswith(lead):
            t = t[len(lead):].lstrip()
    return t.strip('"“”').strip()


def prefix_cache_note(generator: Any) -> str:
    """How the shared document prefix is cached with this generator (for the index report)."""
    from docket.llm.anthropic_gen import AnthropicGenerator

    inner = getattr(generator, "inner", generator)
    if isinstance(inner, AnthropicGenerator):
        return "anthropic: cache_control on the document block (documents under the model's minimum are not cached)"
    body = getattr(inner, "extra_body", None) or {}
    if getattr(inner, "structured_dialect", None) == "llama.cpp" or body.get("cache_prompt"):
        return "llama.cpp: the previous request's prefix is reused (cache_prompt sent)"
    base = str(getattr(inner, "base_url", ""))
    if "api.openai.com" in base:
        return "openai: automatic prefix caching (prompts of 1,024 tokens or more)"
    return "the server's own prefix caching, if it has any (vLLM with prefix caching on, Ollama); else none"


__all__ = ["ContextStats", "Contextualizer", "FATAL", "clean_context", "document_text", "prefix_cache_note",
           "search_text"]
