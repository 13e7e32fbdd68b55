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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "principal": self.principal, "groups": list(self.groups), "admin": self.admin,
                "created": self.created, "hint": self.hint}


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
        return (st.st_mtime_ns, st.st_size)

    def _load(self) -> None:
        stamp = self._file_stamp()
        if stamp is None:
            self._entries, self._by_digest, self._stamp = [], {}, None
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot be read ({e})", where=str(self.path)) from None
        except json.JSONDecodeError as e:
            raise InputError(f"is not valid JSON ({e.msg} at line {e.lineno})", where=str(self.path)) from None
        entries = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise InputError("must be an object with a 'keys' list (written by `docket keys add`)", where=str(self.path),
                             field="keys")
        by_digest: dict[str, ApiKey] = {}
        for i, entry in enumerate(entries):
            loc = f"{self.path} (keys[{i}])"
            if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str) \
                    or not isinstance(entry.get("principal"), str):
                raise InputError("needs 'name', 'principal' and 'sha256'", where=loc)
            groups = entry.get("groups", [])
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                raise InputError("must be a list of strings", where=loc, field="groups")
            by_digest[entry["sha256"]] = ApiKey(
                name=str(entry.get("name", "")), principal=entry["principal"], groups=tuple(groups),
                admin=bool(entry.get("admin", False)), created=str(entry.get("created", "")),
                hint=str(entry.get("hint", "")))
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

    def _write(self, entries: list[dict[str, Any]]) -> None:  # noqa: D401
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".keys-", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"version": 1, "keys": entries}, fh, indent=2)
                fh.write("\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._load()


__all__ = ["ApiKey", "KeyFile", "digest"]
