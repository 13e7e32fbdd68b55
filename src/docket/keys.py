"""API keys for the service: who is asking comes from the key, never from the request.

A key file (JSON) lists named keys, each bound to a principal, its groups and an admin flag.
Only the SHA-256 of each key is stored: a key is 32 random bytes, so a plain hash cannot be
brute-forced and a leaked file gives no usable key. `add` returns the key once; it cannot be
shown again (remove it and add a new one). Lookups compare digests in constant time. The file
is re-read when it changes, so `docket keys add` takes effect without restarting the server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docket.errors import InputError

PREFIX = "dk_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


@dataclass(frozen=True)
class ApiKey:
    """One key's identity (never the key itself)."""

    name: str
    principal: str
    groups: tuple[str, ...] = ()
    admin: bool = False
    created: str = ""
    #: the first characters of the key, to tell keys apart in a listing
    hint: str = ""
    #: the SHA-256 of the key: what a trace is bound to, so a re-issued key with the same name
    #: and principal is another owner
    digest: str = field(default="", repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "principal": self.principal, "groups": list(self.groups), "admin": self.admin,
                "created": self.created, "hint": self.hint}


class _Entry(BaseModel):
    """One key as the file stores it. Strict: `"admin": "false"` is not a boolean, so it is refused
    rather than read as a truthy string; an unknown field is a typo, refused as well."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(pattern=_NAME.pattern)
    principal: str = Field(pattern=_NAME.pattern)
    groups: list[str] = Field(default_factory=list)
    admin: bool = False
    created: str = ""
    hint: str = Field("", max_length=16)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1] = 1
    keys: list[_Entry]


def _problem(err: ValidationError) -> tuple[str, str]:
    """(where in the file, what is wrong) of the first error pydantic found, in one line."""
    first = err.errors()[0]
    loc = [p for p in first.get("loc", ())]
    path = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
    kind, value = first.get("type", ""), first.get("input")
    if kind == "extra_forbidden":
        return path, "is not a field of a key file (written by `docket keys add`; check the spelling)"
    if kind == "missing":
        return path, "is missing"
    if kind == "bool_type":
        return path, f"must be true or false (a JSON boolean, not a string or number), got {json.dumps(value)}"
    if kind == "string_pattern_mismatch" and path.endswith("sha256"):
        return path, "must be the 64 hex digits of the key's SHA-256"
    shown = json.dumps(value)[:60] if isinstance(value, str | int | float | bool) or value is None else type(value).__name__
    return path, f"{first.get('msg', 'is invalid')} (got {shown})"


def parse_key_file(path: Path) -> tuple[list[dict[str, Any]], dict[str, ApiKey]]:
    """The entries and the keys by digest, or an InputError of one line naming the file and the
    key (its name when it has one, else its position) at fault."""
    from docket.safeio import load_json

    data = load_json(path)  # unreadable, not UTF-8, invalid JSON, nested too deep: one line each
    try:
        parsed = _File.model_validate(data)
    except ValidationError as e:
        where, what = _problem(e)
        raw = data.get("keys") if isinstance(data, dict) else None
        first = e.errors()[0].get("loc", ())
        if len(first) >= 2 and first[0] == "keys" and isinstance(first[1], int) and isinstance(raw, list):
            entry = raw[first[1]]
            name = entry.get("name") if isinstance(entry, dict) else None
            who = f"key {name!r}" if isinstance(name, str) and _NAME.match(name) else f"keys[{first[1]}]"
            fld = ".".join(str(p) for p in first[2:]) or None
            raise InputError(what, where=f"{path} ({who})", field=fld) from None
        raise InputError(what, where=str(path), field=where or None) from None
    by_digest: dict[str, ApiKey] = {}
    names: set[str] = set()
    for k in parsed.keys:
        for g in k.groups:
            if not _NAME.match(g):
                raise InputError(f"must be 1-64 letters, digits or _.@-, got {g!r}", where=f"{path} (key {k.name!r})",
                                 field="groups")
        if k.name in names:
            raise InputError("appears twice; key names are unique", where=f"{path} (key {k.name!r})", field="name")
        if k.sha256 in by_digest:
            raise InputError("is the digest of another key too", where=f"{path} (key {k.name!r})", field="sha256")
        names.add(k.name)
        by_digest[k.sha256] = ApiKey(name=k.name, principal=k.principal, groups=tuple(k.groups), admin=k.admin,
                                     created=k.created, hint=k.hint, digest=k.sha256)
    return [k.model_dump() for k in parsed.keys], by_digest


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_name(value: str, field: str) -> str:
    if not _NAME.match(value or ""):
        raise InputError(f"must be 1-64 letters, digits or _.@- (starting with a letter or digit), got {value!r}",
                         field=field)
    return value


class KeyFile:
    """The key file at `path` (created on the first `add`)."""

    def __init__(self, path: str | Path, *, check_every: float = 1.0) -> None:
        self.path = Path(path)
        self.check_every = check_every
        self._lock = threading.Lock()
        self._by_digest: dict[str, ApiKey] = {}
        self._entries: list[dict[str, Any]] = []
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._load()

    # --- reading ----------------------------------------------------------------------------
    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise InputError(f"cannot be read ({e.strerror or e})", where=str(self.path)) from None
        return (st.st_mtime_ns, st.st_size)

    def _load(self) -> None:
        stamp = self._file_stamp()
        if stamp is None:
            self._entries, self._by_digest, self._stamp = [], {}, None
            return
        entries, by_digest = parse_key_file(self.path)
        self._entries, self._by_digest, self._stamp = entries, by_digest, stamp

    def _fresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < self.check_every:
            return
        with self._lock:
            self._checked = now
            if self._file_stamp() != self._stamp:
                self._load()

    def verify(self, token: str) -> ApiKey | None:
        """The key's identity, or None for an unknown key."""
        self._fresh()
        d = digest(token)
        found = None
        for known, key in self._by_digest.items():  # constant time per entry: no early exit on a prefix
            if hmac.compare_digest(known, d):
                found = key
        return found

    def keys(self) -> list[ApiKey]:
        self._fresh()
        return sorted(self._by_digest.values(), key=lambda k: k.name)

    def __len__(self) -> int:
        self._fresh()
        return len(self._by_digest)

    # --- writing ----------------------------------------------------------------------------
    def add(self, name: str, principal: str, groups: tuple[str, ...] = (), *, admin: bool = False) -> str:
        """Create a key and return it (the only time it is visible)."""
        _check_name(name, "NAME")
        _check_name(principal, "--principal")
        groups = tuple(dict.fromkeys(_check_name(g, "--groups") for g in groups))
        with self._lock:
            self._load()
            if any(e.get("name") == name for e in self._entries):
                raise InputError(f"a key named {name!r} exists; remove it first (`docket keys remove {name}`)",
                                 where=str(self.path), field="NAME")
            token = PREFIX + secrets.token_urlsafe(32)
            entry = {"name": name, "principal": principal, "groups": list(groups), "admin": admin,
                     "created": datetime.now(UTC).isoformat(timespec="seconds"), "hint": token[:7],
                     "sha256": digest(token)}
            self._write(self._entries + [entry])
        return token

    def remove(self, name: str) -> bool:
        with self._lock:
            self._load()
            rest = [e for e in self._entries if e.get("name") != name]
            if len(rest) == len(self._entries):
                return False
            self._write(rest)
        return True

    def _write(self, entries: list[dict[str, Any]]) -> None:
        """Atomically, mode 0600 from the first byte (mkstemp), whatever the umask."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".keys-", dir=str(folder))
        except OSError as e:
            raise InputError(f"cannot write the key file in {folder} ({e.strerror or e}); choose a folder you may "
                             "write to with --keys", where=str(self.path)) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": 1, "keys": entries}, fh, indent=2)
                fh.write("\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise InputError(f"cannot write the key file ({e.strerror or e})", where=str(self.path)) from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._load()


__all__ = ["ApiKey", "KeyFile", "digest", "parse_key_file"]
