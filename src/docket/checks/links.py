"""Links in an answer: find them, allow-list them by domain, strip the others.

A planted document can tell the model to add a link ("send your card number to
nimbus-refund-desk.example") or an image whose URL carries conversation data out when a
client renders it. Fencing lowers how often that works; an output check bounds the damage. Every
URL, Markdown link or image, e-mail address and bare domain in the answer is found, and anything
whose host is not an allowed domain (or a subdomain of one) is flagged and can be stripped.
Bare domains are recognised by a list of real and reserved top-level domains, so "e.g." or
"config.py" are not mistaken for hosts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

TLDS = {
    "com", "net", "org", "io", "ai", "co", "app", "dev", "info", "biz", "xyz", "me", "us", "uk", "de", "fr", "eu",
    "ca", "au", "in", "jp", "cn", "ru", "br", "nl", "se", "no", "es", "it", "ch", "at", "be", "dk", "fi", "pl",
    "cz", "pt", "gr", "ie", "nz", "za", "mx", "ar", "kr", "tw", "hk", "sg", "tv", "cc", "ly", "gg", "to", "link",
    "site", "online", "store", "shop", "tech", "cloud", "page", "blog", "news", "live", "pro", "top", "club",
    "click", "help", "support", "email", "money", "pay", "bank", "finance", "gov", "edu", "mil", "int", "ws",
    "su", "ua", "tk", "ml", "ga", "cf", "gq", "icu", "lol", "zip", "mov",
    # reserved names (RFC 2606 / 6761 / 6762): the test corpora use them
    "example", "test", "invalid", "localhost", "local", "internal", "onion",
}

_IMAGE = re.compile(r"!\[(?P<text>[^\]]*)\]\(\s*<?(?P<url>[^)\s>]+)>?(?:\s+[\"'][^\"']*[\"'])?\s*\)")
_MDLINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\(\s*<?(?P<url>[^)\s>]+)>?(?:\s+[\"'][^\"']*[\"'])?\s*\)")
_HTML = re.compile(r"<(?P<tag>a|img|iframe|script|link)\b[^>]*?\b(?:href|src)\s*=\s*[\"']?(?P<url>[^\"'\s>]+)[^>]*>(?:(?P<text>[^<]*)</a>)?", re.I)
_URL = re.compile(r"(?P<url>(?:https?|ftp|wss?|javascript|data|file):(?://)?[^\s<>\"'`\]\[)(]+|www\.[^\s<>\"'`\]\[)(]+)", re.I)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@(?P<host>(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24})\b", re.I)
_DOMAIN = re.compile(r"(?<![\w@./-])(?P<host>(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?P<tld>[a-z]{2,24}))(?P<path>/[^\s<>\"'`\])]*)?(?![\w-])", re.I)


@dataclass
class Link:
    url: str
    domain: str
    kind: str  # image | markdown | html | url | email | domain
    start: int
    end: int
    text: str = ""  # the visible text of a Markdown/HTML link

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "domain": self.domain, "kind": self.kind, "text": self.text}


def host_of(url: str) -> str:
    u = url.strip().strip(".,;:!?")
    low = u.lower()
    if low.startswith(("javascript:", "data:", "file:")):
        return low.split(":", 1)[0] + ":"
    if low.startswith("mailto:"):
        return low.split("@")[-1].split("?")[0]
    if low.startswith("//"):
        u = "http:" + u
    elif "://" not in u:
        u = "http://" + u
    try:
        host = urlsplit(u).hostname or ""
    except ValueError:
        host = ""
    return host.rstrip(".").lower()


def find_links(text: str) -> list[Link]:
    """Every link-like thing in `text`, non-overlapping, in order."""
    taken: list[tuple[int, int]] = []
    out: list[Link] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    def add(kind: str, m: re.Match[str], url: str, label: str = "", host: str | None = None) -> None:
        if not free(m.start(), m.end()):
            return
        url = url.rstrip(".,;:!?")
        h = host if host is not None else host_of(url)
        if kind == "markdown" and not h:
            # relative or anchor links ("#fees"): no domain to leave for, but still a link; mark it
            h = ""
        taken.append((m.start(), m.end()))
        out.append(Link(url=url, domain=h, kind=kind, start=m.start(), end=m.end(), text=label))

    for m in _IMAGE.finditer(text):
        add("image", m, m.group("url"), m.group("text"))
    for m in _MDLINK.finditer(text):
        if re.fullmatch(r"\s*S\d+\s*", m.group("text")) and not m.group("url").strip():
            continue
        add("markdown", m, m.group("url"), m.group("text"))
    for m in _HTML.finditer(text):
        add("image" if m.group("tag").lower() == "img" else "html", m, m.group("url"), m.group("text") or "")
    for m in _URL.finditer(text):
        add("url", m, m.group("url"))
    for m in _EMAIL.finditer(text):
        add("email", m, m.group(0), host=m.group("host").lower())
    for m in _DOMAIN.finditer(text):
        if m.group("tld").lower() not in TLDS:
            continue
        add("domain", m, m.group(0), host=m.group("host").lower().rstrip("."))
    out.sort(key=lambda lk: lk.start)
    return out


def normalize_domains(domains: Iterable[str]) -> list[str]:
    out = []
    for d in domains:
        d = d.strip().lower()
        if not d:
            continue
        d = host_of(d) if ("/" in d or ":" in d) else d
        d = d.removeprefix("*.").removeprefix(".").rstrip(".")
        if d:
            out.append(d)
    return out


def allowed(link: Link, domains: Iterable[str]) -> bool:
    """A link is allowed when its host is an allowed domain or a subdomain of one.

    Links without a host (relative paths, `#anchors`) cannot leave the page and are allowed;
    `javascript:`, `data:` and `file:` URLs never are.
    """
    host = link.domain
    if not host:
        return link.kind == "markdown" and not link.url.lower().startswith(("javascript:", "data:", "file:"))
    if host.endswith(":"):
        return False
    return any(host == d or host.endswith("." + d) for d in normalize_domains(domains))


def flagged_links(text: str, domains: Iterable[str] = ()) -> list[Link]:
    doms = list(domains)
    return [lk for lk in find_links(text) if not allowed(lk, doms)]


REMOVED = "[link removed]"


def strip_links(text: str, domains: Iterable[str] = ()) -> str:
    """`text` with every disallowed link removed: images vanish, Markdown/HTML links keep their
    visible text (unless that text is itself a link), bare URLs, domains and e-mails become
    "[link removed]"."""
    doms = list(domains)
    bad = flagged_links(text, doms)
    for lk in sorted(bad, key=lambda x: x.start, reverse=True):
        if lk.kind == "image":
            repl = ""
        elif lk.kind in ("markdown", "html") and lk.text.strip() and not find_links(lk.text):
            repl = lk.text
        else:
            repl = REMOVED
        text = text[: lk.start] + repl + text[lk.end :]
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r" +([.,;:!?])", r"\1", text)
    return "\n".join(line.rstrip() for line in text.split("\n"))
