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
        assert fast.in_force(docs) == slow.in_force(docs), who
        assert [fast.versions(d) for d in docs] == [slow.versions(d) for d in docs], who
    anon = ScopedView(store, None).versions_many(docs)
    assert [v.version for v in anon["hr"]] == [1] and anon["mine"] == [] and anon["missing"] == []
