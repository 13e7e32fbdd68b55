"""The reachable set: Moves 1-2 compare each candidate that can still reach the prompt with the
whole pool (R x n cosines), not every pair (issue 21, product decisions 1 and 2).

A candidate is *beyond reach* when no run of the later moves can put it, or anything it touches,
into the prompt. The bound is conservative: whatever is not proven beyond reach is in R, and R is
closed, so every pair that could matter is still compared:

- **closure**: a candidate related to a member of R (cosine at the lower of the duplicate and
  conflict thresholds, the same normalised text, the same document or chunk id) is in R. So a
  duplicate, a conflict or a restated table of a member is a member (a higher-authority copy deep
  in the pool still meets the copy it replaces), and expansion, which grows and absorbs within a
  document, only touches members. Pairs between candidates beyond reach are what is not compared.
- **the budget**: pack takes passages best first and skips one that does not fit. A *witness* is a
  member of R that is certainly a passage of its own when pack runs (certainly kept by Move 2,
  alone in its document, not a grown top hit), with its exact cost c. Before a witness pack has
  used at least `lo` tokens; after it, at least min(lo + c, max(lo, room - c + 1)): it was taken,
  or it was skipped because more than room - c was used. Other members may cost anything, and
  what is beyond reach is never taken (by induction in rank order), so neither lowers `lo`. x is
  beyond reach when `lo` before it plus its cost (exact when counted already, else a lower bound)
  exceeds the room pack has for passages; a lower bound that fails is replaced by the exact count.

The bound needs pack's order to be rank order in every run: one authority level and one trust
level in the pool (and in the documents the top hits grow into), scores falling with the rank,
packing on, no compression, no summary, no MMR, an o200k_base counter (the lower bound is its) and
fewer than a million passages. Otherwise R is the whole pool, as before.

**Labels.** Pack counts each passage under its widest label, S + the number of passages it sees,
and how many it sees depends on duplicates beyond reach. Under o200k_base every label of one to
three digits counts alike, and the digits of a longer label are one more pre-token per three
digits, each one token (docket.counting): so with c a passage's count under a label of up to
three digits, pack's count is c, or at most c + `extra` where the pool's own label is longer
(`label_extra`: 1 from 1,000 to 999,999 passages). The scan counts under the three-digit class
and keeps the bounds sound for either: a candidate is beyond reach when `lo` + c exceeds the room
(c is at most pack's count), and after a witness `lo` is min(lo + c, max(lo, room - c - extra + 1))
(taken: at least c more; skipped: more than room - (c + extra) was used).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from typing import Any

import numpy as np

from docket import counting
from docket.context import Context, _at_least, pairs_at_least
from docket.features import copy_values, words_bounds
from docket.model import Chunk, Passage
from docket.policy import VersionsPolicy
from docket.sizing import label_for, raw_budget
from docket.tokens import O200kCounter

#: pools smaller than this are compared whole: at 50 candidates the scan cost more than the pairs it
#: saved (benchmarks/assemble_speed.py: no first-sight gain, +0.6 ms warm); tests lower it
MIN_POOL = 100
#: when more than this share of the pool is reachable, the whole pool is compared
MAX_SHARE = 0.6
#: the largest pool the bound is kept for: labels of up to six digits (docket.counting, `label_extra`)
MAX_PASSAGES = 999_999
#: the widest label of the class every label of one to three digits counts in (o200k_base)
LABEL_CLASS = "S999"
#: a batch's near pairs (cosine at the cut, each member with itself included) read as Python lists
#: up to this many a member; more (a pool of copies) are read by whole-array reductions
_FEW_NEAR = 8


def label_extra(n: int) -> int:
    """At most how many tokens a label of `n`'s width counts above one of three digits under
    o200k_base: one per further group of up to three digits (0 up to 999, 1 up to 999,999)."""
    return max(0, -(-len(str(n)) // 3) - 1)


class PairSims:
    """Cosines of the members' pairs, read as `sims[i, j]` with indexes into the caller's list."""

    __slots__ = ("matrix", "local")

    def __init__(self, matrix: np.ndarray, local: dict[int, int]) -> None:
        self.matrix, self.local = matrix, local

    def __getitem__(self, ij: tuple[int, int]) -> Any:
        i, j = ij
        return self.matrix[self.local[i], self.local[j]]


class Reach:
    """R for one pool: each member's cosines with every candidate (|R| x n, linear in the pool)."""

    __slots__ = ("chunks", "members", "local", "_position", "_member", "rows", "beyond", "n", "hashes")

    def __init__(self, chunks: Sequence[Chunk], members: list[int], rows: np.ndarray,
                 hashes: list[str | int] | None = None) -> None:
        self.chunks, self.members, self.rows = list(chunks), members, rows
        #: each candidate's copy value (features.copy_values: equal exactly where the texts are
        #: copies; Move 2 reads them too), when the scan read them
        self.hashes = hashes
        self.local = dict(zip(members, range(len(members))))  # position -> row, for the pool's own list
        #: chunk object id -> position, and -> member row: built when a list other than the pool's
        #: own asks (`covers`, `similar_pairs`); Moves 1-2 over the pool itself never read them
        self._position: dict[int, int] | None = None
        self._member: dict[int, int] | None = None
        self.n = len(chunks)
        self.beyond = self.n - len(members)

    @property
    def position(self) -> dict[int, int]:
        pos = self._position
        if pos is None:
            pos = self._position = dict(zip(map(id, self.chunks), range(self.n)))
        return pos

    @property
    def member(self) -> dict[int, int]:
        got = self._member
        if got is None:
            got = self._member = dict(zip(map(id, map(self.chunks.__getitem__, self.members)), range(len(self.members))))
        return got

    def is_pool(self, chunks: Sequence[Chunk]) -> bool:
        """`chunks` are this pool's, in its order."""
        return len(chunks) == self.n and all(map(operator.is_, chunks, self.chunks))

    def covers(self, chunks: Sequence[Chunk]) -> bool:
        pos = self.position
        return all(id(c) in pos for c in chunks)

    def similar_pairs(self, chunks: Sequence[Chunk], threshold: float) -> tuple[PairSims, list[int], list[int]] | None:
        """What `Context.similar_pairs` gives, over the members among `chunks`: pairs (i < j) in the
        order of itertools.combinations, the cosine of row i at column j. None when a chunk is not
        of this pool (then the caller compares the whole list)."""
        if self.is_pool(chunks):
            idx = self.members  # the pool itself (the common case): its members, in order
            sub = self.rows[:, idx]
            a, b = pairs_at_least(sub, threshold)
            return PairSims(sub, self.local), [idx[x] for x in a], [idx[y] for y in b]
        member, position = self.member, self.position
        idx = []
        rows: list[int] = []
        cols: list[int] = []
        for k, c in enumerate(chunks):
            key = id(c)
            r = member.get(key)
            if r is not None:
                idx.append(k)
                rows.append(r)
                cols.append(position[key])
            elif key not in position:
                return None
        sub = self.rows[np.ix_(rows, cols)]
        a, b = pairs_at_least(sub, threshold)
        return PairSims(sub, {k: n for n, k in enumerate(idx)}), [idx[x] for x in a], [idx[y] for y in b]


def hashes_of(passages: Sequence[Passage], ctx: Context) -> list[str | int] | None:
    """The passages' copy values as the scan read them (features.copy_values: equal exactly where
    their copy hashes are), when they are the reachable set's pool
    (each one whole chunk: its hash is its chunk's); else None."""
    reach = ctx.reach
    if not isinstance(reach, Reach) or reach.hashes is None or not reach.is_pool([p.first for p in passages]):
        return None
    return reach.hashes


def similar_pairs(passages: Sequence[Passage], ctx: Context, threshold: float) -> tuple[Any, list[int], list[int]]:
    """`ctx.similar_pairs` of the passages' first chunks, over the reachable set when there is one."""
    chunks = [p.first for p in passages]
    reach = ctx.reach
    got = reach.similar_pairs(chunks, threshold) if isinstance(reach, Reach) else None
    return got if got is not None else ctx.similar_pairs(chunks, threshold)


#: each chunk's authority (docket.moves.versions.authorities, passed in: that module imports this one)
Authorities = Callable[[Iterable[Chunk], VersionsPolicy], list[int]]


def ensure(passages: list[Passage], ctx: Context, move: str, authorities: Authorities) -> Reach | None:
    """The reachable set of `passages` (the pool Moves 1-2 work on), computed once per assembly
    and traced once; None when the whole pool is compared."""
    got = ctx.reach
    chunks = list(map(_FIRST, passages))
    if isinstance(got, Reach) and (got.is_pool(chunks) or got.covers(chunks)):
        return got
    if got is not None and got == _key(chunks):
        return None  # already found not to apply to this pool
    reach = _compute(passages, ctx, authorities)
    ctx.reach = reach if reach is not None else _key(chunks)
    if reach is not None and reach.beyond:
        u, n = reach.beyond, reach.n
        skipped = u * (u - 1) // 2
        ctx.trace.add(move, "reach", [], f"{u} of {n} candidates can never reach the prompt (the budget is full before "
                      f"them and none is near a reachable one): {skipped} pairs between them not compared",
                      candidates=n, reachable=n - u, beyond=u, pairs_compared=n * (n - 1) // 2 - skipped,
                      pairs_not_compared=skipped)
    return reach


def _key(chunks: Sequence[Chunk]) -> tuple[int, ...]:
    return tuple(id(c) for c in chunks)


def applies(passages: Sequence[Passage], ctx: Context, authorities: Authorities,
            firsts: Sequence[Chunk] | None = None) -> bool:
    """The conditions under which pack's order is rank order and the cost bound holds (module doc).
    `firsts`: the passages' first chunks, when the caller has them."""
    pol = ctx.policy
    n = len(passages)
    if n == 0 or n < MIN_POOL or n > MAX_PASSAGES or not ctx.has_vectors() or type(ctx.counter) is not O200kCounter:
        return False
    if not pol.pack.enabled or pol.compress.enabled or pol.compress.summary or (pol.dedup.enabled and pol.dedup.mmr):
        return False
    from docket.counting import _digits_are_single_tokens

    if not _digits_are_single_tokens(O200kCounter):
        return False
    trust = set(map(_UNTRUSTED, passages))
    if len(trust) != 1 or (True in trust and pol.render.spotlight == "datamark"):
        return False
    firsts = list(map(_FIRST, passages)) if firsts is None else firsts
    if not _has_lone_document(firsts):
        return False
    if len(set(authorities(firsts, pol.versions))) != 1:  # (worked out once per source key)
        return False
    return _in_pack_order(passages)


def _has_lone_document(firsts: Sequence[Chunk]) -> bool:
    """Some candidate is the only one of its document in the pool. Without one the scan cannot
    find R: a witness is a member alone in its document (`_Scan._witness`: a member whose document
    holds another candidate may be absorbed or merged), so with none pack's `lo` stays 0, the scan
    is never anchored, every candidate joins R and R is the whole pool (more than MAX_SHARE of it).
    Saying so here spares the scan's reads (each candidate's copy hash, lower bound and cosines with
    the first members), ~6 ms at 200 never-seen candidates in four-chunk documents (the service
    path, issue 21); the outcome (R is the whole pool, nothing traced) is the scan's."""
    docs = list(map(_DOC, firsts))
    if len(set(docs)) * 2 > len(docs):
        return True  # more documents than half the candidates: one of them holds only one
    return 1 in Counter(docs).values()


_CHUNKS, _OVERRIDE = operator.attrgetter("chunks"), operator.attrgetter("text_override")
_FIRST, _UNTRUSTED = operator.attrgetter("first"), operator.attrgetter("untrusted")
_RANK, _SCORE = operator.attrgetter("rank"), operator.attrgetter("score")
_FEATURES = operator.attrgetter("features")


def _in_pack_order(passages: Sequence[Passage]) -> bool:
    """Pack's order is (rank, ids): it must be this list's, with scores falling, each passage one
    whole chunk. Read column by column (no Python step per passage) when the ranks rise strictly."""
    if set(map(len, map(_CHUNKS, passages))) != {1} or set(map(_OVERRIDE, passages)) != {None}:
        return False
    ranks, scores = list(map(_RANK, passages)), list(map(_SCORE, passages))
    if any(map(operator.lt, scores, scores[1:])) or any(map(operator.gt, ranks, ranks[1:])):
        return False
    if all(map(operator.lt, ranks, ranks[1:])):
        return True
    ids = [p.first.id for p in passages]  # equal ranks: pack breaks the tie by id
    return not any(r == s and i >= j for r, s, i, j in zip(ranks, ranks[1:], ids, ids[1:]))


def _room(ctx: Context) -> int:
    """The evidence budget less the documents block's wrapper: what pack's passages may cost."""
    pack = ctx.policy.pack
    budget = raw_budget(pack, 0 if pack.budget is not None else ctx.sizer.fixed_tokens())
    return budget - ctx.sizer.wrapper_tokens()


def _compute(passages: list[Passage], ctx: Context, authorities: Authorities) -> Reach | None:
    chunks = list(map(_FIRST, passages))
    if not applies(passages, ctx, authorities, chunks):
        return None
    room = _room(ctx)
    if room <= 0:
        return None
    vecs = ctx.vectors(chunks)
    scan = _Scan(passages, ctx, vecs, room, authorities, chunks)
    members = scan.run()
    if members is None or len(members) > MAX_SHARE * len(passages):
        return None
    rows = scan.rows(members) if members else np.zeros((0, len(chunks)), dtype=vecs.dtype)
    return Reach(chunks, members, rows, scan.hashes)


class _Groups:
    """Positions that share a value (document, chunk id, normalised text): the first of each value,
    and the whole group only where there is more than one (no list per candidate)."""

    __slots__ = ("first", "more")

    def __init__(self, values: Sequence[str | int]) -> None:
        n = len(values)
        # the first position of each value in one C-level pass (a later position is overwritten by an earlier one)
        first = dict(zip(reversed(values), range(n - 1, -1, -1)))
        more: dict[str | int, list[int]] = {}
        if len(first) < n:  # some value repeats: its positions, in order (a Python step per repeat only)
            at = list(map(first.__getitem__, values))
            for k in compress(range(n), map(operator.ne, at, range(n))):
                group = more.get(values[k])
                if group is None:
                    more[values[k]] = [at[k], k]
                else:
                    group.append(k)
        self.first, self.more = first, more


_DOC, _ID = operator.attrgetter("doc"), operator.attrgetter("id")


class _Scan:
    """One pass over the pool in rank order, growing R (with its closure) and the witnesses.

    What the scan asks of every candidate (its lower bound, its counted cost when known) is read
    once into lists, and each member's cosines with the pool come from one product per batch of
    new members: the members found are those of the scan that asked one candidate at a time
    (tests/reach_reference.py, checked by tests/test_reach_scan.py)."""

    def __init__(self, passages: list[Passage], ctx: Context, vecs: np.ndarray, room: int,
                 authorities: Authorities, firsts: list[Chunk] | None = None) -> None:
        self.passages, self.ctx, self.vecs, self.room = passages, ctx, vecs, room
        self.authorities = authorities
        pol = ctx.policy
        self.cut = _at_least(min(pol.dedup.threshold, pol.versions.conflict_similarity), vecs.dtype)
        n = len(passages)
        firsts = list(map(_FIRST, passages)) if firsts is None else firsts
        feats = list(map(_FEATURES, ctx.entries(firsts)))  # each passage is one whole chunk (`applies`)
        # equal exactly when the texts are copies (a copy hash only where two chunks share a sketch)
        hashes = copy_values(feats, firsts)
        self.firsts = firsts
        #: what joins R with a member: its document, its chunk id, its normalised text (value -> positions)
        values = (list(map(_DOC, firsts)), list(map(_ID, firsts)), hashes)
        #: some document, chunk id or text is shared (else no member joins another through them, and
        #: the groups are not built: a set per column tells)
        self.shared = any(len(set(v)) < n for v in values)
        self.groups = tuple(map(_Groups, values)) if self.shared else ()
        self.hashes = hashes
        self.in_r = [False] * n
        #: each flushed batch: its positions and their cosines with the pool (one row each)
        self.batches: list[tuple[list[int], np.ndarray]] = []
        #: member -> whether it is related (at the cut) to an earlier candidate
        self.earlier: dict[int, bool] = {}
        self.pending: list[int] = []
        self.grows = pol.expand.enabled and pol.expand.top_n > 0
        self.top_n = pol.expand.top_n if self.grows else 0
        self.certain = 0  # members certainly kept by Move 2, in rank order so far
        self.lo = 0  # tokens pack has certainly used before the position scanned
        #: a witness that fits an empty budget above pack's floor has been met: pack takes something,
        #: so its "nothing fits" warning (which names the smallest cost it saw) cannot depend on what is beyond
        self.anchored = False
        self.witnesses = 0
        #: the scan counts under a label of up to three digits (the pool's own when it is no wider):
        #: pack's count is that, or at most `extra` more (module doc, "Labels")
        self.label = label_for(n) if n <= 999 else LABEL_CLASS
        self.extra = label_extra(n)
        keys = [("cost", ctx.counter.name, ctx.render_key(), counting.label_class(ctx.counter, label_for(10**w)))
                for w in range(min(len(str(n)), 3))]
        #: each candidate's lower bound (its words), and its rendered cost when counted already (any
        #: label up to S999 counts alike): read once, not once per block
        self.bound: list[int] = words_bounds(feats, firsts)  # each chunk's, kept with its features once read
        self.feats, self.cost_keys = feats, keys
        self.known: list[int | None] = [None] * n  # filled when first asked (most are beyond on their bound)
        self.bound_from: list[int] | None = None
        #: positions in order of their bounds, and how far `_rest_beyond` has read them
        self.by_bound: list[int] | None = None
        self.cursor = 0
        self.authority: int | None = None

    def run(self) -> list[int] | None:
        n = len(self.passages)
        in_r, pending = self.in_r, self.pending
        t, block = 0, 16
        while t < n:
            if self._rest_beyond(t):
                break  # no later candidate can join R: the members after t are flushed already, and are witnesses only
            end = min(n, t + block)
            if self.certain < self.top_n or not self.anchored:
                new = [k for k in range(t, end) if not in_r[k]]
            else:  # x is beyond reach when lo + its cost exceeds the room (module doc)
                left, bound, known = self.room - self.lo, self.bound, self.known
                new = [k for k in range(t, end) if not in_r[k] and bound[k] <= left and self._cost(k, known) <= left]
            for k in new:
                in_r[k] = True
            pending.extend(new)
            self._flush()
            for k in range(t, end):
                if in_r[k] and not self._witness(k):
                    return None
            t, block = end, min(2 * block, 128)
        return [k for k in range(n) if in_r[k]]

    def _rest_beyond(self, t: int) -> bool:
        """Every candidate from t on that is not in R is beyond reach on its lower bound, whatever the
        later witnesses add (`lo` only grows). Then the rest of the scan joins nothing and, past the
        top hits, every witness check passes: R is found."""
        if self.certain < self.top_n or not self.anchored:
            return False
        if self.bound_from is None:  # each position's smallest bound from there on, read once
            self.bound_from = np.minimum.accumulate(np.asarray(self.bound[::-1], dtype=np.int64))[::-1].tolist()
        left = self.room - self.lo
        if self.bound_from[t] > left:
            return True
        # the smallest bound of a non-member from t on (members' do not count): positions by bound, read
        # from a cursor that only moves on (a position before t, or in R, stays so for the rest of the scan)
        by_bound, in_r, n = self.by_bound, self.in_r, len(self.in_r)
        if by_bound is None:
            by_bound = self.by_bound = np.argsort(np.asarray(self.bound, dtype=np.int64), kind="stable").tolist()
        c = self.cursor
        while c < n and (by_bound[c] < t or in_r[by_bound[c]]):
            c += 1
        self.cursor = c
        return c == n or self.bound[by_bound[c]] > left

    def _cost(self, k: int, known: list[int | None]) -> int:
        """x's rendered cost: counted already, else counted now (pack counts it too)."""
        c = known[k]
        if c is None:
            c = _cached_cost(self.feats[k].costs, self.cost_keys)
            if c is None:
                c = self.ctx.sizer.costs([self.passages[k]], self.label)[0]
            known[k] = c
        return c

    def rows(self, members: list[int]) -> np.ndarray:
        """The members' cosines with the pool, one row each, in the order of `members`."""
        at: dict[int, int] = {}
        base = 0
        for batch, _ in self.batches:
            for b, k in enumerate(batch):
                at[k] = base + b
            base += len(batch)
        every = np.concatenate([sims for _, sims in self.batches])
        return every[[at[k] for k in members]]

    def _values(self, k: int) -> tuple[str, str, str | int]:
        c = self.firsts[k]
        return c.doc, c.id, self.hashes[k]

    def _flush(self) -> None:
        """Each new member's cosines with the whole pool; what they relate to joins R (the closure)."""
        in_r, pending = self.in_r, self.pending
        n = len(in_r)
        while pending:
            batch = pending[:]
            del pending[:]
            sims = _rows_of(self.vecs, batch)
            self.batches.append((batch, sims))
            near = sims >= self.cut
            rows, cols = np.nonzero(near)  # row by row, each row's columns ascending
            if len(cols) <= _FEW_NEAR * len(batch):  # (each member is near itself): read as lists, two numpy calls
                at = cols.tolist()
                # each row's first column at the cut (reversed, the first of a row is written last), n for none:
                # before the member's own position, it relates to an earlier candidate
                first = dict(zip(reversed(rows.tolist()), reversed(at)))
                self.earlier.update(zip(batch, map(operator.lt, map(first.get, range(len(batch)), repeat(n)), batch)))
                related = sorted(set(at))
            else:  # many near pairs (a pool of copies): the same, as whole-array reductions
                firsts = np.where(near.any(axis=1), near.argmax(axis=1), n).tolist()
                self.earlier.update(zip(batch, map(operator.lt, firsts, batch)))
                related = np.flatnonzero(near.any(axis=0)).tolist()
            for j in related:
                if not in_r[j]:
                    in_r[j] = True
                    pending.append(j)
            if not self.shared:
                continue
            for k in batch:
                for groups, value in zip(self.groups, self._values(k)):
                    for j in groups.more.get(value, ()):
                        if not in_r[j]:
                            in_r[j] = True
                            pending.append(j)

    def _witness(self, k: int) -> bool:
        """Count member k as certainly kept and as a witness where it is one; False when a top hit's
        document holds another authority level (its grown passage could move in pack's order)."""
        if self.certain < self.top_n and not self._grows_alike(k):
            return False
        if self.earlier[k]:
            return True  # related to an earlier candidate: Move 2 may fold it
        shared = self.shared
        if shared:
            values = self._values(k)
            if any(g.first[v] < k for g, v in zip(self.groups, values)):
                return True  # the same document, id or text as an earlier candidate: Move 2 may fold it
        self.certain += 1
        if self.certain <= self.top_n or (shared and (values[0] in self.groups[0].more or values[1] in self.groups[1].more)):
            return True  # may grow (a top hit) or be absorbed or merged (a shared document)
        p = self.passages[k]
        cost = self._cost(k, self.known)  # counted under a label of up to three digits (pack: at most `extra` more)
        # taken (at least `cost` more), or skipped (more than room - (cost + extra) used: pack's count is at most that)
        self.lo = min(self.lo + cost, max(self.lo, self.room - cost - self.extra + 1))
        self.anchored = self.anchored or (cost + self.extra <= self.room and p.score >= self.ctx.floor)
        self.witnesses += 1
        return True

    def _grows_alike(self, k: int) -> bool:
        """Every chunk of the document version a top hit may grow into has the pool's authority."""
        p = self.passages[k]
        pol = self.ctx.policy.versions
        if self.authority is None:
            self.authority = self.authorities([p.first], pol)[0]
        chunks_of = getattr(self.ctx.store, "chunks_of", None)
        if chunks_of is None:
            return False
        return set(self.authorities(chunks_of(p.doc, p.first.version), pol)) <= {self.authority}


def _rows_of(vecs: np.ndarray, batch: list[int]) -> np.ndarray:
    """`vecs[batch] @ vecs.T`, the same numbers (tests/test_reach_scan.py checks them bit for bit):
    for more than one row as the transpose of `vecs @ vecs[batch].T`, which reads the pool's matrix
    in its own (row) order, not through a transposed view (a half to a third of the time for 2 to
    16 rows of 200 to 900; one row is a matrix-vector product either way)."""
    if len(batch) == 1:
        return vecs[batch] @ vecs.T  # type: ignore[no-any-return]
    return (vecs @ vecs[batch].T).T  # type: ignore[no-any-return]


def _cached_cost(costs: dict[Any, int], keys: list[Any]) -> int | None:
    """The first of `keys` a chunk's cost cache holds (they all count alike), else None."""
    for key in keys:
        cost = costs.get(key)
        if cost is not None:
            return cost
    return None
