"""Access control on every path that is not a database: the rule itself, users and groups as
separate namespaces, `assemble(principal=...)` with caller candidates, `docket assemble --store
FILE.jsonl`, MemoryStore and eval. The stores run the same rule in SQL (tests/test_store_acl.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from docket.assemble import assemble
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.eval.dataset import Item, LabelledSet
from docket.eval.runner import EvalConfig, evaluate
from docket.model import Candidate, Chunk
from docket.store.access import AclResolution, Principal, Registry, entry_key, may_read, readable, resolve_acl
from docket.store.base import MemoryStore
from docket.tokens import default_counter

EMB = HashEmbedder(64)
ANN = Principal("ann", frozenset({"finance"}))
FINANCE_USER = Principal("finance")  # a user who calls himself like the group


def test_users_and_groups_are_separate_namespaces() -> None:
    assert may_read(ANN, ["group:finance"]) and may_read(ANN, ["finance"])  # plain = group
    assert not may_read(FINANCE_USER, ["group:finance"])
    assert not may_read(FINANCE_USER, ["finance"])  # a plain entry never matches a user by name
    assert may_read(FINANCE_USER, ["user:finance"])
    assert not may_read(ANN, ["user:finance"])
    assert may_read(Principal("carol"), ["user:carol"]) and not may_read(Principal("carol"), ["carol"])
    assert may_read(None, None) and not may_read(None, ["group:x"]) and not may_read(ANN, [])
    assert entry_key("USER:Bob") == "user:Bob" and entry_key("staff") == "group:staff"


def test_principal_is_validated_and_typed() -> None:
    assert Principal("user:ann", frozenset({"group:finance"})) == ANN
    assert ANN.keys == {"user:ann", "group:finance"}
    for bad in ("", "  ", " ann", "group:finance", "user:"):
        with pytest.raises(InputError):
            Principal(bad)
    with pytest.raises(InputError, match="is a user"):
        Principal("ann", frozenset({"user:bob"}))


def test_acl_entries_are_validated_in_records() -> None:
    from docket.model import parse_chunk

    for acl in ([""], ["user:"], ["group:  "], [3]):
        with pytest.raises(InputError, match="acl"):
            parse_chunk({"id": "a", "doc": "d", "text": "t", "acl": acl})
    assert parse_chunk({"id": "a", "doc": "d", "text": "t", "acl": "finance"}).acl == ("finance",)


def test_resolve_plain_entries_by_the_registry() -> None:
    reg = Registry.of([("carol", ["staff"]), ("finance", []), ("dave", ["finance"])])
    note = AclResolution()
    out = resolve_acl(["carol", "staff", "finance", "unknown", "user:zed", "Group:ops"], reg, note)
    # carol: a registered user and nobody's group -> the user; finance: registered as both -> the group
    assert out == ("group:finance", "group:ops", "group:staff", "group:unknown", "user:carol", "user:zed")
    assert note.to_json() == {"as_user": ["carol"], "as_group": ["staff", "unknown"], "ambiguous": ["finance"]}
    assert resolve_acl(None, reg) is None and resolve_acl([], reg) == ()


# --- assemble with caller candidates ------------------------------------------------------------

SECRET = "The merger with Contoso closes on 1 May at 41 EUR per share."


def _pool() -> list[Chunk]:
    def chunk(cid: str, text: str, pos: int, acl: tuple[str, ...] | None = None, doc: str = "deal") -> Chunk:
        return Chunk(id=cid, doc=doc, text=text, position=pos, acl=acl, title="Deal", section="Terms",
                     vector=tuple(EMB.embed([text])[0].tolist()))

    return [
        chunk("deal-0", "The share price for the deal is 40 EUR per share.", 0),
        chunk("deal-1", SECRET, 1, ("group:execs",)),  # the public chunk's neighbour: expansion must stop
        chunk("deal-2", "Questions about the deal go to the investor relations desk.", 2),
        chunk("memo-0", "Execs only: the deal price is 41 EUR per share, not 40.", 0, ("execs",), doc="memo"),
        chunk("ceo-0", "The CEO's note: the deal price per share is 45 EUR.", 0, ("user:ceo",), doc="ceo"),
    ]


def _ranked(chunks: list[Chunk], q: str) -> list[Candidate]:
    qv = EMB.embed([q])[0]
    order = sorted(chunks, key=lambda c: -float(np.asarray(c.vector) @ qv))
    return [Candidate(chunk=c, score=0.9 - 0.01 * i, rank=i + 1) for i, c in enumerate(order)]


def _shown(brief) -> str:  # noqa: ANN001
    """Everything a caller could show: the JSON contract (messages, sources, trace, conflicts...)."""
    return json.dumps(brief.to_json(), ensure_ascii=False)


@pytest.mark.parametrize("who", [None, Principal("bob"), FINANCE_USER, Principal("execs"), Principal("ceo", frozenset({"x"}))])
def test_restricted_candidates_never_reach_any_output(who: Principal | None) -> None:
    chunks = _pool()
    q = "What is the deal share price?"
    brief = assemble(q, _ranked(chunks, q), store=MemoryStore(chunks), embedder=EMB, budget=2000, floor=0.0,
                     principal=who)
    out = _shown(brief)
    assert brief.found
    allowed = {c.id for c in chunks if may_read(who, c.acl)}
    for c in chunks:
        if c.id not in allowed:
            assert c.id not in out and c.text[:30] not in out, (who, c.id)
    assert "41 EUR" not in out and ("45 EUR" in out) == (who is not None and who.name == "ceo")
    assert "withheld" not in out and "restricted" not in out  # not even a count


def test_a_member_sees_what_the_group_may_read() -> None:
    chunks = _pool()
    q = "What is the deal share price?"
    brief = assemble(q, _ranked(chunks, q), store=MemoryStore(chunks), embedder=EMB, budget=2000, floor=0.0,
                     principal=Principal("eve", frozenset({"execs"})))
    out = _shown(brief)
    assert "41 EUR" in out and "deal-1" in out and "ceo-0" not in out


def test_without_candidates_the_store_is_ranked_as_the_principal_sees_it() -> None:
    chunks = [c.model_copy(update={"vector": None}) for c in _pool()]
    brief = assemble("deal share price", store=MemoryStore(chunks), embedder=EMB, budget=2000, floor=0.0)
    assert "41 EUR" not in _shown(brief) and "45 EUR" not in _shown(brief)


def test_readable_keeps_order() -> None:
    chunks = _pool()
    cands = _ranked(chunks, "deal")
    assert [c.chunk.id for c in readable(cands, None)] == [c.chunk.id for c in cands if c.chunk.acl is None]


# --- docket assemble --store FILE.jsonl -----------------------------------------------------------

def test_cli_assemble_from_jsonl_applies_the_acl(tmp_path: Path) -> None:
    from docket.cli import _register, app

    _register()
    store = tmp_path / "chunks.jsonl"
    store.write_text("".join(json.dumps(c.to_record()) + "\n" for c in _pool()))  # embedded by MiniLM
    runner = CliRunner()

    def run(*extra: str) -> str:
        r = runner.invoke(app, ["assemble", "--store", str(store), "-q", "What is the deal share price?", "--floor", "0",
                                "--budget", "2000", "--json", *extra])
        assert r.exit_code == 0, r.output
        return r.output

    anonymous = run()
    assert "41 EUR" not in anonymous and "deal-1" not in anonymous and "45 EUR" not in anonymous
    assert "41 EUR" not in run("--principal", "execs")  # a user named like the group
    assert "41 EUR" in run("--principal", "eve", "--groups", "execs")
    assert "45 EUR" in run("--principal", "ceo")
    cands = tmp_path / "ranked.jsonl"
    cands.write_text("".join(json.dumps({"id": c.id, "score": 0.9}) + "\n" for c in _pool()))
    assert "41 EUR" not in run("--candidates", str(cands))
    r = runner.invoke(app, ["assemble", "--store", str(store), "-q", "x", "--groups", "execs"])
    assert r.exit_code != 0 and isinstance(r.exception, InputError)


def test_cli_says_why_nothing_of_the_file_can_be_used_and_the_brief_says_the_pool_is_empty(tmp_path: Path) -> None:
    """Every chunk restricted: stderr names the file and the fix; the brief's own reason is the
    same words an empty ranking gets (nothing about the restricted chunks leaks into it)."""
    from cli_run import run

    locked = tmp_path / "locked.jsonl"
    locked.write_text("".join(json.dumps({**c.to_record(), "acl": ["group:execs"]}) + "\n" for c in _pool()))
    empty_acl = tmp_path / "nobody.jsonl"
    empty_acl.write_text("".join(json.dumps({**c.to_record(), "acl": []}) + "\n" for c in _pool()))
    question = ["-q", "What is the deal share price?", "--floor", "0"]
    for path, extra in ((locked, []), (locked, ["--principal", "bob"]), (empty_acl, ["--principal", "ceo"])):
        r = run("assemble", "--store", str(path), *question, *extra)
        assert r.returncode == 0
        assert f"{path}: each of its {len(_pool())} chunk(s) has an acl" in r.stderr
        assert "pass --principal NAME" in r.stderr
        assert "no candidate to assemble from" in r.stdout and "reaches the floor" not in r.stdout
        js = json.loads(run("assemble", "--store", str(path), *question, *extra, "--json").stdout)
        assert js["found"] is False
        reasons = [e["reason"] for e in js["trace"] if e["action"] == "not_found"]
        assert reasons == ["no candidate to assemble from (the ranking is empty, or the asker may read none of it): "
                           "answer 'not found' without an LLM call"]
        assert "execs" not in json.dumps(js) and "deal" not in json.dumps(js["trace"])
    readable_one = run("assemble", "--store", str(locked), *question, "--principal", "eve", "--groups", "execs")
    assert "warning" not in readable_one.stderr and "found: false" not in readable_one.stdout


def test_an_empty_ranking_and_an_unreadable_one_give_the_same_brief() -> None:
    pool = _pool()
    locked = [Chunk(**{**c.__dict__, "acl": ("group:execs",)}) for c in pool]
    a = assemble("What is the deal share price?", [], store=MemoryStore(pool), embedder=EMB)
    b = assemble("What is the deal share price?", [Candidate(c, 0.9, n) for n, c in enumerate(locked, 1)],
                 store=MemoryStore(locked), embedder=EMB)
    assert not a.found and not b.found
    assert a.to_json() == b.to_json()


# --- eval -------------------------------------------------------------------------------------

def test_eval_runs_as_anonymous_for_every_system() -> None:
    chunks = _pool()
    lset = LabelledSet("acl", [Item(id="q1", question="What is the deal share price?", chunks=chunks,
                                    gold=["deal-0"], answers=["40 EUR"])])
    result = evaluate(lset, EvalConfig(budgets=(2000,), show_progress=False, compare=("topk",)),
                      embedder=EMB, counter=default_counter())
    assert result["budgets"]["2000"]["gold_in_prompt"] == 1.0
    from docket.eval.runner import prepare

    (p,) = prepare(lset, EMB)
    assert {c.chunk.id for c in p.query.ranked} == {"deal-0", "deal-2"}
    assert p.query.vecs.shape[0] == 2
