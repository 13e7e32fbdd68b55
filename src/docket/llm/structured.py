"""Structured answers: sentences that each carry their citations, or a typed refusal.

A free-text answer has to be split into sentences and searched for `[S1]` markers before it can
be checked; a structured one says per sentence which labels support it, and refusing is a value
of its own type instead of a sentence that has to be recognised (Instructor's "maybe" pattern: the
result, or null and why). The answer is one JSON object:

    {"sentences": [{"text": "Refunds take 10 business days.", "citations": ["S2"]}], "refusal": null}
    {"sentences": [], "refusal": {"reason": "the documents do not say who approves refunds"}}

`answer_schema(labels)` is its JSON Schema with the citations limited to the brief's labels (so a
grammar-constrained server cannot cite a passage that does not exist). It is written for OpenAI's
strict structured outputs (root is an object, every property required, no extra properties) and
is also what llama.cpp turns into a GBNF grammar. `parse_reply` reads a model's reply into the
pydantic models and never raises: a reply that is not JSON, or JSON of the wrong shape, comes
back as a one-line `error` that the checker reports as a finding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from docket.safeio import DuplicateKey, decode_json

#: what the schema is called in OpenAI's `response_format` and as Anthropic's tool
SCHEMA_NAME = "docket_answer"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CitedSentence(_Strict):
    """One sentence of the answer and the labels of the passages it comes from."""

    text: str
    citations: list[str] = Field(default_factory=list)

    @field_validator("citations", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        # "S1" for ["S1"], "[S2]" for "S2": shapes a model writes when nothing enforces the schema
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            return [_label(x) if isinstance(x, str) else x for x in v]
        return v


def _label(raw: str) -> str:
    t = raw.strip().strip("[]【】() ").strip()
    m = re.fullmatch(r"[sS]\s?(\d+)", t)
    return f"S{m.group(1)}" if m else t


class Refusal(_Strict):
    """The typed refusal: the documents do not answer the question (or not all of it), and why."""

    reason: str


class Reply(_Strict):
    """A structured answer: its sentences with their citations, and a refusal or null.

    Sentences first, refusal after: a small model (Qwen2.5-Coder 1.5B) asked to pick "answer" or
    "refusal" before writing anything refused questions its documents answered; writing the
    sentences first, it answered them. Sentences and a refusal together are a partial answer
    (what the documents say, and what they lack); neither is not an answer at all."""

    sentences: list[CitedSentence]
    refusal: Refusal | None = None

    @model_validator(mode="after")
    def _something(self) -> Reply:
        if not self.sentences and self.refusal is None:
            raise ValueError("has no sentences and no refusal: give one or the other")
        return self

    @property
    def refused(self) -> bool:
        """Only a refusal: nothing is claimed."""
        return self.refusal is not None and not self.sentences

    @property
    def partial(self) -> bool:
        return self.refusal is not None and bool(self.sentences)


def answer_schema(labels: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON Schema of a `Reply`; with `labels`, citations must be one of them.

    Hand-written rather than `Reply.model_json_schema()`: pydantic's output uses `$defs` and
    `default`, which strict OpenAI mode and llama.cpp's grammar converter do not all accept;
    this one uses only keywords both take (every property required, null spelled as a type).
    """
    label: dict[str, Any] = {"type": "string", "enum": list(labels)} if labels else {"type": "string", "pattern": "^S[0-9]+$"}
    sentence = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "citations": {"type": "array", "items": label, "minItems": 1}},
        "required": ["text", "citations"],
        "additionalProperties": False,
    }
    refusal = {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"sentences": {"type": "array", "items": sentence},
                       "refusal": {"anyOf": [{"type": "null"}, refusal]}},
        "required": ["sentences", "refusal"],
        "additionalProperties": False,
    }


def instruction(refusal_sentence: str) -> str:
    """What the model is told about the shape (a grammar enforces it; the model still has to know
    what the fields mean). Appended to the end of the user message: the system message, which
    providers cache, stays the same as for free-text answers."""
    return (
        'Write the answer as JSON: {"sentences": [{"text": "...", "citations": ["S1"]}], "refusal": null}, '
        "each sentence with the labels of the documents it comes from. If the documents do not answer the "
        'question, write {"sentences": [], "refusal": {"reason": "..."}}, the reason saying what they lack, '
        f'instead of the sentence "{refusal_sentence}".'
    )


def structured_messages(messages: list[dict[str, Any]], refusal_sentence: str) -> list[dict[str, Any]]:
    """The brief's chat messages with the JSON instruction after the last user message's text."""
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            m["content"] = m["content"] + "\n\n" + instruction(refusal_sentence)
            break
    return out


@dataclass
class ParsedReply:
    """A model's reply read as a structured answer: `reply` when it parsed, else `error` (one line)."""

    raw: str
    reply: Reply | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.reply is not None

    @property
    def looks_like_json(self) -> bool:
        """The reply tried to be JSON (then checking it as prose would only report noise)."""
        return _strip_fence(self.raw).lstrip().startswith(("{", "["))

    def to_json(self) -> dict[str, Any]:
        if self.reply is not None:
            return self.reply.model_dump()
        return {"error": self.error, "raw": self.raw}


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.S)


def _strip_fence(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text


def _where(loc: Sequence[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "the reply"


def parse_reply(text: str, *, finish_reason: str | None = None) -> ParsedReply:
    """Read a reply as a `Reply`; never raises. A reply wrapped in a ```json fence is accepted."""
    raw = text if isinstance(text, str) else str(text)
    body = _strip_fence(raw).strip()
    cut = " (the reply was cut off at max_tokens: raise it)" if finish_reason == "length" else ""
    if not body:
        return ParsedReply(raw, error=f"structured answer: the reply is empty{cut}")
    try:
        data = decode_json(body)
    except json.JSONDecodeError as e:
        return ParsedReply(raw, error=f"structured answer: not JSON (line {e.lineno}, column {e.colno}: {e.msg}){cut}")
    except DuplicateKey as e:  # which copy counts is the reader's guess, not the model's answer
        return ParsedReply(raw, error=f"structured answer: {e.path}: {e.detail}")
    except (RecursionError, ValueError) as e:  # nested past the parser's reach, an integer past Python's limit
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e).split(";")[0]
        return ParsedReply(raw, error=f"structured answer: not readable JSON ({why}){cut}")
    if not isinstance(data, dict):
        return ParsedReply(raw, error=f"structured answer: must be a JSON object, got {type(data).__name__}")
    try:
        return ParsedReply(raw, reply=Reply.model_validate(data))
    except ValidationError as e:
        first = e.errors()[0]
        msg = first.get("msg", "invalid").removeprefix("Value error, ")
        kind = first.get("type")
        if kind == "missing":
            msg = "is required but missing"
        elif kind == "extra_forbidden":
            msg = "is not a field of the answer schema (sentences, refusal)"
        elif kind in ("model_type", "model_attributes_type"):
            msg = "must be an object"
        return ParsedReply(raw, error=f"structured answer: {_where(first.get('loc', ()))}: {msg}{cut}")


def reply_text(reply: Reply, refusal_sentence: str) -> str:
    """The reply as prose with `[S1]` markers: what people read and free-text consumers get."""
    if reply.refused:
        return refusal_sentence
    parts = []
    for s in reply.sentences:
        text = s.text.strip()
        marks = "".join(f"[{c}]" for c in dict.fromkeys(s.citations) if f"[{c}]" not in text)
        if marks:
            m = re.match(r"^(.*?)([.!?]*)$", text, re.S)
            body, punct = (m.group(1), m.group(2)) if m else (text, "")
            text = f"{body.rstrip()} {marks}{punct}"
        parts.append(text)
    if reply.refusal is not None:
        parts.append(f"({reply.refusal.reason.strip() or refusal_sentence})")
    return " ".join(p for p in parts if p)


def reply_labels(reply: Reply) -> list[str]:
    """Every label the reply cites, in order, without repeats."""
    out: list[str] = []
    for s in reply.sentences:
        for c in s.citations:
            if c not in out:
                out.append(c)
    return out


__all__ = [
    "SCHEMA_NAME",
    "CitedSentence",
    "ParsedReply",
    "Refusal",
    "Reply",
    "answer_schema",
    "instruction",
    "parse_reply",
    "reply_labels",
    "reply_text",
    "structured_messages",
]
