"""Text hygiene shared by every output format: invisible characters out, whitespace folded,
untrusted text datamarked.

Pure string functions with no dependency on the policy or the model, so the format registry
(and the policy, which validates format names against it) can import them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# characters that render as nothing (or move text around) but still reach the model
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")
_NONCHAR = re.compile("[\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe\U0004ffff"
                      "\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
                      "\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff"
                      "\U000dfffe\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]")


@lru_cache(maxsize=1 << 15)  # a pure function of the text; every retrieved passage is cleaned again
def sanitize(text: str) -> tuple[str, int]:
    """Remove invisible and control characters; return the clean text and how many were removed.

    Line and paragraph separators become newlines; CR/LF pairs become one newline. Any other
    code point of the Unicode "format" category (Cf) is removed too. After this, "\\n" is the
    only line break left (every other one Python's `splitlines` knows is removed or converted).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    before = len(text)
    if text.isascii():  # the common case: only C0 controls can hide here
        text = _CONTROL.sub("", text)
        return text, before - len(text)
    if (text.replace("\n", " ").replace("\t", " ").replace("\u00a0", " ").isprintable()
            and _INVISIBLE.search(text) is None):
        # nothing to remove: every removed character but _INVISIBLE's is a control, a surrogate,
        # a non-character or of category Cf, none of which str.isprintable accepts (a C-speed test
        # instead of three substitutions and a translation per character); the line break, the
        # tab and the no-break space (common in web text) are kept, so they do not count
        return text, 0
    text = _INVISIBLE.sub("", text)
    text = _CONTROL.sub("", text)
    text = _NONCHAR.sub("", text)
    text = text.translate(_DROP_FORMAT)
    return text, before - len(text)


class _DropFormat(dict):  # type: ignore[type-arg]
    """str.translate table: code point -> None for the Unicode "format" category (Cf), itself
    otherwise, filled on first sight of each code point (at most 65,536 remembered), so removing
    them runs at C speed instead of a Python test per character (docket.text._DropMarks does the
    same for accents)."""

    def __missing__(self, cp: int) -> int | None:
        out = None if unicodedata.category(chr(cp)) == "Cf" else cp
        if len(self) < 1 << 16:
            self[cp] = out
        return out


_DROP_FORMAT = _DropFormat()


_WHITESPACE = re.compile(r"\s+")


def one_line(value: str, limit: int | None = None) -> str:
    """A header value: sanitised, every run of whitespace (newlines included) one space, cut to
    `limit` characters with an ellipsis."""
    value, _ = sanitize(value)
    value = _WHITESPACE.sub(" ", value).strip()
    if limit is not None and len(value) > limit:
        value = value[: limit - 1].rstrip() + "…"
    return value


#: the datamarking character (U+02C6, as in Hines et al.): it replaces every space of an untrusted
#: passage, so the model can tell outsiders' text from official text on every line
MARK = "\u02c6"

# every kind of space but the line break: Python's \s knows NBSP, OGHAM SPACE MARK, U+2000-U+200A,
# NARROW NBSP, MEDIUM MATHEMATICAL SPACE, IDEOGRAPHIC SPACE; BRAILLE PATTERN BLANK renders as one too
_SPACES = re.compile("(?:[^\\S\n]|\u2800)+")
# scripts written without spaces between words: Han, kana, bopomofo, CJK punctuation, full-width forms
_CJK = ("\u2e80-\u2fdf\u3001-\u303f\u3040-\u30ff\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
        "\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f")
_HAS_CJK = re.compile(f"[{_CJK}]")
# combining marks that may follow a CJK character (kana voicing, tone marks, generic diacritics)
_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u302a-\u302f\u3099\u309a"
_CJK_GAP = re.compile(f"(?<=[{_CJK}])(?=[^\\s{MARK}{_COMBINING}])|(?<=[^\\s{MARK}])(?![{_COMBINING}])(?=[{_CJK}])")
_UNMARKED_LINE = re.compile(f"^(?=[^\n])(?![^\n]*{MARK})", re.M)


def datamark(text: str) -> str:
    """Spotlighting for untrusted text (Hines et al., 2024): a continuous mark of where it came from.

    - every run of whitespace of any kind (space, tab, NBSP, EM SPACE, ideographic space, ...)
      except the line break becomes MARK;
    - text in a script written without spaces (Chinese, Japanese) gets MARK between every two
      characters, where English gets one between words; a combining mark stays on its letter;
    - a line that still has no MARK (one word, or a space-less script such as Thai) starts with
      one, so every non-empty line of an untrusted passage carries the mark.
    """
    text = _SPACES.sub(MARK, text)
    if _HAS_CJK.search(text):
        text = _CJK_GAP.sub(MARK, text)
    return _UNMARKED_LINE.sub(MARK, text)
