"""Errors docket raises on bad input.

Every error names the record (file, line or id) and the field at fault, so the CLI can print
one line and exit 2 instead of a traceback.
"""

from __future__ import annotations


class DocketError(Exception):
    """Base class: a problem the user can fix, reported as one line."""


class InputError(DocketError):
    """A chunk, candidate, policy or argument is malformed."""

    def __init__(self, message: str, *, where: str | None = None, field: str | None = None):
        self.where = where
        self.field = field
        self.detail = message
        parts = []
        if where:
            parts.append(where)
        if field:
            # command-line options and arguments read as such; record fields as fields
            kind = "option" if field.startswith("-") else "argument" if field.isupper() else "field"
            parts.append(f"{kind} '{field}'")
        prefix = ", ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnavailableError(DocketError):
    """A backend (model, server, package) that a feature needs is not installed or not reachable."""
