"""Chat history in the brief: placement, cap, stripping, budget arithmetic, errors; the flat API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import docket
from docket.demo import REFUND_QUESTION, nimbus_chunks
from docket.errors import InputError
from docket.history import load_history, parse_history


def brief(history, **kw):  # noqa: ANN001, ANN201
    chunks = nimbus_chunks()
    store = docket.MemoryStore(chunks)
    ranked = docket.rank_by_cosine(REFUND_QUESTION, chunks, docket.default_embedder())
    return docket.assemble(REFUND_QUESTION, ranked, store=store, history=history, **kw)


def test_no_history_is_byte_identical() -> None:
    a, b = brief(None, budget=250), brief(None, budget=250)
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())
    assert "history" not in a.to_json()["tokens"]


def test_newest_turns_kept_older_dropped() -> None:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 60} for i in range(10)]
    b = brief(turns, budget=250, policy=docket.Policy().updated(history={"max_tokens": 200}))
    kept = [m["content"] for m in b.messages[1:-1]]
    assert kept and kept[-1].startswith("turn 9") and all(k.startswith(("turn 8", "turn 9")) for k in kept)
    assert b.messages[1]["role"] == "user"  # never starts with an answer whose question was dropped
    drop = [e for e in b.trace if e.move == "history" and e.action == "drop"]
    assert drop and drop[0].numbers["turns"][0] == 0
    assert b.tokens.history <= 200 and b.tokens.total == b.tokens.system + b.tokens.history + b.tokens.user


def test_history_comes_off_a_derived_budget() -> None:
    turns = [{"role": "user", "content": "Tell me about refunds " * 20}]
    plain, chat = brief(None), brief(turns)
    assert chat.budget == plain.budget - chat.tokens.history


def test_condense_with_a_summariser() -> None:
    turns = [{"role": "user", "content": "old " * 300}, {"role": "assistant", "content": "reply " * 300},
             {"role": "user", "content": "What about annual plans?"}]
    pol = docket.Policy().updated(history={"max_tokens": 120, "condense": True})
    b = brief(turns, budget=250, policy=pol, condenser=lambda old, room: "The user asked about refunds.")
    # the summary and the unanswered last turn are the user's: they join the final user message, framed
    assert [m["role"] for m in b.messages] == ["system", "user"]
    assert b.messages[1]["content"].startswith("Earlier message from the user (conversation history, not a document):\n"
                                               "Summary of the earlier conversation: The user asked about refunds.")
    assert any(e.action == "condense" for e in b.trace)


def test_documents_blocks_and_labels_are_stripped() -> None:
    lines_block = "=== DOCUMENTS ===\nID: S1\n| old text\n=== END OF DOCUMENTS ===\n\nQuestion: Old question?"
    b = brief([{"role": "user", "content": lines_block}, {"role": "assistant", "content": "It is 10 days [S1, S2]."}],
              budget=250)
    assert [m["content"] for m in b.messages[1:3]] == ["Old question?", "It is 10 days."]
    assert b.user.count("<documents>") == 1


@pytest.mark.parametrize("bad, where", [
    ([{"role": "system", "content": "x"}], "history[0], field 'role'"),
    ([{"role": "user"}], "history[0], field 'content'"),
    ([{"role": "user", "content": "x", "name": "bob"}], "history[0], field 'name'"),
    ([{"role": "user", "content": [{"type": "text"}]}], "history[0], field 'content'"),
    ("hello", "history"),
])
def test_bad_history_names_the_turn(bad, where) -> None:  # noqa: ANN001
    with pytest.raises(InputError, match=__import__("re").escape(where)):
        parse_history(bad)


def test_history_files(tmp_path: Path) -> None:
    (tmp_path / "h.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    (tmp_path / "h.jsonl").write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    (tmp_path / "bad.jsonl").write_text('{"role": "user", "content": "hi"}\n{oops\n')
    assert len(load_history(tmp_path / "h.json")) == 1 and len(load_history(tmp_path / "h.jsonl")) == 2
    with pytest.raises(InputError, match="bad.jsonl:2"):
        load_history(tmp_path / "bad.jsonl")


def test_flat_public_api() -> None:
    assert callable(docket.assemble) and "Session" in docket.__all__
    for name in docket.__all__:
        assert getattr(docket, name) is not None
    with pytest.raises(AttributeError):
        docket.nothing_here  # noqa: B018


def test_session_ask_matches_the_cli_contract(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    with docket.Session.open(db, create=True) as s:
        s.index(records=[c.to_record() for c in nimbus_chunks()])
        res = s.ask(REFUND_QUESTION, history=[{"role": "user", "content": "Hello"}])
        assert res.brief.found and res.timings["retrieve"] >= 0
        assert res.brief.sources["S1"].doc == res.brief.sources["S1"]["doc"]
        report = s.check("Refunds are possible [S1].", res.brief)
        assert report.cited_labels == ["S1"]
        with pytest.raises(InputError, match="not in the store"):
            s.delete("no-such-doc")


def test_cli_history_and_budget(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from docket.cli import _register, app

    _register()
    store = tmp_path / "n.jsonl"
    store.write_text("".join(json.dumps(c.to_record()) + "\n" for c in nimbus_chunks()))
    hist = tmp_path / "h.json"
    hist.write_text(json.dumps([{"role": "user", "content": "Hi, I bought an annual plan."},
                                {"role": "assistant", "content": "Thanks! How can I help? [S2]"}]))
    r = CliRunner().invoke(app, ["assemble", "--store", str(store), "-q", REFUND_QUESTION, "--budget", "250",
                                 "--history", str(hist), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [m["role"] for m in out["messages"]] == ["system", "user", "assistant", "user"]
    assert out["messages"][2]["content"] == "Thanks! How can I help?"
    r = CliRunner().invoke(app, ["budget", "--history-file", str(hist)])
    assert r.exit_code == 0 and "2 of 2 turn(s) kept" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "system", "content": "obey"}]))
    r = CliRunner().invoke(app, ["assemble", "--store", str(store), "-q", "x", "--history", str(bad)])
    assert r.exit_code == 2 or "history" in str(r.exception)
