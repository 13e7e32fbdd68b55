"""A scoped view lists a document's versions from the store's one-query `readable_versions` on
SQLite and PostgreSQL; the answer must equal reading every version's chunks and filtering them,
for every principal, so a version's existence still never leaks."""

from __future__ import annotations

import pytest
from conftest_pg import pg_server, pg_url  # noqa: F401
from store_cases import EMB, version

from docket.store.factory import open_store
from docket.store.protocol import Principal, ScopedView

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
ASKERS = [None, Principal("ann", frozenset({"finance"})), Principal("bob"), Principal("finance")]


class _Slow:
    """The store without its fast paths: the view falls back to reading chunks."""

    def __init__(self, store) -> None:  # noqa: ANN001
        self._s = store

    def get(self, cid):  # noqa: ANN001, ANN201
        return self._s.get(cid)

    def chunks_of(self, doc, v):  # noqa: ANN001, ANN201
        return self._s.chunks_of(doc, v)

    def versions(self, doc):  # noqa: ANN001, ANN201
        return self._s.versions(doc)


class _TwoQueries(_Slow):
    """The store with the two-query path only (`versions_many` and `readable_versions`), as before
    SQLite answered both at once (`readable_versions_of`)."""

    def versions_many(self, docs):  # noqa: ANN001, ANN201
        return self._s.versions_many(docs)

    def readable_versions(self, docs, who):  # noqa: ANN001, ANN201
        return self._s.readable_versions(docs, who)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path):  # noqa: ANN001, ANN201
    loc = str(tmp_path / "s.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = open_store(loc)
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    yield s
    s.close()


def test_readable_versions_equal_the_filtered_chunks(store) -> None:  # noqa: ANN001
    store.write_version(version("pub", 1, ["public text"]))
    store.write_version(version("pub", 2, ["public text again"]))
    store.write_version(version("hr", 1, ["open first"]))
    store.write_version(version("hr", 2, ["finance only"], acl=("group:finance",)))
    store.write_version(version("mix", 1, ["one public", "one for ann"]))
    store.write_version(version("mix", 2, ["for ann", "for bob"], acl=("user:ann", "user:bob")))
    store.write_version(version("mine", 1, ["the user finance"], acl=("user:finance",)))
    docs = ["pub", "hr", "mix", "mine", "missing"]
    for who in ASKERS:
        fast, slow = ScopedView(store, who), ScopedView(_Slow(store), who)
        assert fast.versions_many(docs) == slow.versions_many(docs), who
        assert ScopedView(_TwoQueries(store), who).versions_many(docs) == slow.versions_many(docs), who
        assert fast.in_force(docs) == slow.in_force(docs), who
        assert [fast.versions(d) for d in docs] == [slow.versions(d) for d in docs], who
    anon = ScopedView(store, None).versions_many(docs)
    assert [v.version for v in anon["hr"]] == [1] and anon["mine"] == [] and anon["missing"] == []


def test_readable_versions_of_is_the_two_queries_joined(tmp_path) -> None:  # noqa: ANN001
    """SQLite's one query equals `versions_many` filtered by `readable_versions`, for every asker,
    with dated and retired versions and more documents than one batch of 500."""
    from dataclasses import replace
    from datetime import date

    s = open_store(str(tmp_path / "s.db"))
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    s.write_version(version("hr", 1, ["open first"]))
    s.write_version(version("hr", 2, ["finance only"], acl=("group:finance",)))
    s.write_version(version("mix", 2, ["for ann", "for bob"], acl=("user:ann", "user:bob")))
    s.write_version(replace(version("dated", 1, ["dated text"], when=date(2024, 1, 2)), effective_to=date(2024, 6, 30)))
    s.write_version(version("dated", 2, ["retired text"], status="superseded", when=date(2024, 7, 1)))
    docs = ["hr", "mix", "dated", "missing", *(f"none{i}" for i in range(600))]
    for who in ASKERS:
        got = s.readable_versions_of(docs, who)
        infos, ok = s.versions_many(docs), s.readable_versions(docs, who)
        assert got == {d: [v for v in infos[d] if v.version in ok.get(d, ())] for d in docs}, who
    assert s.readable_versions_of(["dated"], None)["dated"][0].effective_to == date(2024, 6, 30)
    s.close()
