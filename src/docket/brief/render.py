"""Moves 7 and 8: label every passage and fence its text.

Labels S1..Sn are given after the final order, so [S2] always means the second passage the
model read. How a passage is written (fence, header, escaping) is its format's job
(brief/formats.py); this module chooses what goes in the header and keeps the label -> source map.
Whatever a passage contains (`</document>`, quotes, `&`, `KEY: value`, control or invisible
characters) it cannot close its own fence, forge a document or a field, or change how many
documents the model sees.

Status and trust are stated for every passage. With `render.implicit_defaults` (the default)
the usual values, status="current" and trust="trusted", are left off the tag and the ground
rules say what a bare tag means: eight tokens a passage saved, and the exceptions (a superseded
rule, a stranger's post) stand out instead of hiding among identical attributes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from docket.brief import formats
from docket.brief.clean import MARK, datamark, sanitize
from docket.brief.formats import Fields
from docket.caches import RENDERED_CAPACITY, Caches, default_caches
from docket.features import content_key, title_terms
from docket.model import Passage
from docket.policy import RenderPolicy
from docket.sizing import label_for
from docket.text import phrase  # titles are matched with the re-scorer's folding

__all__ = ["MARK", "sanitize", "render_passage", "render_all", "header_fields", "label_for", "OPEN", "CLOSE", "SEP"]


def sections_of(p: Passage) -> str:
    return " / ".join(dict.fromkeys(c.section for c in p.chunks if c.section))


ALWAYS = ("status", "trust")
#: the fields docket decides (or checks), written before any a document's author wrote (title,
#: section, source, doc, covers): a reader that takes the first `trust=` or `STATUS:` it meets
#: in a header takes docket's, whatever a title holds (trust first: docket computes it, while a
#: status is the record's own word)
DOCKET_FIELDS = ("trust", "status", "version", "date", "excerpt")
#: what a tag without status or trust means when defaults are implicit (the ground rules say so)
IMPLICIT = {"status": "current", "trust": "trusted"}


@lru_cache(maxsize=1 << 15)  # a pure function of two strings, asked for every rendered passage
def opens_with_title(title: str, text: str) -> bool:
    """True when the text's first words already state the title (Wikipedia-style "Pearl Jam is an
    American rock band ..."), allowing a leading article and the title without its parenthetical."""
    if not title.strip():
        return False
    head = phrase(text[: len(title) + 40])
    # title_terms' phrases are `phrase(v)` of each of title_variants(title), computed once per title
    return any(head.startswith(v) or head.startswith(" the" + v) for v in title_terms(title)[0])


#: the fields docket decides first, then the rest in the policy's order (a sort key)
_FIRST = {k: n for n, k in enumerate(DOCKET_FIELDS)}


@lru_cache(maxsize=256)
def _wanted(fields: tuple[str, ...]) -> tuple[str, ...]:
    """The policy's fields plus status and trust, each once, in order."""
    return tuple(dict.fromkeys(list(fields) + [f for f in ALWAYS if f not in fields]))


def header_fields(p: Passage, fields: list[str], implicit_defaults: bool = False,
                  repeated_title: bool = False) -> list[tuple[str, str]]:
    """The passage's header fields, in the order the header writes them: the policy's `fields`
    plus status and trust (always), each with its value; a field without a value is left out
    (status and trust never), and with `implicit_defaults` so is a status or trust at its usual
    value (IMPLICIT); a compressed passage adds excerpt, a summary what it covers. docket's own
    fields come first (DOCKET_FIELDS), the rest in the policy's order. Only the fields asked for
    are read (the layout of each field list is worked out once: `_layout`); every passage a
    service request sizes or renders is asked (~220 a first-sight request, issue 21)."""
    c = p.first
    out = []
    for f in _layout(tuple(fields), p.compressed, p.derived):
        if f == "title":
            v = c.title if repeated_title or not opens_with_title(c.title, p.text) else ""
        elif f == "status":
            v = c.status
        elif f == "trust":
            v = p.trust_level  # a merged span is untrusted if any chunk is
        elif f == "version":
            v = f"v{c.version}" if c.version != 1 else ""  # "v1" says nothing; later versions are worth their tokens
        elif f == "section":
            v = sections_of(p)
        elif f == "date":
            v = c.date.isoformat() if c.date else ""
        elif f == "source":
            v = c.source_type or ""
        elif f == "doc":
            v = c.doc
        elif f == _EXCERPT:
            out.append(("excerpt", "compressed"))
            continue
        elif f == _COVERS:
            out.append(("covers", coverage(p)))
            continue
        else:
            v = ""
        # status and trust are stated for every passage, whatever the field list says (a bare tag
        # means current and trusted when defaults are implicit): the ground rules refer to them,
        # and a prompt without them cannot tell a policy from a stranger's post
        if (v or f in ALWAYS) and not (implicit_defaults and IMPLICIT.get(f) == v):
            out.append((f, v))
    return out


#: `_layout`'s marks for the fields a passage adds of its own (never a policy field's name)
_EXCERPT, _COVERS = "\x00excerpt", "\x00covers"


@lru_cache(maxsize=1024)
def _layout(fields: tuple[str, ...], compressed: bool, derived: bool) -> tuple[str, ...]:
    """The fields `header_fields` writes, in order, before those without a value are left out: the
    policy's fields and status and trust, each once, then a compressed passage's excerpt and a
    summary's coverage, sorted (stably) with docket's own fields first."""
    first = _FIRST
    names = list(_wanted(fields)) + ([_EXCERPT] if compressed else []) + ([_COVERS] if derived else [])
    return tuple(sorted(names, key=lambda f: first.get(_OWN.get(f) or f, len(first))))


_OWN: dict[str, str] = {_EXCERPT: "excerpt", _COVERS: "covers"}


def coverage(p: Passage) -> str:
    """What a summary passage covers, for its header: "3 passages: Title A; Title B (untrusted)"
    (one entry per document; the full list with chunk ids is in the brief's sources)."""
    names: dict[str, bool] = {}
    for c in p.covers:
        name = str(c.get("title") or c.get("doc") or "?")
        names[name] = names.get(name, False) or c.get("trust") == "untrusted"
    listed = "; ".join(n + (" (untrusted)" if u else "") for n, u in names.items())
    return f"{len(p.covers)} passage{'s' if len(p.covers) != 1 else ''}: {listed}"


@dataclass(frozen=True)
class Rendered:
    block: str  # the passage as it appears in the documents block: its format's join of header and body
    text: str  # its text after sanitising, before escaping (what a citation checker compares)
    removed: int  # invisible/control characters removed
    header: str = ""  # the header line alone (label and fields), as the format writes it
    body: str = ""  # the text alone, datamarked where that applies and escaped


def render_passage(p: Passage, label: str, policy: RenderPolicy) -> Rendered:
    """One passage in `policy.format`. Its header depends on the label (width) and the header
    fields, its body only on the text and trust, so a sizer may count the two apart. Not
    memoised: the packer sizes each chunk once (its count is cached with the chunk's features)
    under a label the brief seldom gives it; render_all and the brief go through the memo."""
    return _render(p, label, policy)


def _render(p: Passage, label: str, policy: RenderPolicy) -> Rendered:
    return _Prepared(p, policy, with_static=False).render(label, policy)


class _Prepared:
    """What a passage renders to under one set of settings before it has a label: its clean
    text, the removed-character count, its header fields and escaped body; the source fields
    that depend on its chunk alone; and (filled when first asked for) its Anthropic header values."""

    __slots__ = ("text", "removed", "fields", "body", "static", "request_values")

    def __init__(self, p: Passage, policy: RenderPolicy, with_static: bool = True) -> None:
        fmt = formats.text_format(policy.format)
        text, removed = sanitize(p.text)
        text = text.strip()
        self.text, self.removed = text, removed
        self.fields = header_fields(p, policy.fields, policy.implicit_defaults and fmt.implicit_defaults,
                                    policy.repeated_title)
        shown = datamark(text) if policy.spotlight == "datamark" and fmt.datamarks and p.untrusted else text
        self.body = fmt.body(shown)
        self.static = _static(p) if with_static else None  # a passage only sized (pack) needs no source fields
        self.request_values: Fields | None = None

    def render(self, label: str, policy: RenderPolicy) -> Rendered:
        fmt = formats.text_format(policy.format)
        header = fmt.header(label, self.fields, policy.max_field_chars)
        return Rendered(block=fmt.join(header, self.body), text=self.text, removed=self.removed, header=header,
                        body=self.body)

    def request(self, p: Passage, label: str, policy: RenderPolicy) -> tuple[str, str]:
        values = self.request_values
        if values is None:
            values = self.request_values = header_fields(p, [f for f in policy.fields if f != "title"],
                                                         implicit_defaults=False, repeated_title=True)
        blocks = formats.blocks()
        limit = policy.max_field_chars
        return blocks.title(label, p.first.title, limit), blocks.context(label, values, limit)


# --- memo of rendered passages -----------------------------------------------------------------
#
# The same chunk is rendered for query after query, always to the same strings. A passage that is
# one whole chunk (no compressed text, not a summary) is rendered from nothing but the render
# settings, the label and the chunk's `content_key` (id, text and every field that reaches a
# header: docket.features, the key its rendered counts are cached under too). Two levels: what
# does not depend on the label (clean text, fields, escaped body) under (content key, settings),
# and the passage under one label (its header, block, Anthropic title and context) under
# (content key, label, settings). Grown, compressed and summary passages are rendered every time.
# The two tables are the session's (docket.caches.Caches.rendered and .prepared, handed down on the
# Context); a caller without one renders into the process-wide `default_caches()`.

#: memoised passages kept: a few KiB each
MEMO_CAPACITY = RENDERED_CAPACITY


def policy_key(policy: RenderPolicy) -> int | None:
    """Every render setting, as a small id of the tuple of them (lists as tuples; the same
    settings always get the same id while the id is remembered, never another's), or None when
    one cannot be hashed (then nothing is memoised). Read from the model's fields, so a setting
    added later is part of the key without anyone remembering to add it."""
    try:
        key = (type(policy),) + tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in policy.__dict__.items())
        pid: int | None = _POLICY_IDS.get(key)
    except TypeError:
        return None
    if pid is None:
        if len(_POLICY_IDS) >= 1024:
            _POLICY_IDS.clear()  # ids are never reused: memo entries under a forgotten id just age out
        pid = _POLICY_IDS.setdefault(key, next(_NEXT_ID))
    return pid


_POLICY_IDS: dict[tuple[Any, ...], int] = {}
_NEXT_ID = itertools.count()


def _memoisable(p: Passage) -> bool:
    return len(p.chunks) == 1 and p.text_override is None and not p.covers


#: what a passage's source says of its chunk (render_parts): doc, version, title, section, date, status, trust, source type
_Static = tuple[str, int, str, str, str | None, str, str, str | None]


def _static(p: Passage) -> _Static:
    c = p.first
    return (c.doc, c.version, c.title, sections_of(p), c.date.isoformat() if c.date else None, c.status, p.trust_level,
            c.source_type)


class Entry:
    """One passage under one label and one set of render settings: its Rendered, its source
    fields that depend on the chunk alone, and (filled when first asked for) its Anthropic
    document title and context."""

    __slots__ = ("prepared", "rendered", "static", "request")

    def __init__(self, prepared: _Prepared, label: str, policy: RenderPolicy) -> None:
        self.prepared = prepared
        self.rendered = prepared.render(label, policy)
        self.static: _Static = prepared.static  # type: ignore[assignment]  # entry() makes it with_static
        self.request: tuple[str, str] | None = None

    def request_parts(self, p: Passage, label: str, policy: RenderPolicy) -> tuple[str, str]:
        """The title and `context` of `p` as an Anthropic document block (BlocksFormat): the
        title always shown, status and trust always stated, no implicit defaults. `p`, `label`
        and `policy` are those the entry was made for."""
        r = self.request
        if r is None:
            r = self.request = self.prepared.request(p, label, policy)
        return r


def entry(p: Passage, label: str, policy: RenderPolicy, key: int | None, caches: Caches | None = None) -> Entry:
    """`p` rendered under `label` and `policy` (whose `policy_key` is `key`), from the memo of
    `caches` (default: the process-wide ones) when it is a whole chunk seen before: under this
    label, or under another (then only the label's header is written)."""
    if key is None or not _memoisable(p):
        return Entry(_Prepared(p, policy), label, policy)
    if caches is None:
        caches = default_caches()
    ck = content_key(p.first)
    k = (ck, label, key)
    rendered = caches.rendered
    e: Entry | None = rendered.get(k)
    if e is None:
        pk = (ck, key)
        prepared: _Prepared | None = caches.prepared.get(pk)
        if prepared is None:
            prepared = _Prepared(p, policy)
            caches.prepared.put(pk, prepared)
        e = Entry(prepared, label, policy)
        rendered.put(k, e)
    return e


#: the fences of each text format (kept for callers that size a block by hand)
OPEN = {n: formats.text_format(n).open for n in formats.text_formats()}
CLOSE = {n: formats.text_format(n).close for n in formats.text_formats()}
SEP = "\n\n"


def documents_block(blocks: list[str], fmt: str) -> str:
    return formats.text_format(fmt).documents(blocks)


def render_all(passages: list[Passage], policy: RenderPolicy,
               caches: Caches | None = None) -> tuple[str, dict[str, dict[str, Any]], int]:
    """The documents block, the label -> source map, and the count of removed characters
    (`caches`: whose memo of rendered passages to use; default the process-wide one)."""
    blocks, sources, removed = render_parts(passages, policy, caches)
    return documents_block([r.block for r in blocks], policy.format), sources, removed


def render_parts(passages: list[Passage], policy: RenderPolicy,
                 caches: Caches | None = None) -> tuple[list[Rendered], dict[str, dict[str, Any]], int]:
    """`render_all` before the blocks are joined: each passage as Rendered, the label -> source
    map, and the count of removed characters."""
    entries, sources, removed = render_entries(passages, policy, caches)
    return [e.rendered for e in entries], sources, removed


#: labels S1..S64, made once
_LABELS = [label_for(n) for n in range(1, 65)]


def render_entries(passages: list[Passage], policy: RenderPolicy,
                   caches: Caches | None = None) -> tuple[list[Entry], dict[str, dict[str, Any]], int]:
    """`render_parts` with each passage's Entry (for the Anthropic request) in place of its Rendered."""
    entries: list[Entry] = []
    sources: dict[str, dict[str, Any]] = {}
    removed = 0
    key = policy_key(policy)
    caches = caches or default_caches()
    for n, p in enumerate(passages, 1):
        label = _LABELS[n - 1] if n <= len(_LABELS) else label_for(n)
        e = entry(p, label, policy, key, caches)
        entries.append(e)
        r = e.rendered
        removed += r.removed
        doc, version, title, section, day, status, trust, source_type = e.static
        src: dict[str, Any] = {
            "doc": doc,
            "version": version,
            "chunks": list(p.ids),
            "title": title,
            "section": section,
            "date": day,
            "status": status,
            "trust": trust,
            "source_type": source_type,
            "hits": list(p.hits),
            "score": round(p.score, 6),
            "rank": p.rank,
            "compressed": p.compressed,
            "text": r.text,
        }
        if p.also_in:
            src["also_in"] = list(p.also_in)
        if p.derived:
            src["derived"] = "summary"
            src["covers"] = [dict(c) for c in p.covers]
        sources[label] = src
    return entries, sources, removed
