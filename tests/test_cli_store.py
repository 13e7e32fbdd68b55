"""`docket index`, `ask`, `export`, `principal`, `delete` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from typer.testing import CliRunner

from docket.cli import _register, app
from docket.errors import InputError

_register()
runner = CliRunner()


def docket(*args: str):  # noqa: ANN201
    return runner.invoke(app, list(args))


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "refund.md").write_text("---\ndoc: refund\nversion: 2\nsource_type: policy\n---\n# Refund policy\n\n"
                                 "## Annual plans\n\nAnnual plans refund within 14 days of purchase.\n\n"
                                 "## Fees\n\nThe early termination fee for annual plans is 50 euros.\n")
    (d / "salaries.txt").write_text("Salary bands for annual reviews are secret.\n")
    (d / "salaries.txt.meta.yaml").write_text("acl: [finance]\n")
    (d / "faq.jsonl").write_text(json.dumps({"id": "faq-1", "doc": "faq", "text": "Annual plans refund quickly.",
                                             "source_type": "help"}) + "\n")
    return d


def test_index_then_ask_json(docs: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    r = docket("index", str(docs), "--db", db, "--embedder", "hash", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert sorted(report["added"]) == ["faq v1", "refund v2", "salaries.txt v1"] and report["problems"] == []
    again = json.loads(docket("index", str(docs), "--db", db, "--json").output)
    assert again["unchanged"] == 3 and again["chunks_embedded"] == 0

    r = docket("ask", "annual plans refund", "--db", db, "--floor", "0", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert {"found", "messages", "sources", "tokens", "trace", "conflicts"} <= set(out)
    assert out["found"] is True
    assert "Salary" not in json.dumps(out)  # anonymous: the finance-only file is invisible
    r = docket("ask", "salary bands annual", "--db", db, "--floor", "0", "--principal", "ann", "--groups", "finance",
               "--json")
    assert "Salary bands" in json.dumps(json.loads(r.output)["messages"])
    # the principals table gives the same result without --groups
    assert docket("principal", "ann", "--db", db, "--groups", "finance").exit_code == 0
    r = docket("ask", "salary bands annual", "--db", db, "--floor", "0", "--principal", "ann", "--json")
    assert "Salary bands" in json.dumps(json.loads(r.output)["messages"])
    # readable output
    r = docket("ask", "annual plans refund", "--db", db, "--floor", "0")
    assert r.exit_code == 0 and "Ranked candidates" in r.output


def test_ask_says_on_stderr_when_the_store_is_empty(docs: Path, tmp_path: Path) -> None:
    """An empty store (made by the API, or emptied by deletes) answers "not found" to everything;
    asking it says so (stderr), with the fix. A store with chunks that answers nothing for this
    asker gives no such line. (`docket index` itself no longer leaves a new store empty.)"""
    from cli_run import run

    from docket.api import Session

    empty = str(tmp_path / "empty.db")
    Session.open(empty, create=True).close()
    r = run("ask", "annual plans refund", "--db", empty, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["found"] is False
    assert f"the store {empty} holds no chunks" in r.stderr and f"docket index PATH --db {empty}" in r.stderr
    full = str(tmp_path / "full.db")
    assert run("index", str(docs / "salaries.txt"), "--db", full, "--embedder", "hash").returncode == 0
    r = run("ask", "salary bands", "--db", full, "--json")  # anonymous: the only chunk is finance's
    assert json.loads(r.stdout)["found"] is False and "holds no chunks" not in r.stderr


def test_index_reports_problems_and_exits_1(docs: Path, tmp_path: Path) -> None:
    (docs / "notes.xlsx").write_bytes(b"PK")
    r = docket("index", str(docs), "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--json")
    assert r.exit_code == 1
    report = json.loads(r.output)
    assert len(report["added"]) == 3 and "unsupported file type '.xlsx'" in report["problems"][0]["message"]


def test_export_and_delete(docs: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    docket("index", str(docs), "--db", db, "--embedder", "hash")
    out = tmp_path / "out.jsonl"
    assert docket("export", str(out), "--db", db).exit_code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["doc"] for r in records} == {"faq", "refund", "salaries.txt"}
    assert all(len(r["vector"]) == 256 for r in records)
    # re-indexing the export elsewhere reuses its vectors
    r = docket("index", str(out), "--db", str(tmp_path / "t.db"), "--embedder", "hash", "--json")
    assert json.loads(r.output)["chunks_embedded"] == 0
    assert docket("delete", "faq", "--db", db).exit_code == 0
    r = docket("delete", "faq", "--db", db)
    assert isinstance(r.exception, InputError)


@pytest.mark.postgres
def test_move_a_store_to_postgres_and_back(docs: Path, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    db = str(tmp_path / "s.db")
    docket("index", str(docs), "--db", db, "--embedder", "hash")
    r = docket("index", "--from", db, "--db", pg_url, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["chunks_embedded"] == 0
    back = str(tmp_path / "back.db")
    assert docket("index", "--from", pg_url, "--db", back, "--json").exit_code == 0

    def sources(location: str) -> dict:  # type: ignore[type-arg]
        r = docket("ask", "annual plans refund", "--db", location, "--floor", "0", "--json", "--mode", "dense")
        return {k: v["chunks"] for k, v in json.loads(r.output)["sources"].items()}

    assert sources(db) == sources(pg_url) == sources(back)


def test_principal_says_when_it_made_a_new_store(tmp_path: Path) -> None:
    """`docket principal ann --groups finance` in the wrong folder (or with a mistyped --db) made an empty
    docket.db there without a word; the groups then applied to a store nobody asked."""
    db = str(tmp_path / "fresh.db")
    r = docket("principal", "ann", "--db", db, "--groups", "finance")
    assert r.exit_code == 0 and "fresh.db did not exist: made a new store holding only this principal" in \
        " ".join(r.output.split())
    r = docket("principal", "ann", "--db", db, "--groups", "finance,hr")
    assert r.exit_code == 0 and "did not exist" not in r.output and json.loads(r.output)["groups"] == ["finance", "hr"]


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("docket")
    r = subprocess.run([str(exe), "ask", "anything", "--db", str(tmp_path / "missing.db")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no store here" in r.stderr
