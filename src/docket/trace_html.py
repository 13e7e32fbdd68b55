"""A trace a person can look at: one self-contained HTML page per brief.

The page shows the ranked candidates, each with its fate (in the prompt under which label, folded
into another passage, or dropped by which move and why), every decision with its numbers, token
bars per section of the prompt, the conflicts, the cache report, and the final prompt with every
label linked to its source. It needs nothing outside itself: inline CSS, no script, no fonts or
images, and a Content-Security-Policy that forbids loading or running anything, so a passage that
smuggles markup into the page can neither fetch nor execute it. Every piece of text, candidate
ids included, is HTML-escaped before it is placed, so the escaping holds even where the policy is
lost (a page copied into another document, a host that drops the meta tag).

What a reader sees is what the brief says. A character that shows nothing or moves text around
(controls, bidi overrides and isolates, zero-width and other format characters, line separators,
lone surrogates, non-characters) is shown as a boxed `U+XXXX` (in attributes as `\\uXXXX`), so a
chunk id cannot reverse the fate next to it or hide inside another; a value with non-ASCII text is
isolated in `<bdi>`; a long unbroken token wraps instead of pushing the fate column off the page;
each chunk id of a decision is its own `<code>`, so an id holding ", " is not read as two; a
message or passage keeps its first newline. A malformed brief or candidate is an `InputError`
naming the field (`trace[3].chunks[0]`), never a traceback from the middle of the page.

    html = render_trace(brief, candidates)      # a Brief (or its to_json() dict), Candidates or dicts
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from docket.errors import InputError
from docket.safeio import shown

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
#: trace actions that settle a candidate's fate when it is not in the prompt
_SETTLING = {"drop", "skip", "stop", "not_found", "absorb", "fail", "current_not_found"}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff;max-width:1200px;overflow-wrap:anywhere}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #d8dee8;padding-bottom:4px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef1f5;
vertical-align:top;overflow-wrap:anywhere}th{background:#f5f7fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#5a6478}.fate{font-weight:600}.in_prompt{color:#17713a}.folded{color:#7a5a00}.dropped{color:#9b1c1c}
.not_used{color:#5a6478}pre{white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;background:#f7f8fa;border:1px solid #e3e7ee;
padding:10px;border-radius:4px;font:12.5px/1.4 ui-monospace,monospace}.bar{height:14px;background:#4f7bd9;border-radius:2px}
.bar.documents{background:#2f9e62}.bar.tags{background:#9ad0b0}.bar.system{background:#4f7bd9}.bar.question{background:#d98b2b}
.bar.format{background:#b07ad9}.bar.notes{background:#d94f4f}.bar.history{background:#7a8699}.barcell{width:55%}
.source{border:1px solid #e3e7ee;border-radius:4px;padding:8px 10px;margin:8px 0}.source:target{outline:2px solid #4f7bd9}
code{font:12.5px ui-monospace,monospace;background:#f2f4f7;padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
.conflict{border-left:3px solid #d94f4f;padding:4px 10px;margin:6px 0;background:#fdf4f4}
.ctl{font:10px ui-monospace,monospace;border:1px solid #b0b8c4;border-radius:2px;padding:0 1px;color:#5a6478;
background:#fff;unicode-bidi:isolate}
"""

#: what a shown character becomes: None (itself) or its visible form
_SHOWN = ("Cc", "Cf", "Cs", "Zl", "Zp")


class _Visible(dict):  # type: ignore[type-arg]
    """str.translate table: a code point that shows nothing or reorders text (categories Cc but
    tab and newline, Cf, Cs, Zl, Zp, and the non-characters) -> its visible form, any other ->
    itself; filled on first sight, so the page's text is translated at C speed."""

    def __init__(self, form: Callable[[int], str]) -> None:
        super().__init__()
        self.form = form

    def __missing__(self, cp: int) -> str | int:
        hidden = cp not in (9, 10) and (unicodedata.category(chr(cp)) in _SHOWN or 0xFDD0 <= cp <= 0xFDEF
                                         or cp & 0xFFFE == 0xFFFE)
        out: str | int = self.form(cp) if hidden else cp
        if len(self) < 65536:
            self[cp] = out
        return out


_TEXT = _Visible('<span class="ctl">U+{:04X}</span>'.format)
_ATTR = _Visible(lambda cp: f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")


def _plain(text: str) -> bool:
    """No character to show as its code: every one printable, a space, a tab or a newline (C speed;
    str.isprintable is false for every category _Visible boxes, so a true answer is exact)."""
    if text.isprintable():  # the usual short id or name
        return True
    if text.isascii():
        return _ASCII_HIDDEN.search(text) is None
    return text.replace("\n", " ").replace("\t", " ").isprintable()


_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _e(value: Any) -> str:
    """`value` as page text: escaped, every hidden character boxed, non-ASCII text isolated."""
    text = "" if value is None else str(value)
    out = html.escape(text, quote=True)
    if not _plain(text):
        out = out.translate(_TEXT)
    return out if text.isascii() else f"<bdi>{out}</bdi>"


def _a(value: Any) -> str:
    """`value` as an attribute value: escaped, every hidden character as a \\uXXXX escape."""
    text = "" if value is None else str(value)
    out = html.escape(text, quote=True)
    return out if _plain(text) else out.translate(_ATTR)


def _bad(field: str, message: str) -> InputError:
    return InputError(message, where="render_trace", field=field)


_SCALAR = (str, int, float)


def _scalar(value: Any, field: str) -> None:
    if value is not None and not isinstance(value, _SCALAR):
        raise _bad(field, f"must be text or a number, got {type(value).__name__}")


def _number(value: Any, field: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        raise _bad(field, f"must be a finite number, got {value!r:.60}")


def _ids(value: Any, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, (list, tuple)):
        raise _bad(field, f"must be a list of chunk ids, got {type(value).__name__}")
    for i, cid in enumerate(value):
        if not isinstance(cid, str):
            raise _bad(f"{field}[{i}]", f"must be a chunk id (text), got {type(cid).__name__}")


def _mapping(value: Any, field: str, optional: bool = True) -> Mapping[str, Any]:
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise _bad(field, f"must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise _bad(field, f"must be a list, got {type(value).__name__}")
    return list(value)


def _check_brief(b: Mapping[str, Any]) -> None:
    """Every field the page reads has the type a brief's to_json() gives it, else an InputError
    naming it. Keys the page does not read are ignored (a service brief adds its trace_id)."""
    for key in ("sources", "trace", "messages"):  # the fates and the prompt: a page without them would lie
        if key not in b:
            raise _bad(key, "is missing: render_trace needs a brief (Brief.to_json()), with its sources, trace and "
                       "messages")
    for key in ("question", "mode", "refusal"):
        _scalar(b.get(key), key)
    if b.get("found") is not None and not isinstance(b.get("found"), bool):
        raise _bad("found", f"must be true or false, got {b.get('found')!r:.60}")
    _number(b.get("budget"), "budget")
    _scalar(_mapping(b.get("tokenizer"), "tokenizer").get("counter"), "tokenizer.counter")
    for i, w in enumerate(_list(b.get("warnings"), "warnings")):
        _scalar(w, f"warnings[{i}]")
    for key, v in _mapping(b.get("tokens"), "tokens").items():
        _number(v, f"tokens.{key}")
    for label, src in _mapping(b.get("sources"), "sources").items():
        if not isinstance(label, str):
            raise _bad("sources", f"labels must be text, got {type(label).__name__}")
        where = f"sources.{label}"
        src = _mapping(src, where, optional=False)
        _ids(src.get("chunks"), f"{where}.chunks")
        for j, extra in enumerate(_list(src.get("also_in"), f"{where}.also_in")):
            _ids(_mapping(extra, f"{where}.also_in[{j}]", optional=False).get("chunks"), f"{where}.also_in[{j}].chunks")
        for j, page in enumerate(_list(src.get("pages"), f"{where}.pages")):
            _scalar(page, f"{where}.pages[{j}]")
        for key in ("doc", "version", "section", "status", "trust", "text"):
            _scalar(src.get(key), f"{where}.{key}")
    for i, ev in enumerate(_list(b.get("trace"), "trace")):
        ev = _mapping(ev, f"trace[{i}]", optional=False)
        for key in ("move", "action", "reason"):
            _scalar(ev.get(key), f"trace[{i}].{key}")
        _ids(ev.get("chunks"), f"trace[{i}].chunks")
    for i, c in enumerate(_list(b.get("conflicts"), "conflicts")):
        c = _mapping(c, f"conflicts[{i}]", optional=False)
        _ids(c.get("labels"), f"conflicts[{i}].labels")
        _ids(c.get("chunks"), f"conflicts[{i}].chunks")
        _scalar(c.get("kind"), f"conflicts[{i}].kind")
        _scalar(c.get("reason"), f"conflicts[{i}].reason")
    cache = _mapping(b.get("cache"), "cache")
    for key in ("prefix_tokens", "cacheable_tokens", "min_tokens"):
        _number(cache.get(key), f"cache.{key}")
    for key in ("prefix", "prefix_key", "price_per_m", "note"):
        _scalar(cache.get(key), f"cache.{key}")
    for key, v in _mapping(cache.get("usd_per_query"), "cache.usd_per_query").items():
        _scalar(v, f"cache.usd_per_query.{key}")
    for i, m in enumerate(_list(b.get("messages"), "messages")):
        m = _mapping(m, f"messages[{i}]", optional=False)
        _scalar(m.get("role"), f"messages[{i}].role")
        if not isinstance(m.get("content"), str):
            raise _bad(f"messages[{i}].content", f"must be text, got {type(m.get('content')).__name__}")


def _brief_json(brief: Any) -> dict[str, Any]:
    if isinstance(brief, Mapping):
        b = dict(brief)
    else:
        to_json = getattr(brief, "to_json", None)
        if not callable(to_json):
            raise _bad("brief", f"must be a Brief or its to_json() dict, got {type(brief).__name__}")
        b = dict(to_json())
    _check_brief(b)
    return b


def _candidate_rows(candidates: Sequence[Any] | None) -> list[dict[str, Any]]:
    if candidates is not None and (isinstance(candidates, (str, bytes, Mapping)) or not isinstance(candidates, Sequence)):
        raise _bad("candidates", f"must be a list of candidates, got {type(candidates).__name__}")
    rows: list[dict[str, Any]] = []
    first: dict[str, int] = {}  # a fate is a chunk id's: two rows of one id would show one fate twice
    for i, c in enumerate(candidates or [], 1):
        field = f"candidates[{i - 1}]"
        if isinstance(c, Mapping):
            row = {"rank": c.get("rank", i), "id": c.get("id"), "doc": c.get("doc", ""),
                   "version": c.get("version", ""), "status": c.get("status", ""), "score": c.get("score")}
        else:
            ch = getattr(c, "chunk", None)
            if ch is None or not hasattr(ch, "id"):
                raise _bad(field, f"must be a Candidate or a dict with an id, got {type(c).__name__}")
            row = {"rank": getattr(c, "rank", i), "id": ch.id, "doc": getattr(ch, "doc", ""),
                   "version": getattr(ch, "version", ""), "status": getattr(ch, "status", ""),
                   "score": getattr(c, "score", None)}
        if not isinstance(row["id"], str):
            raise _bad(f"{field}.id", "is missing" if row["id"] is None else
                       f"must be a chunk id (text), got {type(row['id']).__name__}")
        if row["id"] in first:
            raise _bad(f"{field}.id", f"repeats the id of candidates[{first[row['id']]}] ({shown(row['id'])}); "
                                      "a chunk is ranked once: give each candidate its own id")
        first[row["id"]] = i - 1
        for key in ("rank", "doc", "version", "status"):
            _scalar(row[key], f"{field}.{key}")
        if row["score"] is not None and (isinstance(row["score"], bool) or not isinstance(row["score"], (int, float))):
            raise _bad(f"{field}.score", f"must be a number, got {type(row['score']).__name__}")
        rows.append(row)
    return rows


def fates(brief: Mapping[str, Any], ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Each candidate id's fate: (kind, text). Kinds: in_prompt, folded (a copy folded into a
    passage that is in the prompt), dropped (by a move, with its reason), not_used."""
    where: dict[str, tuple[str, str]] = {}
    for label, src in (brief.get("sources") or {}).items():
        for cid in src.get("chunks") or []:
            where.setdefault(cid, ("in_prompt", f"in the prompt as {label}"))
        for extra in src.get("also_in", []) or []:
            for cid in extra.get("chunks") or []:
                where.setdefault(cid, ("folded", f"a copy, folded into {label}"))
    last: dict[str, dict[str, Any]] = {}
    for event in brief.get("trace") or []:
        if event.get("action") in _SETTLING:
            for cid in event.get("chunks") or []:
                last[cid] = event
    out: dict[str, tuple[str, str]] = {}
    for cid in ids:
        if cid in where:
            out[cid] = where[cid]
        elif cid in last:
            ev = last[cid]
            out[cid] = ("dropped", f"{ev.get('move')}: {ev.get('action')}: {ev.get('reason')}")
        else:
            out[cid] = ("not_used", "not in the prompt (no move recorded a decision about it)")
    return out


def _token_bars(tokens: Mapping[str, Any]) -> str:
    parts = [("system", "system (rules)"), ("history", "chat history"), ("passage_text", "documents: text"),
             ("tags", "documents: tags and fences"), ("notes", "conflict notes"), ("question", "question"),
             ("format", "answer format")]
    values = [(key, name, int(tokens.get(key) or 0)) for key, name in parts]
    if not tokens.get("passage_text") and tokens.get("documents"):
        values = [(k, n, v if k != "passage_text" else int(tokens["documents"])) for k, n, v in values]
    total = max(1, sum(v for *_, v in values))
    rows = []
    for key, name, v in values:
        css = {"passage_text": "documents", "tags": "tags"}.get(key, key)
        width = 100.0 * v / total
        rows.append(f'<tr data-section="{_a(key)}"><td>{_e(name)}</td><td class="num">{v:,}</td>'
                    f'<td class="barcell"><div class="bar {css}" style="width:{width:.1f}%"></div></td></tr>')
    return ('<table class="tokens"><tr><th>section</th><th>tokens</th><th>share</th></tr>' + "".join(rows) +
            f'<tr><td><b>total</b></td><td class="num"><b>{int(tokens.get("total") or 0):,}</b></td><td></td></tr></table>')


def _linked(text: str, labels: set[str]) -> str:
    """Escaped text with every known label (S1, [S2], label="S3") linked to its source."""
    escaped = _e(text)

    def link(m: re.Match[str]) -> str:
        lab = m.group(0)
        return f'<a href="#src-{lab}" class="label">{lab}</a>' if lab in labels else lab

    return re.sub(r"\bS[1-9][0-9]*\b", link, escaped)


def _numbers(numbers: Any, field: str) -> str:
    if not numbers:
        return ""
    try:
        shown = json.dumps(numbers, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError) as e:  # a cycle, or keys of mixed types that do not sort
        raise _bad(field, f"must be JSON data ({e})") from None
    return "<code>" + _e(shown) + "</code>"


def _chunk_ids(ids: Sequence[str] | None) -> str:
    """Each chunk id in its own <code>, so an id holding ", " does not read as two."""
    return ", ".join(f"<code>{_e(c)}</code>" for c in ids or [])


def render_trace(brief: Any, candidates: Sequence[Any] | None = None, *, title: str = "docket trace") -> str:
    """The page for one brief (see the module docstring). `candidates` are the ranked candidates
    the assembler received (Candidate objects or {"id", "score", ...} dicts), best first."""
    b = _brief_json(brief)
    sources: dict[str, Any] = b.get("sources") or {}
    labels = set(sources)
    rows = _candidate_rows(candidates)
    fate = fates(b, [r["id"] for r in rows])
    out: list[str] = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta" id="summary">question: <b>{_e(b.get("question"))}</b><br>mode: <b>{_e(b.get("mode", "retrieve"))}'
        f'</b> · found: <b>{_e(b.get("found"))}</b> · evidence budget: {int(b.get("budget") or 0):,} tokens · passages: '
        f'{len(sources)}' + (f' · counter: {_e((b.get("tokenizer") or {}).get("counter"))}' if b.get("tokenizer") else "")
        + "</p>",
    ]
    for w in b.get("warnings") or []:
        out.append(f'<p class="dropped">warning: {_e(w)}</p>')
    tk = b.get("tokens") or {}
    out += ['<h2 id="tokens">Tokens per section</h2>', _token_bars(tk)]
    out.append('<h2 id="candidates">Ranked candidates and their fate</h2>')
    if rows:
        out.append('<table class="candidates"><tr><th>rank</th><th>chunk</th><th>document</th><th>version</th>'
                   "<th>status</th><th>score</th><th>fate</th></tr>")
        for r in rows:
            kind, text = fate[r["id"]]
            score = f'{float(r["score"]):.3f}' if isinstance(r.get("score"), (int, float)) else ""
            out.append(f'<tr class="candidate" data-candidate="{_a(r["id"])}" data-fate="{kind}">'
                       f'<td class="num">{_e(r["rank"])}</td><td><code>{_e(r["id"])}</code></td><td>{_e(r["doc"])}</td>'
                       f'<td>{_e(r["version"])}</td><td>{_e(r["status"])}</td><td class="num">{score}</td>'
                       f'<td class="fate {kind}">{_linked(text, labels)}</td></tr>')
        out.append("</table>")
    else:
        out.append(f'<p class="meta">No ranked candidates: mode {_e(b.get("mode", "retrieve"))} sends its context '
                   "without retrieval (see the decisions).</p>")
    out += ['<h2 id="decisions">Decisions</h2>', '<table class="decisions"><tr><th>#</th><th>move</th><th>action</th>'
            "<th>chunks</th><th>why</th><th>numbers</th></tr>"]
    for i, ev in enumerate(b.get("trace") or [], 1):
        out.append(f'<tr class="decision" data-move="{_a(ev.get("move"))}" data-action="{_a(ev.get("action"))}">'
                   f'<td class="num">{i}</td><td>{_e(ev.get("move"))}</td><td>{_e(ev.get("action"))}</td>'
                   f"<td>{_chunk_ids(ev.get('chunks'))}</td><td>{_linked(str(ev.get('reason', '')), labels)}</td>"
                   f"<td>{_numbers(ev.get('numbers'), f'trace[{i - 1}].numbers')}</td></tr>")
    out.append("</table>")
    out.append('<h2 id="conflicts">Conflicts</h2>')
    conflicts = b.get("conflicts") or []
    if not conflicts:
        out.append('<p class="meta">None.</p>')
    for c in conflicts:
        who = _linked(" and ".join(c.get("labels") or []), labels) or _chunk_ids(c.get("chunks"))
        out.append(f'<div class="conflict" data-kind="{_a(c.get("kind"))}"><b>{who}</b> '
                   f'({_e(c.get("kind"))}): {_e(c.get("reason"))}</div>')
    cache = b.get("cache")
    if cache:
        usd = cache.get("usd_per_query") or {}
        out += ['<h2 id="cache">Prompt cache</h2>',
                f'<p>stable prefix: <b>{_e(cache.get("prefix"))}</b>, {int(cache.get("prefix_tokens") or 0):,} tokens; '
                f'cacheable: <b>{int(cache.get("cacheable_tokens") or 0):,}</b> (providers cache from '
                f'{int(cache.get("min_tokens") or 0):,}); key <code>{_e(cache.get("prefix_key"))}</code><br>'
                f'USD per query at {_e(cache.get("price_per_m"))}/M input: uncached {_e(usd.get("uncached"))}, '
                f'warm cache {_e(usd.get("cached"))}, first call {_e(usd.get("first_call"))}</p>']
        if cache.get("note"):
            out.append(f'<p class="meta">{_e(cache["note"])}</p>')
    out.append('<h2 id="prompt">The final prompt</h2>')
    for m in b.get("messages") or []:
        # the newline after <pre> is the one a parser drops, so a message's own first newline stays
        out.append(f'<p class="meta">{_e(m.get("role"))} message</p><pre class="message" data-role="{_a(m.get("role"))}">'
                   f"\n{_linked(str(m.get('content', '')), labels)}</pre>")
    if not b.get("messages"):
        out.append(f'<p class="meta">No prompt: nothing was found, so the model is not called; the answer is '
                   f'{_e(b.get("refusal"))!s}</p>')
    out.append('<h2 id="sources">Sources</h2>')
    for label, s in sources.items():
        pages = s.get("pages")
        where = f'{_e(s.get("doc"))} v{_e(s.get("version"))}' + (f' · {_e(s.get("section"))}' if s.get("section") else "")
        if pages:
            where += " · page " + ", ".join(_e(p) for p in pages)
        out.append(f'<div class="source" id="src-{_a(label)}" data-label="{_a(label)}"><b>{_e(label)}</b> '
                   f'<span class="meta">{where} · {_e(s.get("status"))} · {_e(s.get("trust"))} · chunks '
                   f'{_chunk_ids(s.get("chunks"))}</span><pre>\n{_e(s.get("text"))}</pre></div>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
