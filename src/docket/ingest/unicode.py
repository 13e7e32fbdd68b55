"""Invisible-Unicode removal.

Zero-width characters, Unicode tag characters (U+E0000-U+E007F, "ASCII smuggling") and bidi
controls render as nothing or reorder what a reviewer sees, yet a model reads them: they are how a
stranger hides instructions in text that looks clean. They carry no meaning a prompt needs, so
they are removed from every text docket indexes, and each removal is counted for the report.
"""

from __future__ import annotations

import re
from collections import Counter

#: zero-width and invisible formatting characters (not the ordinary space or newline)
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad\u034f\u115f\u1160\u3164\uffa0"
#: bidirectional controls: embeddings, overrides, isolates and the implicit marks
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"

_ZW_RE = re.compile(f"[{ZERO_WIDTH}]")
_BIDI_RE = re.compile(f"[{BIDI}]")
_TAG_RE = re.compile("[\U000e0000-\U000e007f]")

#: report keys, stable so tests and users can rely on them
KINDS = ("zero_width_chars", "unicode_tag_chars", "bidi_controls")


def strip_invisible(text: str, counts: Counter[str] | None = None) -> str:
    """`text` without invisible characters; adds how many of each kind went to `counts`."""
    out = text
    for kind, rx in (("zero_width_chars", _ZW_RE), ("unicode_tag_chars", _TAG_RE), ("bidi_controls", _BIDI_RE)):
        out, n = rx.subn("", out)
        if n and counts is not None:
            counts[kind] += n
    return out
