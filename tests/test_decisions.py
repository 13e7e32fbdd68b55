"""The assembler's decisions on recorded pools are unchanged: same passages, order, labels,
byte-identical prompts and traces (tests/fixtures/record_decisions.py records them).

A change that alters prompts on purpose re-records with that script and lists every intended
difference and its reason in the commit message.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_decisions", HERE / "fixtures" / "record_decisions.py")
assert _spec and _spec.loader
rd = importlib.util.module_from_spec(_spec)
sys.modules["record_decisions"] = rd
_spec.loader.exec_module(rd)

RERECORD = ".venv/bin/python tests/fixtures/record_decisions.py --set {set}"


def _check(which: str, data: Path) -> None:
    path = rd.fixture_path(which)
    assert path.exists(), f"{path} is missing; record it with {RERECORD.format(set=which)}"
    expected = rd.load(path)["cases"]
    actual = rd.record_all(which, data)
    problems = rd.diff(expected, actual)
    assert not problems, (f"{len(problems)} case(s) decide differently from {path.name} (if intended, re-record with "
                          f"{RERECORD.format(set=which)} and list the differences in the commit message):\n  "
                          + "\n  ".join(problems))


def test_decisions_unchanged_nimbus_hotpotqa_musique(shared_data: Path) -> None:
    _check("hash", shared_data)


@pytest.mark.slow
def test_decisions_unchanged_with_minilm(shared_data: Path) -> None:
    _check("minilm", shared_data)


def test_diff_names_the_field_that_changed() -> None:
    a = {"c1": {"found": True, "passages": [["x"]], "user": "1"}, "c2": {"found": False}}
    b = {"c1": {"found": True, "passages": [["y"]], "user": "2"}}
    problems = rd.diff(a, b)
    assert any(p.startswith("c1: differs in passages, user") and "'x'" in p for p in problems)
    assert any(p == "c2: case missing" for p in problems)
