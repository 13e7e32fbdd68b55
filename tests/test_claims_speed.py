"""The faster claims extraction (issue 21) gives what the plain definitions give: each shortcut
checked against the code it replaced (kept here as the reference) on generated text full of the
cases the shortcuts reason about: apostrophes, parentheses, hedges, "non-", dates, CJK stops."""

from __future__ import annotations

import re

import claims_reference as R
from hypothesis import given, settings
from hypothesis import strategies as st

from docket import claims as C
from docket.claims import quantities as Q
from docket.claims import words as W

_OLD_SENT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_OLD_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:['’][^\W\d_]+)?|[%€$£]|[,;:()]|[-–—]", re.UNICODE)


def old_negated(folded: str) -> bool:
    bare = W._HEDGES.sub(" ", W._PARENS.sub(" ", folded))
    if any(w.endswith(("able", "ible")) or w in W._NON_PREDICATES for w in re.findall(r"\bnon-(\w+)", bare)):
        return True
    bare = re.sub(r"\bnon-", " ", bare)
    return any(t in C.NEGATIONS for t in _OLD_TOKEN.findall(bare)) or bool(re.search(r"n't\b|\bn'", bare))


def old_names(raw: str) -> frozenset[str]:
    toks = re.findall(r"[^\W\d_]+", raw)
    found = {C.fold(t) for k, t in enumerate(toks) if k > 0 and t[0].isupper() and len(t) > 1 and not t.isupper()}
    found |= {C.fold(t) for t in toks if t.isupper() and len(t) > 1}
    return frozenset(w for w in found if w not in W._MONTHS and w not in W._NOT_NAMES)


def old_words(tokens: list[str], used: set[int]) -> set[str]:
    words: set[str] = set()
    for k, t in enumerate(tokens):
        if k in used or t in C.STOP or t in C.NEGATIONS or not t[0].isalpha() or (len(t) < 2 and not W._CJK.match(t)):
            continue
        if W._CJK.search(t):
            words.update(t[m : m + 2] for m in range(max(1, len(t) - 1)))
            continue
        words.add(W._stem(t.removeprefix("non-")))
    return words


_PIECES = ["x'not", "not", "only", "only'no", "no", "'", "’", "(", ")", "(a)", "non-", "non-refundable", "non-album",
           "if not", "nicht", "nur", "pas", "toujours", "can't", "won't", "n'", "isn't", "never", "Paris", "NASA",
           "The", "Müller", "ÉCOLE", "october", "21", "1992", ",", "1,200", "20.4", "2 1/2", "3⁄4", "16th", "twenty",
           "five", "-", "twice", "EUR", "€", "days", "it", "was", "refunds", "are", "。", "；", "中文", "日本", ".", ";",
           "!", "\n", "Monday", "May", "a", "b'c", "ﬁne", "Σ", "²", "_x", "l'", "l'eau", "d'Arc", "O'Neil"]
_TEXT = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=20).flatmap(
    lambda ps: st.lists(st.sampled_from(["", " ", "  "]), min_size=len(ps), max_size=len(ps)).map(
        lambda gaps: "".join(p + g for p, g in zip(ps, gaps))))


@settings(max_examples=1500, deadline=None)
@given(_TEXT)
def test_negation_names_and_words_match_the_plain_definitions(text: str) -> None:
    folded = C.fold(text).replace("’", "'")
    tokens = W._TOKEN.findall(folded)
    assert tokens == _OLD_TOKEN.findall(folded)
    assert W._negated(folded, tokens) == old_negated(folded)
    assert W._names(text) == old_names(text)
    # each claim's words are the old loop's over its sentence's tokens
    for c in C.claims(text):
        f = C.fold(c.text).replace("’", "'")
        if W._DIGIT.search(f):
            f = W._ORDINAL.sub(" ", f)
            f = W._FRACTION.sub(W._fraction, f)
        toks = W._TOKEN.findall(f)
        assert c.words == frozenset(old_words(toks, Q._quantities(toks)[1]))


@settings(max_examples=1000, deadline=None)
@given(_TEXT)
def test_sentence_split_without_cjk_stops_is_the_same(text: str) -> None:
    split = R._SENT.split if any(s in text for s in R._CJK_STOPS) else R._SENT_LATIN.split
    assert split(text) == _OLD_SENT.split(text)


@given(st.one_of(st.sampled_from(_PIECES), st.text(min_size=1, max_size=6)))
def test_quantities_start_only_at_the_tokens_they_look_at(tok: str) -> None:
    """`_quantities` skips a token that is not in _OPENS and does not start with a digit: no
    quantity can start there (no date, no multiplier, no number)."""
    if tok in Q._OPENS or tok[0].isdigit():
        return
    tokens = [tok, "october", "1992", "days", ","]
    assert Q._date_at(tokens, 0) is None
    assert tok not in Q._MULT
    assert Q._number(tok) is None


def claims_reference(text: str) -> list[C.Claim]:
    """`claims` as it was before its words were read per distinct token (issue 21): one pass over
    every token, each tested and stemmed where it stands."""
    from docket.claims.extract import Claim

    out = []
    subj = W.subject(text)
    split = R._SENT.split if any(stop in text for stop in R._CJK_STOPS) else R._SENT_LATIN.split
    for sent in split(text):
        sent = sent.strip()
        if not sent:
            continue
        folded = W.fold(sent).replace("’", "'")
        if W._DIGIT.search(folded):
            folded = W._ORDINAL.sub(" ", folded)
            if "/" in folded or "⁄" in folded:
                folded = W._FRACTION.sub(W._fraction, folded)
        tokens = W._TOKEN.findall(folded)
        qs, used = Q._quantities(tokens)
        negated = W._negated(folded, tokens)
        words: set[str] = set()
        for k, t in enumerate(tokens):
            if k in used or t in W._NOT_CONTENT or not t[0].isalpha():
                continue
            if t.isascii():
                if len(t) > 1:
                    words.add(W._stem(t))
                continue
            if len(t) < 2 and not W._CJK.match(t):
                continue
            if W._CJK.search(t):
                words.update(t[m : m + 2] for m in range(max(1, len(t) - 1)))
                continue
            words.add(W._stem(t.removeprefix("non-")))
        if len(words) >= 2 or (qs and words):
            anaphoric = not W._PRONOUNS.isdisjoint(tokens[:8])
            out.append(Claim(frozenset(words), W._names(sent) | W._row_key(sent), tuple(qs), negated, sent, subj, anaphoric))
    return out


#: whole passages: several sentences of the pieces above, repeated words, numbers a quantity uses
#: next to the same word elsewhere ("20 days ... days"), CJK runs, tabs and no-break spaces
_PASSAGE = st.lists(st.one_of(_TEXT, st.text(max_size=40)), min_size=1, max_size=6).map(
    lambda parts: ". ".join(parts) + " 20 days, days\tday\u00a0Days 中文字 Paris.")


@settings(max_examples=800, deadline=None)
@given(st.one_of(_PASSAGE, _TEXT, st.text(max_size=200)))
def test_claims_equal_the_token_by_token_reference(text: str) -> None:
    assert C.claims(text) == claims_reference(text)


def subject_reference(text: str) -> frozenset[str]:
    """`subject` as it was before it read the head's tokens lazily (issue 21): every token of the
    first 160 characters matched first, each name folded twice."""
    head = text.strip()[:160]
    toks = list(W._HEAD_TOKEN.finditer(head))
    run: list[str] = []
    end = 0
    for m in toks:
        t = m.group(0)
        if not run and t.lower() in ("the", "a", "an"):
            continue
        if t in ('"', "“", "”", "'", "&") or (t[:1].isupper() and t.isalpha()):
            if t.isalpha():
                run.append(t)
            end = m.end()
            continue
        break
    names = [W.fold(t) for t in run if W.fold(t) not in W._HONORIFICS]
    if not names:
        return frozenset()
    rest = W._PARENS.sub(" ", head[end:])
    if len(run) >= 2 or W._DEFINES.match(rest):
        return frozenset(names)
    return frozenset()


_OPENINGS = ["The", "A", "an", "Sir", "Dame", "Matt", "Busby", "Nirvana", "Wangcun", "Pearl", "Jam", '"', "“", "”", "'",
             "&", "Baby", "Müller", "ÉCOLE", "Σ", "()", "(born 1950)", "is", "was", "are", "a", "an", "the", "one",
             "town", "band", "Annual", "plans", "\u00a0", "\t", "\n", " ", "  ", ",", ".", "1945", "İstanbul", "中文"]


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(_OPENINGS), max_size=30).map(" ".join),
                 st.lists(st.sampled_from(_OPENINGS), max_size=60).map("".join), st.text(max_size=200)))
def test_subject_equals_the_eager_reference(text: str) -> None:
    assert W.subject(text) == subject_reference(text)


def test_subject_examples() -> None:
    assert W.subject("Sir Matt Busby was a manager.") == {"matt", "busby"}
    assert W.subject("Wangcun () is a town in China.") == {"wangcun"}
    assert W.subject("Annual plans cost more.") == frozenset()


_NO_DIGIT_PIECES = [p for p in _PIECES if not any(ch.isdigit() for ch in p)] + ["twentieth", "halfway", "May"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(_NO_DIGIT_PIECES), max_size=25).map(" ".join))
def test_a_sentence_without_digits_number_or_month_words_has_no_quantity(text: str) -> None:
    """What claims skips `_quantities` on: ASCII tokens, no digit, no token that opens a quantity
    but commas. Then there is none to find."""
    folded = C.fold(text)
    tokens = W._TOKEN.findall(folded)
    if folded.isascii() and not W._DIGIT.search(folded) and (Q._OPENS - {","}).isdisjoint(tokens):
        assert Q._quantities(tokens) == ([], set())
