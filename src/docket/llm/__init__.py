"""Generators behind one protocol, chosen by a URL.

    http(s)://host:port[/v1]   any OpenAI-compatible endpoint (vLLM, llama.cpp server, LM Studio)
    openai                     api.openai.com (OPENAI_API_KEY)
    ollama://host:port         Ollama's OpenAI-compatible API (http://host:port/v1)
    anthropic                  Anthropic's Messages API with native citations (ANTHROPIC_API_KEY)
    local                      the server started by `docket llm serve-local`

One string picks the provider, so the CLI needs a single `--llm URL` option and a config file a
single field. Nothing here imports a client library until a generator is built: `import
docket.llm` works without the `llm` extra.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from docket.llm.base import Answer, BriefGenerator, Citation, Generator, StreamingGenerator
from docket.llm.errors import LLMError, NotConfigured

__all__ = [
    "Answer",
    "BriefGenerator",
    "Citation",
    "Generator",
    "LLMError",
    "StreamingGenerator",
    "generator_from_url",
]


def generator_from_url(url: str, model: str | None = None, **options: Any) -> Generator:
    """Build the generator a URL names. `options` go to the generator (timeout, retries, api_key...)."""
    raw = (url or "").strip()
    if not raw:
        raise NotConfigured("no model URL given (--llm): e.g. local, http://127.0.0.1:8080/v1, openai, anthropic")
    low = raw.lower()
    if low in ("anthropic", "anthropic://", "claude") or "api.anthropic.com" in low or low.startswith("anthropic://"):
        from docket.llm.anthropic_gen import AnthropicGenerator

        base = None
        if low.startswith("http"):
            base = raw.split("/v1")[0]
        return AnthropicGenerator(model, base_url=base, **options)

    from docket.llm.openai_compat import OpenAICompatGenerator

    if low in ("openai", "openai://"):
        return OpenAICompatGenerator("https://api.openai.com/v1", model or "gpt-4o-mini", **options)
    if low == "local" or low.startswith("local://"):
        from docket.llm.local import local_url

        return OpenAICompatGenerator(local_url(), model, **options)
    if low.startswith("ollama://"):
        rest = raw[len("ollama://"):].strip("/") or "127.0.0.1:11434"
        return OpenAICompatGenerator(f"http://{rest.split('/')[0]}/v1", model, **options)
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise NotConfigured(f"cannot tell which model endpoint '{raw}' means: use http(s)://host:port/v1, local, openai, "
                            f"ollama://host:port or anthropic")
    base = raw.rstrip("/")
    if parts.path in ("", "/"):
        base += "/v1"
    return OpenAICompatGenerator(base, model, **options)
