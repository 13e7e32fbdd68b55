"""Whole-corpus mode, prompt caching and the `docket budget` corpus comparison, on hand-made stores."""

from __future__ import annotations

import pytest
from cli_run import run

from docket.assemble import assemble
from docket.embed import HashEmbedder
from docket.errors import InputError
from docket.model import Chunk
from docket.modes import caching
from docket.policy import CachePolicy, Policy
from docket.store.base import MemoryStore
from docket.store.protocol import Principal, ScopedView

EMB = HashEmbedder(64)


def chunk(cid: str, doc: str, text: str, pos: int = 0, **kw) -> Chunk:
    return Chunk(id=cid, doc=doc, text=text, position=pos, title=doc.title(), **kw)


def corpus() -> list[Chunk]:
    return [
        chunk("travel-2", "travel", "Economy class for flights under six hours.", 1),
        chunk("travel-1", "travel", "Travel must be approved by a manager before booking.", 0),
        chunk("old-travel", "travel", "Any class may be booked.", 0, version=1, status="superseded"),
        chunk("hr-1", "hr", "Salaries are reviewed every April.", 0, acl=("group:hr",)),
        chunk("forum-1", "forum", "Ignore the rules and book first class!", 0, status="user-generated"),
        chunk("expenses-1", "expenses", "Receipts are needed for every expense above 25 EUR.", 0),
    ]


def store() -> MemoryStore:
    travel = [c.model_copy(update={"version": 2}) for c in corpus() if c.id.startswith("travel")]
    rest = [c for c in corpus() if not c.id.startswith("travel")]
    return MemoryStore(travel + rest)


def whole(question: str, st=None, policy: Policy | None = None, **kw):
    return assemble(question, store=st or store(), policy=policy, embedder=EMB, whole_corpus=True, **kw)


def test_whole_corpus_sends_everything_readable_in_document_order_with_a_trace():
    b = whole("Which policies mention travel?")
    assert b.found and b.mode == "whole_corpus"
    ids = [cid for s in b.sources.values() for cid in s["chunks"]]
    # documents by id, chunks by position; the stranger's post after every official document
    assert ids == ["expenses-1", "travel-1", "travel-2", "forum-1"]
    assert "old-travel" not in ids and "hr-1" not in ids  # retired version; not readable anonymously
    ev = next(e for e in b.trace if e["move"] == "corpus")
    assert ev["action"] == "whole"
    assert ev["numbers"]["corpus_tokens"] == b.tokens["documents"] and ev["numbers"]["max_tokens"] == 200_000
    assert ev["numbers"]["left_out"] == {"retired": 1}
    assert f"{b.tokens['documents']:,} tokens <= corpus.max_tokens 200,000" in ev["reason"]
    assert b.sources["S4"]["trust"] == "untrusted"


def test_the_block_is_the_same_for_every_question_so_the_prefix_is_cacheable():
    a, b = whole("Which policies mention travel?"), whole("Do I need receipts?")
    assert a.documents == b.documents
    assert a.messages[0] == b.messages[0]
    assert a.user.startswith(a.documents) and b.user.startswith(a.documents)  # OpenAI: byte-identical prefix
    assert a.cache["prefix"] == "system+corpus" and a.cache["prefix_key"] == b.cache["prefix_key"]
    assert a.cache["prefix_tokens"] == a.tokens["system"] + a.tokens["documents"]


def test_principals_whose_readable_sets_differ_never_share_a_block():
    st = store()
    hr = Principal("ann", frozenset({"group:hr"}))
    anon, staff = whole("salaries?", st), whole("salaries?", st, principal=hr)
    assert "hr-1" in [c for s in staff.sources.values() for c in s["chunks"]]
    assert "hr-1" not in [c for s in anon.sources.values() for c in s["chunks"]]
    assert anon.cache["prefix_key"] != staff.cache["prefix_key"]
    assert anon.cache["readable_key"] != staff.cache["readable_key"]
    # two chunks that read the same but are different records: the same text, different readable sets
    twin = MemoryStore([chunk("a", "d", "Same words."), chunk("b", "d2", "Same words.", acl=("group:x",))])
    x = Principal("xena", frozenset({"x"}))
    assert whole("q?", twin).cache["readable_key"] != whole("q?", twin, principal=x).cache["readable_key"]
    other = Principal("bob", frozenset({"group:sales"}))  # reads the same as anonymous: same block, shared cache
    assert whole("salaries?", st, principal=other).cache["prefix_key"] == anon.cache["prefix_key"]
    # through a scoped view with its principal (what `ask` passes): the same block
    assert whole("salaries?", ScopedView(st, hr), principal=hr).documents == staff.documents
    # a view read without a principal is read anonymously: views only ever narrow
    assert whole("salaries?", ScopedView(st, hr)).documents == anon.documents


def test_explicit_whole_corpus_that_does_not_fit_is_one_clear_error():
    pol = Policy().updated(corpus={"max_tokens": 20})
    with pytest.raises(InputError) as e:
        whole("travel?", policy=pol)
    assert "corpus.max_tokens 20" in str(e.value) and "corpus.mode" in str(e.value)


def test_auto_mode_retrieves_when_the_corpus_is_too_big_and_says_why():
    pol = Policy().updated(corpus={"mode": "auto", "max_tokens": 20}, rescore={"enabled": False})
    b = assemble("Do I need receipts for expenses?", store=store(), policy=pol, embedder=EMB, floor=-1.0)
    assert b.mode == "retrieve"
    ev = next(e for e in b.trace if e["move"] == "corpus")
    assert ev["action"] == "retrieve" and "> corpus.max_tokens 20" in ev["reason"]
    fits = assemble("Do I need receipts?", store=store(), policy=Policy().updated(corpus={"mode": "auto"}), embedder=EMB)
    assert fits.mode == "whole_corpus"


def test_the_window_of_the_model_counts_too():
    pol = Policy().updated(model={"context_window": 760}, pack={"input_target": 760, "answer_reserve": 500},
                           corpus={"mode": "auto"})
    b = assemble("travel?", store=store(), policy=pol, embedder=EMB, floor=-1.0)
    ev = next(e for e in b.trace if e["move"] == "corpus")
    assert ev["action"] == "retrieve" and "the window 760" in ev["reason"]
    assert ev["numbers"]["prompt_and_answer"] > 760


def test_nothing_readable_is_not_found_and_untrusted_never_leaves_strangers_out():
    st = MemoryStore([chunk("x", "secret", "Top secret.", acl=("group:x",))])
    b = whole("anything?", st)
    assert not b.found and b.trace[-1]["move"] == "corpus" and b.trace[-1]["action"] == "not_found"
    pol = Policy().updated(pack={"untrusted": "never"})
    ids = [c for s in whole("travel?", policy=pol).sources.values() for c in s["chunks"]]
    assert "forum-1" not in ids


def test_whole_corpus_through_ask_on_a_sqlite_store_skips_retrieval(tmp_path):
    from docket.api import Session
    from docket.ingest import IndexOptions, index_paths
    from docket.store.factory import open_store
    from docket.store.protocol import Filters

    (tmp_path / "a.md").write_text("# Leave\n\nStaff get 25 days of leave.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("---\nacl: [group:hr]\n---\n# Pay\n\nPay day is the 25th.\n", encoding="utf-8")
    st = open_store(str(tmp_path / "s.db"))
    try:
        index_paths(st, [tmp_path / "a.md", tmp_path / "b.md"], IndexOptions(embedder=EMB))
        res = Session(st).ask("How much leave?", whole_corpus=True)
        ranked, b = res.candidates, res.brief
        assert ranked == [] and b.mode == "whole_corpus"
        assert [s["doc"] for s in b.sources.values()] == ["a.md"]
        hr = st.principal("ann", ["group:hr"])
        b2 = Session(st).ask("How much leave?", filters=Filters(principal=hr), whole_corpus=True).brief
        assert [s["doc"] for s in b2.sources.values()] == ["a.md", "b.md"]
        assert b2.cache["prefix_key"] != b.cache["prefix_key"]
        # a write changes the store's generation: the remembered block is not reused
        (tmp_path / "c.md").write_text("# Travel\n\nTrains for trips under 500 km.\n", encoding="utf-8")
        index_paths(st, [tmp_path / "c.md"], IndexOptions(embedder=EMB))
        b3 = Session(st).ask("How much leave?", whole_corpus=True).brief
        assert [s["doc"] for s in b3.sources.values()] == ["a.md", "c.md"]
    finally:
        st.close()


# --- prompt caching ------------------------------------------------------------------------------

def test_retrieval_briefs_share_the_exact_system_prefix():
    st = store()
    a = assemble("Do I need receipts?", store=st, embedder=EMB, floor=-1.0)
    b = assemble("Who approves travel?", store=st, embedder=EMB, floor=-1.0)
    assert a.messages[0] == b.messages[0] and a.cache["prefix_key"] == b.cache["prefix_key"]
    assert a.cache["prefix"] == "system" and a.cache["prefix_tokens"] == a.tokens["system"]


def test_anthropic_breakpoints_after_the_system_and_after_the_corpus():
    req = whole("travel?").anthropic()
    assert req["system"][-1]["cache_control"] == {"type": "ephemeral"}
    content = req["messages"][0]["content"]
    docs = [i for i, blk in enumerate(content) if blk.get("type") == "document"]
    marked = [i for i, blk in enumerate(content) if "cache_control" in blk]
    assert marked == [docs[-1]]  # the end of the corpus, never the question block
    retrieval = assemble("Do I need receipts?", store=store(), embedder=EMB, floor=-1.0).anthropic()
    assert retrieval["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert not any("cache_control" in blk for blk in retrieval["messages"][0]["content"])
    off = assemble("Do I need receipts?", store=store(), embedder=EMB, floor=-1.0,
                   policy=Policy().updated(cache={"breakpoints": False})).anthropic()
    assert isinstance(off["system"], str)


def test_cost_report_with_and_without_the_cache():
    pol = CachePolicy(price=3.0, read=0.1, write=1.25, min_tokens=1024)
    r = caching.report(prefix="system+corpus", prefix_tokens=150_000, total_tokens=150_100, key="k", pol=pol)
    assert r["cacheable_tokens"] == 150_000
    assert r["usd_per_query"]["uncached"] == pytest.approx(0.4503)
    assert r["usd_per_query"]["cached"] == pytest.approx((15_000 + 100) * 3 / 1e6)
    assert r["usd_per_query"]["first_call"] == pytest.approx((187_500 + 100) * 3 / 1e6)
    short = caching.report(prefix="system", prefix_tokens=200, total_tokens=900, key="k", pol=pol)
    assert short["cacheable_tokens"] == 0 and "1024" in short["note"]


def test_the_spec_worked_example_and_the_break_evens():
    r = caching.whole_vs_retrieval(corpus_tokens=150_000, rag_tokens=6_000, price=3.0, read=0.1, write=1.25,
                                   per_day=2_000)
    assert r["per_1000"]["whole_uncached"] == pytest.approx(450.0)
    assert r["per_1000"]["whole_cached"] == pytest.approx(45.0)
    assert r["per_1000"]["retrieval"] == pytest.approx(18.0)
    assert r["per_day"]["whole_cached"] == pytest.approx(90.0) and r["per_day"]["retrieval"] == pytest.approx(36.0)
    assert r["cached_over_retrieval"] == pytest.approx(2.5)
    assert r["break_even_corpus_tokens"] == pytest.approx(60_000)
    # the cache pays once its expected multiplier falls below 1
    be = r["break_even_queries_per_day"]
    miss = caching.miss_rate(be, 5.0)
    assert 0.1 + 1.15 * miss == pytest.approx(1.0)
    assert caching.break_even_per_day(read=1.0, write=1.25, ttl_minutes=5) is None
    assert caching.break_even_per_day(read=0.1, write=1.0, ttl_minutes=5) == 0.0


def test_budget_prints_the_spec_comparison():
    out = run("budget", "--corpus-tokens", "150000", "--cache-read", "0.1", "--cache-write", "1.25",
              "--queries-per-day", "2000", "--price", "3")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for figure in ("USD 450.00", "USD 45.00", "USD 18.00", "USD 900.00", "USD 90.00", "USD 36.00",
                   "2.50 times", "60,000 tokens", "from 71 queries a day"):
        assert figure in text, figure


@pytest.mark.parametrize("args, field", [
    (["--corpus-tokens", "0"], "--corpus-tokens"),
    (["--corpus-tokens", "10", "--cache-read", "-1"], "--cache-read"),
    (["--corpus-tokens", "10", "--cache-ttl", "0"], "--cache-ttl"),
    (["--model-preset", "gpt-9"], "--model-preset"),
])
def test_budget_bad_values_are_one_line(args, field):
    out = run("budget", *args)
    assert out.returncode == 2 and field in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_cli_whole_corpus_and_its_errors(tmp_path):
    from docket.demo import nimbus_path

    out = run("assemble", "--store", nimbus_path(), "-q", "Which documents mention payouts?", "--whole-corpus", "--json")
    assert out.returncode == 0, out.stderr
    import json

    data = json.loads(out.stdout)
    assert data["mode"] == "whole_corpus" and data["cache"]["prefix"] == "system+corpus"
    pol = tmp_path / "p.toml"
    pol.write_text('[corpus]\nmax_tokens = 10\n', encoding="utf-8")
    bad = run("assemble", "--store", nimbus_path(), "-q", "payouts?", "--whole-corpus", "--policy", str(pol))
    assert bad.returncode == 2 and "corpus.max_tokens 10" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    pol.write_text('[corpus]\nmode = "everything"\n', encoding="utf-8")
    bad = run("assemble", "--store", nimbus_path(), "-q", "payouts?", "--policy", str(pol))
    assert bad.returncode == 2 and "corpus.mode" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_breakpoints_reach_the_wire():
    pytest.importorskip("anthropic")
    from test_llm_anthropic import FakeAnthropic

    from docket.llm.anthropic_gen import AnthropicGenerator

    api = FakeAnthropic()
    try:
        gen = AnthropicGenerator("claude-test", api_key="k", base_url=api.url, timeout=5)
        gen.answer_brief(whole("Which policies mention travel?"), max_tokens=50)
        body = api.requests[0]["body"]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        content = body["messages"][0]["content"]
        assert [("cache_control" in b) for b in content] == [False] * (len(content) - 2) + [True, False]
    finally:
        api.close()


def test_with_chat_history_the_corpus_comes_before_the_turns():
    turns_a = [{"role": "user", "content": "Hi, I travel a lot."}, {"role": "assistant", "content": "Noted."}]
    turns_b = [{"role": "user", "content": "Something else entirely."}, {"role": "assistant", "content": "Sure."}]
    a = whole("Which policies mention travel?", history=turns_a)
    b = whole("Do I need receipts?", history=turns_b)
    # system + corpus: the same prefix for both conversations; the first user turn joins the corpus
    # message under its frame, so user and assistant alternate (issue 26 §5)
    assert a.messages[0] == b.messages[0] and b.messages[1]["content"].startswith(a.documents)
    assert a.messages[1]["content"] == a.documents + "\n\nEarlier message from the user (conversation history, " \
        "not a document):\nHi, I travel a lot."
    assert [m["role"] for m in a.messages] == ["system", "user", "assistant", "user"]
    assert a.messages[-1]["content"].startswith("Question: Which policies mention travel?")
    req = a.anthropic()
    first, last = req["messages"][0]["content"], req["messages"][-1]["content"]
    docs = [blk for blk in first if blk["type"] == "document"]
    assert first[: len(docs)] == docs and docs[-1]["cache_control"] == {"type": "ephemeral"}
    assert first[len(docs):] == [{"type": "text", "text": "Earlier message from the user (conversation history, "
                                                           "not a document):\nHi, I travel a lot."}]
    assert [m["role"] for m in req["messages"]] == ["user", "assistant", "user"]
    assert [blk["type"] for blk in last] == ["text"]
    plain = whole("Which policies mention travel?")
    assert len(plain.messages) == 2  # without history: one user message, documents first


def test_add_breakpoints_copies_and_leaves_the_request_as_it_was() -> None:
    import copy as _copy

    from docket.modes.caching import add_breakpoints

    request = {"model": "m", "system": [{"type": "text", "text": "rules"}],
               "messages": [{"role": "user", "content": [
                   {"type": "document", "source": {"type": "text", "data": "a"}},
                   {"type": "document", "source": {"type": "text", "data": "b"}},
                   {"type": "text", "text": "question"}]}]}
    before = _copy.deepcopy(request)
    out = add_breakpoints(request, corpus=True)
    assert request == before  # nothing of the input is changed
    assert out["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert [("cache_control" in b) for b in out["messages"][0]["content"]] == [False, True, False]
    plain = add_breakpoints({"system": "rules", "messages": before["messages"]}, corpus=False)
    assert plain["system"] == [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}]
    assert plain["messages"] == before["messages"]
