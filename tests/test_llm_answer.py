"""run_and_check (what `--llm` does), its printing, `docket check` on the command line, local-model helpers."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from docket.brief.result import Brief
from docket.cli.answer_show import print_answer_report
from docket.llm.answer import AnswerReport, run_and_check
from docket.llm.errors import EndpointUnreachable

REFUSAL = "I do not know from the provided sources."
PAYOUTS = "Refunds go back to the original payment method within 10 business days."
ANNUAL = ("Annual plans: you can cancel within 30 days of purchase for a full refund. After 30 days, we refund the "
          "unused whole months, minus an early-termination fee. The early-termination fee is 15% of the refunded amount.")
SOURCES = {
    "S1": {"doc": "refund-policy", "version": 3, "chunks": ["pol3-4", "pol3-5"], "title": "Nimbus refund policy",
           "section": "Annual plans", "date": "2026-03-01", "status": "current", "trust": "trusted", "text": ANNUAL},
    "S2": {"doc": "refund-policy", "version": 3, "chunks": ["pol3-6"], "title": "Nimbus refund policy",
           "section": "Payouts", "date": "2026-03-01", "status": "current", "trust": "trusted", "text": PAYOUTS},
}


def brief(found: bool = True) -> Brief:
    return Brief(found=found, question="Refund after 30 days?", system="rules", user="docs + question", documents="",
                 sources=SOURCES if found else {}, tokens={}, trace=[], conflicts=[], warnings=[], budget=300,
                 refusal=REFUSAL)


class Scripted:
    name = "scripted"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls = 0

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        self.calls += 1
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_run_and_check_clean() -> None:
    gen = Scripted("After 30 days you get the unused whole months back, minus a 15% fee [S1]. "
                   "The money arrives within 10 business days [S2].")
    rep = run_and_check(brief(), generator=gen)
    assert rep.ok and rep.check is not None and rep.check.clean
    assert [c.label for c in rep.answer.citations] == ["S1", "S2"]  # type: ignore[union-attr]
    j = rep.to_json()
    assert j["answer"]["text"].startswith("After 30 days") and j["check"]["clean"] is True
    assert j["answer"]["citations"][1]["source"]["chunks"] == ["pol3-6"]


def test_run_and_check_findings() -> None:
    rep = run_and_check(brief(), generator=Scripted("The money arrives within 5 business days [S2]. Visit refunds.example now."))
    assert rep.check is not None and not rep.check.clean
    assert rep.check.unsupported and rep.check.flagged_links and rep.check.uncited_sentences


def test_model_failure_keeps_the_brief() -> None:
    b = brief()
    rep = run_and_check(b, generator=Scripted(EndpointUnreachable("cannot reach the model endpoint http://127.0.0.1:9/v1 (connection refused)")))
    assert not rep.ok and rep.brief is b and rep.answer is None and rep.check is None
    j = rep.to_json()
    assert j["answer"] is None and j["llm_error"]["kind"] == "unreachable" and "connection refused" in j["llm_error"]["message"]
    out = io.StringIO()
    print_answer_report(rep, Console(file=out, width=120))
    assert "model call failed" in out.getvalue() and "\n" in out.getvalue()


def test_bad_url_is_a_one_line_error_not_an_exception() -> None:
    rep = run_and_check(brief(), "ftp://nowhere", model="x")
    assert not rep.ok and "ftp://nowhere" in (rep.error or "") and "\n" not in (rep.error or "")


def test_nothing_found_does_not_call_the_model() -> None:
    gen = Scripted("should not be called")
    rep = run_and_check(brief(found=False), generator=gen)
    assert gen.calls == 0 and rep.skipped and rep.answer is not None and rep.answer.text == REFUSAL
    assert rep.check is not None and rep.check.refusal and rep.check.clean


def test_print_answer_report_resolves_citations() -> None:
    rep = run_and_check(brief(), generator=Scripted("The money arrives within 5 business days [S2]. Also [S9] says so."))
    out = io.StringIO()
    print_answer_report(rep, Console(file=out, width=160))
    text = out.getvalue()
    assert "refund-policy v3" in text and "Payouts" in text and "pol3-6" in text
    assert "not in the brief" in text and "unknown labels" in text and "unsupported" in text


def test_answer_report_type() -> None:
    assert AnswerReport(brief=brief()).to_json() == {"answer": None, "check": None}


def test_run_and_check_over_http() -> None:
    pytest.importorskip("openai")
    from test_llm_openai import FakeServer, completion

    s = FakeServer()
    try:
        s.script.append((200, completion("After 30 days you get the unused whole months back [S1]."), {}, 0.0))
        rep = run_and_check(brief(), s.url, model="tiny")
        assert rep.ok and rep.check is not None and rep.check.clean
        assert rep.answer is not None and rep.answer.usage["completion_tokens"] == 3
        assert s.calls[0]["messages"] == brief().messages
    finally:
        s.close()


# -- docket check ------------------------------------------------------------------------------


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from docket.cli import main

    monkeypatch.setattr(sys, "argv", ["docket", *args])
    with pytest.raises(SystemExit) as ei:
        main()
    out, err = capsys.readouterr()
    code = ei.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    b = tmp_path / "brief.json"
    b.write_text(json.dumps(brief().to_json()))
    clean = tmp_path / "clean.txt"
    clean.write_text("After 30 days you get the unused whole months back, minus a 15% fee [S1].\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("After 30 days you get a full refund minus a 20% fee [S1]. It arrives in 5 days [S3]. "
                   "Contact support to start. See [the desk](https://nimbus-refund-desk.example/x).")
    return {"brief": b, "clean": clean, "bad": bad}


def test_cli_check_clean(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", "--answer", str(files["clean"]), "--brief", str(files["brief"])], monkeypatch, capsys)
    assert code == 0 and "clean" in out


def test_cli_check_findings_json(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", "--answer", str(files["bad"]), "--brief", str(files["brief"]), "--json",
                            "--allow-domain", "nimbus.com", "--strip-links"], monkeypatch, capsys)
    j = json.loads(out)
    assert code == 1
    assert j["unknown_labels"] == ["S3"]
    assert j["uncited_sentences"] == ["Contact support to start.", "See [the desk](https://nimbus-refund-desk.example/x)."]
    assert j["unsupported"][0]["label"] == "S1" and "20%" in j["unsupported"][0]["reason"]
    assert j["flagged_links"][0]["domain"] == "nimbus-refund-desk.example"
    assert j["refusal"] is False and "nimbus-refund-desk" not in j["stripped_answer"]


def test_cli_check_text(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", "-a", str(files["bad"]), "-b", str(files["brief"])], monkeypatch, capsys)
    assert code == 1 and "unknown labels" in out and "uncited" in out and "finding" in out


def test_cli_check_refusal(tmp_path: Path, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    ans = tmp_path / "refusal.txt"
    ans.write_text(REFUSAL + "\n")
    code, out, _ = run_cli(["check", "-a", str(ans), "-b", str(files["brief"]), "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["refusal"] is True


def test_cli_check_bad_brief(tmp_path: Path, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"sources": {"S1": {"doc": "x", "text": 5}}}))
    code, out, err = run_cli(["check", "-a", str(files["clean"]), "-b", str(bad)], monkeypatch, capsys)
    assert code == 2 and str(bad) in err and "sources.S1.text" in err and err.count("\n") == 1
    code, _, err = run_cli(["check", "-a", str(tmp_path / "none.txt"), "-b", str(bad)], monkeypatch, capsys)
    assert code == 2 and "none.txt" in err


# -- the local model helpers (no model needed) ---------------------------------------------------


def test_model_path_joins_parts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from docket.llm import local

    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path / "cache"))
    parts = []
    for n in (1, 2, 3):
        p = tmp_path / f"part{n:02d}.bin"
        p.write_bytes((b"GGUF" if n == 1 else b"") + bytes([n]) * 10)
        parts.append(p)
        mod = types.ModuleType(f"fakeparts_{n}")
        mod.get_part_path = lambda p=p: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fakeparts_{n}", mod)
    monkeypatch.setitem(local.MODELS, "tiny", local.LocalModel("tiny", "tiny", "tiny.gguf", "fakeparts-{n}", "fakeparts_{n}", 3, None))
    out = local.model_path("tiny")
    assert out.read_bytes() == b"".join(p.read_bytes() for p in parts)
    mtime = out.stat().st_mtime_ns
    assert local.model_path("tiny") == out and out.stat().st_mtime_ns == mtime  # cached
    # a bad join (no GGUF magic) is refused and leaves nothing behind
    parts[0].write_bytes(b"XXXX" + bytes([1]) * 11)
    with pytest.raises(Exception, match="invalid"):
        local.model_path("tiny")
    assert not list(out.parent.glob("*.part-*"))


def test_local_status_and_stop_without_a_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from docket.errors import UnavailableError
    from docket.llm import generator_from_url, local

    monkeypatch.setenv("DOCKET_CACHE", str(tmp_path))
    assert local.status() is None and local.stop() is None
    # a stale state file (dead pid) is cleaned up, never acted on
    local.state_file().parent.mkdir(parents=True)
    local.state_file().write_text(json.dumps({"pid": 2**22 + 7, "host": "127.0.0.1", "port": 1, "url": "http://127.0.0.1:1/v1",
                                              "model": "m", "model_path": "m.gguf", "log": "l", "started": 0}))
    assert local.status() is None and not local.state_file().exists()
    with pytest.raises(UnavailableError, match="serve-local"):
        generator_from_url("local")


def test_unknown_local_model() -> None:
    from docket.errors import InputError
    from docket.llm import local

    with pytest.raises(InputError, match="0.5b"):
        local.model_path("7b")
