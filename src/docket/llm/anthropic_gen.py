"""Anthropic's Messages API with native citations, mapped back to docket's [S#] labels.

With `Brief.anthropic()` the passages go in as document content blocks with citations enabled,
and the model returns text blocks that carry the spans they cite (`document_index`,
`cited_text`, a character range). The API guarantees those pointers are valid, not that the
span supports the sentence, so docket still checks them. To let the *same* checker run on every
provider, the answer is rendered with `[S1]`-style labels: each cited text block gets the labels
of the documents it cites, placed before its closing punctuation. The raw spans are kept on the
`Answer` as `Citation`s for display and audit.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from docket.brief.formats import BlocksFormat
from docket.llm._sdk import SdkCaller
from docket.llm.base import Answer, Citation
from docket.llm.errors import MalformedResponse, NotConfigured

DEFAULT_MODEL = "claude-sonnet-4-5"
#: the tool a structured answer is submitted through
STRUCTURED_TOOL = "submit_answer"
STRUCTURED_NOTE = ("Anthropic: structured output through a forced tool call; native citations are off for this "
                   "request (Anthropic does not combine them with structured output), the labels come from the JSON")
NATIVE_NOTE = "Anthropic: native citations (cited spans mapped to [S#] labels); ask for --structured to get JSON instead"


def _import_anthropic() -> Any:
    try:
        import anthropic
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise NotConfigured("the 'anthropic' package is not installed: pip install 'docket[llm]'") from e
    return anthropic


def document_labels(request: dict[str, Any]) -> list[str]:
    """The docket label of each document block, in the order the API numbers them (document_index).

    docket's brief puts the label in each block's JSON context ({"label": "S1", ...}) and first in
    its title ("S1: Nimbus refund policy"); a block without either gets its position's label.
    """
    labels: list[str] = []
    for msg in request.get("messages", []):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "document":
                continue
            labels.append(BlocksFormat.label_of(block) or f"S{len(labels) + 1}")
    return labels


def _insert_labels(text: str, labels: list[str]) -> str:
    """'... full refund' + [S1] -> '... full refund [S1]'; before closing punctuation and spaces."""
    missing = [lab for lab in labels if f"[{lab}]" not in text]
    if not missing:
        return text
    marks = "".join(f"[{lab}]" for lab in missing)
    m = re.match(r"^(.*?)([.!?;:,]*)(\s*)$", text, re.S)
    assert m is not None  # the pattern matches any string
    body, punct, space = m.groups()
    if not body.strip():
        return text
    return f"{body.rstrip()} {marks}{punct}{space}"


def render_cited(blocks: list[Any], labels: list[str]) -> tuple[str, list[Citation]]:
    """Join the response's text blocks into one answer with [S#] labels; collect the citations."""
    parts: list[str] = []
    citations: list[Citation] = []
    for block in blocks:
        if getattr(block, "type", None) != "text":
            continue
        text = getattr(block, "text", "") or ""
        block_labels: list[str] = []
        for c in getattr(block, "citations", None) or []:
            idx = getattr(c, "document_index", None)
            label = labels[idx] if isinstance(idx, int) and 0 <= idx < len(labels) else f"S{(idx or 0) + 1}"
            start = getattr(c, "start_char_index", None)
            if start is None:
                start = getattr(c, "start_page_number", None)
            if start is None:
                start = getattr(c, "start_block_index", None)
            end = getattr(c, "end_char_index", None)
            if end is None:
                end = getattr(c, "end_page_number", None)
            if end is None:
                end = getattr(c, "end_block_index", None)
            citations.append(Citation(label=label, cited_text=getattr(c, "cited_text", None), start=start, end=end,
                                      document_index=idx))
            if label not in block_labels:
                block_labels.append(label)
        parts.append(_insert_labels(text, block_labels) if block_labels else text)
    return "".join(parts).strip(), citations


class AnthropicGenerator:
    """A `Generator` for Anthropic's Messages API; `answer_brief` uses native citations.

    The key comes from `api_key` or ANTHROPIC_API_KEY; `base_url` lets tests (or a proxy) stand in
    for the API.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        anthropic = _import_anthropic()
        self.model = model or DEFAULT_MODEL
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("DOCKET_LLM_API_KEY")
        if not key:
            raise NotConfigured("no Anthropic API key: set ANTHROPIC_API_KEY", endpoint=self.base_url)
        self.client = anthropic.Anthropic(api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0)
        try:
            self._takes_temperature = "temperature" in inspect.signature(self.client.messages.create).parameters
        except (TypeError, ValueError):
            self._takes_temperature = True
        self._caller = SdkCaller(
            anthropic, self.base_url, timeout=timeout, retries=retries, backoff=backoff, max_backoff=max_backoff,
            key_hint="ANTHROPIC_API_KEY",
            not_found=lambda msg: f"{self.base_url}: model '{self.model}' not found (404: {msg}); check --model",
        )

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    def _kwargs(self, system: str | None, messages: list[dict[str, Any]], max_tokens: int, temperature: float) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        # newer SDKs (2.x) dropped `temperature` from messages.create: send it only where it exists
        if self._takes_temperature:
            kwargs["temperature"] = temperature
        if system:
            kwargs["system"] = system
        return kwargs

    def _create(self, system: str | None, messages: list[dict[str, Any]], max_tokens: int, temperature: float) -> Any:
        kwargs = self._kwargs(system, messages, max_tokens, temperature)
        return self._caller.call(lambda: self.client.messages.create(**kwargs), what="messages.create")

    @staticmethod
    def _split_system(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        system = "\n\n".join(str(m["content"]) for m in messages if m.get("role") == "system")
        rest = [m for m in messages if m.get("role") != "system"]
        return system, rest

    def _blocks(self, response: Any) -> list[Any]:
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise MalformedResponse(f"{self.base_url}: the response has no content blocks", endpoint=self.base_url)
        return blocks

    def _answer(self, response: Any, labels: list[str], seconds: float) -> Answer:
        blocks = self._blocks(response)
        text, citations = render_cited(blocks, labels)
        usage = _usage(response)
        return Answer(text=text, model=str(getattr(response, "model", None) or self.model), citations=citations,
                      seconds=seconds, usage=usage)

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> Answer:
        """OpenAI-style messages in (system messages become the `system` parameter)."""
        system, rest = self._split_system(messages)
        t0 = time.perf_counter()
        response = self._create(system, rest, max_tokens, temperature)
        return self._answer(response, [], time.perf_counter() - t0)

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        return self.complete(messages, max_tokens=max_tokens, temperature=temperature).text

    def stream(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> Iterator[str]:
        """Plain text deltas (no citations: native citations arrive whole, use `answer_brief`)."""
        system, rest = self._split_system(messages)
        kwargs = self._kwargs(system, rest, max_tokens, temperature)
        manager = self._caller.call(lambda: self.client.messages.stream(**kwargs), what="messages.stream")
        try:
            with manager as s:
                yield from s.text_stream
        except Exception as e:
            raise self._caller.translate(e, what="messages.stream") from e

    def complete_structured(self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512,
                            temperature: float = 0.0) -> Answer:
        """The reply held to `schema` by a forced tool call (`tool_choice` names the one tool whose
        `input_schema` is the schema); `.text` is the tool input as JSON.

        Native citations are not used here: Anthropic does not combine citations with structured
        output, so the passages go in as the brief's text (with their [S#] labels) and the
        citations come from the structured answer's labels."""
        system, rest = self._split_system(messages)
        kwargs = self._kwargs(system, rest, max_tokens, temperature)
        kwargs["tools"] = [{"name": STRUCTURED_TOOL, "description": "Submit the answer to the question.",
                            "input_schema": schema}]
        kwargs["tool_choice"] = {"type": "tool", "name": STRUCTURED_TOOL}
        t0 = time.perf_counter()
        response = self._caller.call(lambda: self.client.messages.create(**kwargs), what="messages.create (structured)")
        seconds = time.perf_counter() - t0
        blocks = self._blocks(response)
        tool = next((b for b in blocks if getattr(b, "type", None) == "tool_use"), None)
        if tool is not None:
            text = json.dumps(getattr(tool, "input", None), ensure_ascii=False)
        else:  # no tool call: hand the prose to the parser, which reports it
            text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        usage = _usage(response)
        stop = getattr(response, "stop_reason", None)
        return Answer(text=text, model=str(getattr(response, "model", None) or self.model), seconds=seconds, usage=usage,
                      mode="structured", finish_reason="length" if stop == "max_tokens" else stop,
                      note=STRUCTURED_NOTE)

    def answer_brief(self, brief: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Answer:
        """Send the brief's documents as citable blocks; return the answer with [S#] labels."""
        request = brief.anthropic() if callable(getattr(brief, "anthropic", None)) else brief.get("anthropic")
        if not request:
            raise NotConfigured("the brief has no Anthropic request (nothing was found?)")
        labels = document_labels(request)
        t0 = time.perf_counter()
        response = self._create(request.get("system"), request["messages"], max_tokens, temperature)
        ans = self._answer(response, labels, time.perf_counter() - t0)
        ans.mode = "native_citations"
        ans.note = NATIVE_NOTE
        if getattr(response, "stop_reason", None) == "max_tokens":
            ans.finish_reason = "length"
        return ans


def _usage(response: Any) -> dict[str, int]:
    """The response's token counts under docket's names (prompt_tokens, completion_tokens)."""
    usage: dict[str, int] = {}
    u = getattr(response, "usage", None)
    for ours, theirs in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        v = getattr(u, theirs, None) if u is not None else None
        if isinstance(v, int):
            usage[ours] = v
    return usage
