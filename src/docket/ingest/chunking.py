"""Cut a document's text into chunks along its own structure.

Sections come from Markdown headings (HTML headings are turned into Markdown ones first);
inside a section, whole paragraphs are packed up to `size` tokens. A paragraph that alone
exceeds the size is cut at sentence ends, and a sentence that still exceeds it at word
boundaries; a word longer than the size on its own is cut between characters. Fenced code is
cut between lines instead, so its newlines and indentation survive. A chunk never spans two
sections, so its `section` path is exact; consecutive chunks of one section share up to
`overlap` tokens of trailing text so a sentence cut at the boundary still has its lead-in.

Linear in the text: a window of words grows by each word's own count (the tokenizers split at
spaces, so the counts add up) and only the finished window is counted whole, to confirm it; the
rare window where the sum and the real count disagree is settled by a search with real counts.
Pure functions: text in, pieces out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from docket.errors import InputError
from docket.tokens import TokenCounter

_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class Piece:
    section: str
    text: str


@dataclass(frozen=True)
class ChunkSize:
    size: int = 300
    overlap: int = 40

    def __post_init__(self) -> None:
        if self.size < 16:
            raise InputError(f"must be at least 16 tokens, got {self.size}", field="chunk_size")
        if not 0 <= self.overlap < self.size // 2:
            raise InputError(f"must be between 0 and half the chunk size, got {self.overlap}", field="overlap")


@dataclass(frozen=True)
class _Unit:
    """A piece of a paragraph packed into chunks: `glue` goes before it when it follows another
    unit in the same chunk ("\\n" inside a code block, a paragraph break otherwise)."""

    text: str
    code: bool = False
    glue: str = "\n\n"


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (`## Title ##`), or None.

    Written out rather than as the regex `^(#{1,6})\\s+(.+?)\\s*#*\\s*$`, which it matches exactly:
    that pattern backtracks cubically on a line of many spaces (4,000 took minutes)."""
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or len(line) < level + 2 or not line[level].isspace():
        return None
    rest = line[level:].lstrip()
    if not rest:  # only spaces after the marks: a heading with no text
        return level, ""
    body = rest.rstrip().rstrip("#").rstrip()  # a closing run of '#' is not part of the text
    return level, rest[: max(len(body), 1)].strip()


def sections(text: str, title: str = "") -> list[tuple[str, list[str]]]:
    """(section path, paragraphs) in document order. A level-1 heading equal to the title is
    not repeated in the path. Headings inside fenced code blocks are text, not structure."""
    out: list[tuple[str, list[str]]] = []
    path: list[tuple[int, str]] = []
    para: list[str] = []
    paras: list[str] = []
    in_fence = False

    def flush_para() -> None:
        if para:
            joined = "\n".join(para).strip()
            if joined:
                paras.append(joined)
            para.clear()

    def flush_section() -> None:
        flush_para()
        if paras:
            name = " > ".join(h for _, h in path)
            out.append((name, list(paras)))
            paras.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            para.append(line)
            continue
        m = None if in_fence else heading(line)
        if m:
            flush_section()
            level, name = m
            path[:] = [(lv, h) for lv, h in path if lv < level]
            if not (level == 1 and name.strip().lower() == title.strip().lower()):
                path.append((level, name))
        elif not line.strip() and not in_fence:
            flush_para()
        else:
            para.append(line)
    flush_section()
    return out


# --- cutting one paragraph ------------------------------------------------------------------------


def _cut_chars(text: str, counter: TokenCounter, size: int) -> list[str]:
    """`text` (one word, or one line of code) in runs of characters of at most `size` tokens.

    Only a run of about `4 * size` characters is ever counted (a token is at least one UTF-8
    byte, so `size // 4` characters always fit); a run over the size shrinks in proportion."""
    out: list[str] = []
    at, n = 0, len(text)
    while at < n:
        length = min(n - at, size * 4)
        while length > 1:
            used = counter.count(text[at : at + length])
            if used <= size:
                break
            length = max(1, min(length - 1, length * size // used))
        out.append(text[at : at + length])
        at += length
    return out


def _windows(parts: Sequence[str], sep: str, counter: TokenCounter, size: int,
             oversized: Callable[[str], list[str]]) -> list[str]:
    """`parts` joined by `sep` in greedy windows of at most `size` tokens: each window is the
    longest run from where the last one ended that fits; a part too big alone is `oversized`.

    The window grows by each part's own count with `sep` in front (tokenizers split at spaces
    and newlines, so these add up to the window's count); the window is then counted whole, and
    when the sum was wrong the end is found by galloping and bisecting on real counts. Every
    count is of one part or of about one window, so the work is linear in the text."""
    steps = [counter.count(sep + p) for p in parts]

    def fits(i: int, j: int) -> bool:
        return counter.count(sep.join(parts[i:j])) <= size

    out: list[str] = []
    i, n = 0, len(parts)
    while i < n:
        if counter.count(parts[i]) > size:
            out.extend(oversized(parts[i]))
            i += 1
            continue
        est, j = counter.count(parts[i]), i + 1
        while j < n and est + steps[j] <= size:
            est += steps[j]
            j += 1
        if not fits(i, j):  # the sum was too low: back off to the longest window that fits
            lo, hi = i + 1, j - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(i, mid) else (lo, mid - 1)
            j = lo
        elif j < n and fits(i, j + 1):  # the sum was too high: gallop on, then bisect
            lo, step = j + 1, 2
            while lo < n and fits(i, min(lo + step, n)):
                lo = min(lo + step, n)
                step *= 2
            hi = min(lo + step, n) - 1 if lo < n else n
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(i, mid) else (lo, mid - 1)
            j = lo
        out.append(sep.join(parts[i:j]))
        i = j
    return out


def _prose(text: str, counter: TokenCounter, size: int) -> list[str]:
    """Units of at most `size` tokens: the text itself, its sentences, or word windows."""
    if counter.count(text) <= size:
        return [text]
    units: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if counter.count(sentence) <= size:
            units.append(sentence)
        else:
            units.extend(_windows(sentence.split(), " ", counter, size, lambda w: _cut_chars(w, counter, size)))
    return units


def _code(lines: list[str], counter: TokenCounter, size: int) -> list[str]:
    """A fenced block cut between lines (each cut keeps its lines byte for byte)."""
    return _windows(lines, "\n", counter, size, lambda line: _cut_chars(line, counter, size))


def _blocks(text: str) -> list[tuple[bool, list[str]]]:
    """A paragraph's lines as runs of prose and fenced code (the fence lines with the code)."""
    out: list[tuple[bool, list[str]]] = []
    in_fence = False
    for line in text.split("\n"):
        fence = bool(_FENCE.match(line))
        code = in_fence or fence
        if not out or out[-1][0] != code or (fence and not in_fence and out[-1][0]):
            out.append((code, []))
        out[-1][1].append(line)
        if fence:
            in_fence = not in_fence
    return out


def _split_long(text: str, counter: TokenCounter, size: int) -> list[_Unit]:
    """The paragraph as units of at most `size` tokens (a word or code line too long on its own is
    cut between characters). Fenced code inside is cut between lines, never joined with spaces."""
    if counter.count(text) <= size:
        return [_Unit(text, code=_has_fence(text))]
    if not _has_fence(text):
        return [_Unit(u) for u in _prose(text, counter, size)]
    units: list[_Unit] = []
    for code, lines in _blocks(text):
        if code:
            pieces = _code(lines, counter, size)
        else:
            pieces = _prose("\n".join(lines), counter, size)
        for k, piece in enumerate(pieces):
            joined = code or (k == 0 and bool(units) and units[-1].code)  # lines of one paragraph
            units.append(_Unit(piece, code=code, glue="\n" if units and joined else "\n\n"))
    return units


def _has_fence(text: str) -> bool:
    return ("```" in text or "~~~" in text) and any(_FENCE.match(line) for line in text.split("\n"))


def _tail(text: str, counter: TokenCounter, overlap: int) -> str:
    """The last words of `text` that fit in `overlap` tokens (whole words only)."""
    if overlap <= 0:
        return ""
    words = text.split()
    taken: list[str] = []
    for word in reversed(words):
        taken.insert(0, word)
        if counter.count(" ".join(taken)) > overlap:
            taken.pop(0)
            break
    return " ".join(taken) if len(taken) < len(words) else ""


def _tail_lines(text: str, counter: TokenCounter, overlap: int) -> str:
    """The last whole lines of `text` that fit in `overlap` tokens (code keeps its layout)."""
    if overlap <= 0:
        return ""
    lines = text.split("\n")
    k = len(lines)
    while k > 0 and counter.count("\n".join(lines[k - 1 :])) <= overlap:
        k -= 1
    return "\n".join(lines[k:]) if 0 < k < len(lines) else ""


def chunk_text(text: str, counter: TokenCounter, size: ChunkSize | None = None, title: str = "") -> list[Piece]:
    """Pieces of at most `size.size` tokens (plus the carried overlap), in document order."""
    size = size or ChunkSize()
    body = size.size - size.overlap  # room for new text once the overlap is carried in
    pieces: list[Piece] = []
    for section, paragraphs in sections(text, title):
        units = [u for p in paragraphs for u in _split_long(p, counter, body)]
        current: list[_Unit] = []
        used = 0
        for unit in units:
            n = counter.count(unit.text)
            if current and used + n > size.size:
                chunk = _joined(current)
                pieces.append(Piece(section, chunk))
                tail = _tail_lines if current[-1].code else _tail
                carry = tail(chunk, counter, size.overlap)
                current, used = ([_Unit(carry, code=current[-1].code)], counter.count(carry)) if carry else ([], 0)
            current.append(unit)
            used += n
        if current:
            pieces.append(Piece(section, _joined(current)))
    return pieces


def _joined(units: list[_Unit]) -> str:
    return "".join((u.glue if i else "") + u.text for i, u in enumerate(units))
