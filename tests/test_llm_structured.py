"""Structured answers (sentences with their citations, or a typed refusal): the schema, the
parser, the checker, the request each provider gets, and `docket check` / `--structured`.

Fake endpoints stand in for the models (tests/test_llm_openai.py, test_llm_anthropic.py); a
model's bad JSON must come back as a finding, never as an exception.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm_answer import REFUSAL, SOURCES, Scripted, brief, run_cli

from docket.check import check_answer, check_structured
from docket.llm.structured import (
    Reply,
    answer_schema,
    instruction,
    parse_reply,
    reply_labels,
    reply_text,
    structured_messages,
)

GOOD = {"sentences": [{"text": "After 30 days you get the unused whole months back, minus a 15% fee.", "citations": ["S1"]},
                      {"text": "The money arrives within 10 business days.", "citations": ["S2"]}],
        "refusal": None}
BRIEF = {"sources": SOURCES, "refusal": REFUSAL}


# -- the schema ---------------------------------------------------------------------------------


def _objects(schema: Any) -> list[dict[str, Any]]:
    out = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            out.append(schema)
        for v in schema.values():
            out += _objects(v)
    elif isinstance(schema, list):
        for v in schema:
            out += _objects(v)
    return out


def test_schema_is_strict_mode_compatible() -> None:
    """OpenAI strict structured outputs: root an object, every property required, no extras."""
    schema = answer_schema(["S1", "S2"])
    assert schema["type"] == "object" and "anyOf" not in schema
    objs = _objects(schema)
    assert len(objs) == 3  # reply, sentence, refusal
    for o in objs:
        assert o["additionalProperties"] is False and set(o["required"]) == set(o["properties"])
    assert "$defs" not in json.dumps(schema) and '"default"' not in json.dumps(schema)
    item = schema["properties"]["sentences"]["items"]["properties"]["citations"]
    assert item["items"]["enum"] == ["S1", "S2"] and item["minItems"] == 1
    assert answer_schema()["properties"]["sentences"]["items"]["properties"]["citations"]["items"]["pattern"] == "^S[0-9]+$"


def test_schema_compiles_to_a_llama_cpp_grammar() -> None:
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    gbnf = grammar.json_schema_to_gbnf(json.dumps(answer_schema(["S1", "S2", "S3"])))
    assert '"\\"S3\\""' in gbnf or "S3" in gbnf
    assert "refusal" in gbnf


def test_pydantic_model_and_schema_agree() -> None:
    """Everything the schema allows the model parses (and the reverse for the key rules)."""
    assert Reply.model_validate(GOOD).sentences[1].citations == ["S2"]
    assert Reply.model_validate({"sentences": [], "refusal": {"reason": "no date"}}).refused
    part = Reply.model_validate({"sentences": GOOD["sentences"][:1], "refusal": {"reason": "no date"}})
    assert part.partial and not part.refused


def test_instruction_goes_last_and_system_stays() -> None:
    msgs = [{"role": "system", "content": "rules"}, {"role": "user", "content": "docs + question"}]
    out = structured_messages(msgs, REFUSAL)
    assert out[0] == msgs[0] and out[1]["content"].startswith("docs + question\n\n")
    assert out[1]["content"].endswith(instruction(REFUSAL)) and msgs[1]["content"] == "docs + question"
    assert '"refusal": null' in instruction(REFUSAL) and REFUSAL in instruction(REFUSAL)


# -- parsing ------------------------------------------------------------------------------------


def test_parse_good_fenced_and_lenient_labels() -> None:
    p = parse_reply(json.dumps(GOOD))
    assert p.ok and reply_labels(p.reply) == ["S1", "S2"]  # type: ignore[arg-type]
    fenced = parse_reply("```json\n" + json.dumps(GOOD) + "\n```")
    assert fenced.ok
    loose = parse_reply(json.dumps({"sentences": [{"text": "x y z w", "citations": "[s2]"}], "refusal": None}))
    assert loose.ok and loose.reply.sentences[0].citations == ["S2"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("raw", "expect"), [
    ("", "empty"),
    ("Refunds take 10 days [S1].", "not JSON"),
    ('{"sentences": [{"text": "a", "citations": [1]}], "refusal": null}', "sentences[0].citations[0]"),
    ('{"sentences": [], "refusal": null}', "no sentences and no refusal"),
    ('{"sentences": [{"text": "a"}], "refusal": null, "confidence": 0.9}', "confidence"),
    ('{"sentences": [{"citations": ["S1"]}], "refusal": null}', "sentences[0].text: is required"),
    ('{"sentences": "Refunds", "refusal": null}', "sentences"),
    ('{"sentences": [], "refusal": "no"}', "refusal"),
    ("[1, 2]", "must be a JSON object"),
])
def test_parse_errors_are_one_line(raw: str, expect: str) -> None:
    p = parse_reply(raw)
    assert not p.ok and p.error is not None
    assert "\n" not in p.error and p.error.startswith("structured answer") and expect in p.error, p.error


def test_cut_off_reply_says_raise_max_tokens() -> None:
    p = parse_reply('{"sentences": [{"text": "Refunds take', finish_reason="length")
    assert not p.ok and "max_tokens" in (p.error or "") and p.looks_like_json


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                              lambda ch: st.lists(ch, max_size=4) | st.dictionaries(
                                  st.sampled_from(["sentences", "refusal", "text", "citations", "reason", "x"]), ch,
                                  max_size=4), max_leaves=12).map(json.dumps)))
def test_parse_never_raises(raw: str) -> None:
    p = parse_reply(raw)
    assert p.ok != (p.error is not None)
    if p.error:
        assert "\n" not in p.error
    # and the checker takes whatever came back
    assert check_structured(p, BRIEF).findings >= (0 if p.ok else 1)


def test_reply_text() -> None:
    r = Reply.model_validate(GOOD)
    assert reply_text(r, REFUSAL) == ("After 30 days you get the unused whole months back, minus a 15% fee [S1]. "
                                      "The money arrives within 10 business days [S2].")
    assert reply_text(Reply.model_validate({"sentences": [], "refusal": {"reason": "x"}}), REFUSAL) == REFUSAL


# -- checking -----------------------------------------------------------------------------------


def test_check_clean_structured() -> None:
    rep = check_answer(GOOD, BRIEF)
    assert rep.clean and rep.structured == {"kind": "answer", "sentences": 2, "reason": None}
    assert rep.cited_labels == ["S1", "S2"] and [s.labels for s in rep.sentences] == [["S1"], ["S2"]]


def test_check_uses_the_models_sentences_and_labels() -> None:
    """One structured 'sentence' holding two sentences keeps its citation for both (free text would
    give the first one none)."""
    two = {"sentences": [{"text": "After 30 days you get the unused whole months back. A 15% fee applies.",
                          "citations": ["S1"]}], "refusal": None}
    rep = check_answer(two, BRIEF)
    assert rep.clean and len(rep.sentences) == 1


def test_check_findings_structured() -> None:
    bad = {"sentences": [{"text": "The money arrives within 5 business days.", "citations": ["S2"]},
                         {"text": "A manager approves every refund personally.", "citations": []},
                         {"text": "Refunds are processed by billing operations.", "citations": ["S9"]}],
           "refusal": None}
    rep = check_answer(bad, BRIEF)
    assert not rep.clean and rep.unknown_labels == ["S9"]
    assert rep.uncited_sentences == ["A manager approves every refund personally."]
    assert rep.unsupported[0]["label"] == "S2" and "5" in rep.unsupported[0]["reason"]


def test_typed_refusal_and_partial() -> None:
    rep = check_answer({"sentences": [], "refusal": {"reason": "nothing about enterprise approval"}}, BRIEF)
    assert rep.clean and rep.refusal and rep.refusal_only
    assert rep.structured == {"kind": "refusal", "sentences": 0, "reason": "nothing about enterprise approval"}
    part = check_answer({"sentences": GOOD["sentences"][1:], "refusal": {"reason": "no approver named"}}, BRIEF)
    assert part.clean and part.refusal and not part.refusal_only and part.structured["kind"] == "partial"  # type: ignore[index]


def test_malformed_is_a_finding() -> None:
    rep = check_structured('{"sentences": [{"text": "Refunds take', BRIEF)
    assert not rep.clean and rep.findings == 1 and rep.malformed and "not JSON" in rep.malformed
    assert rep.sentences == []  # broken JSON is not read as prose
    prose = check_structured("Refunds take 10 business days [S2]. A manager approves every refund.", BRIEF)
    assert prose.malformed and "not JSON" in prose.malformed
    assert prose.uncited_sentences == ["A manager approves every refund."] and prose.cited_labels == ["S2"]
    j = prose.to_json()
    assert j["malformed"] == prose.malformed and j["clean"] is False and j["counts"]["findings"] == 2


# -- generation through the providers ------------------------------------------------------------


def test_run_and_check_structured_with_a_plain_generator() -> None:
    """A generator that cannot enforce a schema is asked in the prompt, and says so."""
    gen = Scripted(json.dumps(GOOD))
    from docket.llm.answer import run_and_check

    rep = run_and_check(brief(), generator=gen, structured=True)
    assert rep.ok and rep.check is not None and rep.check.clean
    ans = rep.answer
    assert ans is not None and ans.mode == "structured" and "prompt only" in (ans.note or "")
    assert ans.structured == GOOD and [c.label for c in ans.citations] == ["S1", "S2"]
    assert ans.text.endswith("[S2].")
    j = rep.to_json()
    assert j["answer"]["mode"] == "structured" and j["check"]["structured"]["kind"] == "answer"


def test_run_and_check_structured_bad_json_is_a_finding_not_an_error() -> None:
    from docket.llm.answer import run_and_check

    rep = run_and_check(brief(), generator=Scripted('{"sentences": [{"text": "x", "cit'), structured=True)
    assert rep.ok and rep.error is None and rep.check is not None
    assert rep.check.malformed and not rep.check.clean
    assert rep.answer is not None and rep.answer.structured is not None and "error" in rep.answer.structured


def test_nothing_found_gives_a_typed_refusal_without_a_call() -> None:
    from docket.llm.answer import run_and_check

    gen = Scripted("never")
    rep = run_and_check(brief(found=False), generator=gen, structured=True)
    assert gen.calls == 0 and rep.skipped and rep.answer is not None and rep.answer.mode == "structured"
    assert rep.check is not None and rep.check.refusal_only and rep.check.structured["kind"] == "refusal"  # type: ignore[index]


def test_openai_compatible_sends_json_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    from docket.llm.answer import run_and_check

    s = FakeServer()
    try:
        s.script.append((200, completion(json.dumps(GOOD)), {}, 0.0))
        rep = run_and_check(brief(), s.url, model="tiny", structured=True)
        sent = s.calls[0]
        rf = sent["response_format"]
        assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
        assert rf["json_schema"]["schema"] == answer_schema(["S1", "S2"])
        assert sent["messages"][-1]["content"].endswith(instruction(REFUSAL))
        assert rep.check is not None and rep.check.clean and rep.answer is not None
        assert rep.answer.note == "JSON Schema sent as response_format (json_schema)"
    finally:
        s.close()


def test_falls_back_to_llama_cpp_dialect_when_json_schema_is_rejected() -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    from docket.llm.openai_compat import OpenAICompatGenerator

    s = FakeServer()
    try:
        s.script += [(422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "unexpected value"}]}, {}, 0.0),
                     (200, completion(json.dumps(GOOD)), {}, 0.0), (200, completion(json.dumps(GOOD)), {}, 0.0)]
        g = OpenAICompatGenerator(s.url, "tiny", timeout=5)
        ans = g.complete_structured([{"role": "user", "content": "q"}], answer_schema(["S1"]))
        assert [c["response_format"]["type"] for c in s.calls] == ["json_schema", "json_object"]
        assert s.calls[1]["response_format"]["schema"] == answer_schema(["S1"])
        assert ans.mode == "structured" and "llama.cpp" in (ans.note or "") and g.structured_dialect == "llama.cpp"
        g.complete_structured([{"role": "user", "content": "q"}], answer_schema(["S1"]))
        assert s.calls[2]["response_format"]["type"] == "json_object"  # remembered
    finally:
        s.close()


def test_llama_cpp_python_500_on_json_schema_falls_back() -> None:
    """llama-cpp-python validates response_format.type and answers json_schema with a 500."""
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    from docket.llm.openai_compat import OpenAICompatGenerator

    s = FakeServer()
    try:
        msg = {"error": {"message": "1 validation error: {'loc': ('body', 'response_format', 'type'), 'msg': \"Input should "
                                    "be 'text' or 'json_object'\"}"}}
        s.script += [(500, msg, {}, 0.0), (200, completion(json.dumps(GOOD)), {}, 0.0)]
        g = OpenAICompatGenerator(s.url, "tiny", timeout=5, retries=0)
        assert g.complete_structured([{"role": "user", "content": "q"}], answer_schema(["S1"])).mode == "structured"
        assert g.structured_dialect == "llama.cpp"
    finally:
        s.close()


def test_a_500_naming_response_format_is_not_retried() -> None:
    """Retrying llama-cpp-python's 500 gets the same 500: fall back at once, not after backoff."""
    pytest.importorskip("openai")
    import time as _time

    from test_llm_openai import FakeServer, completion

    from docket.llm.openai_compat import OpenAICompatGenerator

    s = FakeServer()
    try:
        msg = {"error": {"message": "1 validation error: {'loc': ('body', 'response_format', 'type')}"}}
        s.script += [(500, msg, {}, 0.0), (200, completion(json.dumps(GOOD)), {}, 0.0)]
        g = OpenAICompatGenerator(s.url, "tiny", timeout=5, retries=3, backoff=2.0)
        t0 = _time.perf_counter()
        assert g.complete_structured([{"role": "user", "content": "q"}], answer_schema(["S1"])).mode == "structured"
        assert _time.perf_counter() - t0 < 1.5  # no 2 s backoff
        assert [c["response_format"]["type"] for c in s.calls] == ["json_schema", "json_object"]
        s.script += [(500, {"error": {"message": "boom"}}, {}, 0.0), (200, completion("fine"), {}, 0.0)]
        g2 = OpenAICompatGenerator(s.url, "tiny", timeout=5, retries=1, backoff=0.01)
        assert g2.generate([{"role": "user", "content": "q"}]) == "fine"  # other 500s are still retried
    finally:
        s.close()


def test_endpoint_without_schema_support_is_one_line() -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer

    from docket.llm import errors as E
    from docket.llm.answer import run_and_check
    from docket.llm.openai_compat import OpenAICompatGenerator

    s = FakeServer()
    try:
        s.script += [(400, {"error": {"message": "response_format is not supported"}}, {}, 0.0)] * 2
        with pytest.raises(E.BadRequest) as ei:
            OpenAICompatGenerator(s.url, "tiny", timeout=5).complete_structured([{"role": "user", "content": "q"}], {})
        assert "\n" not in str(ei.value) and "without --structured" in str(ei.value)
        s.script += [(400, {"error": {"message": "response_format is not supported"}}, {}, 0.0)] * 2
        rep = run_and_check(brief(), s.url, model="tiny", structured=True)
        assert not rep.ok and rep.error_kind == "request" and rep.answer is None
    finally:
        s.close()


def test_local_url_uses_the_llama_cpp_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from docket.llm import generator_from_url, local

    monkeypatch.setattr(local, "local_url", lambda: "http://127.0.0.1:9/v1")
    g = generator_from_url("local", model="m")
    assert getattr(g, "structured_dialect", None) == "llama.cpp"


def test_anthropic_structured_uses_a_forced_tool_not_citations() -> None:
    pytest.importorskip("anthropic")
    from test_llm_anthropic import BRIEF as ABRIEF
    from test_llm_anthropic import FakeAnthropic

    from docket.llm.answer import run_and_check
    from docket.llm.anthropic_gen import STRUCTURED_TOOL, AnthropicGenerator

    api = FakeAnthropic()
    try:
        api.script.append((200, {"id": "m", "type": "message", "role": "assistant", "model": "claude-test",
                                 "stop_reason": "tool_use", "stop_sequence": None,
                                 "usage": {"input_tokens": 100, "output_tokens": 40},
                                 "content": [{"type": "tool_use", "id": "t1", "name": STRUCTURED_TOOL, "input": GOOD}]}))
        gen = AnthropicGenerator("claude-test", api_key="k", base_url=api.url, timeout=5)
        rep = run_and_check(ABRIEF, generator=gen, structured=True)
        body = api.requests[0]["body"]
        assert body["tool_choice"] == {"type": "tool", "name": STRUCTURED_TOOL}
        assert body["tools"][0]["input_schema"] == answer_schema(["S1", "S2"])
        assert body["system"] == "x" and isinstance(body["messages"][0]["content"], str)  # the text brief, no document blocks
        assert "\"type\": \"document\"" not in json.dumps(body["messages"])
        ans = rep.answer
        assert ans is not None and ans.mode == "structured" and "native citations are off" in (ans.note or "")
        assert rep.check is not None and rep.check.clean, rep.check.to_json()
        # without --structured the same generator uses native citations and says so
        rep2 = run_and_check(ABRIEF, generator=gen)
        assert rep2.answer is not None and rep2.answer.mode == "native_citations" and "--structured" in (rep2.answer.note or "")
    finally:
        api.close()


def test_anthropic_structured_without_a_tool_call_is_a_finding() -> None:
    pytest.importorskip("anthropic")
    from test_llm_anthropic import BRIEF as ABRIEF
    from test_llm_anthropic import FakeAnthropic

    from docket.llm.answer import run_and_check
    from docket.llm.anthropic_gen import AnthropicGenerator

    api = FakeAnthropic()
    try:
        api.script.append((200, {"id": "m", "type": "message", "role": "assistant", "model": "claude-test",
                                 "stop_reason": "max_tokens", "stop_sequence": None,
                                 "usage": {"input_tokens": 100, "output_tokens": 40},
                                 "content": [{"type": "text", "text": "Refunds take 10 business days [S2]."}]}))
        gen = AnthropicGenerator("claude-test", api_key="k", base_url=api.url, timeout=5)
        rep = run_and_check(ABRIEF, generator=gen, structured=True)
        assert rep.ok and rep.check is not None and rep.check.malformed and "max_tokens" in rep.check.malformed
    finally:
        api.close()


# -- the command line ---------------------------------------------------------------------------




@pytest.fixture
def brief_file(tmp_path: Path) -> Path:
    b = tmp_path / "brief.json"
    b.write_text(json.dumps(brief().to_json()))
    return b


def test_cli_check_structured_file_and_inline(tmp_path: Path, brief_file: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "answer.json"
    f.write_text(json.dumps(GOOD))
    code, out, _ = run_cli(["check", "-a", str(f), "-b", str(brief_file), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["structured"]["kind"] == "answer"  # detected without --structured
    refusal = json.dumps({"sentences": [], "refusal": {"reason": "no approver"}})
    code, out, _ = run_cli(["check", "-a", refusal, "-b", str(brief_file), "--structured"], monkeypatch, capsys)
    assert code == 0 and "refusal" in out and "no approver" in out


def test_cli_check_structured_findings(tmp_path: Path, brief_file: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "answer.txt"
    f.write_text("Refunds take 10 business days [S2].")
    code, out, err = run_cli(["check", "-a", str(f), "-b", str(brief_file), "--structured", "--json"], monkeypatch, capsys)
    j = json.loads(out)
    assert code == 1 and "not JSON" in j["malformed"] and "Traceback" not in err
    f.write_text('{"sentences": [{"text": "Refunds take 5 business days.", "citations": ["S2", "S7"]}], "refusal": null}')
    code, out, _ = run_cli(["check", "-a", str(f), "-b", str(brief_file)], monkeypatch, capsys)
    assert code == 1 and "unknown labels" in out and "S7" in out and "unsupported" in out


def test_cli_check_reads_assemble_llm_output(tmp_path: Path, brief_file: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from docket.llm.answer import run_and_check

    rep = run_and_check(brief(), generator=Scripted(json.dumps(GOOD)), structured=True)
    out_file = tmp_path / "out.json"
    out_file.write_text(json.dumps(brief().to_json() | rep.to_json()))
    code, out, _ = run_cli(["check", "-a", str(out_file), "-b", str(out_file), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["structured"]["kind"] == "answer"
    free = run_and_check(brief(), generator=Scripted("The money arrives within 10 business days [S2]."))
    out_file.write_text(json.dumps(brief().to_json() | free.to_json()))
    code, out, _ = run_cli(["check", "-a", str(out_file), "-b", str(out_file), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["structured"] is None
    code, out, _ = run_cli(["check", "-a", str(out_file), "-b", str(out_file), "--structured", "--json"], monkeypatch, capsys)
    assert code == 1 and "free text" in json.loads(out)["malformed"]


def test_cli_structured_needs_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from docket.demo import nimbus_path

    code, _, err = run_cli(["assemble", "--store", str(nimbus_path()), "-q", "refund?", "--structured"], monkeypatch, capsys)
    assert code == 2 and "--structured" in err and "--llm" in err and err.count("\n") == 1


def test_cli_assemble_structured_over_http(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    from docket.demo import nimbus_path

    s = FakeServer()
    try:
        reply = {"sentences": [{"text": "Refunds go back to the original payment method within 10 business days.",
                                "citations": ["S1"]}], "refusal": None}
        s.script.append((200, completion(json.dumps(reply)), {}, 0.0))
        code, out, err = run_cli(["assemble", "--store", str(nimbus_path()), "-q", "How long does a refund take?",
                                  "--budget", "120", "--llm", s.url, "--model", "tiny", "--structured", "--json"],
                                 monkeypatch, capsys)
        j = json.loads(out)
        assert j["answer"]["mode"] == "structured" and j["answer"]["structured"] == reply, err
        assert s.calls[0]["response_format"]["json_schema"]["schema"]["properties"]["sentences"]["items"][
            "properties"]["citations"]["items"]["enum"] == list(j["sources"])
        assert code in (0, 1) and j["check"]["structured"]["kind"] == "answer"
    finally:
        s.close()
