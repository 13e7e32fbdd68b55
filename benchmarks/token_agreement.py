"""toktok-rs against tiktoken: the same count on every string docket has at hand, and the speed of each.

    .venv/bin/python benchmarks/token_agreement.py            # ../shared/data + tests/, ~1 min

docket counts with toktok-rs where it is installed (docket.tokens) and keeps tiktoken as the
reference. This reads every file under ../shared/data and tests/ (gzip too) and counts, with both
engines and both encodings (o200k_base, cl100k_base): each whole file, each line, every string
value and key of each JSON document or JSON line, and every distinct paragraph rendered as a
passage in each text format (the strings the packer counts). Counted as docket counts: a text
with a lone surrogate is counted with U+FFFD in its place. Prints one row per encoding (strings,
tokens, mismatches, seconds per engine) and exits 1 on any mismatch.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import DATA, OUT, ROOT, paragraphs  # noqa: E402

from docket.safeio import scrub  # noqa: E402
from docket.tokens import _engine_count  # noqa: E402


def _strings_of(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings_of(v)


def file_strings(root: Path) -> Iterator[str]:
    for f in sorted(root.rglob("*")):
        if not f.is_file() or "__pycache__" in f.parts:
            continue
        raw = f.read_bytes()
        if f.suffix == ".gz":
            raw = gzip.decompress(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        yield text
        if f.name.endswith((".json", ".json.gz")):
            try:
                yield from _strings_of(json.loads(text))
                continue
            except ValueError:
                pass
        for line in text.splitlines():
            yield line
            if line.startswith(("{", "[")):
                try:
                    yield from _strings_of(json.loads(line))
                except ValueError:
                    pass


def rendered_passages() -> Iterator[str]:
    from docket.brief import formats
    from docket.brief.render import render_passage
    from docket.model import Chunk, Passage
    from docket.policy import Policy

    policies = [Policy().updated(render={"format": name}).render for name in formats.text_formats()]
    for i, (title, text) in enumerate(paragraphs()):
        p = Passage.of_chunk(Chunk(id=f"c{i}", doc=f"d{i}", text=text, title=title), 0.5, i)
        for pol in policies:
            yield render_passage(p, "S12", pol).block


def counted(fn: Callable[[str], int], texts: list[str]) -> tuple[list[int], float]:
    out = []
    t0 = time.perf_counter()
    for t in texts:
        try:
            out.append(fn(t))
        except (TypeError, UnicodeEncodeError):  # as docket.tokens.O200kCounter counts it
            out.append(fn(scrub(t)))
    return out, time.perf_counter() - t0


def main() -> None:
    texts = list(dict.fromkeys([*file_strings(DATA), *file_strings(ROOT / "tests"), *rendered_passages()]))
    chars = sum(map(len, texts))
    rows = []
    for name in ("o200k_base", "cl100k_base"):
        _, fast = _engine_count(name, "toktok")
        _, ref = _engine_count(name, "tiktoken")
        want, t_ref = counted(ref, texts)
        got, t_fast = counted(fast, texts)
        bad = [i for i, (a, b) in enumerate(zip(want, got)) if a != b]
        rows.append({"encoding": name, "strings": len(texts), "chars": chars, "tokens": sum(want),
                     "mismatches": len(bad), "tiktoken_s": round(t_ref, 2), "toktok_s": round(t_fast, 2),
                     "examples": [texts[i][:200] for i in bad[:5]]})
    print("| encoding | strings | characters | tokens | mismatches | tiktoken s | toktok-rs s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['encoding']} | {r['strings']:,} | {r['chars']:,} | {r['tokens']:,} | {r['mismatches']} | "
              f"{r['tiktoken_s']} | {r['toktok_s']} | {r['tiktoken_s'] / max(r['toktok_s'], 1e-9):.1f}x |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "token_agreement.json").write_text(json.dumps(rows, indent=2, ensure_ascii=False))
    if any(r["mismatches"] for r in rows):
        for r in rows:
            for ex in r["examples"]:
                print(f"{r['encoding']} differs on: {ex!r}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
