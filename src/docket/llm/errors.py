"""What can go wrong when docket calls a model, as one-line `DocketError`s.

A model call fails in a handful of ways that each need a different fix from the user (start the
server, fix the key, fix the model name, wait, report a bug upstream). Each gets its own class
and a message that names the endpoint and the fix, so the CLI can print one line instead of a
traceback, and callers can catch by kind. They are `UnavailableError`s: the assembled brief is
fine, only the model behind it is not; callers keep and print the brief.
"""

from __future__ import annotations

from docket.errors import UnavailableError


class LLMError(UnavailableError):
    """A model call failed. `kind` is a short machine-readable name; `status` the HTTP status."""

    kind = "error"

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None):
        self.endpoint = endpoint
        self.status = status
        super().__init__(" ".join(message.split()))  # one line, always


class EndpointUnreachable(LLMError):
    """Nothing answers at the URL (connection refused, unknown host)."""

    kind = "unreachable"


class EndpointTimeout(LLMError):
    """The endpoint accepted the connection but did not answer in time."""

    kind = "timeout"


class AuthError(LLMError):
    """401/403: missing or wrong API key."""

    kind = "auth"


class ModelNotFound(LLMError):
    """404 or an explicit 'model not found': the model name is wrong for this endpoint."""

    kind = "model"


class RateLimited(LLMError):
    """429 that persisted through every retry."""

    kind = "rate_limit"


class ServerError(LLMError):
    """5xx that persisted through every retry."""

    kind = "server"


class BadRequest(LLMError):
    """Another 4xx: the endpoint rejected the request (often: prompt longer than its context)."""

    kind = "request"


class MalformedResponse(LLMError):
    """The endpoint answered 200 but not with a chat completion docket can read."""

    kind = "malformed"


class NotConfigured(LLMError):
    """The URL, model or client library needed for a call is missing."""

    kind = "config"
