"""The assembler's output: the prompt in the shapes providers take, the label map, the trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from docket.brief import turns
from docket.model import Passage, Trace, TraceEvent
from docket.results import Conflict, Source, TokenCounts

if TYPE_CHECKING:
    from docket.history import ChatMessage


class _LazyTrace:
    """`Brief.trace`: the trace as `TraceEvent`s. The assembler hands over its `Trace`, which
    becomes the list (and its reasons formatted) the first time anyone reads it; a list given to
    the constructor is converted at once (plain dicts become `TraceEvent`s)."""

    def __init__(self, name: str) -> None:
        self.slot = "_" + name

    @overload
    def __get__(self, obj: None, objtype: Any = None) -> _LazyTrace: ...

    @overload
    def __get__(self, obj: object, objtype: Any = None) -> list[TraceEvent]: ...

    def __get__(self, obj: object | None, objtype: Any = None) -> Any:
        if obj is None:
            raise AttributeError(self.slot)  # no class-level default: the dataclass field stays required
        value = obj.__dict__[self.slot]
        if isinstance(value, Trace):
            value = obj.__dict__[self.slot] = list(value.events)
        return value

    def __set__(self, obj: object, value: list[TraceEvent] | Trace) -> None:
        obj.__dict__[self.slot] = value if isinstance(value, Trace) else [TraceEvent.of(e) for e in value]


@dataclass
class Brief:
    """What `assemble` returns. `to_json()` is the `docket assemble --json` contract (docs/contract.md).

    `sources`, `tokens`, `trace` and `conflicts` are typed (`Source`, `TokenCounts`,
    `TraceEvent`, `Conflict`) and still read like the JSON objects they write; plain dicts given
    to the constructor are converted. `history` holds the chat turns kept for the prompt (they go
    between the system message and the final user message).
    """

    found: bool
    question: str
    system: str
    user: str
    documents: str
    #: label -> source: doc, version, chunks, title, section, date, status, trust, text, also_in
    sources: dict[str, Source]
    tokens: TokenCounts
    #: every decision with its reason and numbers. The assembler passes its Trace, which becomes
    #: this list when first read (see _LazyTrace above)
    trace: list[TraceEvent]
    conflicts: list[Conflict]
    warnings: list[str]
    budget: int
    refusal: str
    passages: list[Passage] = field(default_factory=list, repr=False)
    anthropic_request: dict[str, Any] = field(default_factory=dict, repr=False)
    history: list[ChatMessage] = field(default_factory=list)
    #: how the context was chosen: retrieve, whole_corpus, attachments or no_retrieve (docket.modes)
    mode: str = "retrieve"
    #: the stable prefix a provider can cache, and one query's cost with and without the cache
    cache: dict[str, Any] = field(default_factory=dict)
    #: the token counter behind every count, and whether it is the model's own or a stand-in
    tokenizer: dict[str, Any] = field(default_factory=dict)
    #: the ranked candidates the assembler received (for trace pages; not in the JSON contract)
    ranked: list[Any] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.sources = {label: Source.of(s) for label, s in self.sources.items()}
        if isinstance(self.tokens, Mapping) and not isinstance(self.tokens, TokenCounts):
            self.tokens = TokenCounts.of(self.tokens)
        self.conflicts = [Conflict.of(c) for c in self.conflicts]

    @property
    def messages(self) -> list[dict[str, str]]:
        """OpenAI-style chat messages (empty when nothing was found: do not call the model):
        system, the kept chat history, then the user message with the documents and question.
        User and assistant alternate: turns of one role are merged, and a history turn next to
        docket's own user message joins it under a frame (brief/turns.py)."""
        if not self.found:
            return []
        system = {"role": "system", "content": self.system}
        if not self.history:
            return [system, {"role": "user", "content": self.user}]
        hist = [(m.role, m.content, True) for m in self.history]
        if self._corpus_first():  # the corpus before the history: one cached prefix for every conversation
            rest = self.user[len(self.documents):].lstrip("\n")
            segments = [("user", self.documents, False), *hist, ("user", rest, False)]
        else:
            segments = [*hist, ("user", self.user, False)]
        return [system, *turns.merge(segments)]

    def _corpus_first(self) -> bool:
        """Whole-corpus briefs with chat history put the corpus block in a user message of its own,
        ahead of the turns: the block is the same for every question, the history is not."""
        return bool(self.history) and self.mode == "whole_corpus" and bool(self.documents) \
            and self.user.startswith(self.documents)

    def anthropic(self) -> dict[str, Any]:
        """`system` + `messages` for Anthropic's Messages API, documents as citable blocks (the
        chat history, when given, before the final user message; in whole-corpus mode after the
        corpus's document blocks, which keep their cache breakpoint). Roles alternate as in
        `messages`: a history turn that joins docket's user message is a text block of its own."""
        if not self.history or not self.anthropic_request:
            return self.anthropic_request
        hist = [(m.role, m.content, True) for m in self.history]
        messages = list(self.anthropic_request.get("messages", []))
        if self._corpus_first() and len(messages) == 1 and isinstance(messages[0].get("content"), list):
            content = messages[0]["content"]
            docs = [b for b in content if b.get("type") == "document"]
            tail = [b for b in content if b.get("type") != "document"]
            segments = [("user", docs, False), *hist, ("user", tail, False)]
        else:
            segments = [*hist, *((m["role"], m["content"], False) for m in messages)]
        return {**self.anthropic_request, "messages": turns.merge(segments, blocks=True)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Brief:
        """The brief a `to_json()` object (the `--json` contract) describes, so a stored or sent
        brief can be read back: `Brief.from_json(b.to_json()).to_json() == b.to_json()`. The
        prompt is kept exactly as written (its `messages` and Anthropic request); what the JSON
        does not carry (the passages, the ranked candidates, the documents block on its own) is
        left empty. Raises InputError naming the field when the object is not a brief."""
        return _brief_from_json(data)

    def to_json(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "question": self.question,
            "messages": self.messages,
            "sources": {label: s.to_json() for label, s in self.sources.items()},
            "tokens": self.tokens.to_json(),
            "budget": self.budget,
            "refusal": self.refusal,
            "trace": [TraceEvent.of(e).to_json() for e in self.trace],  # of(): a caller may append dicts
            "conflicts": [Conflict.of(c).to_json() for c in self.conflicts],
            "warnings": self.warnings,
            "anthropic": self.anthropic() if self.found else None,
            "mode": self.mode,
            "cache": self.cache or None,
            "tokenizer": self.tokenizer or None,
        }


# after the dataclass is made, so the field stays a required positional one; its generated
# __init__ assigns through the descriptor (which converts a list, and keeps a Trace for later)
Brief.trace = _LazyTrace("trace")  # type: ignore[assignment]


class _ParsedBrief(Brief):
    """A brief read back from its JSON: its messages and Anthropic request are the ones written."""

    _wire_messages: list[dict[str, Any]]
    _wire_anthropic: dict[str, Any] | None

    @property
    def messages(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [dict(m) for m in self._wire_messages]

    def anthropic(self) -> dict[str, Any]:
        return dict(self._wire_anthropic or {})


def _brief_from_json(data: Mapping[str, Any]) -> Brief:
    from docket.errors import InputError

    if not isinstance(data, Mapping):
        raise InputError(f"must be a JSON object (Brief.to_json()), got {type(data).__name__}", field="brief")
    for key, kind in (("found", bool), ("question", str), ("messages", list), ("sources", dict), ("tokens", dict),
                      ("budget", int), ("refusal", str), ("trace", list), ("conflicts", list), ("warnings", list)):
        if not isinstance(data.get(key), kind) or (kind is int and isinstance(data.get(key), bool)):
            raise InputError(f"must be a JSON {kind.__name__}, got {type(data.get(key)).__name__}", field=f"brief.{key}")
    messages = list(data["messages"])
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or "content" not in m:
            raise InputError("must be a {role, content} object", field=f"brief.messages[{i}]")
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = messages[-1]["content"] if messages and messages[-1]["role"] == "user" else ""
    try:
        brief = _ParsedBrief(
            found=data["found"], question=data["question"], system=system if isinstance(system, str) else "",
            user=user if isinstance(user, str) else "", documents="", sources=dict(data["sources"]),
            tokens=TokenCounts.of(data["tokens"]), trace=list(data["trace"]), conflicts=list(data["conflicts"]),
            warnings=list(data["warnings"]), budget=data["budget"], refusal=data["refusal"],
            mode=str(data.get("mode") or "retrieve"), cache=dict(data.get("cache") or {}),
            tokenizer=dict(data.get("tokenizer") or {}),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"is not a brief's JSON ({type(e).__name__}: {e})", field="brief") from None
    brief._wire_messages = [dict(m) for m in messages]
    anthropic = data.get("anthropic")
    brief._wire_anthropic = dict(anthropic) if isinstance(anthropic, Mapping) else None
    return brief
