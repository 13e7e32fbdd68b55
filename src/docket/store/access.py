"""Access control: who is asking, what a chunk's `acl` means, and the one rule every path applies.

Users and groups are separate namespaces. An acl entry is `user:NAME` (that user), `group:NAME`
(members of that group) or a plain `NAME`, which is read as `group:NAME`: a plain entry never
lets a user in by name, so nobody can read a group's chunks by calling himself like the group.
No `acl` = public; an empty acl = nobody; a principal reads a chunk when one of its keys
(`user:` its name, `group:` each of its groups) is listed. Without a principal, only public chunks.

Stores keep acl entries in the typed form. When they write a plain entry (and when they migrate
a store written before users and groups were apart) they resolve it with their principals table:
a plain entry that names a registered user and no registered group was meant for that user and
becomes `user:NAME`; every other plain entry becomes `group:NAME`. `resolve_acl` is that rule,
and it says what it did, so an index run can report it instead of losing access silently.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import TYPE_CHECKING

from docket.errors import InputError

if TYPE_CHECKING:
    from docket.model import Candidate, Chunk

USER = "user:"
GROUP = "group:"


def _clean_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty name, got {value!r}", field=what)
    if value != value.strip() or any(ch in value for ch in "\r\n\t\x00"):
        raise InputError(f"must not have surrounding spaces or control characters, got {value!r}", field=what)
    return value


@dataclass(frozen=True)
class Principal:
    """Who is asking: a user name and the groups it belongs to (authentication is the caller's job:
    the service maps an API key to one of these). `Principal("user:ann")` is the same as
    `Principal("ann")`; group names may be given with or without `group:`."""

    name: str
    groups: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        name = _clean_name(self.name, "principal")
        if name.lower().startswith(GROUP):
            raise InputError(f"is a group ({name!r}); a principal is a user: give the group in its groups",
                             field="principal")
        if name.lower().startswith(USER):
            name = _clean_name(name[len(USER):], "principal")
        groups = set()
        for g in self.groups if not isinstance(self.groups, str) else (self.groups,):
            g = _clean_name(g, "groups")
            if g.lower().startswith(USER):
                raise InputError(f"{g!r} is a user, not a group", field="groups")
            if g.lower().startswith(GROUP):
                g = _clean_name(g[len(GROUP):], "groups")
            groups.add(g)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "groups", frozenset(groups))

    @property
    def keys(self) -> frozenset[str]:
        """The typed acl entries that grant this principal access."""
        return frozenset({USER + self.name}) | frozenset(GROUP + g for g in self.groups)

    @property
    def names(self) -> frozenset[str]:
        """Alias of `keys` (the name before users and groups were separated)."""
        return self.keys


def entry_key(entry: str) -> str:
    """The typed form of one acl entry: `user:x` and `group:x` as given (prefix lower-cased),
    a plain `x` as `group:x`."""
    low = entry.lower()
    for prefix in (USER, GROUP):
        if low.startswith(prefix):
            return prefix + entry[len(prefix):]
    return GROUP + entry


def check_acl(acl: Sequence[str]) -> tuple[str, ...]:
    """Validate acl entries (non-empty names, a typed entry has a name after its prefix)."""
    out = []
    for e in acl:
        if not isinstance(e, str) or not e.strip():
            raise ValueError(f"entries must be non-empty names, got {e!r}")
        key = entry_key(e)
        if not key.split(":", 1)[1].strip():
            raise ValueError(f"entry {e!r} has no name after its prefix (write user:NAME or group:NAME)")
        out.append(e)
    return tuple(out)


def may_read(principal: Principal | None, acl: Sequence[str] | None) -> bool:
    """The one ACL rule (mirrored by every backend's queries): no acl = public; an empty acl =
    nobody; otherwise one of the principal's keys must be listed. No principal = anonymous."""
    if acl is None:
        return True
    if principal is None:
        return False
    keys = principal.keys
    return any(entry_key(e) in keys for e in acl)


def readable(candidates: Iterable[Candidate], principal: Principal | None) -> list[Candidate]:
    """The candidates `principal` may read, in their order (a public chunk, no acl, without a call).

    A ranking numbered by position (ranks 1..n, as every docket retriever and the service's
    candidate lists give) is numbered again among the readable ones: a readable candidate
    ranked 2 under a restricted one would tell its reader, in the trace and the source map,
    that something ranked above it. Ranks a caller chose otherwise are kept as given."""
    given = list(candidates)
    if all(map(operator.is_, map(_ACL, map(_CHUNK, given)), repeat(None))):
        return given  # every chunk public (the common case): no Python step per candidate
    kept = [c for c in given if c.chunk.acl is None or may_read(principal, c.chunk.acl)]
    if len(kept) == len(given) or any(c.rank != n for n, c in enumerate(given, 1)):
        return kept
    return [c if c.rank == n else replace(c, rank=n) for n, c in enumerate(kept, 1)]


_ACL, _CHUNK = operator.attrgetter("acl"), operator.attrgetter("chunk")


def readable_chunks(chunks: Iterable[Chunk], principal: Principal | None) -> list[Chunk]:
    return [c for c in chunks if may_read(principal, c.acl)]


@dataclass
class AclResolution:
    """What `resolve_acl` did with plain entries, for the index report (sorted names)."""

    as_user: set[str] = field(default_factory=set)  # plain entries read as a registered user
    as_group: set[str] = field(default_factory=set)  # plain entries read as a group
    ambiguous: set[str] = field(default_factory=set)  # registered as a user and as a group: read as the group

    def update(self, other: AclResolution) -> None:
        self.as_user |= other.as_user
        self.as_group |= other.as_group
        self.ambiguous |= other.ambiguous

    def __bool__(self) -> bool:
        return bool(self.as_user or self.as_group or self.ambiguous)

    def to_json(self) -> dict[str, list[str]]:
        return {"as_user": sorted(self.as_user), "as_group": sorted(self.as_group), "ambiguous": sorted(self.ambiguous)}


@dataclass(frozen=True)
class Registry:
    """The store's principals table, as far as resolving plain acl entries needs it."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    @classmethod
    def of(cls, rows: Iterable[tuple[str, Iterable[str]]]) -> Registry:
        users: set[str] = set()
        groups: set[str] = set()
        for name, gs in rows:
            users.add(name)
            groups.update(gs)
        return cls(frozenset(users), frozenset(groups))


def resolve_acl(acl: Sequence[str] | None, registry: Registry,
                note: AclResolution | None = None) -> tuple[str, ...] | None:
    """The typed, sorted, de-duplicated form a store keeps (see the module docstring)."""
    if acl is None:
        return None
    out: set[str] = set()
    for e in acl:
        low = e.lower()
        if low.startswith((USER, GROUP)):
            out.add(entry_key(e))
            continue
        if e in registry.users and e not in registry.groups:
            out.add(USER + e)
            if note is not None:
                note.as_user.add(e)
        else:
            out.add(GROUP + e)
            if note is not None:
                (note.ambiguous if e in registry.users else note.as_group).add(e)
    return tuple(sorted(out))


__all__ = ["AclResolution", "GROUP", "Principal", "Registry", "USER", "check_acl", "entry_key", "may_read",
           "readable", "readable_chunks", "resolve_acl"]
