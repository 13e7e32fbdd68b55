"""The words of a statement: sentences, tokens, content words (folded, stemmed, synonyms
merged), proper names, the passage's opening name (its subject) and negation (docket.claims)."""

from __future__ import annotations

import re
from functools import lru_cache

from docket.dates import _MONTHS
from docket.text import fold as _fold_text

# --- words ------------------------------------------------------------------------------------

_SENT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_CJK_STOPS = "。！？；"
#: where _SENT cuts a text without a CJK stop, found in one scan: a stop before white space or a
#: line break, with the white space after it (which `sentences` strips anyway). The class opens the
#: pattern, so the engine jumps from one candidate character to the next instead of trying a
#: look-behind at each (as _SENT's branches do).
_SENT_CUT = re.compile(r"[.!?;\n](?:(?<=\n)|(?=\s))\s*")
#: a word (letters, one apostrophe inside), a number (with its separators), a sign or a punctuation
#: mark; the branches start with disjoint characters, so their order only decides which is tried first
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*|[%€$£,;:()\-–—]")
#: _TOKEN for an ASCII text, where it finds the same tokens: its classes become ASCII ranges, which
#: the engine tests by a bit table instead of a Unicode category look-up, and its repeats are
#: possessive (no backtracking could find another token: what follows each run cannot extend it)
_TOKEN_ASCII = re.compile(r"[A-Za-z]++(?:'[A-Za-z]++)?+|[0-9]++(?:[.,][0-9]++)*+|[%$,;:()\-]")
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


def sentences(text: str) -> list[str]:
    """The non-empty sentences of a passage, stripped: the pieces `_SENT` splits it into (cut by
    `_SENT_CUT` in a text without a CJK stop), each stripped, the empty ones left out."""
    if any(stop in text for stop in _CJK_STOPS):
        return [s for s in map(str.strip, _SENT.split(text)) if s]
    out = []
    prev = 0
    for m in _SENT_CUT.finditer(text):
        cut = m.start()
        out.append(text[prev:cut] if text[cut] == "\n" else text[prev : cut + 1])  # (a stop stays in its sentence)
        prev = m.end()
    out.append(text[prev:])
    return [s for s in map(str.strip, out) if s]


def tokens_of(folded: str) -> list[str]:
    """`_TOKEN.findall(folded)`, by the ASCII pattern where it finds the same."""
    return (_TOKEN_ASCII if folded.isascii() else _TOKEN).findall(folded)


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
    if len(run) >= 2:
        return frozenset(names)
    rest = head[end:]
    if _DEFINES.match(_PARENS.sub(" ", rest) if "(" in rest else rest):
        return frozenset(names)
    return frozenset()


def different_subjects(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two passages open with different names: each has a name word the other lacks ("Sullivan
    County" vs "Pike County"; "Pearl Jam" vs "Pearl Jam" is one subject)."""
    return bool(a) and bool(b) and bool(a - b) and bool(b - a)


_NOT_NAMES = frozenset("monday tuesday wednesday thursday friday saturday sunday montag dienstag mittwoch donnerstag "
                       "freitag samstag sonntag lundi mardi mercredi jeudi vendredi samedi dimanche".split())


_ASCII_WORD = re.compile(r"[A-Za-z]+")
#: an ASCII word of two letters or more that opens with a capital (the capital first, so the engine
#: scans for it; the look-behind then asks that no letter comes before it)
_ASCII_CAPITALISED = re.compile(r"[A-Z](?<![A-Za-z][A-Z])[A-Za-z]++")
#: a word character outside ASCII (a letter, digit or mark `_CELL_WORD` may read)
_NON_ASCII_WORD = re.compile(r"[^\W\x00-\x7f]")
#: what is never a name: month and weekday names are dates
_NOT_A_NAME = frozenset(_MONTHS) | _NOT_NAMES
_NO_NAMES: frozenset[str] = frozenset()


def _names(raw: str) -> frozenset[str]:
    """Capitalised words that do not start the sentence (proper names, in most languages);
    month and weekday names are dates, not names."""
    if raw.isascii() or _NON_ASCII_WORD.search(raw) is None:
        # words are [A-Za-z]+ runs (a sentence whose only non-ASCII characters are dashes, quotes
        # or spaces has no other letter): only the capitalised ones are looked at
        caps = _ASCII_CAPITALISED.findall(raw)
        if not caps:
            return _NO_NAMES
        first = _ASCII_WORD.search(raw)
        if first is not None and first.group() == caps[0] and not caps[0].isupper():
            del caps[0]  # the sentence's first word: capitalised by grammar
        found = frozenset(map(str.lower, caps))
        return found if found.isdisjoint(_NOT_A_NAME) else found - _NOT_A_NAME
    toks = _CELL_WORD.findall(raw)
    # a capitalised word after the first, or an all-capitals one anywhere ("NASA"), of 2+ letters
    picked = [t for k, t in enumerate(toks) if len(t) > 1 and (t.isupper() or (k > 0 and t[0].isupper()))]
    if not picked:
        return _NO_NAMES
    # folded in one call: "\x00" is no letter, cased or case-ignorable (lower()'s final sigma stops
    # at it) and no combining mark (NFKD reorders none across it), so each word folds as alone
    return frozenset(fold("\x00".join(picked)).split("\x00")).difference(_NOT_A_NAME)


#: an ordinal ("16th", "2e", "1º"): digits after no word character, a suffix, then a word's end
#: (the digit first, then the look-behind, so the engine scans for digits)
_ORDINAL = re.compile(r"\d(?<!\w\d)\d*(?:st|nd|rd|th|er|eme|e|º|ª)\b")
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
    # each pattern is run only where its text can match: a parenthesis holds "(", a hedge "not",
    # "nicht" or "pas", "non-" itself, and a "n't" or "n'" holds "n'"
    bare = _PARENS.sub(" ", folded) if "(" in folded else folded
    if "not" in bare or "pas" in bare or "nicht" in bare:
        bare = _HEDGES.sub(" ", bare)
    if "non-" in bare:
        if any(w.endswith(("able", "ible")) or w in _NON_PREDICATES for w in _NON_WORD.findall(bare)):
            return True
        bare = _NON.sub(" ", bare)  # what is left of "non-": compound nouns ("non-album singles")
    return not NEGATIONS.isdisjoint(tokens_of(bare)) or ("n'" in bare and _NT.search(bare) is not None)


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
    """ "2 1/2" -> "2.5"; a fraction over zero ("10/0", a score) is left as written (it raised
    ZeroDivisionError out of `claims`, and so out of indexing and assembly)."""
    over = int(m.group(3))
    return f"{int(m.group(1)) + int(m.group(2)) / over:g}" if over else m.group(0)


