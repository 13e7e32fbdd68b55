"""The HTML trace: self-contained, escaped against hostile passage text, every candidate once with
its fate; checked in headless Chromium (a screenshot and the rendered DOM)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from cli_run import run
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.assemble import assemble, rank_by_cosine
from docket.demo import REFUND_QUESTION, nimbus_chunks, nimbus_path
from docket.embed import HashEmbedder
from docket.model import Chunk
from docket.store.base import MemoryStore
from docket.trace_html import fates, render_trace

EMB = HashEmbedder(64)
HOSTILE = ('</pre></td></tr></table><script>document.title="PWNED"</script><img src=x onerror="document.title=1">'
           '<a href="javascript:alert(1)">click</a><style>body{display:none}</style> S1 S99 &amp; "quotes" \'single\'')


def hostile_brief():
    chunks = nimbus_chunks() + [
        Chunk(id='evil"><script>x</script>', doc="forum-<b>9</b>", text="Refund trick. " + HOSTILE, position=0,
              title='<iframe src="https://evil.example">', section="<svg onload=alert(1)>", status="user-generated"),
    ]
    ranked = rank_by_cosine(REFUND_QUESTION, chunks, EMB)
    brief = assemble(REFUND_QUESTION, ranked, store=MemoryStore(chunks), embedder=EMB, floor=-1.0, budget=600)
    return brief, ranked


def parse(page: str) -> BeautifulSoup:
    return BeautifulSoup(page, "html.parser")


def test_hostile_text_cannot_add_markup_or_script():
    brief, ranked = hostile_brief()
    page = render_trace(brief, ranked)
    soup = parse(page)
    assert soup.find_all("script") == [] and soup.find_all("img") == [] and soup.find_all("iframe") == []
    assert soup.find_all("svg") == [] and len(soup.find_all("style")) == 1
    assert not [a for a in soup.find_all("a") if not a["href"].startswith("#src-S")]
    assert not [t for t in soup.find_all(True) if any(k.startswith("on") for k in t.attrs)]
    assert "PWNED" in soup.get_text()  # shown as text, not run
    csp = soup.find("meta", attrs={"http-equiv": "Content-Security-Policy"})["content"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert "http" not in "".join(str(t) for t in soup.find_all(["link", "script", "img"]))


TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "br", "table", "tr", "th", "td", "code", "bdi",
        "div", "span", "pre", "a"}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(list("<>&\"'=/ ab!-") + ["<script>", "</pre>", "<img src=x onerror=alert(1)>", "<!--",
                                                          "-->", "<![CDATA[", "&#60;", "\u2028"]),
                min_size=1, max_size=30).map("".join))
def test_no_text_adds_an_element(text):
    chunks = [Chunk(id="a" + str(len(text)), doc="d" + text, text=text + " refund", title=text, section=text, position=0)]
    brief = assemble("refund " + text, rank_by_cosine("refund", chunks, EMB), store=MemoryStore(chunks), embedder=EMB,
                     floor=-1.0)
    soup = parse(render_trace(brief, brief.ranked, title=text))
    assert {t.name for t in soup.find_all(True)} <= TAGS
    assert len(soup.select("tr.candidate")) == 1 and len(soup.select("div.source")) == len(brief.sources)
    assert all(a["href"].startswith("#src-S") for a in soup.find_all("a"))


def test_every_candidate_once_with_its_fate():
    brief, ranked = hostile_brief()
    soup = parse(render_trace(brief, ranked))
    rows = soup.select("tr.candidate")
    assert [r["data-candidate"] for r in rows] == [c.chunk.id for c in ranked]
    fate = {r["data-candidate"]: r["data-fate"] for r in rows}
    in_prompt = {cid for s in brief.sources.values() for cid in s["chunks"]}
    for c in ranked:
        assert (fate[c.chunk.id] == "in_prompt") == (c.chunk.id in in_prompt)
    assert fate["pol2-3"] == "dropped"  # the superseded version
    assert "versions: drop" in soup.select_one('tr[data-candidate="pol2-3"] td.fate').get_text()
    labels = {a.get_text() for a in soup.select("a.label")}
    assert labels <= set(brief.sources) and soup.select("div.source") and soup.select("pre.message")
    assert {tr["data-section"] for tr in soup.select("table.tokens tr[data-section]")} >= {"system", "passage_text", "tags"}
    assert len(soup.select("tr.decision")) == len(brief.trace)


def test_fates_cover_copies_and_untouched_candidates():
    brief = {"sources": {"S1": {"chunks": ["a"], "also_in": [{"chunks": ["b"]}]}},
             "trace": [{"move": "floor", "action": "drop", "chunks": ["c"], "reason": "below"}]}
    assert fates(brief, ["a", "b", "c", "d"]) == {
        "a": ("in_prompt", "in the prompt as S1"), "b": ("folded", "a copy, folded into S1"),
        "c": ("dropped", "floor: drop: below"), "d": ("not_used", "not in the prompt (no move recorded a decision about it)")}


def test_cli_writes_the_page(tmp_path: Path):
    out = tmp_path / "trace.html"
    proc = run("assemble", "--store", nimbus_path(), "-q", REFUND_QUESTION, "--html", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    soup = parse(out.read_text(encoding="utf-8"))
    assert len(soup.select("tr.candidate")) == 8  # assemble ranked the whole store itself
    bad = run("assemble", "--store", nimbus_path(), "-q", "q", "--html", str(tmp_path / "no" / "such" / "dir.html"))
    assert bad.returncode == 2 and "--html" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="LOUD SKIP: chromium is not installed (apt-get install -y chromium); "
                    "the HTML trace was not checked in a browser")
def test_in_headless_chromium(tmp_path: Path):
    brief, ranked = hostile_brief()
    page = tmp_path / "trace.html"
    page.write_text(render_trace(brief, ranked, title="docket trace"), encoding="utf-8")
    shot = tmp_path / "trace.png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-extensions", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                           "--window-size=1280,2400", f"--screenshot={shot}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    dom = parse(proc.stdout)
    assert dom.title.get_text() == "docket trace"  # no script ran (one would have set it to PWNED)
    rows = dom.select("tr.candidate")
    assert sorted(r["data-candidate"] for r in rows) == sorted(c.chunk.id for c in ranked)
    assert len({r["data-candidate"] for r in rows}) == len(rows)  # each candidate exactly once
    assert all(r["data-fate"] in ("in_prompt", "folded", "dropped", "not_used") and r.select_one("td.fate").get_text()
               for r in rows)
    assert dom.find_all("script") == [] and dom.find_all("img") == [] and dom.find_all("iframe") == []
    keep = os.environ.get("DOCKET_TRACE_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
