"""Deeply nested HTML (issue 20 §3): read without recursion, or refused in one line naming the
limit, never a RecursionError, wherever HTML is read (ingestion, attachments, the link check)."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from docket.errors import InputError
from docket.ingest.html import clean_html
from docket.ingest.html5 import MAX_DEPTH, nesting_estimate, parse_soup


@pytest.mark.parametrize("tag", ["div", "span", "b", "section", "li", "table", "a", "font", "blockquote"])
@pytest.mark.parametrize("depth", [2_000, 5_000])
def test_deep_nesting_is_read(tag: str, depth: int) -> None:
    page = f'<p>Refunds take 14 days.</p>{f"<{tag} style=color:#333>" * depth}deep text{f"</{tag}>" * depth}'
    t = time.perf_counter()
    out = clean_html(page, Counter())
    assert "Refunds take 14 days." in out.text and "deep text" in out.text
    assert time.perf_counter() - t < 20


def test_deep_hidden_nesting_still_hides() -> None:
    page = '<p>shown</p><div style="display:none">' + "<div>" * 4_000 + "SECRET" + "</div>" * 4_000 + "</div>"
    counts: Counter[str] = Counter()
    out = clean_html(page, counts)
    assert "SECRET" not in out.text and "shown" in out.text and counts["html_hidden_display"] == 1


def test_deeper_than_the_limit_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match=f"{MAX_DEPTH:,}"):
        clean_html("<div>" * (MAX_DEPTH + 10) + "x")


def test_the_estimate_is_an_upper_bound_for_html_and_ignores_optional_ends() -> None:
    assert nesting_estimate("<p>a<p>b<p>c" * 5_000) == 0
    assert nesting_estimate("<ul>" + "<li>x" * 20_000 + "</ul>") == 1
    assert nesting_estimate("<div/>" * 50) == 50  # the slash means nothing on an HTML element
    assert nesting_estimate("<svg>" + "<path/>" * 5_000 + "</svg>") == 1


def test_deep_css_nesting_fails_closed() -> None:
    css = ".a{" * 2_000 + "color:red" + "}" * 2_000
    counts: Counter[str] = Counter()
    out = clean_html(f"<style>{css}</style><p class=a>SECRET</p>", counts)
    assert "SECRET" not in out.text and counts["html_hidden_unresolved_css_nesting"] == 1


def test_parse_soup_builds_the_browser_tree() -> None:
    soup = parse_soup("<head><p>in head</p><!-- a --!> after <b>x</b><template><i>never</i></template>")
    assert soup.body is not None and "in head" in soup.body.get_text() and "after" in soup.body.get_text()
    assert "never" not in soup.get_text()


def test_a_deep_attachment_is_read_and_a_deeper_one_refused_by_name() -> None:
    from docket.modes.attach import Attachment, read
    from docket.policy import Policy

    doc = read(Attachment("deep.html", ("<div>" * 5_000 + "deep text" + "</div>" * 5_000).encode()), Policy())
    assert "deep text" in doc.segments[0].text
    with pytest.raises(InputError, match=r"^deep\.html: .*10,000"):
        read(Attachment("deep.html", ("<div>" * 20_000).encode()), Policy())


def test_a_deep_answer_is_checked_without_recursion() -> None:
    from docket.checks.links import flagged_links, strip_links

    answer = "<div>" * 5_000 + '<img src="https://evil.example/p.png">' + "</div>" * 5_000
    assert {lk.domain for lk in flagged_links(answer, ["trusted.com"])} == {"evil.example"}
    assert flagged_links(strip_links(answer, ["trusted.com"]), ["trusted.com"]) == []
