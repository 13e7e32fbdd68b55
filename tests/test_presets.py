"""Model presets: every figure sourced and dated, the arithmetic consistent, the policy filled,
the model's tokenizer used where it ships offline and named as a stand-in where not."""

from __future__ import annotations

import json
import re

import pytest
from cli_run import run

from docket.assemble import assemble
from docket.demo import REFUND_QUESTION, nimbus_chunks, nimbus_path
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.policy import Policy, load_policy_dict
from docket.presets import apply_preset, counter_for, get_preset, presets
from docket.store.base import MemoryStore
from docket.tokens import counter_named


def test_every_preset_is_sourced_dated_and_adds_up():
    items = presets()
    for name in ("gpt-4o", "claude-sonnet", "llama-3.1-8b", "gemini-1.5-pro"):
        assert name in items
    for name, p in items.items():
        assert p.source.strip() and re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.checked), name
        assert p.input_target == p.system_rules + p.evidence_min + p.question + p.answer_reserve, name
        assert p.input_target + p.answer_reserve <= p.context_window, name
        assert p.evidence_min <= p.evidence_max, name


def test_the_spec_table_rows():
    rows = {"gpt-4o": (128_000, 1_500), "claude-sonnet": (200_000, 2_000), "llama-3.1-8b": (8_192, 1_000),
            "gemini-1.5-pro": (1_000_000, 2_000)}
    for name, (window, answer) in rows.items():
        p = get_preset(name)
        assert (p.context_window, p.answer_reserve) == (window, answer)
    worked = get_preset("claude-sonnet-8k")  # answer-brief's worked example: 8,000 in, 6,600 evidence
    assert worked.input_target == 8_000 and worked.evidence_min == 6_600 and worked.answer_reserve == 800


def test_a_preset_fills_the_policy_and_the_file_wins_where_it_says_more():
    p = load_policy_dict({"model": {"preset": "llama-3.1-8b"}})
    assert (p.pack.input_target, p.pack.answer_reserve, p.model.context_window) == (5_480, 1_000, 8_192)
    q = load_policy_dict({"model": {"preset": "llama-3.1-8b"}, "pack": {"input_target": 4_000}})
    assert q.pack.input_target == 4_000 and q.pack.answer_reserve == 1_000
    flag = apply_preset(Policy().updated(pack={"input_target": 3_000}), "gpt-4o")
    assert flag.pack.input_target == 8_100 and flag.model.preset == "gpt-4o"


@pytest.mark.parametrize("data, field", [
    ({"model": {"preset": "gpt-9"}}, "model.preset"),
    ({"model": {"tokenizer": "llama3"}}, "model.tokenizer"),
    ({"model": {"context_window": 0}}, "model.context_window"),
    ({"model": {"context_window": 4_000}, "pack": {"input_target": 6_000}}, "larger than model.context_window"),
])
def test_bad_model_settings_are_one_clear_line(data, field):
    with pytest.raises(InputError) as e:
        load_policy_dict(data, where="p.toml")
    assert field in str(e.value) and "\n" not in str(e.value)


def test_counters_exact_or_named_as_stand_ins():
    assert counter_for(apply_preset(Policy(), "gpt-4o")).name == "o200k_base"
    cl = counter_for(apply_preset(Policy(), "gpt-4-turbo"))
    assert cl.name == "cl100k_base" and cl.count("hello world") == 2
    text = "Ünïcödé and emoji 🙂 tokenize differently"
    assert counter_named("cl100k_base").count(text) != counter_named("o200k_base").count(text)
    chunks = nimbus_chunks()
    emb = HashEmbedder(64)
    b = assemble(REFUND_QUESTION, store=MemoryStore(chunks), policy=apply_preset(Policy(), "claude-sonnet"), embedder=emb)
    assert b.tokenizer["exact"] is False and "stand-in" in b.tokenizer["note"] and b.tokenizer["counter"] == "o200k_base"
    g = assemble(REFUND_QUESTION, store=MemoryStore(chunks), policy=apply_preset(Policy(), "gpt-4-turbo"), embedder=emb)
    assert g.tokenizer == {"counter": "cl100k_base", "model": "GPT-4 Turbo", "preset": "gpt-4-turbo", "exact": True}
    assert g.tokens["system"] == counter_named("cl100k_base").count(g.system)


def test_cli_model_preset():
    out = run("assemble", "--store", nimbus_path(), "-q", REFUND_QUESTION, "--model-preset", "llama-3.1-8b", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    budget = next(e for e in data["trace"] if e["action"] == "budget")
    assert "input target 5480 - answer reserve 1000" in budget["reason"]
    assert data["tokenizer"]["exact"] is False
    human = run("assemble", "--store", nimbus_path(), "-q", REFUND_QUESTION, "--model-preset", "claude-sonnet")
    assert "stand-in for Claude 3.5 Sonnet" in human.stdout
    bad = run("assemble", "--store", nimbus_path(), "-q", "q", "--model-preset", "gpt-9")
    assert bad.returncode == 2 and "unknown model preset 'gpt-9'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    listed = run("presets", "--json")
    assert listed.returncode == 0 and "gemini-1.5-pro" in json.loads(listed.stdout)
    budget_out = run("budget", "--model-preset", "gpt-4o", "--history", "0")
    assert budget_out.returncode == 0 and "8,100" in budget_out.stdout and "answer-brief.txt" in budget_out.stdout
