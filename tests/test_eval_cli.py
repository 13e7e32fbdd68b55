"""`docket eval` and `docket calibrate` end to end on tiny files (hash embedder: fast, no model)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from docket.cli import _register, app
from docket.policy import load_policy

_register()
runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKET_EVAL_CACHE", str(tmp_path / "cache"))


def write_set(path):
    lines = []
    for i in range(6):
        answerable = i % 2 == 0
        cands = [
            {"id": f"g{i}", "doc": f"g{i}", "title": "Rhine", "text": f"The Rhine river number {i} flows into the North Sea."},
            {"id": f"d{i}", "doc": f"d{i}", "title": "Apples", "text": "Apples grow on trees in orchards."},
        ]
        lines.append({"id": f"q{i}", "question": "Where does the Rhine flow?" if answerable else "Who won the 1920 chess cup?",
                      "candidates": cands, "gold": [f"g{i}"] if answerable else [], "answers": ["North Sea"],
                      "answerable": answerable})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_eval_json(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    r = runner.invoke(app, ["eval", str(s), "--budgets", "30,300", "--embedder", "hash", "--json",
                            "--compare", "topk,greedy", "--price", "3"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out["budgets"]) == {"30", "300"}
    b = out["budgets"]["300"]
    for k in ("gold_in_prompt", "gold_recall", "tokens_p50", "tokens_p95", "duplicate_share", "cost_per_1000_usd",
              "not_found"):
        assert k in b
    assert set(out["compare"]) == {"topk", "greedy"}


def test_eval_report_and_tables(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    rep = tmp_path / "rep"
    r = runner.invoke(app, ["eval", str(s), "--budgets", "30,100,300", "--embedder", "hash", "--ablate",
                            "--compare", "greedy", "--report", str(rep)])
    assert r.exit_code == 0, r.output
    assert "docket" in r.stdout and "greedy" in r.stdout
    md = (rep / "set.md").read_text()
    assert "Side by side" in md and "Ablation" in md and "Not found" in md
    assert (rep / "set-gold-vs-tokens.png").stat().st_size > 1000


def test_eval_bad_input_exits_2(tmp_path):
    from docket.cli import main

    s = write_set(tmp_path / "set.jsonl")
    for args in (["eval", str(s), "--budgets", "abc"], ["eval", str(s), "--compare", "nope"],
                 ["eval", str(tmp_path / "missing.jsonl")]):
        import sys

        old = sys.argv
        sys.argv = ["docket", *args]
        try:
            with pytest.raises(SystemExit) as e:
                main()
            assert e.value.code == 2
        finally:
            sys.argv = old


def test_calibrate_writes_policy(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(x) for x in [
        {"a": "the fee is 15%", "b": "The fee is 15%.", "same": True},
        {"a": "the fee is 15%", "b": "refunds take ten days", "same": False}]) + "\n")
    pol = tmp_path / "policy.toml"
    r = runner.invoke(app, ["calibrate", str(s), "--pairs", str(pairs), "--embedder", "hash", "--group-by", "item",
                            "--folds", "3", "--write", str(pol), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {"duplicate_threshold", "floor", "answerable"} <= set(out)
    p = load_policy(pol)
    # the model is switched on only when, held out, it beats the plain floor; here the floor is
    # already perfect, so it stays off and the output says why
    gate = out["answerable"]["gate"]
    assert p.answerable.enabled is gate["enabled"] is False
    assert "does not beat the plain floor" in gate["reason"]
    assert "balanced_accuracy" in out["floor"]["held_out"]
    assert p.dedup.threshold == out["duplicate_threshold"]["threshold"]
    assert p.answerable.floor == out["floor"]["floor"] and p.pack.floor == 0.40  # the not-found floor, not the cut
    assert p.pack.margin == out["margin"]["margin"]
    # the fitted policy runs
    r2 = runner.invoke(app, ["eval", str(s), "--budgets", "300", "--embedder", "hash", "--policy", str(pol), "--json"])
    assert r2.exit_code == 0, r2.output
    assert "not_found" in json.loads(r2.stdout)["budgets"]["300"]


def test_calibrate_says_whether_the_model_is_switched_on(tmp_path):
    s = write_set(tmp_path / "set.jsonl")
    r = runner.invoke(app, ["calibrate", str(s), "--embedder", "hash", "--group-by", "item", "--folds", "3"])
    assert r.exit_code == 0, r.output
    assert "answerable.enabled = false" in r.stdout and "does not beat the plain floor" in r.stdout


def test_calibrate_fits_the_margin_on_an_all_answerable_set(tmp_path):
    """No unanswerable questions: no floor, but the margin is fitted and written."""
    s = tmp_path / "set.jsonl"
    lines = [{"id": f"q{i}", "question": "Where does the Rhine flow?", "gold": [f"g{i}"], "answers": ["North Sea"],
              "candidates": [{"id": f"g{i}", "doc": f"g{i}", "text": f"The Rhine number {i} flows into the North Sea."},
                             {"id": f"d{i}", "doc": f"d{i}", "text": "Apples grow on trees in orchards."}]}
             for i in range(4)]
    s.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    pol = tmp_path / "policy.toml"
    r = runner.invoke(app, ["calibrate", str(s), "--embedder", "hash", "--write", str(pol), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "floor" not in out and out["margin"]["gold_kept"] >= 0.99
    assert load_policy(pol).pack.margin == out["margin"]["margin"]
    bad = runner.invoke(app, ["calibrate", str(s), "--embedder", "hash", "--margin-keep", "1.5"])
    assert bad.exit_code == 2 and "--margin-keep" in bad.output
    bad = runner.invoke(app, ["calibrate", str(s), "--embedder", "hash", "--min-gain", "-1"])
    assert bad.exit_code == 2 and "--min-gain" in bad.output
