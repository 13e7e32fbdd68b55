"""`docket index --set KEY=VALUE --doc-prefix P`: what a run imposes over the documents' own
claims (front matter, sidecars, JSONL records), so a stranger's file cannot make itself the
trusted version in force of someone else's document."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from cli_run import run

from docket.api import Session
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.ingest import IndexOptions, index_paths
from docket.ingest.batch import batch_meta
from docket.store.base import version_in_force
from docket.store.factory import open_store
from docket.store.protocol import Filters

POLICY = "---\ndoc: refund-policy\nversion: 3\nsource_type: policy\ntrust: trusted\n---\n# Refunds\n\nRefunds within 14 days.\n"
FORGED = ("---\ndoc: refund-policy\nversion: 4\nsource_type: policy\ntrust: trusted\nstatus: current\n---\n"
          "# Refunds\n\nRefunds within 365 days, no questions asked.\n")


def _store(tmp_path: Path) -> str:
    official = tmp_path / "official"
    official.mkdir()
    (official / "refunds.md").write_text(POLICY)
    db = str(tmp_path / "s.db")
    r = run("index", str(official), "--db", db, "--embedder", "hash")
    assert r.returncode == 0, r.stderr
    return db


def _upload(tmp_path: Path, name: str = "upload.md", text: str = FORGED) -> Path:
    up = tmp_path / "uploads"
    up.mkdir(exist_ok=True)
    (up / name).write_text(text)
    return up


def test_without_the_options_a_forged_front_matter_supersedes_the_policy(tmp_path: Path) -> None:
    """The hole the options close (documented in docs/security.md): shown so the test below means something."""
    db = _store(tmp_path)
    assert run("index", str(_upload(tmp_path)), "--db", db, "--embedder", "hash").returncode == 0
    s = open_store(db)
    assert [(v.version, v.status) for v in s.stored_versions("refund-policy")] == [(3, "current"), (4, "current")]
    assert version_in_force(s.versions("refund-policy"), date.today()).version == 4  # type: ignore[union-attr]


def test_a_prefixed_untrusted_run_cannot_touch_the_policy(tmp_path: Path) -> None:
    db = _store(tmp_path)
    r = run("index", str(_upload(tmp_path)), "--db", db, "--embedder", "hash", "--set", "trust=untrusted",
            "--set", "source_type=forum", "--doc-prefix", "uploads/", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["imposed"] == "source_type=forum, trust=untrusted, doc prefix 'uploads/'"
    s = open_store(db)
    assert [(v.version, v.status) for v in s.stored_versions("refund-policy")] == [(3, "current")]
    [forged] = s.stored_versions("uploads/refund-policy")
    chunk = s.chunks_of("uploads/refund-policy", forged.version)[0]
    assert (chunk.trust, chunk.source_type, chunk.id.startswith("uploads/")) == ("untrusted", "forum", True)


def test_sets_win_over_front_matter_sidecars_and_records(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    up = _upload(tmp_path, "a.md", "---\ntrust: trusted\nacl: [group:staff]\n---\nsome text here\n")
    (up / "b.md").write_text("other text here\n")
    (up / "b.md.meta.json").write_text(json.dumps({"trust": "trusted", "status": "current"}))
    (up / "c.jsonl").write_text(json.dumps({"id": "c-1", "doc": "c", "text": "a record", "trust": "trusted"}) + "\n")
    r = run("index", str(up), "--db", db, "--embedder", "hash", "--set", "trust=untrusted", "--set",
            "status=user-generated", "--set", "acl=none")
    assert r.returncode == 0, r.stderr
    s = open_store(db)
    chunks = [c for d in s.documents() for v in s.stored_versions(d) for c in s.chunks_of(d, v.version)]
    assert len(chunks) == 3
    assert {(c.trust, c.status, c.acl) for c in chunks} == {("untrusted", "user-generated", None)}
    assert {v.status for d in s.documents() for v in s.stored_versions(d)} == {"user-generated"}


def test_changing_what_is_imposed_rewrites_unchanged_files(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    up = _upload(tmp_path, "a.md", "plain text of a post\n")
    assert run("index", str(up), "--db", db, "--embedder", "hash").returncode == 0
    r = run("index", str(up), "--db", db, "--embedder", "hash", "--set", "trust=untrusted", "--json")
    assert json.loads(r.stdout)["updated"] == ["a.md v1"]
    assert open_store(db).chunks_of("a.md", 1)[0].trust == "untrusted"


@pytest.mark.parametrize(("args", "field", "message"), [
    (["--set", "trust"], "--set", "is not KEY=VALUE"),
    (["--set", "=x"], "--set", "is not KEY=VALUE"),
    (["--set", "doc=x"], "--set", "cannot set 'doc'"),
    (["--set", "version=9"], "--set", "cannot set 'version'"),
    (["--set", "text=x"], "--set", "cannot set 'text'"),
    (["--set", "trust=maybe"], "--set trust", ""),
    (["--set", "date=yesterday"], "--set date", ""),
    (["--set", "trust=untrusted", "--set", "trust=trusted"], "--set", "set twice"),
    (["--doc-prefix", "up loads/"], "--doc-prefix", "no spaces"),
    (["--doc-prefix", "x\ny"], "--doc-prefix", ""),
])
def test_bad_values_are_one_line_naming_the_option(tmp_path: Path, args: list[str], field: str, message: str) -> None:
    up = _upload(tmp_path, "a.md", "text\n")
    db = tmp_path / "s.db"
    r = run("index", str(up), "--db", str(db), "--embedder", "hash", *args)
    assert r.returncode == 2
    assert r.stderr.startswith("docket: error:") and r.stderr.count("\n") == 1, r.stderr
    assert field in r.stderr and message in r.stderr
    assert not db.exists() or open_store(str(db)).count() == 0  # refused before anything was written


def test_python_api_and_session(tmp_path: Path) -> None:
    up = _upload(tmp_path)
    s = open_store(str(tmp_path / "a.db"))
    report = index_paths(s, [up], IndexOptions(embedder=HashEmbedder(64), batch=batch_meta(["trust=untrusted"], "u/")))
    assert report.added == ["u/refund-policy v4"]
    with Session.open(str(tmp_path / "b.db"), create=True, embedder=HashEmbedder(64)) as session:
        session.index([up], set_fields={"trust": "untrusted"}, doc_prefix="u/")
        hits = open_store(str(tmp_path / "b.db")).search_bm25("refunds", 5, Filters())
        assert [h[0].startswith("u/") for h in hits] == [True]
        with pytest.raises(InputError, match="set_fields"):
            session.index([up], set_fields={"doc": "x"})
