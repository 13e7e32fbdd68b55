"""Split an answer into sentences, find their [S#] citations, and tell claims from the rest.

The checker works per sentence because the brief asks for a citation on every factual sentence.
Models write Markdown, so lines (headings, bullets) are split first, then sentences inside a
line; a citation the model put after the full stop ("... days. [S1]") belongs to the sentence
before it. Not every sentence is a claim: headings, greetings, questions, very short
connectives and the literal refusal sentence need no citation, and flagging them would train
users to ignore the report.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from docket.checks.facts import _numbers

# [S1]  [S1, S2]  [S1][S2]  [S1; S2]  [S1-S3]  [s1]  [S 1]
CITATION = re.compile(r"\[\s*(S\s?\d+(?:\s*(?:[,;]|–|-|and)\s*S?\s?\d+)*)\s*\]", re.I)
# forms models write although the brief asks for [S1]: "(S2)", "【S3】", "the document labeled S2"
_LOOSE = re.compile(
    r"[(【]\s*(S\s?\d+(?:\s*(?:[,;]|–|-|and)\s*S?\s?\d+)*)\s*[)】]"
    r"|\b(?:document|source|passage)s?\s+(?:labell?ed\s+|marked\s+|)\(?(S\d+(?:\s*(?:,|and)\s*S\d+)*)\b",
    re.I,
)

# Citation marks as models and renderers vary them, read as the brief's [S1] before anything else:
# any bracket pair (fullwidth, CJK, math), a look-alike S (Cyrillic, fullwidth), any decimal
# digits, separators "," ";" "/" "&" "|" "+" "and" "to" or a dash, a lead word ("Sources:",
# "see"), a footnote caret ("[^S1]") or <sup>; invisible format characters are removed first.
_OPEN = "[\\[(［【〔〖〘〚⟦〈⟨「『（{｛]"
_CLOSE = "[\\])］】〕〗〙〛⟧〉⟩」』）}｝]"
_S = "[SsЅѕＳｓ]"
_LABEL_SEP = r"\s*(?:[,;/&|+，；、]|–|—|-|~|\bto\b|\band\b)\s*"
_LEAD = r"(?:(?:sources?|refs?|references?|citations?|see|cf\.?|via)\s*[:：]?\s*)?"
_BODY = _S + r"\s?\d+(?:" + _LABEL_SEP + _S + r"?\s?\d+)*"
_MARK = re.compile(r"(?:" + _OPEN + r"\s*\^?\s*" + _LEAD + r"(?P<a>" + _BODY + r")\s*" + _CLOSE
                   + r"|<sup>\s*" + _OPEN + r"?\s*" + _LEAD + r"(?P<c>" + _BODY + r")\s*" + _CLOSE + r"?\s*</sup>)", re.I)
_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
# "[1]: S2", "[^1]: S2, S3": a footnote whose body is only labels; "[1]" / "[^1]" then cite them
_FOOTNOTE_DEF = re.compile(r"^\s{0,3}\[\^?(?P<key>[^\]\s]{1,20})\]:\s*(?P<body>.*?)\s*$")


def _numbers_of(body: str) -> list[int]:
    nums = [int(n) for n in re.findall(r"\d+", body)]
    if len(nums) == 2 and re.search(r"\d\s*(?:–|—|-|~|\bto\b)\s*\S?\s?\d", body, re.I) and nums[0] < nums[1] <= nums[0] + 50:
        nums = list(range(nums[0], nums[1] + 1))
    return nums


def canonical_citations(text: str) -> str:
    """`text` with invisible format characters removed and every citation mark written as the
    brief asks ("【Ｓ１，S2】", "(Sources: S1)", "[S1 & S3]" -> "[S1, S2]" ...): what a reader sees
    as a citation, the checker then reads as one (an unknown label in any form is caught)."""
    text = _INVISIBLE.sub("", text)

    def mark(m: re.Match[str]) -> str:
        body = m.group("a") or m.group("c")
        return "[" + ", ".join(f"S{n}" for n in _numbers_of(body)) + "]"

    return _MARK.sub(mark, text)


ABBREVIATIONS = {
    "e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "ms.", "dr.", "st.", "no.", "approx.", "inc.", "ltd.", "co.", "corp.",
    "jr.", "sr.", "u.s.", "u.k.", "a.m.", "p.m.", "fig.", "sec.", "art.", "para.", "cf.", "al.", "ca.", "jan.", "feb.",
    "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.", "min.", "max.",
}

# end of sentence: punctuation, closing quotes/brackets, citations written after the stop, space
_BOUNDARY = re.compile(r"(?:(?P<punct>[.!?]+)[\"')”’]*(?:\s*\[\s*S\s?\d+[^\]]{0,40}\])*\s+"
                       r"|(?P<cjk>[。！？]+)[」』）\"')”’]*(?:\s*\[\s*S\s?\d+[^\]]{0,40}\])*\s*)", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+.*|\*\*[^*]+\*\*:?|__[^_]+__:?)\s*$")
_FILLER = re.compile(
    r"^(?:hi|hello|hey|sure|certainly|of course|absolutely|thanks|thank you|great question|good question|"
    r"i hope (?:this|that) helps|hope (?:this|that) helps|let me know|feel free|happy to help|glad to help|"
    r"here(?: is|'s| are)|in summary|to summari[sz]e|in short|answer|summary|sources|references|citations)\b",
    re.I,
)


def labels_in(text: str) -> list[str]:
    """Every label cited in `text`, in order, without repeats ([S1-S3] expands to S1, S2, S3).

    Besides the [S1] forms the brief asks for, "(S1)", "【S1】" and "the document labeled S1" count:
    small models write them, and an unknown label in any form must not slip through.
    """
    out: list[str] = []
    text = canonical_citations(text)
    found = [(m.start(), m.group(1)) for m in CITATION.finditer(text)]
    found += [(m.start(), m.group(1) or m.group(2)) for m in _LOOSE.finditer(text)]
    for _, body in sorted(found):
        for n in _numbers_of(body):
            lab = f"S{n}"
            if lab not in out:
                out.append(lab)
    return out


_LOOSE_MARK = re.compile(r"[(【]\s*S\s?\d+(?:\s*(?:[,;]|–|-|and)\s*S?\s?\d+)*\s*[)】]", re.I)


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", _LOOSE_MARK.sub("", CITATION.sub("", text))).strip()


def normalize(text: str) -> str:
    """Lower-case, NFKC, straight quotes, no punctuation: for comparing sentences."""
    t = unicodedata.normalize("NFKC", text).lower().replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    t = re.sub(r"[^\w\s']", " ", t)
    return " ".join(t.split())


@dataclass
class Sentence:
    text: str  # as written, citations included
    labels: list[str] = field(default_factory=list)
    kind: str = "claim"  # claim | refusal | heading | filler | question | short | code

    @property
    def claim(self) -> str:
        """The sentence without its citation markers and list/heading markup."""
        t = strip_citations(self.text)
        t = _BULLET.sub("", t)
        return t.strip().strip("*_").strip()

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "labels": self.labels, "kind": self.kind}


def _split_line(line: str) -> list[str]:
    pieces: list[str] = []
    pos = 0
    for m in _BOUNDARY.finditer(line):
        if m.group("cjk") is None:  # a CJK stop ends a sentence whatever follows
            before = line[pos : m.end("punct")]
            last_word = before.split()[-1].lower() if before.split() else ""
            nxt = line[m.end() : m.end() + 1]
            if last_word in ABBREVIATIONS or re.fullmatch(r"(?:[a-z]\.){1,3}", last_word) or (nxt and nxt.islower()):
                continue
        elif m.end() >= len(line):
            break
        pieces.append(line[pos : m.end()].strip())
        pos = m.end()
    pieces.append(line[pos:].strip())
    pieces = [p for p in pieces if p]
    # a citation written after the full stop belongs to the sentence before it
    merged: list[str] = []
    for p in pieces:
        lead = re.match(r"^((?:\s*" + CITATION.pattern + r")+)\s*", p, re.I)
        if lead and merged:
            merged[-1] = merged[-1] + " " + lead.group(1).strip()
            p = p[lead.end() :].strip()
            if not p:
                continue
        merged.append(p)
    return merged


def classify(sentence: str, refusal: str) -> str:
    if refusal and normalize(refusal) and normalize(refusal) in normalize(sentence):
        return "refusal"
    raw = sentence.strip()
    if _HEADING.match(raw):
        return "heading"
    bare = strip_citations(_BULLET.sub("", raw)).strip().strip("*_ ")
    words = re.findall(r"[\w'%$€£]+", bare)
    # a number is a number in words too ("In summary, refunds take ninety days.")
    has_digit = any(ch.isdigit() for ch in bare) or bool(_numbers(bare, words="strict"))
    if not words:
        return "short"
    if bare.endswith(":") and len(words) <= 12 and not labels_in(raw):
        return "heading"
    if bare.endswith("?"):
        return "question"
    if _FILLER.match(bare) and len(words) <= 12 and not has_digit:
        return "filler"
    if len(words) < 4 and not has_digit and not labels_in(raw):
        return "short"
    return "claim"


_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_LINES = re.compile(r"\r\n|\r|\n")


def refusal_parts(piece: str, refusal: str) -> list[tuple[str, bool]]:
    """`piece` cut around the refusal sentence it holds: [(text, is_refusal)]. A claim written on
    the refusal's line ("I do not know from the provided sources; refunds take 90 days.") is a
    sentence of its own, not part of the refusal."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", refusal).lower())
    if not words:
        return [(piece, False)]
    text = unicodedata.normalize("NFKC", piece)
    m = re.search(r"\b" + r"\W*".join(re.escape(w) for w in words) + r"\b[\W]*", text, re.I)
    if m is None:
        return [(piece, True)]  # found by the looser comparison: the whole piece, as before
    parts = [(text[: m.start()].strip(), False), (text[m.start() : m.end()].strip(), True), (text[m.end() :].strip(), False)]
    return [(t, r) for t, r in parts if r or re.search(r"\w", t)]


def split_sentences(answer: str, refusal: str = "") -> list[Sentence]:
    """The answer's sentences in order, each with its cited labels and its kind.

    Lines end where CommonMark ends them (\\n, \\r\\n or a lone \\r); a fenced code block
    opens at a fence of three or more backticks or tildes indented at most three spaces (a backtick
    fence's info string holds no backtick) and closes at a like fence at least as long, or runs to
    the end. Citation marks are read in every form `canonical_citations` knows, footnote
    citations ("... [1]" with "[1]: S2" below) as the labels their footnote lists."""
    out: list[Sentence] = []
    fence = ""
    lines = _LINES.split(canonical_citations(answer))
    notes: dict[str, list[str]] = {}
    footnotes: list[Sentence] = []
    for i, line in enumerate(lines):
        m = _FOOTNOTE_DEF.match(line)
        body = re.sub(r"^" + _LEAD, "", m.group("body"), flags=re.I) if m else ""
        if m and re.fullmatch(r"\[?\s*" + _BODY + r"\s*\]?\.?", body, re.I):
            notes[m.group("key")] = [f"S{n}" for n in _numbers_of(body)]
            footnotes.append(Sentence(line.strip(), notes[m.group("key")], "footnote"))
            lines[i] = ""
    if notes:
        ref = re.compile(r"\[\^?(" + "|".join(re.escape(k) for k in sorted(notes, key=len, reverse=True)) + r")\](?![:(\[])")
        lines = [ref.sub(lambda m: "[" + ", ".join(notes[m.group(1)]) + "]", ln) for ln in lines]
    for line in lines:
        fm = _FENCE.match(line)
        if fence:
            if fm and fm.group("fence")[0] == fence[0] and len(fm.group("fence")) >= len(fence) and not fm.group("info").strip():
                fence = ""
            elif line.strip():
                out.append(Sentence(line.strip(), labels_in(line), "code"))
            continue
        if fm and not (fm.group("fence")[0] == "`" and "`" in fm.group("info")):
            fence = fm.group("fence")
            continue
        if not line.strip():
            continue
        pieces = _split_line(line)
        if out and pieces and not strip_citations(pieces[0]).strip() and labels_in(pieces[0]):
            # a line that is only citations belongs to the sentence above it
            prev = out[-1]
            prev.text += " " + pieces[0]
            prev.labels += [lab for lab in labels_in(pieces[0]) if lab not in prev.labels]
            pieces = pieces[1:]
        for p in pieces:
            parts = [(p, False)]
            if refusal and normalize(refusal) and normalize(refusal) in normalize(p):
                parts = refusal_parts(p, refusal)
            for text, is_refusal in parts:
                labels = labels_in(text)
                kind = "refusal" if is_refusal else classify(text, "")
                if labels and kind in ("short", "filler", "question", "heading"):
                    kind = "claim"  # it cites a passage, so it claims something the passage must hold
                out.append(Sentence(text, labels, kind))
    return out + footnotes
