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

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from docket.llm.base import Answer, BriefGenerator, Citation, Generator, StreamingGenerator, StructuredGenerator
from docket.llm.errors import LLMError, NotConfigured

__all__ = [
    "Answer",
    "BriefGenerator",
    "Citation",
    "Endpoint",
    "Generator",
    "LLMError",
    "StreamingGenerator",
    "StructuredGenerator",
    "generator_from_url",
    "parse_url",
]


@dataclass(frozen=True)
class Endpoint:
    """What an `--llm` URL names: the provider and, where it has one, the API root."""

    kind: str  # "anthropic", "openai", "local", "ollama" or "http"
    base: str | None = None


_HINT = "use local, http(s)://host:port/v1, openai, ollama://host:port or anthropic"


def _host_port(raw: str, netloc_url: str) -> None:
    """Raise NotConfigured when `netloc_url` has no host or a bad port (urlsplit only checks lazily)."""
    try:
        parts = urlsplit(netloc_url)
        port = parts.port  # raises for a non-number or a port out of range
        host = parts.hostname
    except ValueError as e:
        raise NotConfigured(f"the model URL {raw!r} is malformed ({e}); {_HINT}") from None
    if not host:
        raise NotConfigured(f"the model URL {raw!r} names no host; {_HINT}")
    if port == 0:
        raise NotConfigured(f"the model URL {raw!r} has port 0; {_HINT}")


def parse_url(url: str) -> Endpoint:
    """Check an `--llm` URL and say what it names, without connecting or importing a client.

    Bad URLs raise NotConfigured (one line naming the URL and the accepted forms), so a command can
    refuse them before any work starts."""
    raw = (url or "").strip()
    if not raw:
        raise NotConfigured("no model URL given (--llm): e.g. local, http://127.0.0.1:8080/v1, openai, anthropic")
    if any(ch.isspace() or not ch.isprintable() for ch in raw):
        raise NotConfigured(f"the model URL {raw!r} holds spaces or control characters; {_HINT}")
    low = raw.lower()
    if low in ("anthropic", "anthropic://", "claude") or low.startswith("anthropic://"):
        return Endpoint("anthropic")
    if "api.anthropic.com" in low:
        if low.startswith("http"):
            _host_port(raw, raw)
            return Endpoint("anthropic", raw.split("/v1")[0])
        return Endpoint("anthropic")
    if low in ("openai", "openai://"):
        return Endpoint("openai", "https://api.openai.com/v1")
    if low == "local" or low.startswith("local://"):
        return Endpoint("local")
    if low.startswith("ollama://"):
        rest = raw[len("ollama://"):].strip("/") or "127.0.0.1:11434"
        hostport = rest.split("/")[0]
        _host_port(raw, f"http://{hostport}")
        return Endpoint("ollama", f"http://{hostport}/v1")
    try:
        parts = urlsplit(raw)
    except ValueError as e:
        raise NotConfigured(f"the model URL {raw!r} is malformed ({e}); {_HINT}") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise NotConfigured(f"cannot tell which model endpoint '{raw}' means: {_HINT}")
    _host_port(raw, raw)
    base = raw.rstrip("/")
    if parts.path in ("", "/"):
        base += "/v1"
    return Endpoint("http", base)


def generator_from_url(url: str, model: str | None = None, **options: Any) -> Generator:
    """Build the generator a URL names. `options` go to the generator (timeout, retries, api_key...)."""
    ep = parse_url(url)
    if ep.kind == "anthropic":
        from docket.llm.anthropic_gen import AnthropicGenerator

        return AnthropicGenerator(model, base_url=ep.base, **options)

    from docket.llm.openai_compat import OpenAICompatGenerator

    if ep.kind == "openai":
        return OpenAICompatGenerator(ep.base or "https://api.openai.com/v1", model or "gpt-4o-mini", **options)
    if ep.kind == "local":
        from docket.llm.local import local_url

        options.setdefault("structured_dialect", "llama.cpp")  # llama-cpp-python's server takes json_object + schema
        options.setdefault("extra_body", {"cache_prompt": True})  # llama-server reuses the prompt prefix
        return OpenAICompatGenerator(local_url(), model, **options)
    return OpenAICompatGenerator(ep.base or "", model, **options)
