"""The cheap lexical support check: does the cited passage contain the sentence's hard facts?

An answer goes wrong most expensively on the details a reader acts on: numbers, amounts,
percentages, dates and names ("within 5 business days [S1]" when S1 says 10). Those are also the
details a string comparison can verify without a model. Each fact is normalised on both sides
so that surface forms do not matter: "15%" = "15 percent", "ten" = "10", "1,000" = "1000",
"$2.5 million" = "2,500,000", and "2026-03-01" = "March 1, 2026" = "1 March 2026" = "03/01/2026".
The check is one-sided on purpose: it proves a fact is *missing* from the passage, never that
the sentence is true. Paraphrase and reasoning need a judge (see `docket.check.LLMJudge`), with
two cheap exceptions that need none: a number the passage's own numbers give by one sum or
difference of the same unit ("20 weeks" from "16 weeks ... 4 more weeks") is supported, and a
sentence that negates what the passage states (or states what it negates) is not.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from docket._latin_lookalikes import TABLE as LATIN_LOOKALIKES
from docket.text import CLAIM_STOPWORDS, ascii_words, clean_typography

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}
_MONTH = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|20|21)\d\d)"

DATE_PATTERNS = [
    # 2024-03-04, 2024/03/04, 2024.03.04, and an ISO date-time's date (2024-03-04T10:00Z)
    re.compile(r"\b" + _YEAR + r"(?P<sep>[-/.])(?P<m>[01]?\d)(?P=sep)(?P<d>[0-3]?\d)(?!\d)"),
    re.compile(r"(?<![\w.])" + _YEAR + r"\s*年\s*(?P<m>[01]?\d)\s*月(?:\s*(?P<d>[0-3]?\d)\s*日)?"),  # 2024年3月4日
    re.compile(r"\b(?P<a>[0-3]?\d)(?P<sep>[-/.])(?P<b>[0-3]?\d)(?P=sep)" + _YEAR + r"\b"),
    re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r"(?:,\s*|\s+)" + _YEAR + r"\b", re.I),
    re.compile(r"\b" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I),
    re.compile(r"\b" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I),
    re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r"\b(?!\s*(?:%|percent))", re.I),
    re.compile(r"\b" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r"\b", re.I),
]

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
    "tenth": 10, "twelfth": 12, "fifteenth": 15, "twentieth": 20, "thirtieth": 30,
}
SCALES = {"hundred": 100, "thousand": 1_000, "k": 1_000, "million": 1_000_000, "m": 1_000_000, "mn": 1_000_000,
          "billion": 1_000_000_000, "bn": 1_000_000_000, "b": 1_000_000_000, "trillion": 1_000_000_000_000}

_WORDNUM = (r"\b(?:(?P<tens>" + "|".join(TENS) + r")(?:[-\s](?P<unit>" + "|".join(k for k in UNITS if k != "zero")
            + r"))?|(?P<only>" + "|".join(UNITS) + r"))\b")
#: a character a number may follow: not a letter or digit of a word, except a CJK one ("需要90天")
_NOT_IN_WORD = r"(?<![^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])(?<!\.)"
_NUMBER = re.compile(
    _NOT_IN_WORD + r"(?P<cur>[$€£¥]\s?)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?"
    r"|(?P<spaced>\d{1,3}(?: \d{3})+)(?![\d,.]\d)"          # 1 000 000 (SI grouping; thin spaces are spaces by now)
    r"|(?P<dotted>\d{1,3}(?:\.\d{3})+)(?:,(?P<dcents>\d{1,2}))?(?![\d.]\d)"  # 1.000 / 1.234,56 (or 1.000 = 1)
    r"|(?P<comma>\d+),(?P<frac>\d{1,2})(?![\d,.]\d)"        # 1,5 (a decimal comma, or the list "1,5")
    r"|\d+(?:\.\d+)?(?:e[+-]?\d{1,2}(?!\w))?)"
    r"(?:\s?(?P<scale>hundred|thousand|million|billion|trillion|bn|mn|k|m|b)\b)?"
    r"(?:(?P<ord>st|nd|rd|th)\b)?"
    r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b|pct\b|percentage points?\b))?",
    re.I,
)
_REFERENCE = re.compile(r"\b(?:passage|source|document|doc|reference|ref|citation|id|label)s?\s*(?:id|no\.?|number|#)?\s*$", re.I)
_WORD_NUMBER = re.compile(_WORDNUM + r"(?:\s+(?P<wscale>hundred|thousand|million|billion))?(?:\s*(?P<wpct>%|percent\b|per\s?cent\b))?", re.I)

# Capitalised words that start clauses or are common in answers but are not names
NOT_NAMES = {
    "i", "a", "an", "the", "this", "that", "these", "those", "there", "here", "it", "its", "they", "we", "you", "your",
    "yes", "no", "not", "note", "however", "but", "and", "or", "if", "when", "while", "after", "before", "because",
    "so", "also", "for", "in", "on", "at", "to", "of", "by", "with", "as", "from", "per", "all", "any", "each",
    "both", "some", "only", "please", "according", "based", "overall", "additionally", "furthermore", "moreover",
    "therefore", "thus", "then", "otherwise", "unless", "except", "customers", "customer", "users", "user",
    "annual", "monthly", "refund", "refunds", "policy", "section", "source", "sources", "document", "documents",
    "step", "steps", "option", "options", "example", "answer", "question", "summary", "important", "warning",
    "mon", "tue", "wed", "thu", "fri", "sat", "sun",
    # currency codes: the amount's unit, compared with the amount ("USD 30" = "$30")
    "usd", "eur", "gbp", "jpy", "chf",
}


@dataclass(frozen=True)
class Fact:
    kind: str  # number | percent | date | name
    key: tuple[object, ...]  # normalised value compared between sentence and passage
    surface: str  # as written in the sentence
    alts: tuple[tuple[object, ...], ...] = ()  # other readings (03/01/2026: 1 March or 3 January)
    #: what a number counts ("20 weeks" -> "week", "$5" -> "$", "15%" -> "%"); "" when nothing says
    unit: str = ""
    #: a number's other readings, each a tuple of keys all of which a passage must hold ("1.000":
    #: one thousand or one; "1,5": one and a half, or 1 and 5); a name's other spellings
    readings: tuple[tuple[tuple[object, ...], ...], ...] = ()

    def describe(self) -> str:
        return {"number": "number", "percent": "percentage", "date": "date", "name": "name"}[self.kind] + f" '{self.surface}'"


_clean = clean_typography


def _dec(s: str) -> Decimal | None:
    try:
        d = Decimal(s.replace(",", ""))
    except InvalidOperation:
        return None
    return d


def _norm(d: Decimal) -> str:
    s = format(d.normalize(), "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def _readings(m: re.Match[str]) -> list[tuple[Decimal, ...]]:
    """The values a written number can mean, the likeliest first; each reading is one value, or
    several when the marks may separate numbers ("1,5" a list, "1 000" two numbers). "1.000" is
    one thousand (European grouping) or one; "1,50" is one and a half or 1 and 50."""
    g = m.groupdict()
    if g.get("spaced"):
        parts = [Decimal(p) for p in g["spaced"].split()]
        return [(Decimal(g["spaced"].replace(" ", "")),), tuple(parts)]
    if g.get("dotted"):
        grouped = Decimal(g["dotted"].replace(".", "") + ("." + g["dcents"] if g.get("dcents") else ""))
        return [(grouped,)] if g.get("dcents") else [(grouped,), (Decimal(g["dotted"]),)]
    if g.get("comma"):
        return [(Decimal(f"{g['comma']}.{g['frac']}"),), (Decimal(g["comma"]), Decimal(g["frac"]))]
    d = _dec(m.group("num"))
    return [(d,)] if d is not None and d.is_finite() else []


def _dates(text: str) -> tuple[list[tuple[Fact, tuple[int, int]]], str]:
    """Dates found in `text` (with spans), and the text with the dates blanked out."""
    found: list[tuple[Fact, tuple[int, int]]] = []
    chars = list(text)
    for pat in DATE_PATTERNS:
        for m in pat.finditer(text):
            if any(chars[i] == "\0" for i in range(m.start(), m.end())):
                continue
            g = m.groupdict()
            year = int(g["year"]) if g.get("year") else None
            keys: list[tuple[object, ...]] = []
            if g.get("m") and g.get("d"):
                keys = [(year, int(g["m"]), int(g["d"]))]
            elif g.get("m"):
                keys = [(year, int(g["m"]), None)]
            elif g.get("a") and g.get("b"):  # 03/01/2026: month/day or day/month
                a, b = int(g["a"]), int(g["b"])
                keys = [(year, a, b), (year, b, a)]
            elif g.get("mon"):
                mon = MONTHS[g["mon"].lower().rstrip(".")]
                day = int(g["day"]) if g.get("day") else None
                if day is not None and not 1 <= day <= 31:
                    continue
                keys = [(year, mon, day)]
            keys = [k for k in keys if k[1] is not None and 1 <= int(k[1]) <= 12]  # type: ignore[call-overload]
            if not keys:
                continue
            # "May 5" alone: only with a capital M, so the verb "may" never becomes a month
            if g.get("mon") and g["mon"].lower() == "may" and not g["mon"][0].isupper():
                continue
            found.append((Fact("date", keys[0], m.group(0), tuple(keys[1:])), (m.start(), m.end())))
            for i in range(m.start(), m.end()):
                chars[i] = "\0"
    return found, "".join(" " if c == "\0" else c for c in chars)


def _numbers(text: str, *, words: str) -> list[Fact]:
    """Numbers, amounts and percentages. `words`: 'all' reads number words, 'strict' skips 'one'."""
    out: list[Fact] = []
    for m in _NUMBER.finditer(text):
        readings = _readings(m)
        if not readings:
            continue
        if words == "strict" and _REFERENCE.search(text[max(0, m.start() - 24) : m.start()]):
            continue  # "as passage 1 says": a pointer to a source, not a fact about the world
        scale = (m.group("scale") or "").lower()
        # "5 m" could be metres; only scale lower-case single letters after a currency sign, and
        # a "k" written onto the number ("10k users")
        if scale in ("m", "b", "k") and not m.group("cur") and not (scale == "k" and m.end("num") == m.start("scale")):
            scale = ""
        if scale:
            readings = [tuple(v * SCALES[scale] for v in r) for r in readings]
        pct = m.group("pct")
        kind = "percent" if pct else "number"
        keys = [tuple((kind, _norm(v)) for v in r) for r in readings]
        out.append(Fact(kind, keys[0][0], m.group(0).strip(), unit=_unit(text, m, pct), readings=tuple(keys[1:])))
    for m in _WORD_NUMBER.finditer(text):
        g = m.groupdict()
        if g.get("only"):
            n = UNITS[g["only"].lower()]
            if words == "strict" and n in (0, 1):
                continue
        else:
            n = TENS[g["tens"].lower()] + (UNITS[g["unit"].lower()] if g.get("unit") else 0)
        value = Decimal(n)
        if g.get("wscale"):
            value *= SCALES[g["wscale"].lower()]
        kind = "percent" if g.get("wpct") else "number"
        out.append(Fact(kind, (kind, _norm(value)), m.group(0).strip(), unit=_unit(text, m, g.get("wpct"))))
    if words == "all":
        for w, n in ORDINALS.items():
            if re.search(rf"\b{w}\b", text, re.I):
                out.append(Fact("number", ("number", str(n)), w))
    return out


_UNIT_AFTER = re.compile(r"\s*-?\s*([a-z]+)", re.I)
_CODE_BEFORE = re.compile(r"\b(eur|usd|gbp|chf|jpy)\s*$", re.I)
#: words after a number that do not say what it counts
_NOT_UNITS = CLAIM_STOPWORDS | {"and", "or", "to", "of", "per", "a", "an", "the", "more", "less", "than", "plus",
                                "minus", "in", "on", "at", "for", "by", "is", "are", "was", "were", "be"}


_MODIFIERS = frozenset("more additional extra further other paid unpaid full calendar consecutive business working "
                       "weekly monthly annual".split())


def _unit(text: str, m: re.Match[str], pct: object) -> str:
    """What the number counts: "%" for a percentage, a currency sign or code before it, else the
    word right after it, singular ("16 weeks" -> "week", "4-week" -> "week")."""
    if pct:
        return "%"
    cur = (m.groupdict().get("cur") or "").strip()
    if cur:
        return cur
    code = _CODE_BEFORE.search(text[max(0, m.start() - 6): m.start()])
    if code:
        return code.group(1).lower()
    sign_after = re.match(r"\s?([$€£¥])", text[m.end(): m.end() + 2])
    if sign_after:  # "30 €"
        return sign_after.group(1)
    at = m.end()
    for _ in range(3):  # "4 more weeks", "16 paid calendar weeks": past the modifiers to the noun
        after = _UNIT_AFTER.match(text, at)
        if not after:
            return ""
        w = after.group(1).lower()
        if w not in _MODIFIERS:
            break
        at = after.end()
    else:
        return ""
    if w in _NOT_UNITS or w in MONTHS:
        return ""
    return w[:-1] if w.endswith("s") and len(w) > 3 else w


#: units a number can be measured in, by what they measure: a number of one of them is not
#: supported by the same number of another ("30 weeks" where the passage says "30 days", "30 €"
#: where it says "$30"). Only these are compared: "30 employees" against "30 customers" is a
#: different noun, not a different unit, and is left to a judge.
_UNIT_ALIASES = {
    "sec": "second", "min": "minute", "hr": "hour", "h": "hour", "wk": "week", "mo": "month", "yr": "year",
    "usd": "$", "dollar": "$", "buck": "$", "eur": "€", "euro": "€", "gbp": "£", "jpy": "¥", "yen": "¥",
    "kilogram": "kg", "gram": "g", "lb": "lb", "ounce": "oz", "tonne": "t", "ton": "t", "kilometer": "km", "kilometre": "km",
    "metre": "meter", "mi": "mile", "feet": "foot", "ft": "foot", "centimeter": "cm", "centimetre": "cm",
    "millimeter": "mm", "millimetre": "mm", "byte": "b", "kilobyte": "kb", "megabyte": "mb", "gigabyte": "gb",
    "terabyte": "tb", "kib": "kb", "mib": "mb", "gib": "gb", "tib": "tb",
}
_UNITS = frozenset(("second minute hour day week month year decade century fortnight $ € £ ¥ chf % kg g lb oz t km "
                    "meter mile foot inch cm mm yard b kb mb gb tb pb pound").split())


def canonical_unit(unit: str) -> str:
    """The unit as compared ("hrs" -> "hour", "USD" -> "$"), or "" when it is not a known unit."""
    u = _UNIT_ALIASES.get(unit, unit)
    return u if u in _UNITS else ""


def _same_unit(a: str, b: str) -> bool:
    return a == b or {a, b} in ({"pound", "£"}, {"pound", "lb"})


_HONORIFICS = {"mr", "mrs", "ms", "mx", "dr", "prof", "sir", "madam", "mme", "mlle", "herr", "frau"}
_LOOKALIKE = str.maketrans(LATIN_LOOKALIKES)
_GERMAN = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})


def _fold_word(word: str) -> str:
    """A word as a name compares: look-alike letters of other scripts read as Latin ones when the
    whole word then reads as Latin ("Рaypal" with a Cyrillic Р is Paypal), marks dropped
    ("Müller" = "Muller", "Zürich" = "Zurich"), lower case."""
    low = word.lower()
    if not low.isascii():
        latin = low.translate(_LOOKALIKE)
        if latin.isascii():
            return latin
        low = "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))
    return low


def _spellings(word: str) -> tuple[str, ...]:
    """The folded word and its German transliteration ("Müller" -> muller, mueller)."""
    if word.isascii():
        return (word.lower(),)
    folded = _fold_word(word)
    german = word.lower().translate(_GERMAN)
    return (folded, german) if german != word.lower() and german.isascii() else (folded,)


def _latin_lookalikes(text: str) -> str:
    """Words written in look-alike letters of other scripts, case kept, read as Latin: a name
    must not escape the name check by starting with a Cyrillic capital."""
    if text.isascii():
        return text

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        if w.isascii():
            return w
        latin = "".join((LATIN_LOOKALIKES[c].upper() if c.isupper() else LATIN_LOOKALIKES[c]) if c in LATIN_LOOKALIKES
                        else c for c in w)
        return latin if latin.isascii() else w
    return re.sub(r"\w+", word, text)


_NAME = re.compile(r"(?<![\w'])([A-Z][\w&'\-]*[\w]|[A-Z]{2,})")


def _names(text: str) -> list[Fact]:
    """Capitalised words that are not clause starts: likely names (Nimbus, Stripe, EU, UK)."""
    out: list[Fact] = []
    for m in _NAME.finditer(text):
        word = m.group(1)
        if word.endswith("'s"):
            word = word[:-2]
        low = word.lower()
        if low in NOT_NAMES or low in MONTHS or low in _HONORIFICS or re.fullmatch(r"S\d+", word):
            continue
        before = text[: m.start()].rstrip()
        clause_start = not before or before[-1] in ".!?:;\"'(*-•#>|" or bool(re.search(r"(?:^|\s)\d+[.)]$", before))
        acronym = word.isupper() and len(word) >= 2
        inner = any(c.isupper() or c.isdigit() for c in word[1:])
        if clause_start and not (acronym or inner):
            continue
        first, *other = _spellings(word)
        out.append(Fact("name", ("name", first), word, readings=tuple((("name", o),) for o in other)))
    return out


def sentence_facts(sentence: str, *, names: bool = True) -> list[Fact]:
    """The facts of a claim (citations and links already removed) that its source must contain."""
    text = _clean(sentence)
    dates, rest = _dates(text)
    facts = [f for f, _ in dates] + _numbers(rest, words="strict")
    if names:
        facts += _names(_latin_lookalikes(rest))
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in facts:
        if f.key not in seen:
            seen.add(f.key)
            out.append(f)
    return out


#: amounts of one unit a derivation looks at (pairs grow with the square)
_MAX_TERMS = 40


@dataclass
class PassageFacts:
    """Everything a passage can support: its normalised facts and its words."""

    numbers: set[tuple[object, ...]]
    dates: set[tuple[object, ...]]
    words: set[str]
    #: the passage's amounts with what they count, for the sum or difference of two of them
    amounts: tuple[tuple[Decimal, str], ...] = ()
    text: str = ""
    #: value -> the units its occurrences are measured in ("" for one that says none)
    units: dict[str, set[str]] = field(default_factory=dict)
    _claims: list[Any] | None = None

    @classmethod
    def of(cls, text: str) -> PassageFacts:
        t = _clean(text)
        dates, rest = _dates(t)
        found = _numbers(rest, words="strict")
        every = _numbers(rest, words="all")
        nums = {k for f in every for k in (f.key, *(k for r in f.readings for k in r))}
        units: dict[str, set[str]] = {}
        for f in every:
            for k in (f.key, *(k for r in f.readings for k in r)):
                units.setdefault(str(k[1]), set()).add("%" if f.kind == "percent" else canonical_unit(f.unit))
        amounts = tuple(dict.fromkeys((Decimal(str(f.key[1])), f.unit) for f in found if f.unit))
        # a year inside a date still counts as a number the passage mentions
        for f, _ in dates:
            if f.key[0] is not None:
                nums.add(("number", str(f.key[0])))
                units.setdefault(str(f.key[0]), set()).add("")
        words = {s for w in re.findall(r"[\w]+", _latin_lookalikes(t)) for s in _spellings(w)}
        return cls(numbers=nums, dates={k for f, _ in dates for k in (f.key, *f.alts)}, words=words,
                   amounts=amounts, text=text, units=units)

    def supports(self, fact: Fact) -> bool:
        if fact.kind in ("number", "percent", "name") and fact.readings:
            if self._supports_one(fact):
                return True
            return any(all(self._supports_one(Fact(fact.kind, k, fact.surface, unit=fact.unit)) for k in r)
                       for r in fact.readings)
        return self._supports_one(fact)

    def _supports_one(self, fact: Fact) -> bool:
        if fact.kind == "number":
            held = fact.key in self.numbers or ("percent", fact.key[1]) in self.numbers
            return (held and self._same_unit(fact)) or bool(self.derives(fact))
        if fact.kind == "percent":
            return fact.key in self.numbers or bool(self.derives(fact))
        if fact.kind == "date":
            for y, m, d in (fact.key, *fact.alts):
                for py, pm, pd in self.dates:
                    if pm == m and (y is None or py == y) and (d is None or pd == d):
                        return True
            return False
        if fact.kind == "name":
            return self._has_word(str(fact.key[1]))
        return True

    def _same_unit(self, fact: Fact) -> bool:
        """False when the claim measures the number in a known unit and every place the passage
        gives that number measures it in another known unit ("30 weeks" against "30 days")."""
        want = canonical_unit(fact.unit)
        if not want:
            return True
        have = self.units.get(str(fact.key[1]), {""})
        return "" in have or any(_same_unit(want, u) for u in have)

    def derives(self, fact: Fact) -> str | None:
        """How the passage's own numbers give the fact's value: the sum or the difference of two
        amounts of the fact's unit ("20 weeks" from "16 weeks ... 4 more weeks": "16 + 4"). Only
        amounts that say what they count, and only of the same unit as the fact, so "20" is
        never derived from "16 days" and "4 employees"."""
        if not fact.unit:
            return None
        target = Decimal(str(fact.key[1]))
        vals = [v for v, u in self.amounts if u == fact.unit][:_MAX_TERMS]
        for i, a in enumerate(vals):
            for b in vals[i + 1:]:
                if a + b == target:
                    return f"{_norm(a)} + {_norm(b)}"
                if abs(a - b) == target:
                    return f"{_norm(max(a, b))} - {_norm(min(a, b))}"
        return None

    def negates(self, claim: str) -> str | None:
        """Why the claim says the opposite of a sentence of the passage ("are not refundable" where
        the passage says "are refundable", or the reverse), or None: the same statement, the same
        values, one of the two negated (docket.claims, as conflict detection reads two passages)."""
        from docket.claims import claims, disagreement

        mine = [c for c in claims(claim) if c.words]
        if not mine:
            return None
        if self._claims is None:
            self._claims = claims(self.text)
        for a in mine:
            for b in self._claims:
                if a.negated == b.negated:
                    continue
                # the claim's statement, not another one about the same subject: it adds few words
                # to the passage's sentence (one in four; "can be paused" is not "are not refundable")
                if len(a.words - b.words) > max(1, len(a.words) // 4):
                    continue
                why = disagreement(a, b)
                if why is not None and why.startswith("one negates"):
                    return f"the passage says the opposite: {b.text.strip()!r}"
        return None

    def _has_word(self, word: str) -> bool:
        parts = [p for p in re.findall(r"\w+", word) if p]
        return all(self._word(p) for p in parts)

    def _word(self, w: str) -> bool:
        if w in self.words:
            return True
        if len(w) >= 4:
            for pw in self.words:
                if pw.startswith(w) or (len(pw) >= 5 and w.startswith(pw) and len(w) - len(pw) <= 3):
                    return True
        return False


def content_words(text: str) -> set[str]:
    """Lower-case content words of length >= 3 minus a short stop list (for the overlap check)."""
    return {w for w in ascii_words(clean_typography(text)) if len(w) >= 3 and w not in CLAIM_STOPWORDS}
