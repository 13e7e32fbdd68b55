"""`docket eval` reports the not-found gate's cost next to its gain, per budget."""

from __future__ import annotations

import json

import pytest
from test_eval_cli import write_set
from typer.testing import CliRunner

from docket.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKET_EVAL_CACHE", str(tmp_path / "cache"))


def test_eval_reports_false_not_found_and_gold_with_and_without_the_gate(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    strict = tmp_path / "strict.toml"  # a floor no hash cosine reaches: every question refused
    strict.write_text('[answerable]\nfloor = 0.99\nembedder = "hash-bow"\n')
    r = runner.invoke(app, ["eval", str(s), "--budgets", "300", "--embedder", "hash", "--policy", str(strict), "--json"])
    assert r.exit_code == 0, r.output
    b = json.loads(r.stdout)["budgets"]["300"]
    assert b["false_not_found"] == 1.0 and b["gold_in_prompt"] == 0.0 and b["gold_in_prompt_ungated"] == 1.0
    # the hash embedder without calibration: no gate, so nothing is refused and nothing lost
    r = runner.invoke(app, ["eval", str(s), "--budgets", "300", "--embedder", "hash", "--json"])
    b = json.loads(r.stdout)["budgets"]["300"]
    assert b["false_not_found"] == 0.0 and b["gold_in_prompt"] == b["gold_in_prompt_ungated"]


def test_eval_prints_the_gate_table_and_writes_it_in_the_report(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    rep = tmp_path / "rep"
    r = runner.invoke(app, ["eval", str(s), "--budgets", "30,300", "--embedder", "hash", "--report", str(rep)],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "the not-found gate, cost and gain" in r.stdout and "false not found" in r.stdout
    md = (rep / "set.md").read_text()
    assert "## The not-found gate: cost and gain" in md and "| 300 | 0.0% |" in md
