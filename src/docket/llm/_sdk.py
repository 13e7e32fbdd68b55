"""Retries and error translation shared by the `openai` and `anthropic` clients.

Both official SDKs raise the same family of exceptions (APITimeoutError, APIConnectionError,
APIStatusError with `status_code` and `body`, APIResponseValidationError), so one helper turns
either into docket's one-line `LLMError`s. Only 429 and 5xx (incl. Anthropic's 529 overloaded)
are retried: a refused connection, a timeout, a bad key or a wrong model will not fix itself,
and retrying them only makes the user wait longer for the same error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from docket.llm.errors import (
    AuthError,
    BadRequest,
    EndpointTimeout,
    EndpointUnreachable,
    LLMError,
    MalformedResponse,
    ModelNotFound,
    RateLimited,
    ServerError,
)

T = TypeVar("T")


def server_message(e: Any) -> str:
    """The endpoint's own error text, shortened to fit on one line."""
    body = getattr(e, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail")
        elif isinstance(err, str):
            msg = err
        if msg is None and isinstance(body.get("detail"), str):
            msg = body["detail"]
    if msg is None:
        msg = getattr(e, "message", None) or str(e)
    return _short(str(msg), 200)


def _short(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _retry_after(e: Any, default: float, cap: float) -> float:
    response = getattr(e, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(cap, max(0.0, float(value))) if value is not None else default
    except ValueError:
        return default


class SdkCaller:
    """Calls an SDK function with docket's retry policy; raises only `LLMError`s.

    `not_found` builds the message for a 404 (the generator knows how to list its models);
    `key_hint` names the environment variables that hold the API key.
    """

    def __init__(
        self,
        sdk: Any,
        endpoint: str,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        max_backoff: float,
        key_hint: str,
        not_found: Callable[[str], str],
    ) -> None:
        self.sdk = sdk
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.key_hint = key_hint
        self.not_found = not_found

    def _retryable(self, e: BaseException) -> bool:
        status = getattr(e, "status_code", None)
        return isinstance(e, self.sdk.APIStatusError) and isinstance(status, int) and (status == 429 or status >= 500)

    def call(self, fn: Callable[[], T], *, what: str, final: Callable[[BaseException], bool] | None = None) -> T:
        """`fn()`, retrying what can succeed on a second try; `final(e)` marks an error that will
        not (e.g. a 500 that names the request's own field), so it is raised at once."""
        attempt = 0
        while True:
            try:
                return fn()
            except LLMError:
                raise
            except Exception as e:
                if self._retryable(e) and attempt < self.retries and not (final is not None and final(e)):
                    wait = min(self.max_backoff, self.backoff * (2**attempt))
                    time.sleep(_retry_after(e, wait, self.max_backoff))
                    attempt += 1
                    continue
                raise self.translate(e, what=what) from e

    def translate(self, e: BaseException, *, what: str) -> LLMError:
        """One line per failure: what failed, where, and what to do."""
        sdk, url = self.sdk, self.endpoint
        if isinstance(e, LLMError):
            return e
        if isinstance(e, sdk.APITimeoutError):
            return EndpointTimeout(
                f"{url}: no answer within {self.timeout:g} s ({what}); raise the timeout or use a smaller model or prompt",
                endpoint=url,
            )
        if isinstance(e, sdk.APIConnectionError):
            cause = e.__cause__ or e.__context__
            why = _short(str(cause), 120) if cause else "connection failed"
            if "refused" in why.lower() or isinstance(cause, ConnectionRefusedError):
                why = "connection refused"
            return EndpointUnreachable(
                f"cannot reach the model endpoint {url} ({why}): is the server running and the URL right?", endpoint=url
            )
        if isinstance(e, sdk.APIStatusError):
            status = int(e.status_code)
            msg = server_message(e)
            attempts = f"after {self.retries + 1} attempts"
            if status in (401, 403):
                word = "unauthorized" if status == 401 else "forbidden"
                return AuthError(f"{url}: {status} {word} ({msg}); check the API key ({self.key_hint})", endpoint=url, status=status)
            if status == 404:
                return ModelNotFound(self.not_found(msg), endpoint=url, status=status)
            if status == 429:
                return RateLimited(f"{url}: 429 rate limited {attempts} ({msg}); wait or lower the request rate", endpoint=url, status=status)
            if status >= 500:
                return ServerError(f"{url}: server error {status} {attempts} ({msg})", endpoint=url, status=status)
            low = msg.lower()
            if "model" in low and ("not found" in low or "does not exist" in low or "unknown" in low):
                return ModelNotFound(self.not_found(msg), endpoint=url, status=status)
            return BadRequest(f"{url}: {status} request rejected ({msg})", endpoint=url, status=status)
        if isinstance(e, sdk.APIResponseValidationError | ValueError | TypeError | AttributeError | KeyError | IndexError):
            return MalformedResponse(f"{url}: malformed response to {what} ({type(e).__name__}: {_short(str(e), 120)})", endpoint=url)
        if isinstance(e, sdk.APIError):
            return LLMError(f"{url}: {what} failed ({_short(str(e), 160)})", endpoint=url)
        return MalformedResponse(f"{url}: unexpected failure in {what} ({type(e).__name__}: {_short(str(e), 120)})", endpoint=url)
