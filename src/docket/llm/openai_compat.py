"""Any OpenAI-compatible chat endpoint: OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio...

Uses the official `openai` client (the `llm` extra) so that auth headers, streaming and response
parsing behave exactly as users know them. docket turns off the client's own retries and does
its own: retry only what can succeed on a second try (429 and 5xx, honouring Retry-After,
exponential backoff with a cap), fail fast on everything else, and translate every failure into
one `LLMError` line that says which endpoint failed and what to do about it. A wrong model name
is checked against the endpoint's own model list so the message can say what *is* served.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from docket.llm._sdk import SdkCaller
from docket.llm.base import Answer
from docket.llm.errors import BadRequest, LLMError, MalformedResponse, NotConfigured, ServerError

#: what the `openai` client needs as a key when the endpoint (a local server) needs none
NO_KEY = "not-needed"

#: how an endpoint takes a JSON Schema for the reply:
#:   json_schema  OpenAI structured outputs (strict), also vLLM, Ollama, LM Studio, llama-server
#:   llama.cpp    {"type": "json_object", "schema": ...}: llama-cpp-python's server (and llama-server)
#:                compile the schema into a GBNF grammar that constrains sampling
DIALECTS = ("json_schema", "llama.cpp")


def response_format(schema: dict[str, Any], dialect: str, name: str = "docket_answer") -> dict[str, Any]:
    """The `response_format` value that carries `schema` in `dialect`."""
    if dialect == "llama.cpp":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise NotConfigured("the 'openai' package is not installed: pip install 'docket[llm]'") from e
    return openai


class OpenAICompatGenerator:
    """A `Generator` (and `StreamingGenerator`) for one model at one OpenAI-compatible URL.

    `base_url` is the API root (`http://127.0.0.1:8080/v1`); `model=None` asks the endpoint for
    its model list and uses the only one served (local servers serve one). `timeout` is per
    request in seconds; `retries` is how many extra attempts a 429/5xx gets.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        extra_body: dict[str, Any] | None = None,
        structured_dialect: str | None = None,
    ) -> None:
        openai = _import_openai()
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.extra_body = extra_body
        if structured_dialect is not None and structured_dialect not in DIALECTS:
            raise NotConfigured(f"unknown structured-output dialect {structured_dialect!r}; use one of {', '.join(DIALECTS)}")
        #: how a JSON Schema is sent (see DIALECTS); None = OpenAI's json_schema, falling back to
        #: llama.cpp's json_object + schema when the endpoint rejects the first
        self.structured_dialect = structured_dialect
        key = api_key or os.environ.get("DOCKET_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or NO_KEY
        self._openai = openai
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0)
        self._model = model
        self._caller = SdkCaller(
            openai, self.base_url, timeout=timeout, retries=retries, backoff=backoff, max_backoff=max_backoff,
            key_hint="DOCKET_LLM_API_KEY / OPENAI_API_KEY", not_found=self._not_found_message,
        )

    # -- identity -----------------------------------------------------------------------------
    @property
    def model(self) -> str:
        if self._model is None:
            served = self.models()
            if len(served) != 1:
                listing = ", ".join(served[:8]) or "none"
                raise NotConfigured(
                    f"{self.base_url} serves {len(served)} models ({listing}): pass the model name (--model)",
                    endpoint=self.base_url,
                )
            self._model = served[0]
        return self._model

    @property
    def name(self) -> str:
        return f"openai-compatible:{self._model or '?'}@{self.base_url}"

    def models(self) -> list[str]:
        """The model ids the endpoint lists (GET /models)."""
        page = self._caller.call(lambda: self.client.models.list(), what="list models")
        try:
            return [m.id for m in page.data]
        except (AttributeError, TypeError) as e:
            raise MalformedResponse(f"{self.base_url}: the model list is not in the OpenAI format", endpoint=self.base_url) from e

    # -- generation ---------------------------------------------------------------------------
    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0,
                 response_format: dict[str, Any] | None = None) -> Answer:
        """The answer with timing and token usage (what `generate` returns is its `.text`)."""
        model = self.model
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens,
                                  "temperature": temperature, "extra_body": self.extra_body}
        final = None
        if response_format is not None:
            kwargs["response_format"] = response_format
            # llama-cpp-python answers a response_format it does not take with a 500 naming the
            # field: a retry gets the same 500, so the caller falls back to the next dialect at once
            final = _names_response_format
        completion = self._caller.call(lambda: self.client.chat.completions.create(**kwargs), what="chat completion",
                                       final=final)
        seconds = time.perf_counter() - t0
        try:
            choice = completion.choices[0]
            text = choice.message.content
            if text is None and isinstance(getattr(choice.message, "refusal", None), str):
                text = choice.message.refusal  # OpenAI's own refusal (structured outputs): the reply, as prose
        except (AttributeError, IndexError, TypeError, KeyError) as e:
            raise MalformedResponse(
                f"{self.base_url}: the response is not a chat completion (no choices[0].message)", endpoint=self.base_url
            ) from e
        if not isinstance(text, str):
            raise MalformedResponse(f"{self.base_url}: the chat completion has no text content", endpoint=self.base_url)
        usage: dict[str, int] = {}
        u = getattr(completion, "usage", None)
        for k in ("prompt_tokens", "completion_tokens"):
            v = getattr(u, k, None) if u is not None else None
            if isinstance(v, int):
                usage[k] = v
        finish = getattr(choice, "finish_reason", None)
        return Answer(text=text.strip(), model=str(getattr(completion, "model", None) or model), seconds=seconds, usage=usage,
                      finish_reason=finish if isinstance(finish, str) else None)

    def complete_structured(self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512,
                            temperature: float = 0.0) -> Answer:
        """The reply held to `schema` by the endpoint (`response_format`); `.text` is the raw JSON.

        Without a set dialect, OpenAI's `json_schema` form is tried first and llama.cpp's
        `json_object` + `schema` when the endpoint rejects it (a 4xx, or llama-cpp-python's 500 that
        names response_format); the one that worked is kept."""
        dialects = [self.structured_dialect] if self.structured_dialect else list(DIALECTS)
        first: LLMError | None = None
        for dialect in dialects:
            try:
                ans = self.complete(messages, max_tokens=max_tokens, temperature=temperature,
                                    response_format=response_format(schema, dialect))
            except (BadRequest, ServerError) as e:
                # llama-cpp-python answers a json_schema response_format with a 500 naming the field
                if isinstance(e, ServerError) and "response_format" not in str(e):
                    raise
                first = first or e
                continue
            self.structured_dialect = dialect
            ans.mode = "structured"
            ans.note = f"JSON Schema sent as response_format ({dialect})"
            return ans
        assert first is not None
        if len(dialects) == 1 and isinstance(first, ServerError):
            raise first
        raise BadRequest(f"{first} (the endpoint takes no JSON Schema in response_format: tried "
                         f"{' and '.join(dialects)}; answer without --structured)", endpoint=self.base_url,
                         status=first.status)

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        return self.complete(messages, max_tokens=max_tokens, temperature=temperature).text

    def stream(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> Iterator[str]:
        """Yield the answer's text deltas. Retries apply until the first byte; errors after it are final."""
        model = self.model
        chunks = self._caller.call(
            lambda: self.client.chat.completions.create(
                model=model, messages=messages, max_tokens=max_tokens, temperature=temperature,
                stream=True, extra_body=self.extra_body,
            ),
            what="chat completion (stream)",
        )
        try:
            for chunk in chunks:
                choices = getattr(chunk, "choices", None)
                if not choices:
                    continue
                delta = getattr(choices[0], "delta", None)
                piece = getattr(delta, "content", None) if delta is not None else None
                if piece:
                    yield piece
        except LLMError:
            raise
        except Exception as e:
            raise self._caller.translate(e, what="chat completion (stream)") from e

    def _not_found_message(self, msg: str) -> str:
        url, model = self.base_url, self._model
        served: list[str] | None = None
        try:
            page = self.client.models.list()
            served = [m.id for m in page.data]
        except Exception:
            served = None
        if served is None:
            return f"{url}: 404 not found ({msg}); check the model name '{model}' and that the URL is the API root (often ends in /v1)"
        listing = ", ".join(served[:8]) or "none"
        return f"{url}: model '{model}' not found (404); this endpoint serves: {listing}"


def _names_response_format(e: BaseException) -> bool:
    """The endpoint's error (its body or message) is about the request's response_format."""
    return "response_format" in f"{getattr(e, 'body', '')} {e}"
