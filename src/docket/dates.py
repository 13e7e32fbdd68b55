"""Dates a question asks about ("in 2024", "on 1 March 2025", "before the 2026 update").

A question about the past needs the rule of the past: "What was the refund window in 2024?"
answered with today's policy is wrong however well it is cited. This module finds the explicit
date references of a question and turns each into one "as of" day (the rule for that is in
docs/policy.md, "Dates in the question"):

- a day (ISO `2025-03-01`, `1 March 2025`, `March 1st, 2025`, `01.03.2025`, `2025年3月1日`) is that day;
- a month, a quarter or a year is its last day, or today when the period holds today
  (the rule in force at the end of 2024 is the one an auditor asking "in 2024" means unless
  the rule changed during the year, which the versions move then reports);
- "before X" / "prior to X" is the day before X starts; "after X" the day after it ends, except
  "after the 2023 update", which means the version that update brought in: the end of 2023;
  "since X" / "from X" is today (or the start of X when that is still to come); "until X" / "by X"
  is the end of X.

A bare year needs a cue ("in", "during", "as of", "before", "since", "the 2026 update",
"2024's", "im Jahr 2024", "en 2024", ...): "the 1995 film" or "2000 files" is not a date
reference. Month names and cue words are read in English, German, French, Spanish, Italian,
Dutch and Portuguese; CJK dates by their 年/月/日 marks; "last year", "this year", "next year"
and "N years ago" relative to today. Pure functions: `today` is always passed in.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from dataclasses import dataclass
from datetime import date as Date
from datetime import timedelta
from typing import Literal

Relation = Literal["at", "before", "after", "since", "until"]

_MONTHS: dict[str, int] = {}
for _n, _names in enumerate(
    [
        "january jan januar janvier enero gennaio januari janeiro jänner",
        "february feb februar fevrier febrero febbraio februari fevereiro",
        "march mar marz mars marzo maart marco",
        "april apr avril abril aprile",
        "may mai mayo maggio mei maio",
        "june jun juni juin junio giugno junho",
        "july jul juli juillet julio luglio julho",
        "august aug aout agosto augustus",
        "september sep sept septembre septiembre settembre setembro",
        "october oct oktober octobre octubre ottobre oktober outubro",
        "november nov novembre noviembre novembro",
        "december dec dezember decembre diciembre dicembre dezembro",
    ],
    1,
):
    for _name in _names.split():
        _MONTHS.setdefault(unicodedata.normalize("NFKD", _name).encode("ascii", "ignore").decode(), _n)

_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"

# cue words before a date, by relation (folded: lower case, no accents)
_CUES: dict[Relation, tuple[str, ...]] = {
    "before": ("before", "prior to", "earlier than", "ahead of", "vor dem", "vor der", "vor", "avant le", "avant la",
               "avant", "antes del", "antes de", "prima del", "prima di", "voor", "antes do", "antes da"),
    "after": ("after", "following", "later than", "nach dem", "nach der", "nach", "apres le", "apres la", "apres",
              "despues del", "despues de", "dopo il", "dopo la", "dopo", "na", "depois do", "depois da", "depois de"),
    "since": ("since", "starting", "as from", "from", "seit dem", "seit", "ab dem", "ab", "depuis le", "depuis",
              "a partir du", "a partir de", "desde el", "desde", "dal", "sinds", "vanaf"),
    "until": ("until", "till", "up to", "through", "by", "bis zum", "bis", "jusqu'au", "jusqu'en", "jusqu'a",
              "hasta el", "hasta", "fino al", "fino a", "tot", "ate"),
    "at": ("as of", "as at", "in", "during", "on", "at", "for", "throughout", "back in", "in the year", "im jahr",
           "im", "am", "zum", "stand", "en", "le", "au", "el", "nel", "en el", "em", "no", "op", "per", "anno",
           "durante", "wahrend"),
}
_CUE_OF: dict[str, Relation] = {w: rel for rel, ws in _CUES.items() for w in ws}
_CUE = "(?:" + "|".join(re.escape(w) for w in sorted(_CUE_OF, key=len, reverse=True)) + ")"

# nouns that make "the 2026 update" a date reference
_UPDATE = r"(?:update|updates|change|changes|revision|version|amendment|release|edition|policy|rules|terms|pricing|overhaul|reform)"
# units after a four-digit number that make it a quantity, not a year
_QUANTITY = (r"(?:%|percent|eur|euros?|usd|dollars?|gbp|\$|€|£|gb|mb|tb|kb|km|kg|m|files?|users?|tokens?|words?|"
             r"items?|people|units?|seats?|pages?|calls?|requests?|days?|hours?|minutes?|weeks?|months?|years?)\b")

_YEAR = r"(1[89]\d\d|2[01]\d\d)"
_ORD = r"(?:st|nd|rd|th|er|e|o|º|ª|\.)?"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("range", re.compile(rf"\b(?:between|from|zwischen|von|entre|de|tra|fra|tussen)\s+{_YEAR}\s+(?:and|to|until|und|bis|et|a|y|e|en)\s+"
                         rf"{_YEAR}\b")),
    ("iso", re.compile(rf"\b{_YEAR}[-/](\d{{1,2}})[-/](\d{{1,2}})\b")),
    ("dotted", re.compile(rf"\b(\d{{1,2}})\.\s?(\d{{1,2}})\.\s?{_YEAR}\b")),
    ("cjk", re.compile(rf"{_YEAR}\s*年\s*(?:(\d{{1,2}})\s*月\s*(?:(\d{{1,2}})\s*[日号])?)?")),
    ("dmy", re.compile(rf"\b(\d{{1,2}}){_ORD}\s*(?:of\s+|de\s+|-)?({_MONTH})\s*,?\s*(?:de\s+|del\s+)?{_YEAR}\b")),
    ("mdy", re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}){_ORD}\s*,?\s+{_YEAR}\b")),
    ("quarter", re.compile(rf"\b(?:q([1-4])\s*[-/]?\s*{_YEAR}|(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+"
                           rf"(?:of\s+)?{_YEAR})\b")),
    ("my", re.compile(rf"\b({_MONTH})\s*(?:of\s+|de\s+|del\s+|,\s*)?{_YEAR}\b")),
    ("update", re.compile(rf"\bthe\s+{_YEAR}\s+{_UPDATE}\b")),
    ("possessive", re.compile(rf"\b{_YEAR}'s\b")),
    # a second year in a comparison ("in 2023 and 2025", "2024 vs 2025"): kept only beside another date
    ("also", re.compile(rf"\b(?:and|or|vs\.?|versus|than|compared (?:to|with)|und|oder|et|ou|y|o|e)\s+(?:in\s+)?{_YEAR}\b"
                        rf"(?!\s*(?:-|/|\.\d)|\s+{_QUANTITY})")),
    ("year", re.compile(rf"(?<![\w-]){_CUE}\s+(?:the\s+)?(?:year\s+|early\s+|mid-?\s*|late\s+|fy\s*)?{_YEAR}\b"
                        rf"(?!\s*(?:-|/|\.\d)|\s+{_QUANTITY})")),
]
_RELATIVE = re.compile(r"\b(?:(last|this|next|previous|past)\s+year|(a|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2})"
                       r"\s+years?\s+ago|letztes\s+jahr|l'annee\s+derniere|el\s+ano\s+pasado|l'anno\s+scorso|vorig\s+jaar)\b")
_NUMBER_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10}
_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}


@dataclass(frozen=True)
class DateRef:
    """One date reference of a question: the words, the period they name, and how."""

    text: str
    start: Date
    end: Date
    relation: Relation
    #: "the 2023 update": the period is when a version took effect, not a span of the rule
    update: bool = False

    @property
    def grain(self) -> str:
        if self.start == self.end:
            return "day"
        days = (self.end - self.start).days
        return "month" if days < 32 else "quarter" if days < 93 else "year"

    def as_of(self, today: Date) -> Date:
        """The one day whose versions answer the question (see the module docstring)."""
        if self.relation == "before":
            return self.start - timedelta(days=1)
        if self.relation == "after":
            return self.end if self.update else self.end + timedelta(days=1)
        if self.relation == "since":
            return today if self.start <= today else self.start
        if self.start <= today <= self.end:
            return today
        return self.end


def fold(text: str) -> str:
    """Lower case, accents off, typographic apostrophes straight (month and cue words compare folded)."""
    if text.isascii():
        return text.lower()  # no apostrophe to straighten, NFKD keeps ASCII as it is, none of it is combining
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _day(y: int, m: int, d: int) -> Date | None:
    try:
        return Date(y, m, d)
    except ValueError:
        return None


def _month_end(y: int, m: int) -> Date:
    return Date(y, m, calendar.monthrange(y, m)[1])


def _month(name: str) -> int | None:
    return _MONTHS.get(name.rstrip(".").strip())


def _cue_before(folded: str, start: int) -> tuple[Relation, str]:
    """The relation word right before a match ("before", "since", ...), default "at"."""
    head = folded[max(0, start - 30) : start].rstrip()
    m = re.search(rf"(?:^|[^\w']){_CUE}$", head)
    if not m:
        return "at", ""
    word = m.group(0).strip(" ,;:(")
    return _CUE_OF.get(word, "at"), word


def _period(kind: str, m: re.Match[str]) -> tuple[Date, Date] | None:
    g = m.groups()
    if kind == "iso":
        d = _day(int(g[0]), int(g[1]), int(g[2]))
        return (d, d) if d else None
    if kind == "dotted":
        d = _day(int(g[2]), int(g[1]), int(g[0]))
        return (d, d) if d else None
    if kind == "cjk":
        y = int(g[0])
        if g[1] is None:
            return Date(y, 1, 1), Date(y, 12, 31)
        mo = int(g[1])
        if not 1 <= mo <= 12:
            return None
        if g[2] is None:
            return Date(y, mo, 1), _month_end(y, mo)
        d = _day(y, mo, int(g[2]))
        return (d, d) if d else None
    if kind == "dmy":
        name = _month(g[1])
        d = _day(int(g[2]), name, int(g[0])) if name else None
        return (d, d) if d else None
    if kind == "mdy":
        name = _month(g[0])
        d = _day(int(g[2]), name, int(g[1])) if name else None
        return (d, d) if d else None
    if kind == "range":
        lo, hi = sorted((int(g[0]), int(g[1])))
        return Date(lo, 1, 1), Date(hi, 12, 31)
    if kind == "quarter":
        q = int(g[0]) if g[0] else _QUARTERS[g[2]]
        y = int(g[1] or g[3])
        return Date(y, 3 * q - 2, 1), _month_end(y, 3 * q)
    if kind == "my":
        name = _month(g[0])
        return (Date(int(g[1]), name, 1), _month_end(int(g[1]), name)) if name else None
    y = int(g[-1])
    return Date(y, 1, 1), Date(y, 12, 31)


#: what every date pattern needs (a year of _YEAR: each of _PATTERNS holds one) or every relative
#: one (a word for "year"), found anywhere: a question without any has no date reference, and is
#: read by one search instead of every pattern (most questions name no date)
_MAYBE_DATE = re.compile(r"1[89]\d\d|2[01]\d\d|year|jahr|annee|ano|anno|jaar")


def find_dates(question: str, today: Date) -> list[DateRef]:
    """Every date reference in the question, in reading order (overlapping matches: the most
    specific wins, so "1 March 2025" is one day, not also a month and a year)."""
    folded = fold(question)
    if _MAYBE_DATE.search(folded) is None:
        return []
    return _dates_in(folded, today)


def _dates_in(folded: str, today: Date) -> list[DateRef]:
    """`find_dates` of a folded question, every pattern tried."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, DateRef]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for kind, pat in _PATTERNS:
        for m in pat.finditer(folded):
            a, b = m.span()
            if not free(a, b):
                continue
            period = _period(kind, m)
            if period is None:
                continue
            if kind in ("year", "also"):  # the cue is part of the match
                cue = _leading_cue(m.group(0))
                rel: Relation = _CUE_OF.get(cue, "at")
                text = m.group(0).strip()
            else:
                rel, cue = _cue_before(folded, a)
                text = (cue + " " if cue else "") + m.group(0).strip()
            update = kind == "update" or bool(re.match(rf"\s+{_UPDATE}\b", folded[b : b + 20]))
            taken.append((a, b))
            found.append((a, DateRef(text, period[0], period[1], rel, update)))
    for m in _RELATIVE.finditer(folded):
        a, b = m.span()
        if not free(a, b):
            continue
        if m.group(1):
            y = today.year + {"last": -1, "previous": -1, "past": -1, "this": 0, "next": 1}[m.group(1)]
        elif m.group(2):
            n = _NUMBER_WORDS.get(m.group(2)) or int(m.group(2))
            y = today.year - n
        else:
            y = today.year - 1
        rel, cue = _cue_before(folded, a)
        taken.append((a, b))
        found.append((a, DateRef((cue + " " if cue else "") + m.group(0), Date(y, 1, 1), Date(y, 12, 31), rel)))
    refs = [ref for _, ref in sorted(found, key=lambda x: x[0])]
    if len(refs) == 1 and refs[0].text.split()[0] in _ALSO_WORDS:
        return []  # "and 2000" alone is a number in a list, not a date reference
    return refs


_ALSO_WORDS = frozenset("and or vs vs. versus than compared und oder et ou y o e".split())


def _leading_cue(matched: str) -> str:
    m = re.match(rf"\s*({_CUE})\s", matched)
    return m.group(1) if m else ""
