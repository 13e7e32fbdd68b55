"""The one protocol every generator implements (OpenAI-compatible, Anthropic, local llama.cpp)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Generator(Protocol):
    """Anything that turns chat messages into an answer. `name` says which model, for reports.

    `name` is read-only in the protocol so that a plain attribute and a property both satisfy it.
    """

    @property
    def name(self) -> str: ...

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        """The model's answer to OpenAI-style chat messages."""
        ...


@runtime_checkable
class StreamingGenerator(Generator, Protocol):
    """A generator that can also yield the answer piece by piece (for a live terminal)."""

    def stream(
        self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        """The answer's text deltas, in order; joined they equal what `generate` returns."""
        ...


@dataclass
class Citation:
    """One citation in an answer, resolved to docket's label.

    For OpenAI-style answers it comes from an `[S1]` marker in the text; for Anthropic's native
    citations it also carries the cited span (`cited_text`, character range in the document).
    """

    label: str
    cited_text: str | None = None
    start: int | None = None
    end: int | None = None
    document_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label}
        for k in ("cited_text", "start", "end", "document_index"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@dataclass
class Answer:
    """A model's answer in docket's terms: text with [S#] labels, plus the citations behind them."""

    text: str
    model: str = ""
    citations: list[Citation] = field(default_factory=list)
    seconds: float = 0.0
    #: tokens as reported by the endpoint (prompt, completion), when it reports them
    usage: dict[str, int] = field(default_factory=dict)
    #: how the citations were asked for: "text" ([S1] markers in prose), "native_citations"
    #: (Anthropic's cited spans) or "structured" (a JSON answer whose sentences list their labels)
    mode: str = "text"
    #: why the endpoint stopped ("stop", "length" = cut off at max_tokens, ...), when it says
    finish_reason: str | None = None
    #: the structured reply as parsed (`mode == "structured"`): the `Reply` JSON, or {"error", "raw"}
    structured: dict[str, Any] | None = None
    #: one line on how the structured output was requested (schema via response_format, a
    #: forced tool, or only asked for in the prompt), or why native citations were not used
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "model": self.model,
            "citations": [c.to_json() for c in self.citations],
            "seconds": round(self.seconds, 3),
            "usage": self.usage,
            "mode": self.mode,
        }
        for k in ("finish_reason", "structured", "note"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@runtime_checkable
class BriefGenerator(Protocol):
    """A generator that takes the whole brief instead of chat messages.

    Anthropic's native citations need the documents as separate content blocks (`Brief.anthropic()`),
    and return cited spans rather than [S1] markers; such a generator maps them back to labels.
    """

    @property
    def name(self) -> str: ...

    def answer_brief(self, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Answer: ...


@runtime_checkable
class StructuredGenerator(Protocol):
    """A generator that can hold the model to a JSON Schema (OpenAI `response_format`, a llama.cpp
    grammar, an Anthropic forced tool). `Answer.text` is the raw JSON; `Answer.note` says how."""

    @property
    def name(self) -> str: ...

    def complete_structured(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Answer: ...


# -- capabilities, checked with isinstance (a generator offers any subset) -----------------------

@runtime_checkable
class AnswersBriefs(Protocol):
    """Takes the whole brief (BriefGenerator's method alone, so a stub without `name` counts)."""

    def answer_brief(self, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Answer: ...


@runtime_checkable
class Completes(Protocol):
    """Answers chat messages with an `Answer` (finish reason, usage) instead of bare text."""

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> Answer: ...


@runtime_checkable
class EnforcesSchema(Protocol):
    """Holds the model to a JSON Schema (StructuredGenerator's method alone)."""

    def complete_structured(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Answer: ...
