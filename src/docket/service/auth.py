"""Who asks: only the API key (`Authorization: Bearer KEY`), never the body. The header's
parser, the identity and admin dependencies, and who may read a brief's trace page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from docket.keys import ApiKey
from docket.service.errors import ApiError
from docket.store.protocol import Principal

if TYPE_CHECKING:
    from docket.service.state import ServiceState


@dataclass
class Identity:
    key: ApiKey | None
    principal: Principal | None

    @property
    def name(self) -> str:
        return self.key.principal if self.key else "anonymous"


#: only for the OpenAPI schema's security scheme: the header itself is read by `bearer_token`
_bearer = HTTPBearer(auto_error=False, description="An API key from `docket keys add` (`Authorization: Bearer KEY`).")
#: RFC 6750's b64token: what may follow "Bearer " (docket's keys are dk_ + URL-safe base64)
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_WHITESPACE_NAMES = {" ": "a space", "\t": "a tab", "\r": "a carriage return", "\n": "a line break"}


def bearer_token(values: list[str]) -> str:
    """The key of an `Authorization` header, exactly `Bearer KEY`: one header, the scheme, one
    space, the token, nothing around or inside it. Anything else is refused with the reason
    (a lenient parser is how a proxy and docket come to disagree about who is asking)."""

    def refuse(why: str) -> ApiError:
        return ApiError(401, "unauthorized", f"the Authorization header is refused: {why}; send exactly "
                        "'Authorization: Bearer KEY'", "authorization", {"WWW-Authenticate": "Bearer"})

    if len(values) != 1:
        raise refuse(f"it appears {len(values)} times, send it once")
    value = values[0]
    scheme, sep, token = value.partition(" ")
    if not sep:
        ws = next((c for c in value if c in _WHITESPACE_NAMES), None)
        if ws is not None:
            raise refuse(f"{_WHITESPACE_NAMES[ws]} separates the scheme from the key, where one space goes")
        raise refuse("no key after the scheme" if scheme.lower() == "bearer" else "it has no scheme and key")
    if scheme.lower() != "bearer":
        shown = scheme if scheme.isascii() and scheme.isprintable() and len(scheme) <= 20 else "another scheme"
        raise refuse(f"the scheme is {shown!r}, not Bearer")
    if not token:
        raise refuse("no key after 'Bearer '")
    ws = next((c for c in token if c in _WHITESPACE_NAMES), None)
    if ws is not None:
        blanks = "".join(_WHITESPACE_NAMES)
        where = ("before the key" if token[0] in blanks else
                 "after the key" if not any(c in blanks for c in token.rstrip(blanks)) else "inside the key")
        raise refuse(f"{_WHITESPACE_NAMES[ws]} {where} (one space between 'Bearer' and the key, nothing else)")
    if not _TOKEN.fullmatch(token):
        raise refuse("the key holds characters no key has")
    return token


def identity(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Identity:
    """The caller: the key's principal, anonymous without a header (401 when keys are required)."""
    state: ServiceState = request.app.state.service  # (docket.service.state imports this module)
    values = request.headers.getlist("authorization")
    if not values:
        if state.config.require_key:
            raise ApiError(401, "unauthorized", "an API key is required: send Authorization: Bearer KEY",
                           "authorization", {"WWW-Authenticate": "Bearer"})
        request.state.info["principal"] = "anonymous"
        return Identity(None, None)
    key = state.verify(request, bearer_token(values))
    if key is None:
        raise ApiError(401, "unauthorized", "unknown API key", "authorization", {"WWW-Authenticate": "Bearer"})
    who = state.session.principal(key.principal, key.groups)
    request.state.info["principal"] = key.principal
    request.state.info["key"] = key.name
    return Identity(key, who)


def admin(ident: Identity = Depends(identity)) -> Identity:
    """The caller, when its key is an admin key (writes need one)."""
    if ident.key is None:
        raise ApiError(401, "unauthorized", "this route needs an admin API key", "authorization",
                       {"WWW-Authenticate": "Bearer"})
    if not ident.key.admin:
        raise ApiError(403, "forbidden", f"the key {ident.key.name!r} is not an admin key; writes need one "
                       "(`docket keys add NAME --principal P --admin`)", "authorization")
    return ident


def owner_of(ident: Identity) -> str | None:
    """Who may read a brief's trace page: the key that asked (its digest, so a key re-issued
    under the same name and principal is someone else), or nobody for an anonymous caller
    (anonymous callers are not one person; their briefs get no trace page)."""
    return f"key:{ident.key.digest}" if ident.key is not None and ident.key.digest else None


__all__ = ["Identity", "admin", "bearer_token", "identity", "owner_of"]
