"""Bad input gets one clear line naming the record and the field (exit 2), never a traceback."""

import json
import subprocess
import sys

import pytest

from docket.assemble import assemble
from docket.demo import REFUND_QUESTION, nimbus_path
from docket.errors import InputError
from docket.io import load_candidates, load_chunks
from docket.model import parse_chunk
from docket.policy import load_policy
from docket.store.base import MemoryStore

from helpers import mk


def write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return p


GOOD = {"id": "a", "doc": "d", "text": "Some text."}


@pytest.mark.parametrize(
    "record, field, words",
    [
        ({"doc": "d", "text": "x"}, "id", "required"),
        ({"id": "a", "text": "x"}, "doc", "required"),
        ({"id": "a", "doc": "d"}, "text", "required"),
        ({"id": "a", "doc": "d", "text": "   "}, "text", "empty"),
        ({"id": "a", "doc": "d", "text": "x", "version": "three"}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "version": 2.5}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "version": True}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "date": "01/03/2026"}, "date", "ISO date"),
        ({"id": "a", "doc": "d", "text": "x", "date": "2026-02-30"}, "date", "ISO date"),
        ({"id": "a", "doc": "d", "text": "x", "position": "first"}, "position", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "vector": [0.1, float("nan")]}, "vector", "NaN"),
        ({"id": "a", "doc": "d", "text": "x", "trust": "maybe"}, "trust", ""),
        ({"id": "a", "doc": "d", "text": "x", "date": "2026-03-01", "effective_to": "2025-01-01"}, "record", "before"),
    ],
)
def test_bad_chunk_fields_name_record_and_field(record, field, words):
    with pytest.raises(InputError) as e:
        parse_chunk(record, where="chunks.jsonl:7")
    msg = str(e.value)
    assert "chunks.jsonl:7" in msg
    if field != "record":
        assert f"field '{field}'" in msg
    assert words in msg
    assert "\n" not in msg


def test_unknown_fields_are_kept_in_metadata_not_dropped():
    c = parse_chunk({**GOOD, "url": "https://x", "metadata": {"k": 1}})
    assert c.metadata == {"k": 1, "url": "https://x"}


def test_duplicate_ids_rejected_with_both_lines(tmp_path):
    p = write(tmp_path, "c.jsonl", [GOOD, {**GOOD, "text": "other"}])
    with pytest.raises(InputError, match=r"c.jsonl:2.*duplicate id 'a' \(first on line 1\)"):
        load_chunks(p)


def test_line_that_is_not_json(tmp_path):
    p = write(tmp_path, "c.jsonl", [GOOD, "{not json"])
    with pytest.raises(InputError, match=r"c.jsonl:2: is not valid JSON"):
        load_chunks(p)


def test_candidates_nan_unknown_and_repeated(tmp_path):
    store = MemoryStore([mk("a"), mk("b")])
    for lines, pat in (
        (['{"id": "a", "score": NaN}'], r"field 'score': must be finite"),
        ([{"id": "zz", "score": 0.5}], r"'zz'.*not in the store"),
        ([{"id": "a", "score": 0.5}, {"id": "a", "score": 0.4}], "ranked twice"),
        ([{"id": "a", "score": "high"}], "must be a number"),
        ([{"score": 0.5}], "field 'id'"),
    ):
        with pytest.raises(InputError, match=pat):
            load_candidates(write(tmp_path, "r.jsonl", lines), store)


def test_vectors_wrong_size_or_not_normalised():
    from docket.embed import HashEmbedder

    emb = HashEmbedder(dim=4)
    bad_dim = mk("a", vector=[1.0, 0.0, 0.0])
    with pytest.raises(InputError, match=r"chunk 'a'.*field 'vector'.*3 dimensions"):
        assemble("q?", store=MemoryStore([bad_dim]), embedder=emb)
    not_unit = mk("a", vector=[1.0, 1.0, 0.0, 0.0])
    with pytest.raises(InputError, match=r"not unit length"):
        assemble("q?", store=MemoryStore([not_unit]), embedder=emb)


def test_budget_smaller_than_any_passage_is_documented_not_found():
    from docket.demo import nimbus_chunks

    brief = assemble(REFUND_QUESTION, store=MemoryStore(nimbus_chunks()), budget=10)
    assert brief.found is False
    assert any("smaller than every passage" in w for w in brief.warnings)
    assert any(e["action"] == "skip" for e in brief.trace)  # nothing silently dropped


def test_policy_unknown_setting_and_bad_values(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[dedup]\nthreshhold = 0.9\n")
    with pytest.raises(InputError, match=r"field 'dedup.threshhold': is not a known setting"):
        load_policy(p)
    p.write_text("[dedup]\nthreshold = 1.5\n")
    with pytest.raises(InputError, match=r"dedup.threshold"):
        load_policy(p)
    p.write_text("[order]\nmode = 'sideways'\n")
    with pytest.raises(InputError, match=r"order.mode"):
        load_policy(p)
    p.write_text("[dedup\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_policy(p)
    for text, field, hint in (("[pack]\nmargin = -1\n", "pack.margin", "greater than 0"),
                              ("[render]\nspotlight = 'yes'\n", "render.spotlight", "'off' or 'datamark'"),
                              ("[pack]\nuntrusted = 'sometimes'\n", "pack.untrusted", "'use', 'fallback' or 'never'"),
                              ("[rescore]\nlink_rounds = 0\n", "rescore.link_rounds", "greater than or equal to 1")):
        p.write_text(text)
        with pytest.raises(InputError, match=rf"field '{field}'.*{hint}"):
            load_policy(p)


def test_empty_question():
    with pytest.raises(InputError, match="question"):
        assemble("  ", store=MemoryStore([mk("a")]))


@pytest.mark.parametrize(
    "args, expect",
    [
        (["--budget", "0"], "--budget"),
        (["--as-of", "June 2024"], "--as-of"),
        (["--format", "yaml"], "--format"),
        (["--policy", "/nonexistent.toml"], "file not found"),
        (["--candidates", "/nonexistent.jsonl"], "file not found"),
    ],
)
def test_cli_errors_are_one_line_exit_2(args, expect):
    proc = subprocess.run([sys.executable, "-m", "docket", "assemble", "--store", nimbus_path(), "--question",
                           REFUND_QUESTION, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert expect in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_cli_bad_store_line(tmp_path):
    p = write(tmp_path, "c.jsonl", [GOOD, {"id": "b", "doc": "d", "text": "t", "version": "x"}])
    proc = subprocess.run([sys.executable, "-m", "docket", "assemble", "--store", str(p), "--question", "q"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "c.jsonl:2 (id 'b'), field 'version'" in proc.stderr


def test_the_example_policy_is_every_default_spelled_out():
    """examples/policy.toml says "every setting with its default": keep it true as settings change."""
    from pathlib import Path

    from docket.policy import Policy, load_policy

    example = load_policy(Path(__file__).resolve().parents[1] / "examples" / "policy.toml")
    assert example.model_dump() == Policy().model_dump()
