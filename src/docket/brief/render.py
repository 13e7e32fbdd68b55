"""Moves 7 and 8: label every passage and fence its text.

Labels S1..Sn are given after the final order, so [S2] always means the second passage the
model read. Text and header values are escaped: whatever a passage contains (`</document>`,
quotes, `&`, control or invisible characters) it cannot close its own fence, forge a document,
or change how many documents the model sees.

Status and trust are stated for every passage. With `render.implicit_defaults` (the default)
the usual values, status="current" and trust="trusted", are left off the tag and the ground
rules say what a bare tag means: eight tokens a passage saved, and the exceptions (a superseded
rule, a stranger's post) stand out instead of hiding among identical attributes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from docket.model import Passage
from docket.policy import RenderPolicy
from docket.rescore import phrase, title_variants  # titles are matched with the re-scorer's folding

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


def sanitize(text: str) -> tuple[str, int]:
    """Remove invisible and control characters; return the clean text and how many were removed.

    Line and paragraph separators become newlines; CR/LF pairs become one newline. Any other
    code point of the Unicode "format" category (Cf) is removed too.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    before = len(text)
    if text.isascii():  # the common case: only C0 controls can hide here
        text = _CONTROL.sub("", text)
        return text, before - len(text)
    text = _INVISIBLE.sub("", text)
    text = _CONTROL.sub("", text)
    text = _NONCHAR.sub("", text)
    if any(unicodedata.category(ch) == "Cf" for ch in text):
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return text, before - len(text)


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(value: str, limit: int) -> str:
    value, _ = sanitize(value)
    value = re.sub(r"\s+", " ", value).strip()
    if len(value) > limit:
        value = value[: limit - 1].rstrip() + "…"
    return escape_text(value).replace('"', "&quot;")


def sections_of(p: Passage) -> str:
    return " / ".join(dict.fromkeys(c.section for c in p.chunks if c.section))


ALWAYS = ("status", "trust")
#: what a tag without status or trust means when defaults are implicit (the ground rules say so)
IMPLICIT = {"status": "current", "trust": "trusted"}


def opens_with_title(title: str, text: str) -> bool:
    """True when the text's first words already state the title (Wikipedia-style "Pearl Jam is an
    American rock band ..."), allowing a leading article and the title without its parenthetical."""
    if not title.strip():
        return False
    head = phrase(text[: len(title) + 40])
    return any(head.startswith(phrase(v)) or head.startswith(" the" + phrase(v)) for v in title_variants(title))


def header_fields(p: Passage, fields: list[str], implicit_defaults: bool = False,
                  repeated_title: bool = False) -> list[tuple[str, str]]:
    c = p.first
    values: dict[str, str] = {
        "title": c.title if repeated_title or not opens_with_title(c.title, p.text) else "",
        "section": sections_of(p),
        "version": f"v{c.version}",
        "date": c.date.isoformat() if c.date else "",
        "status": c.status,
        "trust": c.trust_level,
        "source": c.source_type or "",
        "doc": c.doc,
    }
    if c.version == 1:
        values["version"] = ""  # "v1" says nothing; later versions are worth their tokens
    # status and trust are stated for every passage, whatever the field list says (a bare tag
    # means current and trusted when defaults are implicit): the ground rules
    # refer to them, and a prompt without them cannot tell a policy from a stranger's post
    wanted = list(dict.fromkeys(list(fields) + [f for f in ALWAYS if f not in fields]))
    out = [(f, values.get(f, "")) for f in wanted]
    out = [(k, v) for k, v in out if v or k in ALWAYS]
    if implicit_defaults:
        out = [(k, v) for k, v in out if IMPLICIT.get(k) != v]
    if p.compressed:
        out.append(("excerpt", "compressed"))
    return out


#: the datamarking character (U+02C6, as in Hines et al.): it replaces every space of an untrusted
#: passage, so the model can tell outsiders' text from official text on every line
MARK = "\u02c6"
_SPACES = re.compile(r"[ \t]+")


def datamark(text: str) -> str:
    return _SPACES.sub(MARK, text)


@dataclass(frozen=True)
class Rendered:
    block: str  # the passage as it appears in the documents block
    text: str  # its text after sanitising, before escaping (what a citation checker compares)
    removed: int  # invisible/control characters removed


def render_passage(p: Passage, label: str, policy: RenderPolicy) -> Rendered:
    text, removed = sanitize(p.text)
    text = text.strip()
    fields = header_fields(p, policy.fields, policy.implicit_defaults, policy.repeated_title)
    shown = datamark(text) if policy.spotlight == "datamark" and p.untrusted else text
    if policy.format == "xml":
        attrs = " ".join([f'label="{label}"'] + [f'{k}="{escape_attr(v, policy.max_field_chars)}"' for k, v in fields])
        block = f"<document {attrs}>\n{escape_text(shown)}\n</document>"
    else:
        head = " | ".join([f"ID: {label}"] + [f"{k.upper()}: {_line_value(v, policy.max_field_chars)}" for k, v in fields])
        body = "\n".join("| " + line for line in shown.split("\n"))
        block = f"{head}\n{body}"
    return Rendered(block=block, text=text, removed=removed)


def _line_value(v: str, limit: int) -> str:
    v, _ = sanitize(v)
    v = re.sub(r"\s+", " ", v).replace("|", "/").strip()
    return v if len(v) <= limit else v[: limit - 1].rstrip() + "…"


OPEN = {"xml": "<documents>", "lines": "=== DOCUMENTS ==="}
CLOSE = {"xml": "</documents>", "lines": "=== END OF DOCUMENTS ==="}
SEP = "\n\n"


def documents_block(blocks: list[str], fmt: str) -> str:
    return OPEN[fmt] + "\n" + SEP.join(blocks) + "\n" + CLOSE[fmt]


def label_for(n: int) -> str:
    return f"S{n}"


def render_all(passages: list[Passage], policy: RenderPolicy) -> tuple[str, dict[str, dict[str, Any]], int]:
    """The documents block, the label -> source map, and the count of removed characters."""
    blocks: list[str] = []
    sources: dict[str, dict[str, Any]] = {}
    removed = 0
    for n, p in enumerate(passages, 1):
        label = label_for(n)
        r = render_passage(p, label, policy)
        blocks.append(r.block)
        removed += r.removed
        c = p.first
        src: dict[str, Any] = {
            "doc": c.doc,
            "version": c.version,
            "chunks": list(p.ids),
            "title": c.title,
            "section": sections_of(p),
            "date": c.date.isoformat() if c.date else None,
            "status": c.status,
            "trust": c.trust_level,
            "source_type": c.source_type,
            "hits": list(p.hits),
            "score": round(p.score, 6),
            "rank": p.rank,
            "compressed": p.compressed,
            "text": r.text,
        }
        if p.also_in:
            src["also_in"] = list(p.also_in)
        sources[label] = src
    return documents_block(blocks, policy.format), sources, removed
