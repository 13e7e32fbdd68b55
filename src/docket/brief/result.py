"""The assembler's output: the prompt in the shapes providers take, the label map, the trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docket.model import Passage


@dataclass
class Brief:
    """What `assemble` returns. `to_json()` is the `docket assemble --json` contract (DESIGN.md)."""

    found: bool
    question: str
    system: str
    user: str
    documents: str
    #: label -> source: doc, version, chunks, title, section, date, status, trust, text, also_in
    sources: dict[str, dict[str, Any]]
    tokens: dict[str, int]
    trace: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]
    warnings: list[str]
    budget: int
    refusal: str
    passages: list[Passage] = field(default_factory=list, repr=False)
    anthropic_request: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def messages(self) -> list[dict[str, str]]:
        """OpenAI-style chat messages (empty when nothing was found: do not call the model)."""
        if not self.found:
            return []
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def anthropic(self) -> dict[str, Any]:
        """`system` + `messages` for Anthropic's Messages API, documents as citable blocks."""
        return self.anthropic_request

    def to_json(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "question": self.question,
            "messages": self.messages,
            "sources": self.sources,
            "tokens": self.tokens,
            "budget": self.budget,
            "refusal": self.refusal,
            "trace": self.trace,
            "conflicts": self.conflicts,
            "warnings": self.warnings,
            "anthropic": self.anthropic_request if self.found else None,
        }
