"""The command line starts without its heavy libraries (issue 24 §11): `docket --help` and the
light commands import no numpy, onnxruntime, tiktoken, tokenizers, bs4 or html5lib (nor docket's own modules behind them),
so they start in a fraction of a second instead of ~3 s. A module check, not a timing: the
same run on a loaded machine would make a timed test flaky."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: pydantic is not on the list: typer 0.29 itself coerces option values through it (about 0.1 s)
HEAVY = ("numpy", "onnxruntime", "tiktoken", "tokenizers", "bs4", "html5lib", "scipy", "docket.assemble",
         "docket.ingest", "docket.api", "docket.store.sqlite", "docket.policy", "docket.model")
SRC = str(Path(__file__).resolve().parents[1] / "src")

PROBE = """
import runpy, sys, json
args, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["docket", *args]
try:
    runpy.run_module("docket", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))), file=sys.stderr)
"""


def _imported(args: list[str]) -> list[str]:
    heavy = HEAVY + (("rich",) if "--help" in args or not args else ())  # help prints plain text
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args), json.dumps(heavy)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": SRC})
    return json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"], ["index", "--help"], ["assemble", "--help"],
                                  ["eval", "--help"], ["serve", "--help"], ["keys", "--help"], ["presets"], []],
                         ids=lambda a: " ".join(a) or "no-args")
def test_help_imports_no_heavy_module(args: list[str]) -> None:
    assert _imported(args) == []


def test_python_m_docket_help_works_and_is_light() -> None:
    proc = subprocess.run([sys.executable, "-m", "docket", "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == 0 and "Usage" in proc.stdout, proc.stderr


def test_a_usage_error_is_light_too() -> None:
    assert _imported(["index", "--chunk-size", "x"]) == []


def test_import_docket_is_light_and_docket_assemble_is_the_function() -> None:
    code = ("import sys, docket; light = 'numpy' not in sys.modules; f = docket.assemble;"
            "import docket.assemble; print(light, callable(f), docket.assemble is f, 'numpy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.stdout.split() == ["True", "True", "True", "True"], proc.stderr


def test_the_spelt_out_set_formats_match_the_evaluation() -> None:
    from docket.cli.evaluate import SET_FORMATS
    from docket.eval.dataset import FORMATS

    assert SET_FORMATS == FORMATS
