"""A trace a person can look at: one self-contained HTML page per brief.

The page shows the ranked candidates, each with its fate (in the prompt under which label, folded
into another passage, or dropped by which move and why), every decision with its numbers, token
bars per section of the prompt, the conflicts, the cache report, and the final prompt with every
label linked to its source. It needs nothing outside itself: inline CSS, no script, no fonts or
images, and a Content-Security-Policy that forbids loading or running anything, so a passage that
smuggles markup into the page can neither fetch nor execute it. Every piece of text, candidate
ids included, is HTML-escaped before it is placed.

    html = render_trace(brief, candidates)      # a Brief (or its to_json() dict), Candidates or dicts
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
#: trace actions that settle a candidate's fate when it is not in the prompt
_SETTLING = {"drop", "skip", "stop", "not_found", "absorb", "fail", "current_not_found"}

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff;max-width:1200px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #d8dee8;padding-bottom:4px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef1f5;
vertical-align:top}th{background:#f5f7fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta{color:#5a6478}.fate{font-weight:600}.in_prompt{color:#17713a}.folded{color:#7a5a00}.dropped{color:#9b1c1c}
.not_used{color:#5a6478}pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;border:1px solid #e3e7ee;
padding:10px;border-radius:4px;font:12.5px/1.4 ui-monospace,monospace}.bar{height:14px;background:#4f7bd9;border-radius:2px}
.bar.documents{background:#2f9e62}.bar.tags{background:#9ad0b0}.bar.system{background:#4f7bd9}.bar.question{background:#d98b2b}
.bar.format{background:#b07ad9}.bar.notes{background:#d94f4f}.bar.history{background:#7a8699}.barcell{width:55%}
.source{border:1px solid #e3e7ee;border-radius:4px;padding:8px 10px;margin:8px 0}.source:target{outline:2px solid #4f7bd9}
code{font:12.5px ui-monospace,monospace;background:#f2f4f7;padding:0 3px;border-radius:3px}
.conflict{border-left:3px solid #d94f4f;padding:4px 10px;margin:6px 0;background:#fdf4f4}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _brief_json(brief: Any) -> dict[str, Any]:
    if isinstance(brief, Mapping):
        return dict(brief)
    to_json = getattr(brief, "to_json", None)
    if callable(to_json):
        return dict(to_json())
    raise TypeError(f"render_trace needs a Brief or its to_json() dict, got {type(brief).__name__}")


def _candidate_rows(candidates: Sequence[Any] | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i, c in enumerate(candidates or [], 1):
        if isinstance(c, Mapping):
            rows.append({"rank": c.get("rank", i), "id": str(c["id"]), "doc": c.get("doc", ""),
                         "version": c.get("version", ""), "status": c.get("status", ""), "score": c.get("score")})
        else:
            ch = c.chunk
            rows.append({"rank": c.rank, "id": ch.id, "doc": ch.doc, "version": ch.version, "status": ch.status,
                         "score": c.score})
    return rows


def fates(brief: Mapping[str, Any], ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Each candidate id's fate: (kind, text). Kinds: in_prompt, folded (a copy folded into a
    passage that is in the prompt), dropped (by a move, with its reason), not_used."""
    where: dict[str, tuple[str, str]] = {}
    for label, src in (brief.get("sources") or {}).items():
        for cid in src.get("chunks", []):
            where.setdefault(cid, ("in_prompt", f"in the prompt as {label}"))
        for extra in src.get("also_in", []) or []:
            for cid in extra.get("chunks", []):
                where.setdefault(cid, ("folded", f"a copy, folded into {label}"))
    last: dict[str, dict[str, Any]] = {}
    for event in brief.get("trace") or []:
        if event.get("action") in _SETTLING:
            for cid in event.get("chunks", []):
                last[cid] = event
    out: dict[str, tuple[str, str]] = {}
    for cid in ids:
        if cid in where:
            out[cid] = where[cid]
        elif cid in last:
            ev = last[cid]
            out[cid] = ("dropped", f"{ev['move']}: {ev['action']}: {ev['reason']}")
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
        rows.append(f'<tr data-section="{_e(key)}"><td>{_e(name)}</td><td class="num">{v:,}</td>'
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


def _numbers(numbers: Any) -> str:
    if not numbers:
        return ""
    return "<code>" + _e(json.dumps(numbers, ensure_ascii=False, default=str, sort_keys=True)) + "</code>"


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
            out.append(f'<tr class="candidate" data-candidate="{_e(r["id"])}" data-fate="{kind}">'
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
        chunks = ", ".join(str(c) for c in ev.get("chunks", []))
        out.append(f'<tr class="decision" data-move="{_e(ev.get("move"))}" data-action="{_e(ev.get("action"))}">'
                   f'<td class="num">{i}</td><td>{_e(ev.get("move"))}</td><td>{_e(ev.get("action"))}</td>'
                   f"<td><code>{_e(chunks)}</code></td><td>{_linked(str(ev.get('reason', '')), labels)}</td>"
                   f"<td>{_numbers(ev.get('numbers'))}</td></tr>")
    out.append("</table>")
    out.append('<h2 id="conflicts">Conflicts</h2>')
    conflicts = b.get("conflicts") or []
    if not conflicts:
        out.append('<p class="meta">None.</p>')
    for c in conflicts:
        who = " and ".join(c.get("labels") or []) or ", ".join(c.get("chunks") or [])
        out.append(f'<div class="conflict" data-kind="{_e(c.get("kind"))}"><b>{_linked(who, labels)}</b> '
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
        out.append(f'<p class="meta">{_e(m.get("role"))} message</p><pre class="message" data-role="{_e(m.get("role"))}">'
                   f"{_linked(str(m.get('content', '')), labels)}</pre>")
    if not b.get("messages"):
        out.append(f'<p class="meta">No prompt: nothing was found, so the model is not called; the answer is '
                   f'{_e(b.get("refusal"))!s}</p>')
    out.append('<h2 id="sources">Sources</h2>')
    for label, s in sources.items():
        pages = s.get("pages")
        where = f'{_e(s.get("doc"))} v{_e(s.get("version"))}' + (f' · {_e(s.get("section"))}' if s.get("section") else "")
        if pages:
            where += " · page " + ", ".join(_e(p) for p in pages)
        out.append(f'<div class="source" id="src-{_e(label)}" data-label="{_e(label)}"><b>{_e(label)}</b> '
                   f'<span class="meta">{where} · {_e(s.get("status"))} · {_e(s.get("trust"))} · chunks '
                   f'{_e(", ".join(s.get("chunks", [])))}</span><pre>{_e(s.get("text"))}</pre></div>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"
