"""The quantities of a statement: numbers (digits, number words, "twice", "1.5 million",
"2 1/2"), their unit class with the unit converted to the class's base, dates as one value,
ranges, and the word each amount is of (docket.claims)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docket.claims.words import _MONTHS, NEGATIONS, STOP, _stem

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
#: _OPENS in a sentence that names no month (so holds no date)
_NUMBER_OPENS = frozenset(_WORD_NUM) | frozenset(_MULT)
#: every word `_quantities` may take into an amount, and so out of a claim's content words (the
#: numbers, signs and commas it takes are no content word): number, multiplier, scale, unit and
#: currency words, "business", "square" and months (docket.claims.bounds)
AMOUNT_WORDS = (frozenset(_WORD_NUM) | frozenset(_MULT) | frozenset(_SCALE) | frozenset(_UNITS) | _BUSINESS | _SQUARE
                | frozenset(_CURRENCY_BEFORE) | frozenset(_MONTHS))
#: what stands right before a unit word `_quantities` reads as the unit of an amount: the end of the
#: number (besides its digits: a number word, a hyphen, a scale word), "business" or "square"
_BEFORE_UNIT = frozenset(_WORD_NUM) | _HYPHENS | frozenset(_SCALE) | _BUSINESS | _SQUARE


@dataclass(frozen=True, slots=True)
class Quantity:
    value: float
    unit: str  # a class: pct, eur, days, bdays, bytes, metres, area:metres, year, count:<noun>, plain, ...
    text: str
    #: the step of the last digit written ("20" -> 1, "20.4" -> 0.1), in the unit's base
    step: float = 1.0
    #: the first content word after it ("25 days of *annual* leave"): what the amount is of
    of: str = ""


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The `__set__` of each named slot of a frozen slots dataclass: what `_quantity` (and
    extract's `_claim`) fill a new instance with."""
    return tuple(cls.__dict__[n].__set__ for n in names)


_NEW = object.__new__
_SET_VALUE, _SET_UNIT, _SET_TEXT, _SET_STEP, _SET_OF = _slot_setters(Quantity, ("value", "unit", "text", "step", "of"))


def _quantity(value: float, unit: str, text: str, step: float = 1.0, of: str = "") -> Quantity:
    """`Quantity(value, unit, text, step, of)`, its slots set directly: a frozen dataclass's
    `__init__` makes one `object.__setattr__` call per field, ~2x the cost of this, and the
    extraction makes ~4 quantities a passage."""
    q = _NEW(Quantity)
    _SET_VALUE(q, value)
    _SET_UNIT(q, unit)
    _SET_TEXT(q, text)
    _SET_STEP(q, step)
    _SET_OF(q, of)
    return q


_LAST_DECIMALS = re.compile(r"[.,](\d+)$")
_GROUPED = re.compile(r"\d{1,3}([.,]\d{3})+")
_COMMA_GROUPED = re.compile(r"\d{1,3}(,\d{3})+(\.\d+)?")
_DOT_GROUPED = re.compile(r"\d{1,3}(\.\d{3})+")
_ONE_DOT_GROUP = re.compile(r"\d\.\d{3}")


def _step(tok: str) -> float:
    """The step of the last digit: "20" 1, "20.4" 0.1, "1,200" 1, "0.30" 0.01."""
    if tok.isdecimal():  # digits alone (most numbers): no decimals
        return 1.0
    m = _LAST_DECIMALS.search(tok)
    if m and not _GROUPED.fullmatch(tok):
        return 10.0 ** -len(m.group(1))
    return 1.0


def _number(tok: str) -> float | None:
    if tok in _WORD_NUM:
        return float(_WORD_NUM[tok])
    if tok.isdecimal():  # digits alone (most numbers): no separator to read, and float() reads any decimal digit
        return float(tok)
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
    if first not in _MONTHS:
        # the readings below open (commas aside) with a day followed by its month, or a month
        if first == ",":
            if i + 1 == len(tokens) or (tokens[i + 1] != "," and not tokens[i + 1].isdecimal()
                                        and tokens[i + 1] not in _MONTHS):
                return None
        elif not first[0].isdigit():
            return None  # every date opens with a day, a month or (after a comma) one of them
        elif i + 1 == len(tokens) or (tokens[i + 1] != "," and tokens[i + 1] not in _MONTHS):
            return None

    # (isdecimal, not isdigit: int() reads only decimal digits; "፩ may 2020" used to raise here)
    t = [x for x in tokens[i : i + 5] if x != ","][:3]
    day = mon = yr = None
    if len(t) == 3 and t[0].isdecimal() and t[1] in _MONTHS and _year(t[2]):
        day, mon, yr, n = int(t[0]), _MONTHS[t[1]], _year(t[2]), 3
    elif len(t) == 3 and t[0] in _MONTHS and t[1].isdecimal() and _year(t[2]):
        day, mon, yr, n = int(t[1]), _MONTHS[t[0]], _year(t[2]), 3
    elif len(t) >= 2 and t[0] in _MONTHS and _year(t[1]):
        mon, yr, n = _MONTHS[t[0]], _year(t[1]), 2
    else:
        return None
    if yr is None or not 1 <= (day or 1) <= 31:
        return None
    value = yr * 372 + (mon - 1) * 31 + (day or 1)
    span, seen = i, 0
    while seen < n:  # n tokens of the date, commas between them included
        seen += tokens[span] != ","
        span += 1
    return _quantity(float(value), "date", " ".join(x for x in tokens[i:span] if x != ","), 1.0 if day else 31.0), span


def _year(t: str) -> int | None:
    return int(t) if t.isdecimal() and len(t) == 4 else None


def _quantities(tokens: list[str]) -> tuple[list[Quantity], set[int]]:
    """Quantities in a token list, and the indexes of the tokens they used (numbers, scale and
    unit words: not content words)."""
    out: list[Quantity] = []
    spans: list[tuple[int, int]] = []  # token span of each quantity in `out`
    used: set[int] = set()
    resume = 0  # the first token the next quantity may start at (the last one's end)
    dates = not _MONTHS.keys().isdisjoint(tokens)  # every date names a month
    # the tokens a quantity can start at: a number ('/' < t < ':' is an ASCII digit first, in two
    # string comparisons), a word number or multiplier, and with a month a comma or the month (a
    # date); without a month those two start nothing (no date, multiplier or number)
    opens = _OPENS if dates else _NUMBER_OPENS
    starts = [k for k, t in enumerate(tokens) if "/" < t < ":" or t in opens or (t > "\x7f" and t[0].isdigit())]
    if not starts:
        return out, used
    for i in starts:
        if i < resume:
            continue  # inside the quantity before
        tok = tokens[i]
        if dates:
            dated = _date_at(tokens, i)
            if dated is not None:
                out.append(dated[0])
                spans.append((i, dated[1]))
                used.update(range(i, dated[1]))
                resume = dated[1]
                continue
        if tok in _MULT:
            out.append(_quantity(_MULT[tok], "pct", tok))
            spans.append((i, i + 1))
            used.add(i)
            continue
        value = float(tok) if tok.isdecimal() else _number(tok)  # (_number's first case, without the call)
        if value is None:
            continue
        if tok in _WORD_NUM and i + 1 < len(tokens) and tokens[i + 1] not in _UNITS and tokens[i + 1] in STOP:
            # "one of the", "un des": a word, not a number
            continue
        start = i
        before = tokens[i - 1] if i > 0 else ""
        if tok.isdecimal() and (i + 1 == len(tokens) or (tokens[i + 1] not in _HYPHENS and tokens[i + 1] not in _SCALE)):
            step, j = 1.0, i + 1  # digits alone, nothing continuing them: what _number_run gives
        else:
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
            out.append(_quantity(round(value, 6), unit, f"{tok} {tokens[j]}", step, _qualifier(tokens, j + 1)))
            spans.append((i, j))
            used.add(i)
            resume = j
            continue
        else:
            unit = "plain"
        shown = tok if j == start + 1 else " ".join(tokens[start:j]).replace(" - ", "-")  # (one token holds no space)
        out.append(_quantity(round(value, 6), unit, shown, step, _qualifier(tokens, j)))
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
            out[k] = _quantity(round(q.value * factor, 6), nxt.unit, q.text, q.step * factor, nxt.of)


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



def may_have_unit(tokens: list[str]) -> bool:
    """Whether `_quantities(tokens)` may find an amount whose unit a word gives (a currency, a
    percentage or multiplier, days, bytes, ...: any unit but a year, a date, a count, a plain
    number or a clock time), read without reading the amounts: every such unit comes from a
    multiplier, a currency word before a number, or a unit word right after a number's end,
    "business" or "square" (a range takes its second number's unit). False is certain; True
    may be wrong (docket.claims.bounds)."""
    if not _MULT.keys().isdisjoint(tokens):
        return True
    present = _UNIT_WORDS.intersection(tokens)
    if not present:
        return False  # (most sentences: no unit or currency word at all)
    last = len(tokens) - 1
    for word in present:  # each place it stands at, found by a C scan (a sentence has few)
        k = tokens.index(word)
        while True:
            if word in _CURRENCY_BEFORE and k < last:
                return True
            if word in _UNITS and k and (tokens[k - 1] in _BEFORE_UNIT or tokens[k - 1][0].isdigit()):
                return True
            try:
                k = tokens.index(word, k + 1)
            except ValueError:
                break
    return False


_UNIT_WORDS = frozenset(_UNITS) | frozenset(_CURRENCY_BEFORE)
