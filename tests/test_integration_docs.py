"""The integration pages' examples run as written and print what the pages say they print.

Every ```python block of a page runs, in order, in one namespace; a `# ...` line at the start of a
line right after a print (or after another such line) is output the block must print."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations"
PAGES = {"index.md": "langchain_core", "langchain.md": "langchain_classic", "llamaindex.md": "llama_index.core",
         "haystack.md": "haystack"}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def expected_output(code: str) -> list[str]:
    out: list[str] = []
    after_print = False
    for line in code.splitlines():
        if line.startswith("# ") and after_print:
            out.append(line[2:])
            continue
        after_print = "print(" in line
    return out


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_examples_run_and_print_what_they_say(page):
    pytest.importorskip(PAGES[page])
    blocks = BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no python example"
    namespace: dict = {"__name__": f"docs_{page.removesuffix('.md')}"}
    for n, code in enumerate(blocks, 1):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, f"{page} block {n}", "exec"), namespace)  # noqa: S102
        lines = [ln.rstrip() for ln in printed.getvalue().splitlines()]
        for want in expected_output(code):
            assert want in lines, f"{page} block {n}: expected {want!r} in the output:\n{printed.getvalue()}"


def test_readme_links_every_integration_page():
    readme = (DOCS.parents[1] / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"docs/integrations/{page}" in readme
