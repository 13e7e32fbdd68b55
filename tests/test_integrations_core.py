"""The parts every integration shares, without any framework: field mapping, scores, the store
look-ups, history, and the packaging promises (lazy imports, extras that match what CI runs)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from datetime import date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from integration_cases import records

from docket.errors import InputError, UnavailableError
from docket.integrations import FieldMap
from docket.integrations.common import Options, run
from docket.integrations.lookup import CallLookup, ScanSource
from docket.integrations.mapping import RawDoc, map_documents, to_chunk
from docket.tokens import WordCounter

REPO = Path(__file__).resolve().parents[1]
Q = "Can I get a refund on my annual plan after 30 days?"


def raw(n: int = 1, text: str = "Refunds take ten business days.", meta: dict | None = None, **kw) -> RawDoc:
    return RawDoc(where=f"test document {n}", text=text, text_field="page_content",
                  metadata={"doc": "d"} if meta is None else meta, **kw)


def nimbus_raws(scores: bool = False) -> list[RawDoc]:
    return [raw(n, r["text"], r["metadata"], id=r["id"], score=0.9 - n / 100 if scores else None)
            for n, r in enumerate(records(), 1)]


# -- mapping ----------------------------------------------------------------------------------------


def test_default_mapping_reads_docket_keys_and_keeps_the_rest():
    meta = {"doc": "refund-policy", "version": "3", "status": "Current", "date": datetime(2026, 3, 1, 9, 30),
            "title": "Refunds", "section": "Annual", "position": 4, "source_type": "policy", "acl": "finance",
            "author": "ann"}
    chunk, score = to_chunk(raw(meta=meta, id="c1"), FieldMap())
    assert (chunk.id, chunk.doc, chunk.version, chunk.status, chunk.date) == ("c1", "refund-policy", 3, "current",
                                                                             date(2026, 3, 1))
    assert chunk.acl == ("finance",) and chunk.position == 4 and chunk.metadata == {"author": "ann"}
    assert score is None


def test_framework_id_wins_and_metadata_id_is_the_fallback():
    assert to_chunk(raw(meta={"doc": "d", "id": "meta-id"}, id="fw-id"), FieldMap())[0].id == "fw-id"
    assert to_chunk(raw(meta={"doc": "d", "chunk_id": "c9"}), FieldMap())[0].id == "c9"


def test_conventions_fill_in_only_when_docket_keys_are_absent():
    conv = {"doc": ("metadata['source']", "file.md")}
    assert to_chunk(raw(meta={}, id="a", conventions=conv), FieldMap())[0].doc == "file.md"
    assert to_chunk(raw(meta={"doc": "real"}, id="a", conventions=conv), FieldMap())[0].doc == "real"
    with pytest.raises(InputError, match="field 'doc': is required"):
        to_chunk(raw(meta={}, id="a", conventions=conv), FieldMap(conventions=False))
    with pytest.raises(InputError, match="field 'doc': is required"):  # a custom key replaces the convention
        to_chunk(raw(meta={}, id="a", conventions=conv), FieldMap(keys={"doc": "policy_id"}))


@pytest.mark.parametrize("meta, match", [
    ({"doc": "d", "version": "v3"}, "field 'version': must be an integer, got 'v3'"),
    ({"doc": "d", "version": True}, "field 'version': must be an integer, not a boolean"),
    ({"doc": "d", "date": "1 March"}, "field 'date': must be an ISO date like 2026-03-01"),
    ({"doc": "d", "status": "  "}, "field 'status': must not be empty"),
    ({"doc": "d", "trust": "high"}, "field 'trust'"),
    ({"doc": "d", "position": 2.5}, "field 'position': must be an integer"),
    ({"doc": "d", "date": "2026-03-01", "effective_to": "2025-01-01"}, "effective_to 2025-01-01 is before date"),
    ({"doc": "  "}, "field 'doc': must be a non-empty string"),
])
def test_bad_values_get_the_clis_messages(meta, match):
    with pytest.raises(InputError, match=match) as err:
        to_chunk(raw(meta=meta, id="c1"), FieldMap())
    assert str(err.value).startswith("test document 1 (id 'c1')")


def test_missing_id_and_text_problems_name_the_framework_field():
    with pytest.raises(InputError, match=r"field 'id': is required but missing \(looked in the framework's own id"):
        to_chunk(raw(), FieldMap())
    with pytest.raises(InputError, match="field 'page_content': is empty"):
        to_chunk(raw(text="   ", id="a"), FieldMap())
    with pytest.raises(InputError, match="field 'page_content': must be text, got NoneType"):
        to_chunk(raw(text=None, id="a"), FieldMap())
    with pytest.raises(InputError, match="field 'metadata': must be a dict"):
        to_chunk(raw(meta=["doc"], id="a"), FieldMap())  # type: ignore[arg-type]


def test_hook_wins_and_is_checked():
    fm = FieldMap(hook=lambda obj: {"doc": obj["policy"], "text": obj["body"], "score": 0.7, "status": None})
    chunk, score = to_chunk(raw(meta={"doc": "x", "status": "draft"}, id="a", obj={"policy": "p", "body": "Hi there."}),
                            fm)
    assert (chunk.doc, chunk.text, chunk.status, score) == ("p", "Hi there.", "current", 0.7)
    with pytest.raises(InputError, match="returned 'verison', which is not a docket field"):
        to_chunk(raw(id="a"), FieldMap(hook=lambda obj: {"verison": 2}))
    with pytest.raises(InputError, match="must return a dict of docket fields, got list"):
        to_chunk(raw(id="a"), FieldMap(hook=lambda obj: []))


@pytest.mark.parametrize("kwargs, match", [
    ({"keys": {"text": "body"}}, "'text' is not a docket field that can be mapped"),
    ({"keys": {"doc": ""}}, "FieldMap.keys.doc"),
    ({"keys": {"doc": 3}}, "FieldMap.keys.doc"),
    ({"keys": ["doc"]}, "FieldMap.keys"),
    ({"hook": "lambda"}, "FieldMap.hook"),
    ({"score_keys": "score"}, "FieldMap.score_keys"),
])
def test_fieldmap_checks_itself(kwargs, match):
    with pytest.raises(InputError, match=match):
        FieldMap(**kwargs)


@pytest.mark.parametrize("score, match", [("0.9", "must be a number"), (True, "must be a number"),
                                          (float("inf"), "must be finite")])
def test_bad_scores_name_the_document(score, match):
    with pytest.raises(InputError, match=rf"test document 1 \(id 'a'\), field 'score': {match}"):
        to_chunk(raw(id="a", score=score), FieldMap())


def test_scores_from_metadata_and_numpy():
    import numpy as np

    assert to_chunk(raw(meta={"doc": "d", "relevance_score": 0.8}, id="a"), FieldMap())[1] == 0.8
    assert to_chunk(raw(id="a", score=np.float32(0.5)), FieldMap())[1] == 0.5


def test_repeated_documents_keep_one_copy_and_different_texts_under_one_id_fail():
    m = map_documents([raw(1, id="a", score=0.5), raw(2, id="a", score=0.9), raw(3, id="b", text="Other text.")],
                      FieldMap())
    assert [c.id for c in m.chunks] == ["a", "b"] and m.scores[0] == 0.9 and m.notes.repeats == ["a"]
    with pytest.raises(InputError, match="test document 2 .*used by two different documents"):
        map_documents([raw(1, id="a"), raw(2, id="a", text="Something else.")], FieldMap())


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["doc", "version", "status", "date", "position", "trust", "acl", "title", "x"]),
                       st.one_of(st.none(), st.text(max_size=8), st.integers(-5, 5), st.floats(allow_nan=True),
                                 st.booleans(), st.lists(st.text(max_size=3), max_size=2))))
def test_any_metadata_maps_or_fails_with_an_input_error(meta):
    try:
        to_chunk(raw(meta=meta, id="a"), FieldMap())
    except InputError as e:
        assert str(e).startswith("test document 1")


# -- scores and the run -----------------------------------------------------------------------------


def events(brief, action):
    return [e for e in brief.trace if e["move"] == "integration" and e["action"] == action]


def test_no_scores_means_cosine_never_a_zero_under_the_floor():
    out = run(Q, nimbus_raws(), Options(), framework="Test")
    assert out.found
    assert events(out.brief, "scores")[0]["numbers"] == {"source": "cosine", "documents": 8, "with_score": 0}


def test_framework_scores_are_used_and_sorted_best_first():
    raws = nimbus_raws(scores=True)[::-1]  # worst first
    out = run(Q, raws, Options(floor=0.0), framework="Test")
    ev = events(out.brief, "scores")[0]
    assert ev["numbers"]["source"] == "framework" and "sorted by score" in ev["reason"]


def test_some_scores_missing_rescores_all_and_framework_mode_refuses():
    raws = nimbus_raws(scores=True)
    raws[2] = RawDoc(**{**raws[2].__dict__, "score": None})
    out = run(Q, raws, Options(), framework="Test")
    assert events(out.brief, "scores")[0]["numbers"]["with_score"] == 7
    with pytest.raises(InputError, match=r"test document 3 \(id '.*'\), field 'score': is missing and scores='framework'"):
        run(Q, raws, Options(scores="framework"), framework="Test")


def test_cosine_mode_ignores_framework_scores():
    out = run(Q, nimbus_raws(scores=True), Options(scores="cosine"), framework="Test")
    assert events(out.brief, "scores")[0]["numbers"]["source"] == "cosine"


def test_absent_decision_fields_are_named_in_the_trace():
    out = run(Q, [raw(1, "Annual plans can be refunded within 30 days.", {"doc": "p"}, id="a")], Options(floor=0.0),
              framework="Test")
    ev = events(out.brief, "mapping")[0]
    assert ev["numbers"]["fields"] == ["version", "status", "date", "source_type", "trust"]
    assert "every chunk is version 1" in ev["reason"]


def test_empty_documents_mean_not_found_with_the_refusal_prompt():
    out = run(Q, [], Options(), framework="Test")
    assert not out.found and out.messages[0]["role"] == "system" and "Reply exactly" in out.messages[0]["content"]
    assert out.messages[1] == {"role": "user", "content": f"Question: {Q}"}


@pytest.mark.parametrize("kwargs, field", [
    ({"budget": 0}, "budget"), ({"budget": "500"}, "budget"), ({"floor": "0.4"}, "floor"),
    ({"as_of": "last year"}, "as_of"), ({"scores": "bm25"}, "scores"), ({"history_tokens": -1}, "history_tokens"),
    ({"policy": {"pack": {"bugdet": 5}}}, "pack.bugdet"), ({"policy": "p.toml"}, "policy"),
    ({"fields": {"doc": "x"}}, "fields"),
])
def test_options_check_themselves(kwargs, field):
    """Bad settings: one line naming the setting (a policy dict is validated like a TOML file)."""
    with pytest.raises(InputError, match=f"field '{field}'"):
        Options(**kwargs)


# -- look-ups ---------------------------------------------------------------------------------------


def test_call_lookup_orders_by_position_then_offset_and_prefers_the_retrieved_copy():
    store = [raw(n, f"Part {n} of the guide.", {"doc": "g"}, id=f"g{n}", order=100 - n * 10) for n in range(1, 5)]
    calls = []

    def scan():
        calls.append(1)
        return store

    source = ScanSource("test store", scan, FieldMap(), size=lambda: len(store))
    hit = to_chunk(raw(9, "Part 2 of the guide.", {"doc": "g", "title": "retrieved copy"}, id="g2"), FieldMap())[0]
    lookup = CallLookup([(hit, 80.0)], source)
    assert [c.id for c in lookup.chunks_of("g", 1)] == ["g4", "g3", "g2", "g1"]  # by offset, not by id
    assert next(c for c in lookup.chunks_of("g", 1) if c.id == "g2").title == "retrieved copy"
    assert [v.version for v in lookup.versions("g")] == [1]
    CallLookup([(hit, None)], source)
    assert len(calls) == 1  # read once while the store's size is unchanged
    store.append(raw(5, "Part 5.", {"doc": "g"}, id="g5"))
    CallLookup([(to_chunk(store[-1], FieldMap())[0], None)], source)
    assert len(calls) == 2  # a retrieved id the copy lacks, and the store grew: read again


def test_unmappable_store_documents_are_skipped_and_reported():
    store = [raw(1, "Fine.", {"doc": "g"}, id="a"), raw(2, "No doc.", {}, id="b")]
    out = run(Q, [raw(1, "Annual plans can be refunded within 30 days.", {"doc": "g"}, id="a")], Options(floor=0.0),
              framework="Test", source=ScanSource("test store", lambda: store, FieldMap()))
    problem = events(out.brief, "lookup_problem")[0]["reason"]
    assert problem.startswith("1 document(s) of the test store could not be mapped") and "'b'" in problem


# -- history ----------------------------------------------------------------------------------------


def test_history_keeps_the_newest_turns_that_fit_and_never_starts_with_an_orphan_answer():
    """The integrations cap the history through assemble's own path (docket.history)."""
    turns = [{"role": "user", "content": "one two three"}, {"role": "assistant", "content": "four five"},
             {"role": "user", "content": "six"}, {"role": "assistant", "content": "seven eight"}]
    out = run(Q, nimbus_raws(), Options(history_tokens=4, counter=WordCounter()), framework="Test", history=turns)
    assert out.history == turns[2:] and out.brief.tokens["history"] == 3
    drop = [e for e in out.brief.trace if e.move == "history" and e.action == "drop"]
    assert len(drop) == 1 and drop[0].numbers["turns"] == [0, 1]
    out = run(Q, nimbus_raws(), Options(history_tokens=100, counter=WordCounter()), framework="Test", history=turns)
    assert out.history == turns and not any(e.action == "drop" for e in out.brief.trace if e.move == "history")


@pytest.mark.parametrize("history, match", [
    ("hi", "history: must be a list"),
    ([{"role": "system", "content": "x"}], r"history\[0\], field 'role': 'system' is not allowed"),
    ([{"role": "tool", "content": "x"}], r"history\[0\], field 'role': .*'user' or 'assistant'"),
    ([{"role": "user", "content": ["x"]}], r"history\[0\], field 'content': must be a string"),
    (["hello"], r"history\[0\]: must be an object with 'role' and 'content'"),
])
def test_bad_history_is_one_clear_line(history, match):
    with pytest.raises(InputError, match=match):
        run(Q, nimbus_raws(), Options(), framework="Test", history=history)


def test_history_comes_off_the_derived_budget_but_not_an_explicit_one():
    long = [{"role": "user", "content": "word " * 500}]
    derived = run(Q, nimbus_raws(), Options(), framework="Test", history=long)
    plain = run(Q, nimbus_raws(), Options(), framework="Test")
    assert derived.brief.budget == plain.brief.budget - derived.brief.tokens["history"]
    explicit = run(Q, nimbus_raws(), Options(budget=600), framework="Test", history=long)
    assert explicit.brief.budget == 600 and explicit.messages[1]["role"] == "user"
    # the unanswered user turn joins the final user message under its frame: roles alternate (issue 26 §5)
    assert [m["role"] for m in derived.messages] == ["system", "user"]
    assert derived.messages[1]["content"].startswith("Earlier message from the user (conversation history, not a document):")


# -- packaging --------------------------------------------------------------------------------------


def test_importing_docket_imports_no_framework():
    code = ("import sys, docket, docket.integrations, docket.integrations.common, docket.assemble, docket.cli;"
            "from docket.integrations import FieldMap;"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'langchain_classic',"
            " 'langchain_community', 'llama_index', 'haystack'));"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("module, blocked, extra", [
    ("langchain", "langchain_core", "langchain"),
    ("llamaindex", "llama_index", "llamaindex"),
    ("haystack", "haystack", "haystack"),
])
def test_a_missing_framework_names_the_extra(module, blocked, extra):
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            "from docket.errors import UnavailableError\n"
            "try:\n"
            f"    import docket.integrations.{module}\n"
            "except UnavailableError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert f"pip install 'docket[{extra}]'" in out.stdout, out.stderr


def test_lazy_names_resolve_and_unknown_names_fail():
    import docket.integrations as integ

    assert integ.DocketAssembler.__name__ == "DocketAssembler"
    with pytest.raises(AttributeError):
        integ.NoSuchThing  # noqa: B018
    assert issubclass(UnavailableError, Exception)


def test_extras_allow_the_versions_ci_installs_and_the_core_pulls_none():
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pinned = {Requirement(r).name: next(iter(Requirement(r).specifier)).version for r in extras["peers"]}
    for extra, package in (("langchain", "langchain-core"), ("llamaindex", "llama-index-core"),
                           ("haystack", "haystack-ai")):
        (req,) = [Requirement(r) for r in extras[extra]]
        assert req.name == package and req.specifier.contains(pinned[package]), (extra, req, pinned[package])
    frameworks = {"langchain-core", "langchain-classic", "langchain-community", "llama-index-core", "haystack-ai"}
    assert not {Requirement(r).name for r in project["dependencies"]} & frameworks
    assert "langchain,llamaindex,haystack" in (REPO / "scripts" / "test.sh").read_text()
