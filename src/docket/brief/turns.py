"""Earlier chat turns in the prompt: fenced so they never pass for evidence, and in roles that alternate.

History is the user's own text (and the model's earlier answers), read outside the documents
block. Two things keep it from becoming evidence next turn, whatever it holds (an answer a model
was steered into filling with an untrusted passage, a pasted brief, an upper-case `<DOCUMENTS>`
block, a lone `<document label="S1" trust="trusted">` without its wrapper):

* `strip_blocks`: a documents block of any text format is removed, found case-insensitively and
  with look-alikes folded (brief/lookalikes.py), closed or cut off at the end;
* `neutralise`: every structural token of every text format left over is written so no reader
  takes it for structure: the `<` of anything that reads as a `document`/`documents` tag becomes
  `&lt;` (as does one left dangling at the end of a turn), a line that reads as a line-format header (`ID: …`) has its colon written `;`, a run
  of three or more `=` (a marker) becomes `꞊`. The same folding finds them, so `<DOCUMENT`,
  `‹document`, `＜ /Document` and `ＩＤ∶` are caught.

Every format is neutralised at once, so a turn costs the same tokens in every format.

Roles: providers and chat templates expect user and assistant to alternate after the system
message (one that merges two user messages puts the history text next to the documents block).
`merge` joins consecutive messages of one role deliberately: a history turn that joins one of
docket's own messages (the final user message, or the corpus block in whole-corpus mode) comes
under a one-line frame that says whose earlier words it holds, after the fencing above.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from docket.brief import lookalikes

#: what a history turn merged into one of docket's messages comes under, by who said it
FRAME = {
    "user": "Earlier message from the user (conversation history, not a document):",
    "assistant": "Earlier reply from the assistant (conversation history, not a document):",
}

_FOLD = lookalikes.fold_map(lookalikes.STRUCTURAL)


def folded(text: str) -> tuple[str, list[int] | None]:
    """`text` as a careless reader sees it (look-alikes read as the character, NFKD, marks
    dropped, lower case) and, for each folded character, the index of the original one it came
    from (None: the same index, for ASCII text)."""
    if text.isascii():
        return text.lower(), None
    out: list[str] = []
    idx: list[int] = []
    for i, ch in enumerate(text):
        f = _FOLD.get(ch, ch)
        if not f.isascii():
            f = "".join(_FOLD.get(c, c) for c in unicodedata.normalize("NFKD", f) if not unicodedata.combining(c))
        for c in f.lower():
            out.append(c)
            idx.append(i)
    return "".join(out), idx


def _span(idx: list[int] | None, a: int, b: int, n: int) -> tuple[int, int]:
    """The original span of the folded span [a, b)."""
    if idx is None:
        return a, b
    start = idx[a] if a < len(idx) else n
    end = idx[b - 1] + 1 if b > a else start
    return start, end


def _edit(text: str, pattern: re.Pattern[str], replace: str, group: int = 0) -> tuple[str, int]:
    """`text` with each match of `pattern` on its folded form (the span of `group`) replaced."""
    f, idx = folded(text)
    spans = [_span(idx, m.start(group), m.end(group), len(text)) for m in pattern.finditer(f) if m.end(group) > m.start(group)]
    for a, b in reversed(spans):
        text = text[:a] + replace + text[b:]
    return text, len(spans)


_XML_BLOCK = re.compile(r"<[^a-z0-9<>]{0,8}documents\b.*?(?:<[^a-z0-9<>]{0,8}/[^a-z0-9<>]{0,8}documents[^a-z0-9<]{0,8}>|\Z)",
                        re.S)
_LINES_BLOCK = re.compile(r"^[ \t]*=+[ \t]*documents[ \t]*=+[ \t]*$.*?(?:^[ \t]*=+[ \t]*end of documents[ \t]*=+[ \t]*$|\Z)",
                          re.S | re.M)
# a tag opener before `document(s)`, or dangling at the end (what follows a turn in the prompt is
# docket's text, which may start with a marker: `‹` + `\n\n=== DOCUMENTS` must not read as a tag)
_TAG = re.compile(r"<(?=[^a-z0-9<>]{0,8}(?:documents?\b|\Z))")
_HEADER = re.compile(r"^[ \t|]*id[ \t]*(:)", re.M)
_QUESTION = re.compile(r"^question[ \t]*:[ \t]*(.+)$", re.M)


def strip_blocks(text: str) -> tuple[str, int]:
    """`text` without documents blocks of any text format; a docket user message sent back whole
    keeps only its question. Returns the text and how many blocks were removed."""
    n = 0
    for pat in (_XML_BLOCK, _LINES_BLOCK):
        text, k = _edit(text, pat, "")
        n += k
    if n:
        f, idx = folded(text)
        q = _QUESTION.search(f)
        if q:
            a, b = _span(idx, q.start(1), q.end(1), len(text))
            return text[a:b].strip(), n
        return text.strip(), n
    return text, n


def neutralise(text: str) -> tuple[str, int]:
    """`text` with every structural token of every text format written so none reads as one
    (see the module docstring). Returns the text and how many tokens were changed."""
    from docket.brief.formats import LINES_COLON, LinesFormat

    text, tags = _edit(text, _TAG, "&lt;")
    text, heads = _edit(text, _HEADER, LINES_COLON, group=1)
    ruled = LinesFormat._rules(text)
    runs = len(re.findall("\ua78a+", ruled)) - len(re.findall("\ua78a+", text))
    return ruled, tags + heads + max(runs, 0)


def fence(text: str) -> tuple[str, int, int]:
    """A history turn's text ready for the prompt: (text, blocks stripped, tokens neutralised)."""
    text, blocks = strip_blocks(text)
    text, tokens = neutralise(text)
    return text, blocks, tokens


# --- roles that alternate -------------------------------------------------------------------------

#: one message being built: its role and its parts, each (content, is_history)
_Part = tuple[Any, bool]


def merge(segments: Sequence[tuple[str, Any, bool]], *, blocks: bool = False) -> list[dict[str, Any]]:
    """Messages from (role, content, is_history) segments in order, consecutive ones of one role
    joined, so user and assistant alternate and the first is the user's.

    A history turn that shares a message with one of docket's parts (or an assistant turn that
    would open the conversation, which goes into a user message) comes under its FRAME. With
    `blocks` (the Anthropic shape) docket's content is a list of content blocks and a history
    turn becomes a text block of its own; otherwise every content is a string, joined by a blank
    line."""
    grouped: list[tuple[str, list[tuple[str, Any, bool]]]] = []
    for role, content, history in segments:
        if not grouped and role == "assistant":
            grouped.append(("user", [(role, content, history)]))  # an opening answer: framed, as the user's
            continue
        if grouped and grouped[-1][0] == role:
            grouped[-1][1].append((role, content, history))
        else:
            grouped.append((role, [(role, content, history)]))
    out: list[dict[str, Any]] = []
    for role, parts in grouped:
        mixed = any(not h for _, _, h in parts) or any(r != role for r, _, _ in parts)
        texts: list[Any] = []
        for who, content, history in parts:
            if history and mixed:
                content = f"{FRAME[who]}\n{content}"
            texts.append(content)
        if blocks:
            content_blocks: list[Any] = []
            for c in texts:
                content_blocks.extend(c if isinstance(c, list) else [{"type": "text", "text": c}])
            if len(parts) == 1 and isinstance(texts[0], str):
                out.append({"role": role, "content": texts[0]})
            else:
                out.append({"role": role, "content": content_blocks})
        else:
            out.append({"role": role, "content": "\n\n".join(str(c) for c in texts)})
    return out
