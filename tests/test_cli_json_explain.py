"""`--json` and `--explain` together on `docket assemble` and `docket ask`: stdout stays the JSON
contract alone (byte for byte what `--json` prints), and the decisions table `--explain` asks
for goes to stderr, where it used to be dropped without a word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

TABLE = "Decisions (trace)"


@pytest.fixture(scope="module")
def chunks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("je") / "c.jsonl"
    rows = [{"id": "r1", "doc": "refund", "text": "Annual plans are refundable within 30 days.", "source_type": "policy"},
            {"id": "r2", "doc": "help", "text": "Refunds are made in the app.", "source_type": "help"}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.fixture(scope="module")
def db(chunks: Path) -> Path:
    out = chunks.parent / "s.db"
    r = run("index", str(chunks), "--db", str(out), "--embedder", "hash", "--json")
    assert r.returncode == 0, r.stderr
    return out


def _assemble(chunks: Path, *flags: str):  # noqa: ANN202
    return run("assemble", "-q", "annual plan refund", "--store", str(chunks), "--floor", "0", "--as-of", "2026-01-01",
               *flags)


def _ask(db: Path, *flags: str):  # noqa: ANN202
    return run("ask", "annual plan refund", "--db", str(db), "--floor", "0", "--as-of", "2026-01-01", *flags)


def _json(stdout: str) -> Any:
    return json.loads(stdout)  # the whole of stdout: nothing else printed there


@pytest.mark.parametrize("command", ["assemble", "ask"])
def test_json_with_explain_keeps_stdout_pure_and_puts_the_table_on_stderr(command: str, chunks: Path, db: Path) -> None:
    go = (lambda *f: _assemble(chunks, *f)) if command == "assemble" else (lambda *f: _ask(db, *f))
    plain, explained = go("--json"), go("--json", "--explain")
    assert plain.returncode == explained.returncode == 0, explained.stderr
    assert explained.stdout == plain.stdout  # the JSON contract, unchanged by --explain
    assert _json(explained.stdout)["trace"]
    assert TABLE in explained.stderr and "versions" in explained.stderr  # the table, with its rows
    assert TABLE not in plain.stderr


@pytest.mark.parametrize("command", ["assemble", "ask"])
def test_explain_without_json_prints_the_table_on_stdout_as_before(command: str, chunks: Path, db: Path) -> None:
    go = (lambda *f: _assemble(chunks, *f)) if command == "assemble" else (lambda *f: _ask(db, *f))
    explained, plain = go("--explain"), go()
    assert TABLE in explained.stdout and TABLE not in explained.stderr
    assert TABLE not in plain.stdout and TABLE not in plain.stderr


def test_json_explain_with_llm_keeps_stdout_pure(chunks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --llm too: the JSON (brief, answer, check) on stdout, the table on stderr."""
    from docket.cli import answer_show
    from docket.llm import answer as llm_answer

    class Scripted:
        name = "scripted"

        def generate(self, messages: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> str:
            return "Annual plans are refundable within 30 days [S1]."

    def fake(brief: Any, url: Any = None, model: Any = None, **kw: Any) -> Any:
        return llm_answer.run_and_check(brief, generator=Scripted(), **kw)

    monkeypatch.setattr(answer_show, "run_and_check", fake)
    r = _assemble(chunks, "--json", "--explain", "--llm", "http://127.0.0.1:9/v1")
    out = _json(r.stdout)
    assert out["answer"]["text"].startswith("Annual plans") and TABLE in r.stderr
