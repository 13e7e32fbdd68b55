"""What the CLI prints to a terminal never carries a control sequence from the data.

Chunk ids, doc ids, titles, source types, file names and reasons come from the documents (a file
named `refund\\e[2J\\e[H\\e]0;owned\\e\\\\.md` would clear the operator's screen and set the window
title). Every printer writes data through one of these:

* `safe(value)`: the text with every C0 control but newline and tab, DEL, every C1 control,
  the bidirectional overrides, embeddings, isolates and marks, and the line and paragraph
  separators written as visible Python-style escapes (`\\x1b`, `\\u202e`), so an operator sees
  that they were there and nothing acts on them;
* `show(value)`: `safe`, then Rich's markup escaped (what goes into a table cell or a line);
* `console()`: a Rich console (SafeConsole) that applies `safe` to the text of everything it renders as
  well (Rich's own styling is not text and is untouched), the net under every printer;
* `json_text(obj)`: JSON for stdout with the characters `json.dumps` leaves raw (C1, bidi,
  separators) written as \\u escapes: the same data, nothing a terminal acts on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    cp = ord(m.group(0))
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


def safe(value: object) -> str:
    """`value` as text with every control character written as a visible escape."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_visible, text)


def show(value: object) -> str:
    """`safe(value)` with Rich markup escaped: for a table cell or a printed line."""
    from rich.markup import escape

    return escape(safe(value))


def json_text(obj: Any, indent: int | None = 2) -> str:
    """`json.dumps(obj, ensure_ascii=False)` with the characters it leaves raw that a terminal acts
    on written as \\u escapes (JSON reads them back the same)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(obj, ensure_ascii=False, indent=indent))


@lru_cache(maxsize=1)
def _safe_console_class() -> type[Console]:
    """SafeConsole, made when the CLI first prints (rich loads then: `docket --help` needs none of it)."""
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

    class SafeConsole(Console):
        """A Rich console whose rendered text never holds a control character from the data."""

        def render_str(self, text: str, **kwargs: Any) -> Any:
            """A string inside a renderable (a table cell, a column header) is read as markup; data
            that only looks like a closing tag ("[/EU]", "[/]") made Rich raise and the command
            die with a traceback. Such a string is shown as it is."""
            from rich.errors import MarkupError

            try:
                return super().render_str(text, **kwargs)
            except MarkupError:
                return super().render_str(text, **{**kwargs, "markup": False})

        def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
            for seg in super().render(renderable, options):
                if seg.control or not _CONTROL.search(seg.text):
                    yield seg
                else:
                    yield Segment(safe(seg.text), seg.style, seg.control)

    return SafeConsole


def console(**kwargs: Any) -> Console:
    """The CLI's console (`stderr=True` for messages about the run): a SafeConsole."""
    return _safe_console_class()(**kwargs)


def __getattr__(name: str) -> Any:
    """`terminal.SafeConsole`, the class, for a caller that builds its own console."""
    if name == "SafeConsole":
        return _safe_console_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
