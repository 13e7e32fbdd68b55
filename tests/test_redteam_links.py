"""The link check against Chromium (issue 20 §5): every hostile answer (test_links.BYPASSES and
test_links_html5.HTML5) is rendered by markdown-it with HTML on and loaded in headless Chromium
behind a recording proxy. The check must flag every answer that makes Chromium request a host
outside the allow-list, and after `strip_links` no answer may make it request one."""

from __future__ import annotations

from pathlib import Path

import pytest
from chromium_oracle import Recorder, chromium, requested_hosts
from markdown_it import MarkdownIt
from redteam_log import record
from test_links import ALLOW, BYPASSES
from test_links_html5 import HTML5

from docket.checks.links import flagged_links, strip_links
from docket.checks.urls import host_allowed

_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_BATCH = 16


def _outside(hosts: list[str]) -> list[str]:
    return sorted({h for h in hosts if h and not host_allowed(h, ALLOW)})


def _page(answer: str) -> str:
    return f"<!doctype html><html><body>{_MD.render(answer)}</body></html>"


@pytest.mark.slow
def test_redteam_links_vs_chromium(tmp_path: Path) -> None:
    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    answers = [(n, a) for n, a, _ in BYPASSES] + list(HTML5)
    rec = Recorder()
    try:
        loading, escaped, missed = [], [], []
        for at in range(0, len(answers), _BATCH):
            batch = answers[at:at + _BATCH]
            stripped = [strip_links(a, ALLOW) for _, a in batch]
            if _outside(requested_hosts([_page(s) for s in stripped], tmp_path, rec)):
                for (name, _a), s in zip(batch, stripped, strict=True):  # attribute the batch's requests
                    hosts = _outside(requested_hosts([_page(s)], tmp_path, rec))
                    if hosts:
                        escaped.append((name, hosts, s))
            for name, a in batch:
                if not flagged_links(a, ALLOW):
                    hosts = _outside(requested_hosts([_page(a)], tmp_path, rec))
                    if hosts:
                        missed.append((name, hosts))
            loading += [1] if _outside(requested_hosts([_page(a) for _, a in batch], tmp_path, rec)) else []
    finally:
        rec.close()
    record("links/chromium-check", tried=len(answers), escaped=len(missed),
           note="answers making Chromium request a non-allowed host that `docket check` passes")
    record("links/chromium-strip", tried=len(answers), escaped=len(escaped),
           note="answers still making Chromium request a non-allowed host after --strip-links")
    assert loading, "the oracle saw no request at all: the proxy or Chromium is broken"
    assert not missed, missed
    assert not escaped, escaped
