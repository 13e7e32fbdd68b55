"""What a chunk's `status` means: the words docket knows, and how a spelling is read as one.

A status decides whether a rule is in force (Move 1) and whether text is a stranger's (Move 8),
so a spelling must not slip past the vocabulary: `Retired `, `SUPERSEDED`, `user_submitted`,
`user submitted`, `ｒｅｔｉｒｅｄ` (fullwidth), `rеtired` (a Cyrillic `е`), `ret\u200bired` (a
zero-width space) and `superseded by v4` are all read as the word they spell (`status_word`). The
record keeps the status it was given (shown on the passage's tag); only what it *means* is read
through the folding:

1. compatibility forms (NFKD: fullwidth, mathematical letters, ligatures) and combining marks
   dropped; invisible format characters (zero-width, soft hyphen, bidi marks) removed;
2. letters of other scripts that Unicode's confusables data (UTS #39) gives a Latin letter as
   prototype read as that letter (`LATIN_LOOKALIKES`, generated: `python -m docket.statuses`);
3. lower case, and every run of spaces, underscores, dashes and punctuation one `-`.

A folded status that is a known word means that word. Otherwise the words it holds decide, the
safe way first: a retired word anywhere (`superseded-by-v4`, `archived 2024`, `active until
replaced`) retires it unless a negation stands right before it (`approved, not draft`); a negated
word of force (`no longer current`, `not active`, `unpublished`, `invalid`) retires it too
(`unofficial`, `non-official` read as `unverified`, a stranger's); a stranger's word
(`user submitted content`) marks it untrusted. A negated retired word (`not superseded`) and
anything else stays unknown: read as in force and trusted, and said in Move 1's trace.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from docket._latin_lookalikes import TABLE as LATIN_LOOKALIKES

#: Statuses that mean "this version is no longer (or not yet) the rule".
RETIRED_STATUSES = frozenset({
    "superseded", "archived", "withdrawn", "retired", "deprecated", "draft",
    # the same in other words: a store's own vocabulary must not let an expired rule pass as current
    "obsolete", "expired", "revoked", "rescinded", "repealed", "replaced", "inactive", "outdated", "cancelled",
    "canceled", "void", "sunset", "retracted", "proposed"})
#: Statuses that mark text written by people outside the organisation.
UNTRUSTED_STATUSES = frozenset({"user-generated", "ugc", "external", "community", "user-submitted",
                                "user-contributed", "third-party", "unverified"})
#: Statuses read as "in force and trusted", like "current"; any status outside these three sets is
#: read the same way, and Move 1's trace says so (a typo must not pass silently)
CURRENT_STATUSES = frozenset({"current", "active", "published", "in-force", "in force", "approved", "final",
                              "official", "live", "valid", "effective", "latest", "derived"})
KNOWN_STATUSES = RETIRED_STATUSES | UNTRUSTED_STATUSES | CURRENT_STATUSES

#: words that turn a status word around ("not current", "no longer active", "non-official")
NEGATIONS = frozenset({"not", "no", "non", "never", "un", "nor", "none"})

#: ... and the prefixes that do it inside one word ("unpublished", "nonfinal", "invalid")
_PREFIXES = ("non", "un", "in", "not")

_LOOKALIKE = str.maketrans(LATIN_LOOKALIKES)
_SEPARATORS = re.compile(r"[\W_]+")


def fold_status(status: str) -> str:
    """The status as its letters read: compatibility forms, marks and invisible characters gone,
    look-alike letters read as Latin ones, lower case, separators as single dashes."""
    s = unicodedata.normalize("NFKD", status.translate(_LOOKALIKE))
    s = "".join(ch for ch in s if not unicodedata.combining(ch) and unicodedata.category(ch) != "Cf")
    s = unicodedata.normalize("NFKC", s).casefold().translate(_LOOKALIKE)
    return _SEPARATORS.sub("-", s).strip("-")


def _key(word: str) -> str:
    return _SEPARATORS.sub("-", word).strip("-")


#: folded spelling -> the known word (both "in force" and "in-force" fold to "in-force")
_BY_KEY = {_key(w): w for w in sorted(KNOWN_STATUSES)}
#: ... and without its separators, for a status written as one word ("usergenerated", "UserSubmitted",
#: "user\u00adgenerated" once the soft hyphen is gone)
_BY_COMPACT = {k.replace("-", ""): w for k, w in _BY_KEY.items()}


@lru_cache(maxsize=4096)
def status_word(status: str) -> str | None:
    """The known status word `status` reads as (see the module docstring), or None."""
    if status in KNOWN_STATUSES:
        return status
    folded = fold_status(status)
    known = _BY_KEY.get(folded) or _BY_COMPACT.get(folded.replace("-", ""))
    if known is not None:
        return known
    tokens = folded.split("-")
    for part in set(tokens):  # one word negating a word of force: "unpublished", "nonfinal", "invalid", "unofficial"
        for prefix in _PREFIXES:
            if part.startswith(prefix) and part[len(prefix):] in CURRENT_STATUSES:
                return "unverified" if part[len(prefix):] == "official" else "inactive"
    # a word right after a negation ("not", "no longer", "not yet") is turned around: "not superseded"
    # retires nothing, "not current" and "no longer active" retire, "non-official" is a stranger's
    negated = {k + 1 for k, t in enumerate(tokens) if t in NEGATIONS}
    negated |= {k + 2 for k, t in enumerate(tokens[:-1]) if t in NEGATIONS and tokens[k + 1] in ("longer", "yet")}
    for word in sorted(RETIRED_STATUSES):
        if any(k not in negated for k in _starts(tokens, word)):
            return word
    for word in sorted(CURRENT_STATUSES):
        if any(k in negated for k in _starts(tokens, word)):
            return "unverified" if word == "official" else "inactive"  # "not current", "no longer active": not the rule
    for word in sorted(UNTRUSTED_STATUSES):
        if any(k not in negated for k in _starts(tokens, word)):
            return word
    return None


def _starts(tokens: list[str], word: str) -> list[int]:
    """Where the (dash-joined) word begins as whole tokens of the folded status."""
    parts = _key(word).split("-")
    n = len(parts)
    return [k for k in range(len(tokens) - n + 1) if tokens[k:k + n] == parts]


def _reads_as(status: str, words: frozenset[str]) -> bool:
    """`status_word(status) in words`, a known word tested without the call (chunks are asked per
    passage: most hold one of the known words as written)."""
    return status in words or (status not in KNOWN_STATUSES and status_word(status) in words)


def is_retired(status: str) -> bool:
    """The status means the version is not (or not yet) the rule."""
    return _reads_as(status, RETIRED_STATUSES)


def is_untrusted(status: str) -> bool:
    """The status marks a stranger's text."""
    return _reads_as(status, UNTRUSTED_STATUSES)


_DRAFT = frozenset({"draft"})


def is_draft(status: str) -> bool:
    return _reads_as(status, _DRAFT)


# --- the look-alike table (generated) -----------------------------------------------------------


def build_table() -> dict[str, str]:
    """Every non-ASCII character that UTS #39 gives one Latin letter as prototype, and that NFKD
    (marks dropped) does not already turn into ASCII -> that letter, lower case. Needs the
    `confusable-homoglyphs` package (a test dependency)."""
    from confusable_homoglyphs.utils import load  # type: ignore[import-untyped,import-not-found,unused-ignore]

    out: dict[str, str] = {}
    for key, entries in load("confusables.json").items():
        ch = key.strip("\u200e\u200f")
        if len(ch) != 1 or ch.isascii():
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        if plain.isascii():
            continue
        for e in entries:
            proto = str(e["c"]).strip("\u200e\u200f")
            if len(proto) == 1 and proto.isascii() and proto.isalpha():
                out[ch] = proto.lower()
    return dict(sorted(out.items()))


def render_table() -> str:
    from importlib.metadata import version

    chars = build_table()
    lines = ['"""Generated by `python -m docket.statuses` from confusable-homoglyphs '
             f'{version("confusable-homoglyphs")} (UTS #39)',
             f'and Unicode {unicodedata.unidata_version} NFKD: look-alike letter -> the Latin letter. Do not edit."""', "",
             "TABLE: dict[str, str] = {"]
    by_letter: dict[str, list[str]] = {}
    for ch, letter in chars.items():
        by_letter.setdefault(letter, []).append(ch)
    lines.append("    **dict.fromkeys(" + "),\n    **dict.fromkeys(".join(
        f"{ascii(''.join(v))}, {k!r}" for k, v in sorted(by_letter.items())) + "),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import pathlib

    target = pathlib.Path(__file__).with_name("_latin_lookalikes.py")
    target.write_text(render_table(), encoding="utf-8")
    print(f"wrote {target}")
