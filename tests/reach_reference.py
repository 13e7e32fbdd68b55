"""The reachable-set scan as first written (docket.moves.reach before the vectorised scan of
issue 21, take 2): one Python call per candidate. tests/test_reach_scan.py checks that the
product's scan finds the same members on the same pools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from docket import counting
from docket.context import _at_least
from docket.features import text_words_bound
from docket.sizing import label_for
from docket.text import copy_hash as text_hash


class Groups:
    def __init__(self, values: list[str]) -> None:
        first: dict[str, int] = {}
        more: dict[str, list[int]] = {}
        for k, v in enumerate(values):
            at = first.setdefault(v, k)
            if at != k:
                group = more.get(v)
                if group is None:
                    more[v] = [at, k]
                else:
                    group.append(k)
        self.first, self.more = first, more


class Scan:
    """The reference: `run()` gives the members (positions, ascending) or None."""

    def __init__(self, passages: list[Any], ctx: Any, vecs: np.ndarray, room: int, authorities: Any) -> None:
        self.passages, self.ctx, self.vecs, self.room = passages, ctx, vecs, room
        self.authorities = authorities
        pol = ctx.policy
        self.cut = _at_least(min(pol.dedup.threshold, pol.versions.conflict_similarity), vecs.dtype)
        n = len(passages)
        firsts = [p.first for p in passages]
        hashes = [f.copy_hash(c) if f is not None else text_hash(p.text)
                  for p, c, f in zip(passages, firsts, ctx.features.of_passages(passages))]
        self.firsts = firsts
        self.groups = (Groups([c.doc for c in firsts]), Groups([c.id for c in firsts]), Groups(hashes))
        self.hashes = hashes
        self.in_r = [False] * n
        self.rows: dict[int, np.ndarray] = {}
        self.pending: list[int] = []
        self.grows = pol.expand.enabled and pol.expand.top_n > 0
        self.top_n = pol.expand.top_n if self.grows else 0
        self.certain = 0
        self.lo = 0
        self.anchored = False
        self.witnesses = 0
        self.label = label_for(n) if n <= 999 else "S999"  # pack's count: this one's, or `extra` more
        self.extra = max(0, -(-len(str(n)) // 3) - 1)
        self.cost_keys = [("cost", ctx.counter.name, ctx.render_key(), counting.label_class(ctx.counter, label_for(10**w)))
                          for w in range(min(len(str(n)), 3))]
        self.authority: int | None = None

    def run(self) -> list[int] | None:
        n = len(self.passages)
        t, block = 0, 16
        while t < n:
            end = min(n, t + block)
            for k in range(t, end):
                if not self.in_r[k] and (self.certain < self.top_n or not self.anchored or not self._beyond(k)):
                    self._join(k)
            self._flush()
            for k in range(t, end):
                if self.in_r[k] and not self._witness(k):
                    return None
            t, block = end, min(2 * block, 128)
        return [k for k in range(n) if self.in_r[k]]

    def _beyond(self, k: int) -> bool:
        p = self.passages[k]
        lo, room = self.lo, self.room
        if lo + text_words_bound(self.firsts[k].text) > room:
            return True
        costs = self.ctx.features.features(p.first).costs
        for key in self.cost_keys:
            cost = costs.get(key)
            if cost is not None:
                return bool(lo + cost > room)
        return bool(lo + self.ctx.sizer.costs([p], self.label)[0] > room)

    def _values(self, k: int) -> tuple[str, str, str]:
        c = self.firsts[k]
        return c.doc, c.id, self.hashes[k]

    def _join(self, k: int) -> None:
        if not self.in_r[k]:
            self.in_r[k] = True
            self.pending.append(k)

    def _flush(self) -> None:
        in_r = self.in_r
        while self.pending:
            batch, self.pending = self.pending, []
            sims = self.vecs[batch] @ self.vecs.T
            for b, k in enumerate(batch):
                self.rows[k] = sims[b]
            for j in np.unique(np.nonzero(sims >= self.cut)[1]).tolist():
                if not in_r[j]:
                    self._join(j)
            for k in batch:
                for groups, value in zip(self.groups, self._values(k)):
                    for j in groups.more.get(value, ()):
                        if not in_r[j]:
                            self._join(j)

    def _witness(self, k: int) -> bool:
        if self.certain < self.top_n and not self._grows_alike(k):
            return False
        row = self.rows[k]
        values = self._values(k)
        if bool((row[:k] >= self.cut).any()) or any(g.first[v] < k for g, v in zip(self.groups, values)):
            return True
        self.certain += 1
        p = self.passages[k]
        doc, same_id = self.groups[0].more, self.groups[1].more
        if self.certain <= self.top_n or values[0] in doc or values[1] in same_id:
            return True
        cost = self.ctx.sizer.costs([p], self.label)[0]
        self.lo = min(self.lo + cost, max(self.lo, self.room - cost - self.extra + 1))
        self.anchored = self.anchored or (cost + self.extra <= self.room and p.score >= self.ctx.policy.pack.floor)
        self.witnesses += 1
        return True

    def _grows_alike(self, k: int) -> bool:
        p = self.passages[k]
        pol = self.ctx.policy.versions
        if self.authority is None:
            self.authority = self.authorities([p.first], pol)[0]
        chunks_of = getattr(self.ctx.store, "chunks_of", None)
        if chunks_of is None:
            return False
        return set(self.authorities(chunks_of(p.doc, p.first.version), pol)) <= {self.authority}


def check_every_scan(monkeypatch: pytest.MonkeyPatch, seen: Callable[[list[int] | None], None]) -> None:
    """Make every scan the assembler runs also run this reference on the same inputs and assert the
    same members and, bit for bit, the same rows (the same batches, so the same products); `seen`
    gets each scan's members. Pools of 24 and more are scanned (MIN_POOL lowered)."""
    from docket.moves import reach

    product = reach._Scan

    class Checked(product):  # type: ignore[misc, valid-type]
        def run(self) -> list[int] | None:
            ref = Scan(self.passages, self.ctx, self.vecs, self.room, self.authorities)
            want = ref.run()
            got = super().run()
            assert got == want
            if got:
                assert self.rows(got).tolist() == [ref.rows[k].tolist() for k in got]
            seen(got)
            return got

    monkeypatch.setattr(reach, "_Scan", Checked)
    monkeypatch.setattr(reach, "MIN_POOL", 24)
