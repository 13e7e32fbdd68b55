"""Cut a document's text into chunks along its own structure.

Sections come from Markdown headings (HTML headings are turned into Markdown ones first);
inside a section, whole paragraphs are packed up to `size` tokens. A paragraph that alone
exceeds the size is cut at sentence ends, and a sentence that still exceeds it at word
boundaries. A chunk never spans two sections, so its `section` path is exact; consecutive chunks
of one section share up to `overlap` tokens of trailing text so a sentence cut at the boundary
still has its lead-in. Pure functions: text in, pieces out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docket.errors import InputError
from docket.tokens import TokenCounter

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
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
        m = None if in_fence else _HEADING.match(line)
        if m:
            flush_section()
            level, heading = len(m.group(1)), m.group(2).strip()
            path[:] = [(lv, h) for lv, h in path if lv < level]
            if not (level == 1 and heading.strip().lower() == title.strip().lower()):
                path.append((level, heading))
        elif not line.strip() and not in_fence:
            flush_para()
        else:
            para.append(line)
    flush_section()
    return out


def _split_long(text: str, counter: TokenCounter, size: int) -> list[str]:
    """Units of at most `size` tokens: the text itself, its sentences, or word windows."""
    if counter.count(text) <= size:
        return [text]
    units: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if counter.count(sentence) <= size:
            units.append(sentence)
            continue
        words, window = sentence.split(), []
        for word in words:
            window.append(word)
            if counter.count(" ".join(window)) > size:
                window.pop()
                if window:
                    units.append(" ".join(window))
                window = [word]
        if window:
            units.append(" ".join(window))
    return units


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


def chunk_text(text: str, counter: TokenCounter, size: ChunkSize | None = None, title: str = "") -> list[Piece]:
    """Pieces of at most `size.size` tokens (plus the carried overlap), in document order."""
    size = size or ChunkSize()
    body = size.size - size.overlap  # room for new text once the overlap is carried in
    pieces: list[Piece] = []
    for section, paragraphs in sections(text, title):
        units = [u for p in paragraphs for u in _split_long(p, counter, body)]
        current: list[str] = []
        used = 0
        for unit in units:
            n = counter.count(unit)
            if current and used + n > size.size:
                chunk = "\n\n".join(current)
                pieces.append(Piece(section, chunk))
                carry = _tail(chunk, counter, size.overlap)
                current, used = ([carry], counter.count(carry)) if carry else ([], 0)
            current.append(unit)
            used += n
        if current:
            pieces.append(Piece(section, "\n\n".join(current)))
    return pieces
