"""docket: context assembly for retrieval-augmented generation.

The public API is what this module exports (`__all__`); everything else is an implementation
detail that may move. Names load on first use, so `import docket` stays fast.

    import docket
    brief = docket.assemble("Can I get a refund after 30 days?", candidates, store=docket.MemoryStore(chunks))
    with docket.Session.open("docket.db") as s:
        res = s.ask("Can I get a refund after 30 days?", principal="ann")
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    "rank_by_cosine": "docket.assemble",
    "Brief": "docket.brief.result",
    "Source": "docket.results",
    "TokenCounts": "docket.results",
    "Conflict": "docket.results",
    "Provenance": "docket.results",
    "TraceEvent": "docket.model",
    "Candidate": "docket.model",
    "Chunk": "docket.model",
    "Passage": "docket.model",
    "parse_chunk": "docket.model",
    "Policy": "docket.policy",
    "load_policy": "docket.policy",
    "ChatMessage": "docket.history",
    "load_history": "docket.history",
    "Session": "docket.api",
    "AskResult": "docket.api",
    "AnswerEvent": "docket.api",
    "open_store": "docket.store.factory",
    "Store": "docket.store.protocol",
    "Filters": "docket.store.protocol",
    "Principal": "docket.store.protocol",
    "MemoryStore": "docket.store.base",
    "ChunkLookup": "docket.store.base",
    "load_chunks": "docket.io",
    "load_candidates": "docket.io",
    "check_answer": "docket.check",
    "CheckReport": "docket.check",
    "LLMJudge": "docket.check",
    "Embedder": "docket.embed",
    "default_embedder": "docket.embed",
    "TokenCounter": "docket.tokens",
    "default_counter": "docket.tokens",
    "generator_from_url": "docket.llm",
    "Answer": "docket.llm",
    "AnswerReport": "docket.llm.answer",
    "IndexReport": "docket.ingest",
    "DocketError": "docket.errors",
    "InputError": "docket.errors",
    "UnavailableError": "docket.errors",
    "Attachment": "docket.modes.attach",
    "render_trace": "docket.trace_html",
}

__all__ = [
    "Answer",
    "AnswerEvent",
    "AnswerReport",
    "AskResult",
    "Attachment",
    "Brief",
    "Candidate",
    "ChatMessage",
    "CheckReport",
    "Chunk",
    "ChunkLookup",
    "Conflict",
    "DocketError",
    "Embedder",
    "Filters",
    "IndexReport",
    "InputError",
    "LLMJudge",
    "MemoryStore",
    "Passage",
    "Policy",
    "Principal",
    "Provenance",
    "Session",
    "Source",
    "Store",
    "TokenCounter",
    "TokenCounts",
    "TraceEvent",
    "UnavailableError",
    "__version__",
    "assemble",
    "check_answer",
    "default_counter",
    "default_embedder",
    "generator_from_url",
    "load_candidates",
    "load_chunks",
    "load_history",
    "load_policy",
    "open_store",
    "parse_chunk",
    "rank_by_cosine",
    "render_trace",
]


# `docket.assemble` is the function, not the submodule of the same name, and it loads lazily like
# every other name (the command line starts without numpy): importing a submodule binds its name
# on the package, so the package's class keeps that one binding from replacing the function
_EXPORTS["assemble"] = "docket.assemble"


class _Package(ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "assemble" and isinstance(value, ModuleType):
            return  # the submodule stays reachable as sys.modules["docket.assemble"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'docket' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from docket.api import AnswerEvent, AskResult, Session
    from docket.assemble import assemble, rank_by_cosine
    from docket.brief.result import Brief
    from docket.check import CheckReport, LLMJudge, check_answer
    from docket.embed import Embedder, default_embedder
    from docket.errors import DocketError, InputError, UnavailableError
    from docket.history import ChatMessage, load_history
    from docket.ingest import IndexReport
    from docket.io import load_candidates, load_chunks
    from docket.llm import Answer, generator_from_url
    from docket.llm.answer import AnswerReport
    from docket.model import Candidate, Chunk, Passage, TraceEvent, parse_chunk
    from docket.modes.attach import Attachment
    from docket.policy import Policy, load_policy
    from docket.results import Conflict, Provenance, Source, TokenCounts
    from docket.store.base import ChunkLookup, MemoryStore
    from docket.store.factory import open_store
    from docket.store.protocol import Filters, Principal, Store
    from docket.tokens import TokenCounter, default_counter
    from docket.trace_html import render_trace
