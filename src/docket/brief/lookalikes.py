"""Characters a reader may take for a format's structural characters, from Unicode's own table.

A fence is only as good as its reader: a model, or a careless parser, may read `‹` as `<`, `∶`
as `:` or `“` as `"`. Each output format names the characters that are structural in it
(brief/formats.py); this module gives, for each, every other code point that looks like it:

* the characters Unicode's confusables data (UTS #39, shipped by the maintained
  `confusable-homoglyphs` package) maps to the same prototype: `‹ ❮ ˂ ᐸ` for `<`, `∶ ꞉ ː` for `:`;
* the characters whose compatibility decomposition (NFKD, combining marks dropped) holds the
  character or one of those: `＜`, `﹤`, `≮` (`<` + U+0338), `⩴` (`::=`);
* EXTRA: characters UTS #39 files under another prototype although they read as the
  character (the angle brackets `⟨ 〈 〈 ❬`, which it maps to the ornament `❬`, not to `<`; the
  box-drawing and dental-click verticals for `|`).

One exception keeps ordinary text intact: `|`'s prototype is the letter `l`, so its UTS #39
class is every `l`, `I` and `1` in many scripts (Hebrew vav, Arabic alef, Greek iota). For a
character whose prototype is a letter or digit only the class members that are not letters or
digits count (`׀ ∣ ￨ ⏽`), plus EXTRA.

The result is written to brief/_lookalikes_data.py (`python -m docket.brief.lookalikes` writes
it; tests/test_lookalikes.py checks it still matches the installed data), so a prompt does not
depend on the Python version's Unicode tables or on the data package being importable, and no
brief pays for building the table.
"""

from __future__ import annotations

import unicodedata
from functools import cache

#: read as the character though UTS #39 gives them another prototype (see the module docstring)
EXTRA: dict[str, str] = {
    "<": "\u2329\u3008\u27e8\u276c\u2770\u29fc\ufe3f",
    ">": "\u232a\u3009\u27e9\u276d\u2771\u29fd\ufe40",
    "|": "\u01c0\u2502\u2503",
}

_BIDI_MARKS = "\u200e\u200f"  # the data wraps right-to-left characters in LRMs for display


@cache
def _table() -> dict[str, list[str]]:
    from confusable_homoglyphs.utils import load  # type: ignore[import-untyped,import-not-found,unused-ignore]

    raw = load("confusables.json")
    out: dict[str, list[str]] = {}
    for key, entries in raw.items():
        out[key.strip(_BIDI_MARKS)] = [str(e["c"]).strip(_BIDI_MARKS) for e in entries]
    return out


def _fold(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _letter_or_digit(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


def _prototype_is_text(char: str) -> bool:
    """True when UTS #39 maps `char` to a letter or digit (`|` -> `l`)."""
    homes = _table().get(char, [])
    return len(homes) == 1 and len(homes[0]) == 1 and homes[0].isascii() and homes[0].isalnum()


@cache
def uts39_class(char: str) -> frozenset[str]:
    """Single code points UTS #39 gives the same prototype as `char` (without `char`)."""
    table = _table()
    seen: set[str] = set()
    for a in table.get(char, []):  # the data links each character to its prototype and back: two steps
        seen.add(a)
        seen.update(table.get(a, []))
    members = {c for c in seen if len(c) == 1 and c != char and not c.isascii()}
    if _prototype_is_text(char):
        members = {c for c in members if not _letter_or_digit(c)}
    return frozenset(members)


@cache
def _all_decomposing() -> dict[str, str]:
    """Every non-ASCII code point whose NFKD (marks dropped) differs from itself -> that folding."""
    out: dict[str, str] = {}
    for cp in range(0x80, 0x110000):
        ch = chr(cp)
        if unicodedata.decomposition(ch):  # cheap; NFKD only where there is something to decompose
            f = _fold(ch)
            if f != ch:
                out[ch] = f
    return out


def build(char: str) -> frozenset[str]:
    """`lookalikes(char)` computed afresh from the installed UTS #39 data and Unicode tables."""
    if len(char) != 1 or not char.isascii():
        raise ValueError(f"a structural character is one ASCII character, got {char!r}")
    base = set(uts39_class(char)) | set(EXTRA.get(char, ""))
    near = base | {char}
    for ch, f in _all_decomposing().items():
        if any(c in near for c in f):
            base.add(ch)
    base.discard(char)
    return frozenset(base)


#: the characters that are structural in some registered format (brief/formats.py says which where)
STRUCTURAL = "<>&\"'=|:{}\\,"


@cache
def lookalikes(char: str) -> frozenset[str]:
    """Every code point other than `char` a reader may take for it (see the module docstring)."""
    from docket.brief._lookalikes_data import TABLE

    try:
        return frozenset(TABLE[char])
    except KeyError:
        raise ValueError(f"{char!r} is not a structural character of any format ({STRUCTURAL})") from None


def weight(ch: str, char: str) -> int:
    """How many `char`s a reader sees in `ch` (`⩶` is three `=`): 1 for a plain look-alike."""
    near = lookalikes(char) | {char}
    return max(1, sum(1 for c in _fold(ch) if c in near)) if ch in near else 0


def fold_map(chars: str) -> dict[str, str]:
    """Look-alike -> the structural character it imitates, for every character of `chars` (a
    look-alike of two, such as `⩴` for `:` and `=`, goes to the first of `chars` it holds)."""
    out: dict[str, str] = {}
    for c in reversed(chars):
        for x in lookalikes(c):
            out[x] = c
    return out


def fold(text: str, chars: str) -> str:
    """`text` as a careless reader sees it: NFKD with marks dropped, then every look-alike of
    `chars` read as the character itself (what the fence tests' lenient readers do)."""
    m = fold_map(chars)
    return "".join(m.get(ch, ch) for ch in _fold("".join(m.get(ch, ch) for ch in text)))


def render_data() -> str:
    """The text of brief/_lookalikes_data.py for the installed data."""
    from importlib.metadata import version

    lines = ['"""Generated by `python -m docket.brief.lookalikes` from confusable-homoglyphs '
             f'{version("confusable-homoglyphs")} (UTS #39)',
             f'and Unicode {unicodedata.unidata_version} NFKD, plus lookalikes.EXTRA. Do not edit."""', "",
             "TABLE: dict[str, str] = {"]
    for c in STRUCTURAL:
        chars = "".join(sorted(build(c)))
        lines.append(f"    {c!r}: {ascii(chars)},")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import pathlib

    target = pathlib.Path(__file__).with_name("_lookalikes_data.py")
    target.write_text(render_data(), encoding="utf-8")
    print(f"wrote {target}")
