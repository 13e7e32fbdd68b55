"""A source type the authority table does not name ranks at default_authority, and says so: in
Move 1's trace (once per type, naming the chunks, the authority used and the type it likely meant)
and when `docket index` writes it (stderr, or the --json report's "warnings"). The prompt is the
one the same chunks always made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run

from docket.assemble import assemble
from docket.model import parse_chunk
from docket.policy import Policy, VersionsPolicy
from docket.store.base import MemoryStore

Q = "Can I get a refund on my annual plan?"


def _brief(source_type: str | None, policy: Policy | None = None, trust: str | None = None):
    rec = {"id": "pol-1", "doc": "refund", "text": "Annual plans are refundable within 30 days."}
    if source_type is not None:
        rec["source_type"] = source_type
    if trust is not None:
        rec["trust"] = trust
    chunks = [parse_chunk(rec),
              parse_chunk({"id": "help-1", "doc": "help", "text": "Annual plans can be refunded in the app.",
                           "source_type": "help"})]
    return assemble(Q, store=MemoryStore(chunks), budget=500, floor=0.0, policy=policy)


def _notes(brief):
    return [e for e in brief.trace if e.action == "note" and "source_type" in e.numbers]


def test_a_misspelt_source_type_is_said_once_with_the_authority_used_and_the_type_meant() -> None:
    brief = _brief("polcy")
    (note,) = _notes(brief)
    assert note.move == "versions" and note.chunks == ["pol-1"]
    assert note.reason.startswith("source_type 'polcy' is not in the authority table: ranked at default_authority 50; "
                                  "did you mean 'policy'?")
    assert note.numbers == {"source_type": "polcy", "authority": 50, "did_you_mean": "policy", "passages": 1}


def test_an_unknown_source_type_without_a_close_one_names_the_table() -> None:
    (note,) = _notes(_brief("wiki"))
    assert "did you mean" not in note.reason and "did_you_mean" not in note.numbers
    assert "blog, docs, faq, forum, help, legal, policy, user" in note.reason and "[versions.authority]" in note.reason


def test_an_untrusted_chunk_of_an_unknown_type_says_its_capped_authority() -> None:
    (note,) = _notes(_brief("wiki", trust="untrusted"))
    assert "default_authority 50 (10 for untrusted text)" in note.reason and note.numbers["authority"] == 10


@pytest.mark.parametrize("source_type", ["policy", "Policy", "HELP", "forum", None])
def test_a_known_or_absent_source_type_gets_no_note(source_type: str | None) -> None:
    assert _notes(_brief(source_type)) == []


def test_a_type_the_policy_names_gets_no_note() -> None:
    pol = Policy().updated(versions={"authority": {**VersionsPolicy().authority, "wiki": 70}})
    assert _notes(_brief("wiki", policy=pol)) == []


def test_the_note_changes_no_prompt_byte() -> None:
    """The same chunks with a source type the table ranks at the default (a policy naming it at 50)
    make the same prompt: the note is the only difference."""
    typo = _brief("polcy")
    named = _brief("polcy", policy=Policy().updated(versions={"authority": {**VersionsPolicy().authority,
                                                                              "polcy": 50}}))
    assert (typo.system, typo.user) == (named.system, named.user)
    assert _notes(typo) and not _notes(named)


def test_close_types() -> None:
    v = VersionsPolicy()
    assert [v.source_type_meant(s) for s in ("polcy", " policy", "Legl", "faqs", "policies", "wiki", "internal")] == [
        "policy", "policy", "legal", "faq", "policy", None, None]
    assert v.ranks_source_type("Policy") and not v.ranks_source_type(" policy")


# --- docket index ---------------------------------------------------------------------------------


@pytest.fixture()
def records(tmp_path: Path) -> Path:
    p = tmp_path / "c.jsonl"
    rows = [{"id": "a", "doc": "refund", "text": "Annual plans are refundable within 30 days.", "source_type": "polcy"},
            {"id": "b", "doc": "refund", "text": "Monthly plans are not refundable.", "source_type": "polcy"},
            {"id": "c", "doc": "help", "text": "Refunds are made in the app.", "source_type": "Help"},
            {"id": "d", "doc": "wiki", "text": "Refunds take a week.", "source_type": "wiki"},
            {"id": "e", "doc": "plain", "text": "No source type here."}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_index_warns_on_stderr_once_per_unknown_source_type(records: Path, tmp_path: Path) -> None:
    r = run("index", str(records), "--db", str(tmp_path / "s.db"), "--embedder", "hash")
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("docket: warning: source_type")]
    assert lines == [
        "docket: warning: source_type 'polcy' (2 chunks) is not in the default authority table, so it ranks at "
        "default_authority 50; did you mean 'policy'? (known: blog, docs, faq, forum, help, legal, policy, user; a "
        "policy's [versions.authority] can rank it)",
        "docket: warning: source_type 'wiki' (1 chunk) is not in the default authority table, so it ranks at "
        "default_authority 50 (known: blog, docs, faq, forum, help, legal, policy, user; a policy's "
        "[versions.authority] can rank it)"]
    assert "warning" not in r.stdout


def test_index_json_carries_the_warnings_and_keeps_stderr_quiet(records: Path, tmp_path: Path) -> None:
    r = run("index", str(records), "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--json")
    assert r.returncode == 0
    report = json.loads(r.stdout)
    assert report["source_types"] == {"Help": 1, "polcy": 2, "wiki": 1}
    assert [w.split(" (")[0] for w in report["warnings"]] == ["source_type 'polcy'", "source_type 'wiki'"]
    assert "warning" not in r.stderr


def test_index_of_known_source_types_warns_nothing(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": "a", "doc": "refund", "text": "Refunds within 30 days.", "source_type": "policy"})
                 + "\n")
    r = run("index", str(p), "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--json")
    assert json.loads(r.stdout)["warnings"] == [] and "warning" not in r.stderr


def test_authority_keys_are_matched_in_lower_case() -> None:
    """`[versions.authority] Wiki = 70` once never matched (Move 1 lowers the chunk's type, not
    the table's keys): the chunk ranked at default_authority, silently."""
    from docket.model import Chunk
    from docket.moves.versions import authority
    from docket.policy import load_policy_dict

    pol = load_policy_dict({"versions": {"authority": {"Wiki": 70, "POLICY": 100}}}).versions
    assert pol.authority == {"wiki": 70, "policy": 100}
    assert authority(Chunk(id="c", doc="d", text="t", source_type="wiki"), pol) == 70
    assert authority(Chunk(id="c", doc="d", text="t", source_type="Wiki"), pol) == 70
    assert pol.ranks_source_type("WIKI")
    assert VersionsPolicy(authority={"Docs": 80, "docs": 80}).authority == {"docs": 80}  # the same value twice: one


def test_authority_keys_folding_to_one_with_different_values_are_refused() -> None:
    from docket.errors import InputError
    from docket.policy import load_policy_dict

    with pytest.raises(InputError) as e:
        load_policy_dict({"versions": {"authority": {"Wiki": 70, "wiki": 20}}})
    msg = str(e.value)
    assert "versions.authority" in msg and "'Wiki' = 70" in msg and "'wiki' = 20" in msg and "keep one" in msg
