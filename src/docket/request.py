"""One request, frozen: what is asked, by whom, with what, and the per-request options.

`Session.ask` and `docket.assemble` build one and hand it down: the mode plan reads it
(docket.modes.plan), the retrieval reads its filters and options, the assembler reads its
options. Nothing below changes it, so every stage sees the request the caller made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any

from docket.history import ChatMessage, parse_history
from docket.store.access import Principal
from docket.store.protocol import Filters


@dataclass(frozen=True)
class Options:
    """The per-request knobs: `budget`, `floor` and `as_of` override the policy; `whole_corpus`
    True/False overrides `corpus.mode`; `k` and `search` shape the retrieval (Session.ask)."""

    budget: int | None = None
    floor: float | None = None
    as_of: Date | None = None
    whole_corpus: bool | None = None
    #: how many candidates the retrieval hands the assembler
    k: int = 50
    #: the retrieval method: fused, dense or bm25 (docket.retrieve.MODES)
    search: str = "fused"


@dataclass(frozen=True)
class Request:
    """A question and everything that shapes its brief. `history`: earlier turns, oldest first
    (None: not a conversation); `attachments`: files the user handed over
    (paths, `(name, bytes)` pairs or `Attachment`s); `filters` narrow a retrieval."""

    question: str
    principal: Principal | None = None
    filters: Filters | None = None
    history: tuple[ChatMessage, ...] | None = None
    attachments: tuple[Any, ...] | None = None
    options: Options = field(default_factory=Options)

    @classmethod
    def of(cls, question: str, *, principal: Principal | None = None, filters: Filters | None = None,
           history: Sequence[ChatMessage | Mapping[str, Any]] | None = None, attachments: Sequence[Any] | None = None,
           **options: Any) -> Request:
        """A request from the arguments the public functions take: the history validated
        (docket.history.parse_history: a bad turn names its index and field), lists as tuples."""
        return cls(question, principal=principal, filters=filters,
                   history=None if history is None else tuple(parse_history(history)),
                   attachments=None if attachments is None else tuple(attachments), options=Options(**options))


__all__ = ["Options", "Request"]
