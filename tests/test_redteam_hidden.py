"""Hidden text against Chromium's pixels (issue 20 §5), on every page of the hidden-text tables
(test_hidden_html and test_hidden_html5: 209 pages). Chromium decides, not the table: a word is
hidden when swapping it for another of the same width changes no pixel noticeably. Escaped: a
word Chromium hides that docket keeps. Lost: a word Chromium shows that docket removes, allowed
only where docket fails closed on purpose (an `unresolved_*` reason) or by policy."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from redteam_log import record
from test_hidden_html import BROWSER_DIFFERS, BROWSER_HIDES, _shoot
from test_hidden_html import HIDDEN as HIDDEN_1
from test_hidden_html import VISIBLE as VISIBLE_1
from test_hidden_html5 import HIDDEN as HIDDEN_2
from test_hidden_html5 import PAGE
from test_hidden_html5 import VISIBLE as VISIBLE_2

from docket.ingest.html import clean_html


def _cases() -> list[tuple[str, str, str, str, str]]:
    """(name, css, html, word, kind or "") for every row of both tables."""
    out = [(n, c, h, "SECRET", k) for n, c, h, k in HIDDEN_1 + HIDDEN_2]
    out += [(n, c, h, "SHOWN", "") for n, c, h in VISIBLE_1 + VISIBLE_2]
    return out


@pytest.mark.slow
def test_redteam_hidden_vs_chromium(tmp_path: Path) -> None:
    import numpy as np
    from chromium_oracle import chromium

    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    cases = _cases()
    pages = []
    for _name, css, html, word, _kind in cases:
        page = PAGE.format(css=css, html=html).replace("<style>", "<style>body{font-family:monospace}</style><style>", 1)
        pages += [page, page.replace(word, "X" * len(word))]
    shots = _shoot(pages, tmp_path)
    escaped, lost = [], []
    for k, (name, css, html, word, kind) in enumerate(cases):
        changed = int((np.abs(np.asarray(shots[2 * k]) - np.asarray(shots[2 * k + 1])).max(axis=2) >= 24).sum())
        shown = changed >= 4
        kept = word in clean_html(PAGE.format(css=css, html=html), Counter()).text
        if kept and not shown and name not in BROWSER_HIDES:
            escaped.append((name, changed))
        if shown and not kept:
            lost.append((name, kind))
    by_policy = [n for n, kind in lost if kind.startswith("unresolved") or n in BROWSER_DIFFERS or kind in (
        "aria_hidden", "filter", "letter_spacing")]
    record("hidden/chromium-escaped", tried=len(cases), escaped=len(escaped),
           note="text Chromium does not paint that docket keeps: " + "; ".join(f"{n} ({c} px)" for n, c in escaped))
    record("hidden/chromium-lost", tried=len(cases), escaped=len(lost) - len(by_policy),
           note=f"text Chromium paints that docket removes; {len(by_policy)} by fail-closed policy: "
                + "; ".join(n for n, _ in lost))
    (tmp_path / "verdicts.txt").write_text(repr({"escaped": escaped, "lost": lost}))
    assert not escaped, escaped
    assert len(lost) == len(by_policy), [x for x in lost if x[0] not in by_policy]
