"""URLs and hosts as a browser reads them, and domains as the public suffix list defines them.

* `destination(url)` parses with the WHATWG URL rules (ada-url, the parser Node.js uses): tabs and
  newlines are dropped, `\\` is `/` in http(s) URLs, `user:pass@` is not the host, `%2E` and
  full-width dots are dots, IDNs become punycode, `0x7f.1` is `127.0.0.1`.
* `registrable(host)` is the host's registrable domain (eTLD+1) by the public suffix list that
  the `publicsuffixlist` package ships (offline, no download).
* `bare_domains(text)` finds host names written without a scheme ("evil.win", "пример.рф"):
  a dotted name counts when its last labels are a public suffix in that list or a special-use
  name (RFC 2606/6761: .example, .test, .invalid, .localhost, .local, .internal, .onion, .arpa,
  .home.arpa), so no list of "real" top-level domains is kept here. File names whose
  extension is also a country code (`main.py`, `README.md`) are not hosts inside code.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

import ada_url
from publicsuffixlist import PublicSuffixList

from docket.errors import InputError

#: relative links resolve against these bases: a host equal to theirs never left the answer's own
#: page. Both schemes, because `https:evil.example` is a relative path on an https page and a link
#: to evil.example on an http one.
BASES = ("https://answer.docket.invalid/chat/", "http://answer.docket.invalid/chat/")
BASE_HOST = "answer.docket.invalid"
SPECIAL_USE = frozenset({"example", "test", "invalid", "localhost", "local", "internal", "onion", "arpa", "alt"})
#: schemes whose URL names a host that is judged by the allow-list
HOST_SCHEMES = frozenset({"http:", "https:", "ftp:", "ws:", "wss:", "sftp:", "ftps:"})
#: country-code suffixes that are also common file extensions: not hosts when written in code
FILE_LIKE = frozenset({"py", "md", "sh", "rs", "pl", "pm", "ps", "so", "tf", "mk", "cc", "ml", "sc", "in", "am", "ac",
                       "as", "st", "ly", "cx", "cr", "gd", "mo", "nc"})
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


@dataclass(frozen=True)
class Destination:
    """Where a URL leads: `host` (ASCII, lower case; "" when it has none) and `scheme` ("https:")."""

    url: str
    scheme: str
    host: str
    parsed: bool = True

    @property
    def relative(self) -> bool:
        return self.host == BASE_HOST

    @property
    def domain(self) -> str:
        """What the report shows: the host, or the scheme for a host-less URL ("javascript:")."""
        if self.relative:
            return ""
        return self.host or self.scheme or "(unparseable)"


def destination(url: str) -> Destination:
    """Parse `url` the way a browser resolves a link on the answer's page (the reading that
    leaves the page, when the page's scheme changes where it leads)."""
    first = None
    for base in BASES:
        d = _destination(url, base)
        if not d.relative:
            return d
        first = first or d
    assert first is not None
    return first


def _destination(url: str, base: str) -> Destination:
    raw = url.strip()
    try:
        u = ada_url.URL(raw, base)
    except ValueError:
        return Destination(url, "", "", parsed=False)
    scheme = str(u.protocol).lower()
    if scheme in HOST_SCHEMES or scheme == "file:":
        return Destination(url, scheme, str(u.hostname).rstrip(".").lower())
    if scheme == "mailto:":
        addr = unquote(str(u.pathname)).split(",")[0]
        host = addr.rsplit("@", 1)[1] if "@" in addr else ""
        return Destination(url, scheme, to_ascii(host) or host.lower())
    return Destination(url, scheme, "")


def to_ascii(host: str) -> str:
    """A host name as the browser sends it (IDNA/UTS 46): lower case, punycode, no trailing dot."""
    host = host.strip().translate(_DOTS).rstrip(".")
    if not host:
        return ""
    try:
        u = ada_url.URL(f"http://{host}/")
    except ValueError:
        return ""
    return str(u.hostname).rstrip(".").lower()


def registrable(host: str) -> str:
    """The registrable domain (eTLD+1) of an ASCII host, or the host itself (IPs, special-use names)."""
    if not host or host.startswith("[") or re.fullmatch(r"[\d.]+", host):
        return host
    labels = host.split(".")
    if labels[-1] in SPECIAL_USE:
        return ".".join(labels[-2:])
    priv = _psl().privatesuffix(host, accept_unknown=False)
    return priv or host


def is_public_suffix(host: str) -> bool:
    """Is `host` itself a public suffix (com, co.uk, github.io, example): anyone can register under it."""
    if host.split(".")[-1] in SPECIAL_USE and "." not in host:
        return True
    return _psl().is_public(host)


def has_public_suffix(host: str) -> bool:
    """Does `host` end in a known public suffix (or a special-use name) with a label before it?"""
    labels = host.split(".")
    if len(labels) < 2 or not all(labels):
        return False
    if labels[-1] in SPECIAL_USE:
        return True
    return _psl().privatesuffix(host, accept_unknown=False) is not None


def normalize_allowed(domains: Iterable[str]) -> list[str]:
    """The allow-list as ASCII hosts. An entry may be a host, `*.host`, `.host` or a URL.

    An entry that is a public suffix (`com`, `co.uk`, `github.io`) would allow every stranger's
    site under it: it is refused with an InputError naming it.
    """
    out: list[str] = []
    for raw in domains:
        d = str(raw).strip()
        if not d:
            continue
        if "/" in d or ":" in d.split("]")[-1]:
            host = destination(d if "//" in d else f"//{d}").host
        else:
            host = to_ascii(d.removeprefix("*.").removeprefix("."))
        if not host:
            raise InputError(f"{raw!r} is not a domain name; give a host such as nimbus.com", field="allowed domain")
        if is_public_suffix(host):
            raise InputError(f"{raw!r} is a public suffix: anyone can register a site under it; allow the site "
                             f"itself (e.g. nimbus.{host})", field="allowed domain")
        out.append(host)
    return out


def host_allowed(host: str, allowed: Iterable[str]) -> bool:
    """An ASCII host is allowed when it is an allowed host or a subdomain of one."""
    return any(host == d or host.endswith("." + d) for d in allowed)


# -- host names in plain text -----------------------------------------------------------------

# a label: letters and digits of any script, inner hyphens; `xn--` labels included
_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"
_NAME = re.compile(rf"(?<![\w@.\-])(?<![^/]/)(?<!^/){_LABEL}(?:\.{_LABEL})+\.?(?![\w\-])(?!\.[^\W_])", re.UNICODE)
_SCHEME_URL = re.compile(r"(?<![\w+.\-])([a-z][a-z0-9+.\-]{1,30}):(//[^\s<>\"'`]*|[^\s<>\"'`]+)", re.I)
_EMAIL = re.compile(rf"(?<![\w.+\-])[\w.+\-]+@({_LABEL}(?:\.{_LABEL})+)", re.UNICODE)
_PATH_TAIL = re.compile(r"(?::\d{1,5})?(?:[/?#][^\s<>\"'`]*)?")
_LINKY_SCHEMES = frozenset({"http", "https", "ftp", "ftps", "sftp", "ws", "wss", "file", "javascript", "data",
                            "vbscript", "mailto", "blob", "tel", "sms", "xmpp", "irc", "ircs", "gopher", "news",
                            "telnet", "ssh", "git", "svn", "smb", "ldap", "magnet", "intent", "market"})


@dataclass(frozen=True)
class Found:
    """A link-like run of plain text: [start, end) in the text searched, its kind and its URL."""

    start: int
    end: int
    kind: str  # url | email | domain
    url: str


class _Taken:
    """Disjoint [start, end) intervals, kept sorted, for an overlap test in log time."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def free(self, a: int, b: int) -> bool:
        i = bisect.bisect_right(self.starts, a)
        if i > 0 and self.ends[i - 1] > a:
            return False
        return not (i < len(self.starts) and self.starts[i] < b)

    def add(self, a: int, b: int) -> None:
        i = bisect.bisect_right(self.starts, a)
        self.starts.insert(i, a)
        self.ends.insert(i, b)


def _trim(url: str) -> str:
    """Trailing punctuation that ends the sentence is not part of the link (GFM's rule)."""
    while url and url[-1] in ".,:;!?\"'*_~":
        url = url[:-1]
    while url.endswith(")") and url.count(")") > url.count("("):
        url = url[:-1]
    return url


def bare_links(text: str, *, in_code: bool = False) -> Iterator[Found]:
    """URLs with a scheme, e-mail addresses and bare host names in `text` (already normalised by
    `normalise_text`), non-overlapping, in order."""
    taken = _Taken()
    free = taken.free
    found: list[Found] = []
    for m in _SCHEME_URL.finditer(text):
        scheme = m.group(1).lower()
        if scheme not in _LINKY_SCHEMES and not m.group(2).startswith("//"):
            continue
        url = _trim(m.group(0))
        if len(url) <= len(scheme) + 1:
            continue
        taken.add(m.start(), m.start() + len(url))
        found.append(Found(m.start(), m.start() + len(url), "url", url))
    for m in _EMAIL.finditer(text):
        if not free(m.start(), m.end()):
            continue
        host = to_ascii(m.group(1))
        if host and has_public_suffix(host):
            taken.add(m.start(), m.end())
            found.append(Found(m.start(), m.end(), "email", "mailto:" + m.group(0)))
    for m in _NAME.finditer(text):
        name = m.group(0).rstrip(".")
        end = m.start() + len(name)
        if not free(m.start(), end):
            continue
        www = name.lower().startswith("www.")
        host = to_ascii(name)
        if not host or re.fullmatch(r"[\d.]+", host):
            continue  # "1.5", "2.0.1": numbers, not hosts
        if not (www or has_public_suffix(host)):
            continue
        if in_code and not www and host.split(".")[-1] in FILE_LIKE:
            continue
        tail = _PATH_TAIL.match(text, end)
        stop = end + len(_trim(tail.group(0))) if tail else end
        taken.add(m.start(), stop)
        found.append(Found(m.start(), stop, "domain", text[m.start():stop]))
    found.sort(key=lambda f: f.start)
    return iter(found)


def normalise_char(ch: str) -> str:
    """What a reader sees a character as, for finding host names: NFKC (full-width letters),
    the ideographic full stops as dots, invisible format characters as nothing."""
    if unicodedata.category(ch) == "Cf" or ch in "\u00ad\u034f\u115f\u1160\u3164\uffa0":
        return ""
    return unicodedata.normalize("NFKC", ch).translate(_DOTS)
