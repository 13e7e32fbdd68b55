"""The one home of docket's text helpers: folding, words, stop words, sentences and titles.

Every move and check reads text through these functions, so "a word" or "a sentence" means the
same thing wherever the same job is done, and per-chunk results can be computed once
(docket.features) instead of on every query.

Several jobs need a slightly different notion of a word or a sentence; those are separate,
named functions and lists below, each saying why it differs. Changing one changes decisions
(which passage is promoted, kept whole or flagged as a conflict), so they are kept as they were
when they were scattered over the modules.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

# --- folding and words -------------------------------------------------------------------------

_WORD = re.compile(r"[\w']+")
_PAREN = re.compile(r"\s*\([^)]*\)\s*")


class _DropMarks(dict):  # type: ignore[type-arg]
    """str.translate table: code point -> None for combining marks (what NFKD splits accents
    into), itself otherwise. Filled on first sight of each code point, so translating runs at C
    speed instead of a Python test per character; at most 65,536 code points are remembered (text
    spanning more of Unicode than that is still folded right, the rest asked each time)."""

    def __missing__(self, cp: int) -> int | None:
        out = None if unicodedata.combining(chr(cp)) else cp
        if len(self) < 1 << 16:
            self[cp] = out
        return out


_MARKS = _DropMarks()


def fold(text: str) -> str:
    """Lower case without accents, so "Akinoshu" in a question matches the title "Akinoshū"."""
    text = text.lower()
    if text.isascii():
        return text
    return unicodedata.normalize("NFKD", text).translate(_MARKS)


def words(text: str) -> list[str]:
    """Folded words, possessive 's dropped ("Kenji's" -> "kenji"): how re-scoring, titles and the
    answerability signals read text.

    A word is a run of `[\\w']+` of the folded text with its apostrophes stripped and then one
    trailing "'s" dropped (an empty one is no word). Computed at C speed: every other character
    becomes a space (str.translate), str.split cuts the runs (no `\\w` character is a space), and
    only the runs holding an apostrophe get Python work. tests/test_text_words.py checks it
    against that definition word for word."""
    if text.isascii():  # one C pass of bytes.translate: ~2x faster than str.translate's table look-ups
        s = text.encode("ascii").lower().translate(_ASCII_SPACE_NON_WORD).decode("ascii")
    else:
        s = text.lower()
        s = s.translate(_SPACE_NON_WORD) if s.isascii() else unicodedata.normalize("NFKD", s).translate(_FOLD_SPACE)
    out = s.split()
    if "'" in s:
        out = [_strip_apostrophes(w) if "'" in w else w for w in out]
        if "" in out:  # a run of apostrophes alone
            out = [w for w in out if w]
    return out


class _NonWord(dict):  # type: ignore[type-arg]
    """str.translate table: a space for every character `\\w` and the apostrophe do not match,
    the character itself otherwise (`\\w` of a str pattern is str.isalnum() or "_"); filled on
    first sight of each code point, at most 65,536 remembered."""

    def __missing__(self, cp: int) -> int:
        ch = chr(cp)
        out = cp if ch.isalnum() or ch == "_" or ch == "'" else 32
        if len(self) < 1 << 16:
            self[cp] = out
        return out


class _FoldNonWord(dict):  # type: ignore[type-arg]
    """_NonWord after fold's _DropMarks, in one table (one pass over a decomposed text)."""

    def __missing__(self, cp: int) -> int | None:
        out = None if _MARKS[cp] is None else _SPACE_NON_WORD[cp]
        if len(self) < 1 << 16:
            self[cp] = out
        return out


_SPACE_NON_WORD = _NonWord()
_FOLD_SPACE = _FoldNonWord()


class _NonWordStrict(dict):  # type: ignore[type-arg]
    """_NonWord with the apostrophe a non-word character too: `\\W` as a str.translate table."""

    def __missing__(self, cp: int) -> int:
        ch = chr(cp)
        out = cp if ch.isalnum() or ch == "_" else 32
        if len(self) < 1 << 16:
            self[cp] = out
        return out


_SPACE_W = _NonWordStrict()


#: `_SPACE_NON_WORD` over ASCII bytes (bytes.translate: one C pass, no table look-up per character);
#: bytes 128-255 never occur in ASCII text and are left as they are
_ASCII_SPACE_NON_WORD = bytes(_SPACE_NON_WORD[b] if b < 128 else b for b in range(256))
_ASCII_SPACE_W = bytes(_SPACE_W[b] if b < 128 else b for b in range(256))


def iter_words(texts: Sequence[str]) -> Iterator[list[str]]:
    """`words` of each text, in order, the character work done for all of them at once (a pool
    seen for the first time): the ASCII texts in one bytes.translate, the others decomposed one
    by one and then folded in one numpy pass over their code points, instead of a str.translate
    per text that looks up each distinct character in a Python dict (~56 ns a character on
    accented text). Each text's words are split off when asked for, so a caller that counts
    them one text at a time never holds every text's words at once (peak memory).
    tests/test_text_words.py checks it against `words` text by text."""
    lowered = [t.lower() for t in texts]
    spans: list[tuple[str, int, int]] = [("", 0, 0)] * len(lowered)
    plain = [i for i, s in enumerate(lowered) if s.isascii()]
    other = [i for i, s in enumerate(lowered) if not s.isascii()]
    if plain:
        folded = "".join([lowered[i] for i in plain]).encode("ascii").translate(_ASCII_SPACE_NON_WORD).decode("ascii")
        _spans(spans, plain, [len(lowered[i]) for i in plain], folded)
    if other:
        _spans(spans, other, *_fold_space_many([unicodedata.normalize("NFKD", lowered[i]) for i in other]))
    del lowered
    for folded, start, end in spans:
        s = folded[start:end]
        yield (_drop_apostrophes(s) if "'" in s else s).split()


def _spans(spans: list[tuple[str, int, int]], at: list[int], lengths: Sequence[int], folded: str) -> None:
    """Where each text of `at` lies in `folded` (texts translated side by side, of `lengths`)."""
    pos = 0
    for i, n in zip(at, lengths):
        spans[i] = (folded, pos, pos + n)
        pos += n


def _drop_apostrophes(s: str) -> str:
    """`_strip_apostrophes` on every word of a folded text at once, by C-level `replace`: the
    apostrophes that open or close a word go (one pass per apostrophe of the longest such run),
    then one "'s" that ends a word; a word of apostrophes alone becomes spaces."""
    s = f" {s} "
    while " '" in s:
        s = s.replace(" '", " ")
    while "' " in s:
        s = s.replace("' ", " ")
    return s.replace("'s ", " ")


#: the code _fold_space_many gives a character _FOLD_SPACE drops (none is this large)
_DROP = 0xFFFFFFFF
_ASCII_FOLD_SPACE = np.array([_SPACE_NON_WORD[b] for b in range(128)], dtype=np.uint32)


def _fold_space_many(decomposed: list[str]) -> tuple[list[int], str]:
    """`_FOLD_SPACE` over decomposed texts side by side, as numpy code points (UTF-32): ASCII by
    a table, each distinct other code point asked of _FOLD_SPACE once. Returns each text's
    folded length and the folded texts side by side."""
    lengths, folded = fold_space_codes(decomposed)
    return lengths, folded.astype("<u4", copy=False).tobytes().decode("utf-32-le", "surrogatepass")


def fold_space_codes(decomposed: list[str]) -> tuple[list[int], np.ndarray]:
    """`_fold_space_many` as code points (uint32): each text's folded length, and the texts."""
    codes = np.frombuffer("".join(decomposed).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    folded = np.empty_like(codes)
    low = codes < 128
    folded[low] = _ASCII_FOLD_SPACE[codes[low]]
    high = ~low
    distinct, where = np.unique(codes[high], return_inverse=True)
    mapped = [_FOLD_SPACE[cp] for cp in distinct.tolist()]
    folded[high] = np.array([_DROP if m is None else m for m in mapped], dtype=np.uint32)[where]
    lengths = [len(d) for d in decomposed]
    if None in mapped:
        kept = folded != _DROP
        ends = np.cumsum(lengths)
        kept_before = np.concatenate(([0], np.cumsum(kept)))
        lengths = np.diff(kept_before[np.concatenate(([0], ends))]).tolist()
        folded = folded[kept]
    return lengths, folded


class Folded(NamedTuple):
    """Texts folded for `words`, laid side by side as code points (`folded_codes`)."""

    #: uint32 code points: a space, then each text followed by a space
    codes: np.ndarray
    #: the position (in the given list) of each text as laid: ASCII texts first
    order: list[int]
    #: where each laid text begins in `codes`
    starts: np.ndarray


def folded_codes(texts: Sequence[str]) -> Folded:
    """The texts as `words` reads them, side by side, without splitting them into words: each folded
    (lower case, accents dropped, every character `[\\w']` does not match a space) and its
    apostrophes stripped as `words` strips them (turned into spaces), so the words of a text are
    the runs of non-space codes in its stretch: `words(text)` exactly (tests/test_text_words.py).
    For a pool's first sight (docket.features.glance): numpy then finds a question's words in
    every text at once, and no text is split into words."""
    plain = [i for i, t in enumerate(texts) if t.isascii()]
    other = [i for i, t in enumerate(texts) if not t.isascii()]
    lengths = [len(texts[i]) + 1 for i in plain]
    if plain:  # one C pass: ASCII lower case and the table are per byte
        # " " + each text followed by " ": one join, no copy of each text with its space
        laid = (" " + " ".join([texts[i] for i in plain]) + " ").encode("ascii").lower().translate(_ASCII_SPACE_NON_WORD)
        head = np.frombuffer(laid, dtype=np.uint8).astype(np.uint32)
    else:
        head = np.full(1, 32, dtype=np.uint32)
    if other:
        other_lengths, tail = fold_space_codes([unicodedata.normalize("NFKD", texts[i].lower()) + " " for i in other])
        codes = np.concatenate((head, tail))
        lengths += other_lengths
    else:
        codes = head
    if 39 in codes:
        _strip_apostrophe_codes(codes)
    starts = np.cumsum([1, *lengths[:-1]]) if lengths else np.zeros(0, dtype=np.int64)
    return Folded(codes, plain + other, starts)


def _strip_apostrophe_codes(codes: np.ndarray) -> None:
    """`_drop_apostrophes` on folded code points, in place, the dropped apostrophes (and the "s"
    of a final "'s") turned into spaces: those that open a word, then those that close one (a run
    a pass per apostrophe), then one "'s" that ends a word. `codes` begins and ends with a space."""
    at = np.flatnonzero(codes == 39)
    for side in (-1, 1):
        while len(at):
            edge = codes[at + side] == 32
            if not edge.any():
                break
            codes[at[edge]] = 32
            at = at[~edge]
    if len(at):
        s = at[(codes[at + 1] == 115) & (codes[at + 2] == 32)]
        codes[s] = 32
        codes[s + 1] = 32


def _strip_apostrophes(w: str) -> str:
    """A run of word characters and apostrophes as a word: apostrophes stripped, one "'s" dropped."""
    w = w.strip("'")
    return w[:-2] if w.endswith("'s") else w


#: Function words plus the frames questions are asked in ("which film was *named* ...", "the
#: *first* ...", "how *many*"): they say nothing about which passage answers, so BM25 terms, title
#: matching and the answerability signals skip them.
STOPWORDS = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being what which who whom whose
    when where why how that this these those it its as do does did has have had not no than then there their they
    he she his her him them we you your our i me my can could would should will shall may might must into about
    over under after before between both either neither also only same other such s t one first many much more
    most less least name named called did does""".split()
)


def content_words(text: str) -> list[str]:
    """`words` without STOPWORDS, in order, repeats kept."""
    return [w for w in words(text) if w not in STOPWORDS]


def phrase(text: str) -> str:
    """The text as folded words between spaces, so `phrase(title) in phrase(text)` finds a title
    as a whole-word phrase (and `startswith` finds one the text opens with)."""
    return " " + " ".join(words(text)) + " "


def title_variants(title: str) -> list[str]:
    """The title as written and without a parenthetical qualifier ("Kiss and Tell (1945 film)");
    only variants with a content word count."""
    out = [title]
    bare = _PAREN.sub(" ", title).strip()
    if bare and bare != title:
        out.append(bare)
    return [t for t in out if content_words(t)]


def title_variant_words(title: str) -> list[list[str]]:
    """`words` of each of `title_variants(title)`, in order (each variant read once)."""
    if "(" not in title and (not title or title.strip() == title):
        # no parenthetical and nothing to strip (most titles): the title is its only variant
        w = words(title)
        return [] if STOPWORDS.issuperset(w) else [w]
    out = [title]
    bare = (_PAREN.sub(" ", title) if "(" in title else title).strip()  # no "(": nothing for the pattern
    if bare and bare != title:
        out.append(bare)
    got = [words(t) for t in out]
    return [w for w in got if not STOPWORDS.issuperset(w)]


_ASCII_WORD = re.compile(r"[a-z0-9]+")


def ascii_words(text: str) -> list[str]:
    """Runs of ASCII letters and digits of the lower-cased text. Compression and the citation
    checker count shared words this way: apostrophes split ("don't" -> "don", "t"), accents are
    not folded."""
    return _ASCII_WORD.findall(text.lower())


#: Compression ranks filler sentences by the question words they share. A short list: negations,
#: comparatives and quantities ("not", "only", "more", "first", "one") stay, because a sentence
#: that shares them with the question is the one that answers it.
OVERLAP_STOPWORDS = frozenset(
    "a an the of to in on for and or is are was were be been do does did can i you we my your our it at by "
    "with from what which who whom when where why how after before about any this that".split()
)

#: The citation checker's overlap of a claim with its passage, on words of three letters or
#: more. Quantifiers ("all", "each", "some", "two") go too: models add them freely when they
#: paraphrase; "after", "before" and "first" stay, because they change what a claim says.
CLAIM_STOPWORDS = frozenset(
    "the and for are was were with that this from have has had not but can may will would could should their there "
    "which who whom what when where they them its into also such than then these those been being more most some any "
    "all each other about over only very you your our his her she him one two use used".split()
)

#: The words of a statement's frame (moves.versions) that do not count: articles, prepositions,
#: copulas and modals only. "after"/"before", "only", question words stay in the frame: two rules
#: that differ in them are different rules, not one rule with two values.
FRAME_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been it its as that this "
    "these those can may will would should".split()
)

_SCRIPT_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def script_words(text: str) -> list[str]:
    """Words in any script, without digits; a run of Chinese, Japanese or Korean characters (no
    spaces between words) counts as its character pairs. Single Latin letters are dropped. The
    words of a statement's frame, so a German or Chinese rule is read as well as an English one."""
    out: list[str] = []
    for w in _SCRIPT_WORD.findall(text):
        if _CJK.search(w) and len(w) > 2:
            out.extend(w[i : i + 2] for i in range(len(w) - 1))
        elif len(w) > 1 or _CJK.search(w):
            out.append(w)
    return out


#: Keyword search (FTS5, tsquery) over a stored corpus: the classic English stop list. It differs
#: from STOPWORDS because it decides what a store *returns*: question frames such as "first",
#: "named" or "one" can be the rare words that find a passage in a large corpus, and changing the
#: list changes retrieval on every existing store.
SEARCH_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can did do does doing down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves""".split()
)


def search_terms(question: str, limit: int = 32) -> list[str]:
    """Distinct keyword-search terms of `question`, in order (at most `limit`): lower-cased `\\w+`
    runs of two characters or more, without SEARCH_STOPWORDS. Quotes, dashes or `OR` typed by a
    user never reach FTS5 or tsquery as operators."""
    found = re.findall(r"\w+", question.lower())
    return list(dict.fromkeys(w for w in found if len(w) > 1 and w not in SEARCH_STOPWORDS))[:limit]




def copy_key(text: str) -> str:
    """Text compared for exact copies: lower case, every run of non-word characters one space
    (the `\\w` runs joined by single spaces: every other character becomes a space at C speed,
    str.split cuts the runs; no `\\w` character is a space)."""
    return " ".join(text.lower().translate(_SPACE_W).split())


def copy_hash(text: str) -> str:
    """sha256 of `copy_key`: two passages with the same hash are copies of each other. ASCII text
    (most of it) is keyed as bytes: the same bytes `copy_key(text).encode()` gives, with one C
    translate instead of str.translate's table look-ups and no str made only to be encoded."""
    if text.isascii():
        return hashlib.sha256(_one_space(text.encode("ascii").lower().translate(_ASCII_SPACE_W))).hexdigest()
    return hashlib.sha256(_copy_key_utf8(text)).hexdigest()


_ASCII_BYTES = bytes(range(128))
_SPACES = re.compile(rb"  +")


def _one_space(b: bytes) -> bytes:
    """`b" ".join(b.split())` of bytes whose only space-like byte is the space: one regex pass
    instead of a bytes object per word."""
    return _SPACES.sub(b" ", b).strip(b" ")


def _copy_key_utf8(text: str) -> bytes:
    """`copy_key(text).encode()` of a text with non-ASCII characters, without str.translate (which
    looks every character up in a Python dict, ~90 ns each): the lower-cased text as UTF-8, its
    ASCII bytes mapped by one bytes.translate, then each distinct non-ASCII character that is no
    word character (a dash, a curly quote, a no-break space: a handful per text) replaced by a
    space (UTF-8 never encodes one character inside another's bytes), then runs of spaces as one:
    every space-like character is a plain space by then, as str.split would have cut there."""
    b = text.lower().encode("utf-8", "surrogatepass").translate(_ASCII_SPACE_W)
    for ch in set(b.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")):
        if _SPACE_W[ord(ch)] == 32:  # (a lone surrogate is no word character: it goes too)
            b = b.replace(ch.encode("utf-8", "surrogatepass"), b" ")
    return _one_space(b)


def copy_sketch(text: str) -> int:
    """A cheap necessary condition for two texts being copies: `hash` of the ASCII word characters
    of the lower-cased text, in order (`copy_key` less its spaces and its other characters). Texts
    with the same copy key have the same sketch; texts with the same sketch may still differ (a
    text without ASCII words has the empty one), and are compared by `copy_hash`
    (docket.features.copy_values). No regex pass and no sha256: a first sight reads it for every
    candidate of the pool (`copy_sketches`, a pool at once)."""
    return copy_sketches([text])[0]


#: the bytes a sketch drops: ASCII bytes that are no word character (`_SPACE_W` makes them
#: spaces) and every byte of a non-ASCII character (128-254; 255 is in no UTF-8 sequence)
_SKETCH_DROP = bytes(b for b in range(255) if b >= 128 or _ASCII_SPACE_W[b] == 32)
#: ASCII lower case as a bytes.translate table (bytes 128-255 as they are)
_ASCII_LOWER = bytes(range(256)).lower()
#: what separates texts laid side by side as UTF-8: no UTF-8 sequence holds this byte
_SEP = b"\xff"
#: the only non-ASCII characters str.lower turns into ASCII word characters (U+0130 -> "i" and a
#: combining dot, the Kelvin sign -> "k"), as UTF-8 (tests/test_first_sight_batch.py checks all)
_LOWERS_TO_ASCII = ("\u0130", "\u212a")
_LOWERS_TO_ASCII_UTF8 = tuple(ch.encode("utf-8") for ch in _LOWERS_TO_ASCII)


def copy_sketches(texts: Sequence[str]) -> list[int]:
    """`copy_sketch` of each text, the texts laid side by side as UTF-8 and read in one
    bytes.translate (ASCII lower case, every other byte but the separator dropped); ASCII lower
    case is str.lower's for every text but one holding a character of _LOWERS_TO_ASCII, which is
    lower-cased by str.lower first. tests/test_first_sight_batch.py checks it against the
    definition text by text."""
    if not texts:
        return []
    laid = _SEP.join([t.encode("utf-8", "surrogatepass") for t in texts])
    if any(map(laid.__contains__, _LOWERS_TO_ASCII_UTF8)):
        laid = _SEP.join([(t.lower() if any(map(t.__contains__, _LOWERS_TO_ASCII)) else t).encode("utf-8", "surrogatepass")
                          for t in texts])
    return list(map(hash, laid.translate(_ASCII_LOWER, _SKETCH_DROP).split(_SEP)))


def clean_typography(text: str) -> str:
    """NFKC, straight apostrophes, plain hyphens and spaces: how the citation checker reads both
    the answer and the passage, so "15 %" and a curly "’" do not hide a match."""
    t = unicodedata.normalize("NFKC", text)
    return t.replace("’", "'").replace("‘", "'").replace("–", "-").replace("—", "-").replace("\u00a0", " ")


# --- sentences ---------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def sentences(text: str) -> list[str]:
    """A passage's sentences for compression: a boundary is . ! or ? then space then a capital
    letter, digit or opening quote/bracket, so "e.g. this" and "3.5 days" stay whole."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


_STATEMENT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


def statement_sentences(text: str) -> list[str]:
    """A passage's statements for conflict detection: besides sentence ends, a semicolon, a CJK
    full stop and a line break end one (rules are often lists of clauses), whatever follows."""
    return [s.strip() for s in _STATEMENT.split(text) if s.strip()]


_LOOSE_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def loose_sentences(text: str) -> list[str]:
    """Split after every . ! or ? followed by space, whatever follows (pieces not stripped). For
    signals that only need roughly sentence-sized pieces: the answerability coverage and the
    judge's evidence focus."""
    return _LOOSE_SENTENCE.split(text)
