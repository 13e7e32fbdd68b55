"""Claims extraction as it was before issue 21's one-pass rewrite (main at d32d895), kept verbatim as
the reference the fast path must equal: `docket.claims.words`, `.quantities` and `.extract` in
one module (their imports of each other dropped). tests/test_claims_onepass.py compares it with
`docket.claims.claims` on generated and real text. Not imported by the library."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

from docket.dates import _MONTHS
from docket.text import fold as _fold_text

# --- docket/claims/words.py ------------------------------------------------------------
# --- words ------------------------------------------------------------------------------------

_SENT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
#: _SENT for a text without a CJK stop (its zero-width branch, tried at every character, never matches there)
_SENT_LATIN = re.compile(r"(?<=[.!?;])\s+|\n+")
_CJK_STOPS = "。！？；"
#: a word (letters, one apostrophe inside), a number (with its separators), a sign or a punctuation
#: mark; the branches start with disjoint characters, so their order only decides which is tried first
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*|[%€$£,;:()\-–—]")
_DIGIT = re.compile(r"\d")
_FRACTION = re.compile(r"(\d+)\s?(\d)[⁄/](\d)\b")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

STOP = frozenset("""a an the of in on at to for from by with and or is are was were be been being it its as that this
these those will would should shall which who whom whose what when where there their they them he she his her we you
your our us i me my has have had do does did so than then into about after before over under per each every all any
some such also only just both either very more most other same up out off via its itself until till since within
between during among can may must could might will would shall should get gets got getting have having make makes made take takes took give gives keep keeps
le la les de du des un une
et est sont der die das den dem des ein eine einer und ist sind von zu im am el los las del y es son il lo gli e di
da che op het een van en is zijn o os as um uma do da dos das que""".split())

NEGATIONS = frozenset("""not no never cannot can't won't don't doesn't didn't isn't aren't wasn't weren't shouldn't
mustn't couldn't wouldn't nor none nothing nobody neither without nicht kein keine keinen keiner keines nie niemals
ne pas jamais aucun aucune non nunca ningun ninguna ningún niet geen nooit nao não nem""".split())
#: what is never a content word of a claim
_NOT_CONTENT = STOP | NEGATIONS

#: words folded into one canonical word, so a reworded statement keeps its subject
_SYNONYMS: dict[str, str] = {}
for _canon, _words in {
    "refund": "refund refunds refunded refundable reimburse reimbursed reimbursement reimbursements repay repaid "
              "repayment returned return money erstattet erstattung rembourse remboursement remboursements",
    "cover": "cover covered covers paid pay pays payable earn earns",
    "answer": "answer answers answered reply replies replied respond responds response",
    "max": "max maximum limit limited most cap capped upto",
    "min": "min minimum least",
    "cancel": "cancel cancelled canceled cancels cancellation terminate terminated termination",
    "purchase": "purchase purchased buy bought",
    "staff": "staff employee employees worker workers",
    "expense": "expense expenses cost costs",
    "meal": "meal meals food",
    "leave": "leave leaves",
    "parent": "parent parents parental",
    "register": "register registered link linked connect connected",
    "device": "device devices",
    "account": "account accounts",
    "trial": "trial trials",
    "long": "long length",
    "found": "found founded establish established form formed",
    "ship": "ship ships shipping shipped delivery deliver",
    "allow": "allow allowed allows permit permitted",
    "abroad": "abroad foreign",
    "day": "day days daily",
    "storage": "storage space",
    "live": "live lives living population inhabitants",
    "last": "last lasts lasting duration",
    "over": "over above exceeding",
}.items():
    for _w in _words.split():
        _SYNONYMS[_w] = _canon


def fold(text: str) -> str:
    """Lower case without accents (docket.text.fold: NFKD, combining marks dropped at C speed)."""
    return _fold_text(text)


@lru_cache(maxsize=1 << 16)
def _stem(w: str) -> str:
    """A crude stem (memoised: a pure function of one word, asked for every word of every claim)."""
    w = w.removesuffix("'s").removesuffix("'")
    if w in _SYNONYMS:
        return _SYNONYMS[w]
    for suf in ("ing", "ed", "er", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 4:
            base = w[: -len(suf)]
            return _SYNONYMS.get(base, base)
    return w



_HONORIFICS = frozenset("sir dame lord lady dr mr mrs ms saint st king queen prince princess president".split())


_DEFINES = re.compile(r"^\s*(?:is|was|are|were)\s+(?:a|an|the|one)\b")


_HEAD_TOKEN = re.compile(r"[^\W\d_]+|\S")


def subject(text: str) -> frozenset[str]:
    """The name a passage opens with, when it opens with one: a run of capitalised words ("Sir
    Matt Busby was ...", 'Lawrence "Baby" Austin ...'; titles like "Sir" and a leading "The" left
    out) of at least two words, or one word that is then defined ("Wangcun () is a town",
    "Nirvana was an American band"). Empty for "Annual plans ..." or "Customers ...", which are
    grammar, not names."""
    head = text.strip()[:160]
    run: list[str] = []
    end = 0
    for m in _HEAD_TOKEN.finditer(head):  # lazily: the run usually ends within a few tokens
        t = m.group(0)
        if not run and t.lower() in ("the", "a", "an"):
            continue
        if t in ('"', "“", "”", "'", "&") or (t[:1].isupper() and t.isalpha()):
            if t.isalpha():
                run.append(t)
            end = m.end()
            continue
        break
    names = [f for f in map(fold, run) if f not in _HONORIFICS]
    if not names:
        return frozenset()
    rest = _PARENS.sub(" ", head[end:])
    if len(run) >= 2 or _DEFINES.match(rest):
        return frozenset(names)
    return frozenset()


def different_subjects(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two passages open with different names: each has a name word the other lacks ("Sullivan
    County" vs "Pike County"; "Pearl Jam" vs "Pearl Jam" is one subject)."""
    return bool(a) and bool(b) and bool(a - b) and bool(b - a)


_NOT_NAMES = frozenset("monday tuesday wednesday thursday friday saturday sunday montag dienstag mittwoch donnerstag "
                       "freitag samstag sonntag lundi mardi mercredi jeudi vendredi samedi dimanche".split())


_ASCII_WORD = re.compile(r"[A-Za-z]+")
#: an ASCII word of two letters or more that opens with a capital
_ASCII_CAPITALISED = re.compile(r"(?<![A-Za-z])[A-Z][A-Za-z]+")


def _names(raw: str) -> frozenset[str]:
    """Capitalised words that do not start the sentence (proper names, in most languages);
    month and weekday names are dates, not names."""
    if raw.isascii():  # words are [A-Za-z]+ runs: only the capitalised ones are looked at
        caps = _ASCII_CAPITALISED.findall(raw)
        if caps:
            first = _ASCII_WORD.search(raw)
            if first is not None and first.group() == caps[0] and not caps[0].isupper():
                caps = caps[1:]  # the sentence's first word: capitalised by grammar
        found = {t.lower() for t in caps}
        return frozenset(w for w in found if w not in _MONTHS and w not in _NOT_NAMES)
    toks = _CELL_WORD.findall(raw)
    # a capitalised word after the first, or an all-capitals one anywhere ("NASA"), of 2+ letters
    found = {fold(t) for k, t in enumerate(toks) if len(t) > 1 and (t.isupper() or (k > 0 and t[0].isupper()))}
    return frozenset(w for w in found if w not in _MONTHS and w not in _NOT_NAMES)


_ORDINAL = re.compile(r"\b\d+(?:st|nd|rd|th|er|eme|e|º|ª)\b")
_HEDGES = re.compile(r"\b(?:not|nicht|pas)\s+(?:only|always|just|necessarily|nur|immer|seulement|toujours)\b|\bif not\b")
_PARENS = re.compile(r"\([^()]*\)")
_PRONOUNS = frozenset("it its he his she her they their them this these those there er sie es il elle ils elles".split())


_NON_PREDICATES = frozenset("binding exempt compliant eligible taxable negotiable transferable available".split())
_NON_WORD = re.compile(r"\bnon-(\w+)")
_NON = re.compile(r"\bnon-")
_NT = re.compile(r"n't\b|\bn'")


def _negated(folded: str, tokens: list[str]) -> bool:
    """A negation of the statement itself: "not always" and "not only" are hedges, a negation
    inside parentheses qualifies an aside, and "non-" negates only a predicate ("non-refundable",
    "non-binding"), not a compound noun ("non-album singles").

    Without "non-" or a negation among the sentence's own tokens the answer is no when no word
    of `bare` below can be new: removing a parenthesis never joins or splits a word, nor does
    removing a hedge (which holds a negation) unless an apostrophe joined it to a word; so the
    common case costs a set test and a few substring tests."""
    if "non-" not in folded and NEGATIONS.isdisjoint(tokens) and ("'" not in folded or not (
            "n'" in folded or "not" in folded or "pas" in folded or "nicht" in folded)):
        return False  # (an apostrophe joins words: then no hedge may cut one, so none of its words opens one)
    bare = _HEDGES.sub(" ", _PARENS.sub(" ", folded))
    if any(w.endswith(("able", "ible")) or w in _NON_PREDICATES for w in _NON_WORD.findall(bare)):
        return True
    bare = _NON.sub(" ", bare)  # what is left of "non-": compound nouns ("non-album singles")
    return any(t in NEGATIONS for t in _TOKEN.findall(bare)) or bool(_NT.search(bare))


_CELL_WORD = re.compile(r"[^\W\d_]+")


def _row_key(sent: str) -> frozenset[str]:
    """A table row's first cell, when it holds words and no number ("| Manager | EUR 60 |"): what
    the row is about, kept as a name, so the rows of one table (Staff, Manager, Director) are
    different statements and never contradict each other."""
    if not sent.startswith("|"):
        return frozenset()
    first = sent.strip().strip("|").split("|", 1)[0]
    if any(ch.isdigit() for ch in first):
        return frozenset()
    return frozenset(fold(w) for w in _CELL_WORD.findall(first) if fold(w) not in STOP)


def _fraction(m: re.Match[str]) -> str:
    """ "2 1/2" -> "2.5" """
    return f"{int(m.group(1)) + int(m.group(2)) / int(m.group(3)):g}"


# --- docket/claims/quantities.py -------------------------------------------------------
# --- quantities -------------------------------------------------------------------------------

_WORD_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
             "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
             "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
             "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
             "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "funf": 5, "zehn": 10, "un": 1, "deux": 2, "trois": 3,
             "cinq": 5, "dix": 10, "quinze": 15, "trente": 30, "dos": 2, "tres": 3, "cinco": 5, "diez": 10}
#: what joins the two ends of a range ("2-3 weeks", "2 to 3 weeks")
_RANGE = frozenset("- – — to and or bis a à".split())
_MULT = {"twice": 200.0, "double": 200.0, "triple": 300.0, "half": 50.0}
_SCALE = {"thousand": 1e3, "million": 1e6, "millions": 1e6, "billion": 1e9, "billions": 1e9, "mio": 1e6, "bn": 1e9}

#: unit word -> (unit class, factor to the class's base unit)
_UNITS: dict[str, tuple[str, float]] = {}
for _cls, _spec in {
    "pct": "%:1 percent:1 pct:1 prozent:1",
    "eur": "eur:1 euro:1 euros:1 €:1",
    "usd": "$:1 usd:1 dollar:1 dollars:1",
    "gbp": "£:1 gbp:1 pound:1 pounds:1",
    "chf": "chf:1 franc:1 francs:1",
    "days": "day:1 days:1 tag:1 tage:1 tagen:1 jour:1 jours:1 dia:1 dias:1 giorni:1 dagen:1 week:7 weeks:7 wochen:7 "
            "woche:7 semaine:7 semaines:7 month:30 months:30 monat:30 monate:30 monaten:30 mois:30 mes:30 meses:30 "
            "year:365 years:365 jahr:365 jahre:365 jahren:365 an:365 ans:365",
    "hours": "hour:1 hours:1 hr:1 hrs:1 h:1 stunde:1 stunden:1 heure:1 heures:1 minute:0.016667 minutes:0.016667 "
             "mins:0.016667",
    "bytes": "gb:1 gigabyte:1 gigabytes:1 mb:0.001 tb:1000 kb:0.000001",
    "metres": "m:1 metre:1 metres:1 meter:1 meters:1 km:1000 kilometre:1000 kilometres:1000 kilometer:1000 "
              "kilometers:1000 mile:1609 miles:1609 cm:0.01 mm:0.001",
    "grams": "g:1 kg:1000 gram:1 grams:1 kilogram:1000 kilograms:1000",
    "clock": "am:0 pm:12",
}.items():
    for _item in _spec.split():
        _u, _f = _item.rsplit(":", 1)
        _UNITS[_u] = (_cls, float(_f))
# "business days" / "working days" / "jours ouvrés" are their own class (not convertible to days)
_BUSINESS = frozenset("business working werktage werktagen ouvres ouvrables habiles laborables".split())
_SQUARE = frozenset("square sq".split())
#: a currency written before its amount: "€180", "EUR 180", "USD 1,200", "$5" ("eur 5" folded)
_CURRENCY_BEFORE = {"€": "eur", "$": "usd", "£": "gbp", "eur": "eur", "usd": "usd", "gbp": "gbp", "chf": "chf"}
_TENS = frozenset("twenty thirty forty fifty sixty seventy eighty ninety".split())
_HYPHENS = frozenset("- – —".split())
#: the tokens a quantity can open with besides a number: a word number, a multiplier, a month (a
#: date), a comma (a date after it); `_quantities` looks at these and digits only
_OPENS = frozenset(_WORD_NUM) | frozenset(_MULT) | frozenset(_MONTHS) | {","}


@dataclass(frozen=True, slots=True)
class Quantity:
    value: float
    unit: str  # a class: pct, eur, days, bdays, bytes, metres, area:metres, year, count:<noun>, plain, ...
    text: str
    #: the step of the last digit written ("20" -> 1, "20.4" -> 0.1), in the unit's base
    step: float = 1.0
    #: the first content word after it ("25 days of *annual* leave"): what the amount is of
    of: str = ""


_LAST_DECIMALS = re.compile(r"[.,](\d+)$")
_GROUPED = re.compile(r"\d{1,3}([.,]\d{3})+")
_COMMA_GROUPED = re.compile(r"\d{1,3}(,\d{3})+(\.\d+)?")
_DOT_GROUPED = re.compile(r"\d{1,3}(\.\d{3})+")
_ONE_DOT_GROUP = re.compile(r"\d\.\d{3}")


def _step(tok: str) -> float:
    """The step of the last digit: "20" 1, "20.4" 0.1, "1,200" 1, "0.30" 0.01."""
    m = _LAST_DECIMALS.search(tok)
    if m and not _GROUPED.fullmatch(tok):
        return 10.0 ** -len(m.group(1))
    return 1.0


def _number(tok: str) -> float | None:
    if tok in _WORD_NUM:
        return float(_WORD_NUM[tok])
    if not tok[0].isdigit():
        return None
    t = tok.rstrip(".,")
    if _COMMA_GROUPED.fullmatch(t):
        t = t.replace(",", "")
    elif _DOT_GROUPED.fullmatch(t) and not _ONE_DOT_GROUP.fullmatch(t):
        t = t.replace(".", "")  # 1.200.000 (German thousands)
    else:
        t = t.replace(",", ".")
    try:
        return float(t)
    except ValueError:
        return None


def _date_at(tokens: list[str], i: int) -> tuple[Quantity, int] | None:
    """A calendar date starting at token i ("21 october 1992", "november 8 2044", "june 2000"):
    one value (days since year 0), not a day number and a year."""
    first = tokens[i]
    if first != "," and not first[0].isdigit() and first not in _MONTHS:
        return None  # every date opens with a day, a month or (after a comma) one of them

    def year(t: str) -> int | None:
        return int(t) if t.isdecimal() and len(t) == 4 else None

    # (isdecimal, not isdigit: int() reads only decimal digits; "፩ may 2020" used to raise here)
    t = [x for x in tokens[i : i + 5] if x != ","][:3]
    day = mon = yr = None
    if len(t) == 3 and t[0].isdecimal() and t[1] in _MONTHS and year(t[2]):
        day, mon, yr, n = int(t[0]), _MONTHS[t[1]], year(t[2]), 3
    elif len(t) == 3 and t[0] in _MONTHS and t[1].isdecimal() and year(t[2]):
        day, mon, yr, n = int(t[1]), _MONTHS[t[0]], year(t[2]), 3
    elif len(t) >= 2 and t[0] in _MONTHS and year(t[1]):
        mon, yr, n = _MONTHS[t[0]], year(t[1]), 2
    else:
        return None
    if yr is None or not 1 <= (day or 1) <= 31:
        return None
    value = yr * 372 + (mon - 1) * 31 + (day or 1)
    span, seen = i, 0
    while seen < n:  # n tokens of the date, commas between them included
        seen += tokens[span] != ","
        span += 1
    return Quantity(float(value), "date", " ".join(x for x in tokens[i:span] if x != ","), 1.0 if day else 31.0), span


def _quantities(tokens: list[str]) -> tuple[list[Quantity], set[int]]:
    """Quantities in a token list, and the indexes of the tokens they used (numbers, scale and
    unit words: not content words)."""
    out: list[Quantity] = []
    spans: list[tuple[int, int]] = []  # token span of each quantity in `out`
    used: set[int] = set()
    resume = 0  # the first token the next quantity may start at (the last one's end)
    starts = [k for k, t in enumerate(tokens) if t in _OPENS or t[0].isdigit()]
    if not starts:
        return out, used
    dates = not _MONTHS.keys().isdisjoint(tokens)  # every date names a month
    for i in starts:
        if i < resume:
            continue  # inside the quantity before
        tok = tokens[i]
        dated = _date_at(tokens, i) if dates else None
        if dated is not None:
            out.append(dated[0])
            spans.append((i, dated[1]))
            used.update(range(i, dated[1]))
            resume = dated[1]
            continue
        if tok in _MULT:
            out.append(Quantity(_MULT[tok], "pct", tok))
            spans.append((i, i + 1))
            used.add(i)
            continue
        value = _number(tok)
        if value is None:
            continue
        if tok in _WORD_NUM and i + 1 < len(tokens) and tokens[i + 1] not in _UNITS and tokens[i + 1] in STOP:
            # "one of the", "un des": a word, not a number
            continue
        start = i
        before = tokens[i - 1] if i > 0 else ""
        value, step, j = _number_run(tokens, i, value)
        unit = None
        if before in _CURRENCY_BEFORE:
            unit = _CURRENCY_BEFORE[before]
            used.add(i - 1)
        elif j < len(tokens) and tokens[j] in _BUSINESS and j + 1 < len(tokens) and tokens[j + 1] in _UNITS:
            unit = "bdays"
            j += 2
        elif j < len(tokens) and tokens[j] in _SQUARE and j + 1 < len(tokens) and tokens[j + 1] in _UNITS:
            cls, f = _UNITS[tokens[j + 1]]
            unit, value, step = f"area:{cls}", value * f * f, step * f * f
            j += 2
        elif j < len(tokens) and tokens[j] in _UNITS:
            cls, f = _UNITS[tokens[j]]
            if j + 1 < len(tokens) and tokens[j + 1] in _BUSINESS:
                cls = "bdays"
            if cls == "clock":
                value = (value % 12) + f
            else:
                value *= f
                step *= f
            unit = cls
            j += 1
            if cls in ("days", "bdays") and j < len(tokens) and tokens[j] in _BUSINESS:
                j += 1
        elif 1800 <= value <= 2100 and float(value).is_integer() and "." not in tok and "," not in tok:
            unit = "year"
        elif j < len(tokens) and tokens[j].isalpha() and tokens[j] not in STOP and tokens[j] not in NEGATIONS:
            unit = f"count:{_stem(tokens[j])}"  # the noun stays a content word too: it is what is counted
            out.append(Quantity(round(value, 6), unit, f"{tok} {tokens[j]}", step, _qualifier(tokens, j + 1)))
            spans.append((i, j))
            used.add(i)
            resume = j
            continue
        else:
            unit = "plain"
        out.append(Quantity(round(value, 6), unit, " ".join(tokens[start:j]).replace(" - ", "-"), step, _qualifier(tokens, j)))
        spans.append((start, j))
        used.update(range(start, j))
        resume = j
    _join_ranges(tokens, out, spans)
    return out, used


def _number_run(tokens: list[str], i: int, value: float) -> tuple[float, float, int]:
    """The number at token i with what continues it: "twenty-five", a hyphenated unit ("30-day"),
    a scale word ("3 million"); its value, its step and the index of the token after it."""
    tok = tokens[i]
    step = _step(tok)
    j = i + 1
    if tok in _TENS:  # "twenty-five", "twenty five"
        k = j + (j < len(tokens) and tokens[j] in _HYPHENS)
        if k < len(tokens) and tokens[k] in _WORD_NUM and _WORD_NUM[tokens[k]] < 10:
            value += _WORD_NUM[tokens[k]]
            j = k + 1
    if j + 1 < len(tokens) and tokens[j] in _HYPHENS and tokens[j + 1] in _UNITS and tokens[j + 1] not in _CURRENCY_BEFORE:
        j += 1  # a hyphenated unit: "four-year cycle", "30-day window", "2-hour slot"
    if j < len(tokens) and tokens[j] in _SCALE:
        value *= _SCALE[tokens[j]]
        step *= _SCALE[tokens[j]]
        j += 1
    return value, step, j


def _join_ranges(tokens: list[str], out: list[Quantity], spans: list[tuple[int, int]]) -> None:
    """A range ("129,000 -- 226,000 people", "2-3 weeks"): the first number takes the second's unit."""
    for k in range(len(out) - 1):
        q, nxt = out[k], out[k + 1]
        (_, end), (start2, _) = spans[k], spans[k + 1]
        if q.unit == "plain" and nxt.unit != "plain" and 0 < start2 - end <= 2 and all(t in _RANGE for t in tokens[end:start2]):
            raw = _number(tokens[start2])
            factor = nxt.value / raw if raw else 1.0
            out[k] = Quantity(round(q.value * factor, 6), nxt.unit, q.text, q.step * factor, nxt.of)


_LINKS = frozenset("of de von du des a an the for each every per la le el".split())


def _qualifier(tokens: list[str], j: int) -> str:
    """The first content word right after a quantity (skipping "of", "for each", ...)."""
    for t in tokens[j : j + 3]:
        if t in _LINKS:
            continue
        if t[0].isalpha() and t not in STOP and t not in NEGATIONS and t not in _UNITS:
            return _stem(t)
        return ""
    return ""


# --- docket/claims/extract.py ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Claim:
    words: frozenset[str]
    names: frozenset[str]
    quantities: tuple[Quantity, ...]
    negated: bool
    text: str
    #: the name the passage opens with (the same for every claim of one passage)
    subject: frozenset[str] = frozenset()
    #: the sentence opens with a pronoun ("It was added to the register on ..."): its subject
    #: is whatever its own passage is about
    anaphoric: bool = False
    #: `units()`, filled on first use (no part of the claim's value)
    _units: dict[str, tuple[Quantity, ...]] | None = field(default=None, init=False, repr=False, compare=False)
    #: `stated_key()`, filled on first use (no part of the claim's value)
    _stated_key: str | None = field(default=None, init=False, repr=False, compare=False)

    def units(self) -> dict[str, tuple[Quantity, ...]]:
        """The quantities by unit (computed once per claim: asked for every pair it is in)."""
        got = self._units
        if got is None:
            out: dict[str, list[Quantity]] = {}
            for q in self.quantities:
                out.setdefault(q.unit, []).append(q)
            got = {u: tuple(v) for u, v in out.items()}
            object.__setattr__(self, "_units", got)
        return got

    def stated_key(self) -> str:
        """What `compare._stated_in` reads of the claim, as one string (its hash is kept: sets of
        keys are compared for every pair of passages): the repr of its negation, sorted names,
        sorted words and each amount's unit and value, which tells any two of these apart. Of two
        claims with a value or a negation and one key, each is stated in a passage holding the
        other (same negation and names, the same words, and each amount matched by its equal:
        |v - v| = 0 is within half of any step >= 0), so a copy's statement found by key in its
        source needs no scan (compare.PassageClaims). "" where that proof fails (a value that is
        no finite number, or a step that is negative or NaN); "" is never looked up. Once per
        claim: features keep a chunk's claims."""
        got = self._stated_key
        if got is None:
            qs = self.quantities
            exact = all(math.isfinite(q.value) and q.step >= 0 for q in qs)
            got = repr((self.negated, sorted(self.names), sorted(self.words), [(q.unit, q.value) for q in qs])) \
                if exact else ""
            object.__setattr__(self, "_stated_key", got)
        return got


def claims(text: str, opening: frozenset[str] | None = None) -> list[Claim]:
    """The sentences of a passage as claims (sentences without two content words are skipped).
    Stores keep what this returns (docket.features records): when a change here changes the
    result, bump features.RECORD_VERSION so records written before are recomputed. `opening` is
    `subject(text)` when the caller has it already."""
    out = []
    subj = subject(text) if opening is None else opening
    split = _SENT.split if any(stop in text for stop in _CJK_STOPS) else _SENT_LATIN.split
    for sent in split(text):
        sent = sent.strip()
        if not sent:
            continue
        folded = fold(sent).replace("’", "'")
        digits = _DIGIT.search(folded) is not None
        if digits:  # ordinals and fractions hold a digit
            # ordinals name an edition ("the 16th Annual Awards"), they are not amounts
            folded = _ORDINAL.sub(" ", folded)
            if "/" in folded or "⁄" in folded:
                folded = _FRACTION.sub(_fraction, folded)
        tokens = _TOKEN.findall(folded)
        qs: list[Quantity]
        used: set[int]
        if not digits and folded.isascii() and _OPENS_BUT_COMMA.isdisjoint(tokens):
            qs, used = [], set()  # no quantity can start: no digit, no number or month word (a comma opens none alone)
        else:
            qs, used = _quantities(tokens)
        negated = _negated(folded, tokens)
        # a token's content words depend on the token alone: each distinct one looked up once
        kept = set(tokens) if not used else {t for k, t in enumerate(tokens) if k not in used}
        words = set(chain.from_iterable(map(_CONTENT.__getitem__, kept)))
        if len(words) >= 2 or (qs and words):
            anaphoric = not _PRONOUNS.isdisjoint(tokens[:8])
            out.append(Claim(frozenset(words), _names(sent) | _row_key(sent), tuple(qs), negated, sent, subj, anaphoric))
    return out


#: the tokens a quantity may start at (docket.claims.quantities) but the comma, which starts one
#: only next to a number or a month
_OPENS_BUT_COMMA = _OPENS - {","}


def _content_words(t: str) -> tuple[str, ...]:
    """The content words a claim takes from one token (not a number or unit a quantity used):
    none for a stop word, a negation, a sign or a one-letter word; a CJK run's character pairs;
    else the token's stem."""
    if t in _NOT_CONTENT or not t[0].isalpha():
        return ()
    if t.isascii():  # (no CJK character, and no "-": a word token never holds one)
        return (_stem(t),) if len(t) > 1 else ()
    if len(t) < 2 and not _CJK.match(t):
        return ()
    if _CJK.search(t):
        return tuple(t[m : m + 2] for m in range(max(1, len(t) - 1)))
    return (_stem(t.removeprefix("non-")),)


class _ContentOf(dict):  # type: ignore[type-arg]
    """token -> `_content_words(token)`, filled on first sight of each token (a claim's words are
    then one C-level pass over its distinct tokens); at most 65,536 remembered, the rest asked
    each time."""

    def __missing__(self, t: str) -> tuple[str, ...]:
        out = _content_words(t)
        if len(self) < 1 << 16:
            self[t] = out
        return out


_CONTENT = _ContentOf()


def to_record(text: str, found: list[Claim]) -> list[Any]:
    """`claims(text)` as plain JSON data, for a store to keep next to the chunk (docket.features):
    each claim's sentence as offsets into `text` (not a second copy of it), its words, names,
    quantities, negation and anaphora; the passage's subject once."""
    out: list[Any] = [sorted(found[0].subject) if found else []]
    pos = 0
    for c in found:
        start = text.find(c.text, pos)
        if start < 0:  # cannot happen for claims of this text; the record then keeps no claims
            raise ValueError("claim text is not in the passage")
        pos = start + len(c.text)
        out.append([start, pos, sorted(c.words), sorted(c.names),
                    [[q.value, q.unit, q.text, q.step, q.of] for q in c.quantities], int(c.negated), int(c.anaphoric)])
    return out


def from_record(text: str, record: list[Any]) -> list[Claim]:
    """The claims `to_record` wrote for this text (the caller checks the record is for it)."""
    subj = frozenset(record[0])
    out = []
    for a, b, w, n, qs, neg, ana in record[1:]:
        if not (type(a) is int and type(b) is int and 0 <= a < b <= len(text)):
            raise ValueError("a claim's sentence is not inside the passage")  # the caller recomputes
        out.append(Claim(frozenset(w), frozenset(n),
                         tuple(Quantity(float(v), str(u), str(t), float(st), str(of)) for v, u, t, st, of in qs),
                         bool(neg), text[a:b], subj, bool(ana)))
    return out
