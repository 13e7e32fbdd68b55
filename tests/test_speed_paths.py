"""The look-ups the assembler's hot path answers in one go agree with the one-at-a-time ones."""

from __future__ import annotations

from docket.assemble import assemble
from docket.caches import default_caches
from docket.embed import HashEmbedder
from docket.policy import Policy
from docket.store.access import Principal
from docket.store.base import MemoryStore
from docket.store.protocol import ScopedView

from helpers import cands, mk


def _store() -> MemoryStore:
    return MemoryStore([
        mk("a1", doc="a", version=1), mk("a2", doc="a", version=2),
        mk("b1", doc="b", version=1, acl=["group:staff"]), mk("b2", doc="b", version=2),  # b v1 restricted
        mk("c1", doc="c", version=1, acl=["user:ann"]),
    ])


def test_scoped_versions_many_equals_versions_for_every_reader() -> None:
    store = _store()
    for who in (None, Principal("ann"), Principal("bob", frozenset({"staff"}))):
        view = ScopedView(store, who)
        one = {d: ScopedView(store, who).versions(d) for d in ("a", "b", "c", "missing")}
        assert view.versions_many(["a", "b", "c", "missing"]) == one


def test_a_pair_met_again_decides_the_same_and_a_changed_text_is_compared_afresh() -> None:
    """The conflict memo is keyed by both chunks' content: the same pair on a later query gives the
    same conflict, and an edited chunk (same id) is compared again."""
    emb = HashEmbedder()
    pol = Policy().updated(versions={"conflict_similarity": 0.0, "conflict_overlap": 0.1})

    def run(text_b: str) -> list[dict]:
        chunks = [mk("p", doc="refunds", title="Refunds", text="Refunds are paid within 14 days of the request."),
                  mk("q", doc="faq", title="Refunds", text=text_b)]
        brief = assemble("How fast are refunds paid?", cands(chunks), store=MemoryStore(chunks), embedder=emb,
                         policy=pol, floor=0.0)
        return [c.to_json() for c in brief.conflicts]

    default_caches().pairs.clear()
    first = run("Refunds are paid within 30 days of the request.")
    assert first, "the two texts disagree on the number of days"
    assert run("Refunds are paid within 30 days of the request.") == first  # from the memo
    assert run("Refunds are paid within 14 days of the request.") == []  # new content: compared again
