"""What judging remapped codes costs the PDF walk (session 42): the hidden-text walk alone
(docket.ingest.pdf_hidden.strip_hidden_text over every page, no extraction), CPU seconds (the
process's, so a busy machine's other work counts less than in wall time), median of `--repeat`.

- 400 pages of 50 lines in DejaVu Sans embedded by reportlab (TrueType subsets with a /ToUnicode
  CMap): every code judged against the program's cmap and names.
- the same lines in Helvetica (no program) given a /ToUnicode CMap: judged by the encoding's names.
- the same lines in Helvetica without a CMap: nothing to judge (the walk as before).

Run it from one tree against another's code to compare (A/B):

    PYTHONPATH=/path/to/tree/src .venv/bin/python benchmarks/pdf_remap_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # office_files: the test suite's PDF makers
sys.path.insert(0, str(ROOT / "benchmarks"))


def _with_cmap(data: bytes) -> bytes:
    """`data` with each Helvetica font given a /ToUnicode CMap that reads WinAnsi codes as they are."""
    import pypdf
    from pypdf.generic import DecodedStreamObject, NameObject

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    lines = [f"<{c:02X}> <{ord(bytes([c]).decode('cp1252')):04X}>" for c in range(32, 127)]
    cmap = DecodedStreamObject()
    cmap.set_data(("begincmap 1 begincodespacerange <00> <FF> endcodespacerange "
                   f"{len(lines)} beginbfchar\n" + "\n".join(lines) + "\nendbfchar endcmap").encode())
    ref = writer._add_object(cmap)
    for page in writer.pages:
        for font in page["/Resources"]["/Font"].values():
            font.get_object()[NameObject("/ToUnicode")] = ref
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _walk(data: bytes) -> None:
    import pypdf

    from docket.ingest.pdf_hidden import DocumentFonts, strip_hidden_text

    reader = pypdf.PdfReader(io.BytesIO(data))
    fonts = DocumentFonts()
    for page in reader.pages:
        strip_hidden_text(page, reader, None, [], fonts=fonts)


def _cpu(fn: Any, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        runs.append(time.process_time() - t)
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pages", type=int, default=400)
    args = ap.parse_args()
    if args.repeat < 1 or args.pages < 1:
        ap.error("--repeat and --pages must be at least 1")

    from hidden_text_cost import _embedded_pdf
    from office_files import make_pdf

    import docket

    plain = make_pdf(["\n".join(f"line {i} of the page with some words in it" for i in range(50))] * args.pages)
    inputs = [("DejaVu Sans embedded, with a CMap", _embedded_pdf(args.pages, 50)),
              ("Helvetica with a /ToUnicode CMap", _with_cmap(plain)),
              ("Helvetica, no CMap", plain)]
    print(f"PDF walk alone, {args.pages} pages of 50 lines, CPU s, median of {args.repeat}; docket from "
          f"{Path(docket.__file__).parent}\n")
    print("| input | CPU s |")
    print("|---|---|")
    for name, data in inputs:
        print(f"| {name} | {_cpu(lambda d=data: _walk(d), args.repeat):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
