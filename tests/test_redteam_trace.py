"""The HTML trace page against hostile briefs, with headless Chromium as the judge.

Every payload goes into every field a chunk carries (id, doc, title, section, status, metadata,
text) and, through a brief given as a dict (render_trace's Python API), into every field the page
reads (labels, warnings, decisions, conflicts, cache, messages, candidates). Two pages, each loaded
twice behind a recording proxy: as rendered (its Content-Security-Policy on), and with the policy
stripped and a measuring script of the test's own added, so the escaping is judged on its own.

- `trace/execution`: nothing runs (the title stays, no marker element appears), nothing loads (no
  request reaches the proxy), the DOM holds no element or attribute docket did not put there,
  and every value reads back, as text, exactly as given (no under- or double-escaping).
- `trace/spoofing`: what a reader sees is what the brief says: each candidate's fate cell holds
  its fate; no character that shows nothing or reorders text reaches the page raw; each chunk id
  of a decision is its own element; a long token does not push the fate column off the page; a
  message's first newline stays; every label link lands on that label's source.
- `trace/cost`: render time grows linearly with candidates, events and text (doubling ratio).
- `trace/bad-input`: a malformed brief or candidate is an InputError naming the field.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from chromium_oracle import Recorder, chromium, dump_dom
from redteam_log import record

from docket.assemble import assemble, rank_by_cosine
from docket.demo import REFUND_QUESTION, nimbus_chunks
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.model import Chunk
from docket.store.base import MemoryStore
from docket.trace_html import _SETTLING, render_trace

EMB = HashEmbedder(64)

#: payloads that try to run, load or add markup; {n} is the payload's number, {host} its own host
EXECUTE = [
    '<script>document.title="PWNED-{n}"</script>',
    '</code></td></tr></table><script>document.title="PWNED-{n}"</script>',
    '</pre></div><script>document.title="PWNED-{n}"</script>',
    '</title><script>document.title="PWNED-{n}"</script>',
    '</style><script>document.title="PWNED-{n}"</script>',
    '</textarea><script>document.title="PWNED-{n}"</script>',
    '</bdi></span><b id="pwned-{n}">x</b>',
    '<img src="http://{host}/i" onerror="document.title=\'PWNED-{n}\'">',
    '<svg onload="document.title=\'PWNED-{n}\'"><image href="http://{host}/s"/></svg>',
    '<math><mtext><table><mglyph><style><img src="http://{host}/m" id="pwned-{n}">',
    '<svg><style><img src=x onerror="document.title=\'PWNED-{n}\'"></style></svg>',
    '<iframe src="http://{host}/f" id="pwned-{n}"></iframe>',
    '<a id="pwned-{n}" href="javascript:document.title=\'PWNED-{n}\'">S1</a>',
    '<a href="data:text/html,<script>parent.document.title=\'PWNED-{n}\'</script>">S1</a>',
    '" onmouseover="document.title=\'PWNED-{n}\'" id="pwned-{n}" x="',
    "' onfocus='document.title=\"PWNED-{n}\"' autofocus id='pwned-{n}' x='",
    '"><img src="http://{host}/q" id="pwned-{n}">',
    '#"><a href="http://{host}/">',
    '<!--',
    '--><img src="http://{host}/c" id="pwned-{n}">',
    '<![CDATA[ ]]><img src="http://{host}/d" id="pwned-{n}">',
    '<plaintext>',
    '<noscript><p title="</noscript><img src=\'http://{host}/n\' id=\'pwned-{n}\'>"></noscript>',
    '<meta http-equiv="refresh" content="0;url=http://{host}/r">',
    '<base href="http://{host}/">',
    '<link rel="stylesheet" href="http://{host}/l.css">',
    '<style>@import "http://{host}/i.css"; body{background:url(http://{host}/bg)}</style>',
    '<div style="background:url(http://{host}/u)" id="pwned-{n}">',
    '<object data="http://{host}/o"></object><embed src="http://{host}/e">',
    '<video poster="http://{host}/v"></video><audio src="http://{host}/a"></audio>',
    '<form action="http://{host}/"><button id="pwned-{n}">go</button></form>',
    '<input autofocus onfocus="document.title=\'PWNED-{n}\'">',
    '<details open ontoggle="document.title=\'PWNED-{n}\'">',
    '<body onload="document.title=\'PWNED-{n}\'">',
    '<template shadowrootmode="open"><img src="http://{host}/t"></template>',
    '\x00<script>document.title="PWNED-{n}"</script>',
    '\r\n<script>document.title="PWNED-{n}"</script>',
    '\ufeff<script>document.title="PWNED-{n}"</script>',
    '\ud800<script>document.title="PWNED-{n}"</script>',
    '<scr\x00ipt>document.title="PWNED-{n}"</scr\x00ipt>',
    '&lt;script&gt;document.title="PWNED-{n}"&lt;/script&gt;',
    '&#60;img src=http://{host}/x&#62; &amp;amp; &#x3c; &#0; &#xd800;',
    '<<script>script>document.title="PWNED-{n}"<</script>/script>',
    '<img src="http://127.0.0.1:{port}/{n}">',
    'url(http://{host}/css) expression(alert(1)) \\3c script\\3e',
]

#: payloads that try to make the page say something the brief does not
SPOOF = [
    "in the prompt as S1",
    "x\u202e1S sa tpmorp eht ni :drop",
    "\u2066in the prompt as S1\u2069\u2067 dropped\u2069",
    "a\u2068b",
    "\u202d\u202b\u202c\u200e\u200f\u061c marks",
    "zero\u200bwidth\u200c\u200d\u2060joiners",
    "\ufeffbom",
    "\U000e0069\U000e0067\U000e006e tags",
    "soft\u00adhyphen \u180e mongolian",
    "line\u2028sep\u2029para",
    "a\x1b[31mred\x1b[0m\x07bell\x7fdel\x85nel",
    "lone \udfff surrogate",
    "\n\nleading newlines",
    "trailing newline\n",
    "a, pol3-4",
    "pol3-4",
    "S1",
    "[S2] and label=\"S3\"",
    "\u0405" + "1 look-alike",
    "s1",
    "#src-S1",
    "src-S2",
    "x" * 4000,
    "\u05e9\u05dc\u05d5\u05dd 123 v3 \u05e2\u05d5\u05dc\u05dd",
    "\u0627\u0644\u0633\u0644\u0627\u0645 (S1) 42",
    "&amp; &lt;b&gt; &#x202e; &quot;",
    "\t tab \t",
    "\ufffe\uffff\ufdd0 nonchars",
]

PAYLOADS = [("trace/execution", p) for p in EXECUTE] + [("trace/spoofing", p) for p in SPOOF]


def _payload(n: int, template: str, port: int) -> str:
    return template.replace("{n}", str(n)).replace("{host}", f"pwn-{n}.test").replace("{port}", str(port))


def _hidden(c: str) -> bool:
    cp = ord(c)
    return c not in "\t\n" and (unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
                                 or 0xFDD0 <= cp <= 0xFDEF or cp & 0xFFFE == 0xFFFE)


def show(value: Any) -> str:
    """What a reader sees of `value`: itself, each hidden character as its code (U+202E)."""
    return "".join(f"U+{ord(c):04X}" if _hidden(c) else c for c in ("" if value is None else str(value)))


def expected_fates(brief: dict[str, Any], ids: list[str]) -> dict[str, str]:
    """The fate of each candidate as the brief says it, worked out here, not by docket."""
    out: dict[str, str] = {}
    for label, s in brief["sources"].items():
        for cid in s.get("chunks") or []:
            out.setdefault(cid, f"in the prompt as {label}")
        for extra in s.get("also_in") or []:
            for cid in extra.get("chunks") or []:
                out.setdefault(cid, f"a copy, folded into {label}")
    last: dict[str, str] = {}
    for ev in brief["trace"]:
        if ev.get("action") in _SETTLING:
            for cid in ev.get("chunks") or []:
                last[cid] = f"{ev.get('move')}: {ev.get('action')}: {ev.get('reason')}"
    return {cid: out.get(cid) or last.get(cid) or "not in the prompt (no move recorded a decision about it)"
            for cid in ids}


def chunk_page(payloads: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A brief assembled from chunks that carry payload n in every field (id `x<n>:...`)."""
    chunks = nimbus_chunks() + [
        Chunk(id=f"x{n}:{p}", doc=f"d{n}:{p}", text=f"Refund of an annual plan after 30 days. {p}", title=p,
              section=p, status=p, metadata={"note": p}, position=0)
        for n, p in enumerate(payloads)]
    question = REFUND_QUESTION + " " + " ".join(payloads[:3])
    ranked = rank_by_cosine(question, chunks, EMB)
    brief = assemble(question, ranked, store=MemoryStore(chunks), embedder=EMB, floor=-1.0, budget=40_000)
    cands = [{"id": c.chunk.id, "doc": c.chunk.doc, "version": c.chunk.version, "status": c.chunk.status,
              "rank": c.rank, "score": c.score} for c in ranked]
    return brief.to_json(), cands


def dict_page(payloads: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A small real brief as a dict with payload n in every field the page reads."""
    b, cands = chunk_page([])
    b = json.loads(json.dumps(b))
    for n, p in enumerate(payloads):
        cid = f"y{n}:{p}"
        b["sources"][f"L{n}:{p}"] = {"doc": p, "version": p, "section": p, "status": p, "trust": p, "text": p,
                                     "chunks": [cid], "pages": [p], "also_in": [{"chunks": [f"z{n}:{p}"]}]}
        b["trace"].append({"move": p, "action": "drop", "chunks": [f"w{n}:{p}", p], "reason": p, "numbers": {p: p}})
        b["conflicts"].append({"kind": p, "reason": p, "labels": [], "chunks": [p]})
        b["warnings"].append(p)
        b["messages"].append({"role": p, "content": f"{p} y{n}:"})
        cands += [{"id": i, "doc": p, "version": p, "status": p, "rank": n, "score": 0.5}
                  for i in (cid, f"z{n}:{p}", f"w{n}:{p}")]
    b["question"] = b["refusal"] = b["mode"] = " ".join(payloads[:4])
    b["cache"]["note"] = b["cache"]["prefix_key"] = " ".join(payloads[4:8])
    return b, cands


_MEASURE = """<script id="rt-measure">addEventListener("load", () => {
const d = document.documentElement, w = d.clientWidth, text = e => e ? e.textContent : null;
const rows = [...document.querySelectorAll("tr.candidate")].map(r => ({id: r.dataset.candidate, fate: r.dataset.fate,
  cells: [...r.children].map(text), right: Math.round(r.querySelector("td.fate").getBoundingClientRect().right - w)}));
const decisions = [...document.querySelectorAll("tr.decision")].map(r => [...r.children[3].querySelectorAll("code")].map(text));
const sources = [...document.querySelectorAll("div.source")].map(s => ({label: s.dataset.label, id: s.id,
  b: text(s.querySelector("b")), pre: text(s.querySelector("pre"))}));
const links = [...document.querySelectorAll("a")].map(a => { const id = decodeURIComponent((a.getAttribute("href") || "").slice(1));
  const t = document.getElementById(id); return {text: a.textContent, href: a.getAttribute("href"),
  target: t ? t.dataset.label : null, count: document.querySelectorAll("[id]").length ?
  [...document.querySelectorAll("[id]")].filter(e => e.id === id).length : 0}; });
const out = document.createElement("div"); out.id = "rt-out";
out.dataset.rt = JSON.stringify({overflow: d.scrollWidth - w, rows, decisions, sources, links,
  messages: [...document.querySelectorAll("pre.message")].map(text), all: text(document.body)});
document.body.appendChild(out); });</script>"""

TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "br", "table", "tbody", "tr", "th",
        "td", "code", "div", "span", "pre", "a", "bdi"}
ATTRS = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "style", "data-candidate",
         "data-fate", "data-section", "data-move", "data-action", "data-kind", "data-role", "data-label"}
IDS = {"summary", "tokens", "candidates", "decisions", "conflicts", "cache", "prompt", "sources"}


def foreign(dom: BeautifulSoup, brief: dict[str, Any]) -> list[str]:
    """Elements and attributes docket did not put there (the test's own measuring parts aside)."""
    ids = IDS | {f"src-{form(label)}" for label in brief["sources"] for form in (str, _attr, _parsed)}
    bad = []
    for el in dom.find_all(True):
        if el.get("id") in ("rt-measure", "rt-out"):
            continue
        if el.name not in TAGS:
            bad.append(f"<{el.name}> {str(el)[:80]}")
        for k in el.attrs:
            if k not in ATTRS or (k == "style" and "bar" not in el.get("class", [])):
                bad.append(f"<{el.name} {k}=...>")
        if el.get("id") is not None and el["id"] not in ids:
            bad.append(f"id {el['id'][:60]!r}")
        if el.name == "a" and (el.get("class") != ["label"] or not str(el.get("href", "")).startswith("#src-S")):
            bad.append(f"link {str(el)[:80]}")
        if el.name == "meta" and el.get("http-equiv") not in (None, "Content-Security-Policy"):
            bad.append(f"meta {str(el)[:80]}")
    return bad


_WHO = re.compile(r"^[xyzwdL](\d+):|\by(\d+):$")


def judge(page: str, brief: dict[str, Any], cands: list[dict[str, Any]], tmp: Path, rec: Recorder,
          tag: str) -> dict[int | None, list[str]]:
    """Problems Chromium shows, keyed by the payload they come from (None: the page as a whole)."""
    problems: dict[int | None, list[str]] = {}

    def blame(text: str, why: str) -> None:
        m = _WHO.search(text)
        problems.setdefault(int(m.group(1) or m.group(2)) if m else None, []).append(why)

    title = "docket trace"
    # 1. as served: the policy on; nothing may run or load
    (tmp / f"{tag}.html").write_text(page, encoding="utf-8")
    dom, hosts = dump_dom(tmp / f"{tag}.html", rec)
    soup = BeautifulSoup(dom, "html.parser")
    # 2. the policy stripped and the test's measuring script added: the escaping on its own
    bare = page.replace(page[page.index('<meta http-equiv="Content-Security-Policy"'):page.index(
        '<meta name="viewport"')], "").replace("</body>", _MEASURE + "</body>")
    (tmp / f"{tag}-bare.html").write_text(bare, encoding="utf-8")
    dom2, hosts2 = dump_dom(tmp / f"{tag}-bare.html", rec)
    soup2 = BeautifulSoup(dom2, "html.parser")
    for s in (soup, soup2):
        got = s.title.get_text() if s.title else None
        if got != title:
            blame(f"x{got.split('-')[-1]}:" if got and got.startswith("PWNED-") else "page", f"title became {got!r}")
        for el in s.select('[id^="pwned-"]'):
            blame(f"x{el['id'].split('-', 1)[1]}:", f"marker element <{el.name}>")
        for why in foreign(s, brief):
            blame("page", why)
    for h in hosts + hosts2:
        blame(f"x{h.split('.')[0].removeprefix('pwn-')}:" if h.startswith("pwn-") else "page", f"loaded {h}")
    out = soup2.find(id="rt-out")
    if out is None:
        blame("page", "the measuring script did not finish (the page navigated away or broke)")
        return problems
    m = json.loads(out["data-rt"])
    fate = expected_fates(brief, [c["id"] for c in cands])
    if len(m["rows"]) != len(cands) or any(r["id"] not in (c["id"], _attr(c["id"]), _parsed(c["id"]))
                                           for r, c in zip(m["rows"], cands, strict=False)):
        blame("page", "the candidate rows are not the candidates, once each, in rank order")
    for r, c in zip(m["rows"], cands, strict=False):
        want = [show(c["rank"]), show(c["id"]), show(c["doc"]), show(c["version"]), show(c["status"]),
                f"{c['score']:.3f}", show(fate[c["id"]])]
        if r["cells"] != want:
            blame(c["id"], f"row reads {r['cells']!r:.200} not {want!r:.200}")
        if r["right"] > 1:  # a long token anywhere pushes every row's fate out: the page's fault, not the row's
            blame("page", f"fate cell of {c['id'][:40]!r} ends {r['right']}px right of the window")
    if m["overflow"] > 2:
        blame("page", f"the page is {m['overflow']}px wider than the window")
    for row, ev in zip(m["decisions"], brief["trace"], strict=False):
        if len(row) == 1 and len(ev.get("chunks") or []) > 1:  # one element for several ids: read it as a reader would
            row = row[0].split(", ")
        if row != [show(c) for c in ev.get("chunks") or []]:  # blame the ids that hold a separator or hide
            ids = ev.get("chunks") or ["page"]
            for c in [c for c in ids if ", " in c or any(map(_hidden, c))] or ids[:1]:
                blame(c, f"decision chunks read {row!r:.120}")
    for s, (label, src) in zip(m["sources"], brief["sources"].items(), strict=False):
        if s["b"] != show(label) or s["pre"] != show(src.get("text")):
            blame((src.get("chunks") or [label])[0], f"source reads {s['b']!r:.60} / {s['pre']!r:.120}")
    for got_msg, msg in zip(m["messages"], brief["messages"], strict=False):
        if got_msg != show(msg["content"]):
            blame(msg["content"], f"message reads {got_msg!r:.120}")
    for link in m["links"]:
        if link["count"] != 1 or link["target"] != link["text"] or link["text"] not in brief["sources"]:
            blame("page", f"label link {link!r:.160} does not land on its source")
    raw = [c for c in m["all"] if _hidden(c)]
    if raw:
        blame("page", f"hidden characters on the page: {sorted({f'U+{ord(c):04X}' for c in raw})[:10]}")
    return problems


def _parsed(value: str) -> str:
    """An attribute value as an HTML parser reads it back (NUL replaced, line ends folded)."""
    return value.replace("\0", "\ufffd").replace("\r\n", "\n").replace("\r", "\n")


def _attr(value: str) -> str:
    return "".join((f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}") if _hidden(c) else c for c in value)


@pytest.mark.slow
def test_redteam_trace_in_chromium(tmp_path: Path) -> None:
    if chromium() is None:
        pytest.skip("LOUD SKIP: chromium is not installed (apt-get install -y chromium); the trace page was not "
                    "checked in a browser")
    rec = Recorder()
    try:
        payloads = [_payload(n, p, rec.port) for n, (_cls, p) in enumerate(PAYLOADS)]
        escaped: dict[str, set[int]] = {"trace/execution": set(), "trace/spoofing": set()}
        crashed = []
        pages = []
        for tag, build, prefix in (("chunks", chunk_page, "x"), ("dict", dict_page, "y")):
            keep = []
            for n, p in enumerate(payloads):  # a payload that breaks rendering alone is an escape
                try:
                    b, c = build([p])
                except (InputError, ValueError):  # docket refuses the chunk itself: nothing reaches the page
                    continue
                try:
                    render_trace(b, c).encode("utf-8")
                    keep.append(n)
                except Exception as e:  # noqa: BLE001 - any failure is what is counted
                    escaped[PAYLOADS[n][0]].add(n)
                    crashed.append((tag, n, type(e).__name__))
            b, c = build([payloads[n] if n in keep else f"skipped {n}" for n in range(len(payloads))])
            pages.append((tag, b, c, prefix))
        all_problems = {}
        for tag, b, c, _prefix in pages:
            problems = judge(render_trace(b, c), b, c, tmp_path, rec, tag)
            for key, whys in problems.items():
                if key is not None and key < len(PAYLOADS):
                    escaped[PAYLOADS[key][0]].add(key)
                all_problems[f"{tag}/{key}"] = whys
        page_level = [k for k in all_problems if k.endswith("/None")]
        for cls in escaped:
            tried = sum(1 for c, _ in PAYLOADS if c == cls)
            extra = 1 if page_level and cls == "trace/spoofing" else 0
            record(cls, tried=tried, escaped=min(tried, len(escaped[cls]) + extra),
                   note=f"payloads in every field of a chunk and of a dict brief, two pages in Chromium with and without "
                        f"the CSP; render failures {len(crashed)}")
    finally:
        rec.close()
    assert not crashed, crashed
    assert not all_problems, json.dumps(all_problems, ensure_ascii=True)[:4000]


def _render_seconds(brief: dict[str, Any], cands: list[dict[str, Any]]) -> float:
    """The least CPU time of three renders (process time: other processes' load does not count)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        render_trace(brief, cands)
        best = min(best, time.process_time() - t0)
    return best


def _big(candidates: int, events: int, text: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    b, _ = chunk_page([])
    b = json.loads(json.dumps(b))
    hostile = "<S1 &\u202e\"'>" * (text // 12)
    b["sources"]["S1"]["text"] = hostile
    b["messages"][-1]["content"] = hostile
    b["trace"] = [{"move": "floor", "action": "drop", "chunks": [f"c{i}"], "reason": "<b>S1</b> &", "numbers": {"s": i}}
                  for i in range(events)]
    cands = [{"id": f"c{i}<&>\u202e", "doc": "d<", "rank": i, "score": 0.1} for i in range(candidates)]
    return b, cands


@pytest.mark.slow
def test_redteam_trace_cost() -> None:
    """Four times the size takes at most about four times the CPU time: a ratio under 8 each, where
    anything quadratic would give 16 (1k to 4k candidates, 5k to 20k decisions, 0.25 to 1 MB of
    hostile text, every character of it escaped or boxed)."""
    sizes = {"candidates": (1000, 0, 0), "events": (0, 5000, 0), "text": (0, 0, 250_000)}
    slow = []
    for name, (c, e, t) in sizes.items():
        one = _render_seconds(*_big(c, e, t))
        four = _render_seconds(*_big(4 * c, 4 * e, 4 * t))
        if four / max(one, 1e-3) > 8:
            slow.append((name, round(one, 4), round(four, 4)))
    record("trace/cost", tried=len(sizes), escaped=len(slow), note="CPU time ratio over 8 for four times the "
           "candidates (1k), decisions (5k) or hostile text (0.25 MB)")
    assert not slow, slow


def _bad_inputs() -> list[tuple[str, Any, Any, str]]:
    b, c = chunk_page([])

    def edit(path: list[Any], value: Any, drop: bool = False) -> dict[str, Any]:
        out = json.loads(json.dumps(b))
        node = out
        for k in path[:-1]:
            node = node[k]
        if drop:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return out

    label = next(iter(b["sources"]))
    return [
        ("not a brief", 42, c, "brief"),
        ("no sources", edit(["sources"], None, drop=True), c, "sources"),
        ("no trace", edit(["trace"], None, drop=True), c, "trace"),
        ("no messages", edit(["messages"], None, drop=True), c, "messages"),
        ("sources a list", edit(["sources"], []), c, "sources"),
        ("a source a string", edit(["sources", label], "x"), c, f"sources.{label}"),
        ("chunks a string", edit(["sources", label, "chunks"], "pol3-4"), c, f"sources.{label}.chunks"),
        ("chunk id a number", edit(["sources", label, "chunks"], [1]), c, f"sources.{label}.chunks[0]"),
        ("also_in of strings", edit(["sources", label, "also_in"], ["x"]), c, f"sources.{label}.also_in[0]"),
        ("text a dict", edit(["sources", label, "text"], {"a": 1}), c, f"sources.{label}.text"),
        ("trace a dict", edit(["trace"], {}), c, "trace"),
        ("event a list", edit(["trace", 0], []), c, "trace[0]"),
        ("event chunks an int", edit(["trace", 0, "chunks"], 3), c, "trace[0].chunks"),
        ("reason a list", edit(["trace", 0, "reason"], ["x"]), c, "trace[0].reason"),
        ("budget a string", edit(["budget"], "lots"), c, "budget"),
        ("budget infinite", edit(["budget"], float("inf")), c, "budget"),
        ("found a string", edit(["found"], "yes"), c, "found"),
        ("tokens a list", edit(["tokens"], [1]), c, "tokens"),
        ("a token count a string", edit(["tokens", "system"], "189"), c, "tokens.system"),
        ("warnings a string", edit(["warnings"], "careful"), c, "warnings"),
        ("conflicts of strings", edit(["conflicts"], ["x"]), c, "conflicts[0]"),
        ("cache a list", edit(["cache"], [1]), c, "cache"),
        ("cache tokens a string", edit(["cache", "prefix_tokens"], "many"), c, "cache.prefix_tokens"),
        ("usd a list", edit(["cache", "usd_per_query"], [1]), c, "cache.usd_per_query"),
        ("messages a dict", edit(["messages"], {}), c, "messages"),
        ("content a list", edit(["messages", 0, "content"], [{"type": "text"}]), c, "messages[0].content"),
        ("tokenizer a string", edit(["tokenizer"], "o200k"), c, "tokenizer"),
        ("candidates a string", b, "pol3-4", "candidates"),
        ("candidates a dict", b, {"id": "pol3-4"}, "candidates"),
        ("candidate without id", b, [{"doc": "x"}], "candidates[0].id"),
        ("candidate id a number", b, [{"id": 7}], "candidates[0].id"),
        ("candidate score a string", b, [{"id": "a", "score": "high"}], "candidates[0].score"),
        ("candidate a number", b, [3], "candidates[0]"),
        ("candidate doc a list", b, [{"id": "a", "doc": ["x"]}], "candidates[0].doc"),
    ]


@pytest.mark.slow
def test_redteam_trace_bad_input() -> None:
    cases = _bad_inputs()
    escaped = []
    for name, brief, cands, field in cases:
        try:
            render_trace(brief, cands)
            escaped.append((name, "rendered"))
        except InputError as e:
            if e.field != field or "render_trace" not in str(e):
                escaped.append((name, f"field {e.field!r}: {e}"))
        except Exception as e:  # noqa: BLE001 - a traceback is what is counted
            escaped.append((name, f"{type(e).__name__}: {e}"))
    record("trace/bad-input", tried=len(cases), escaped=len(escaped),
           note="malformed briefs and candidates: an InputError naming the field, nothing else")
    assert not escaped, escaped
