"""Move 1: one version per fact, authority by source type, conflicts out loud.

Versions of one document are near-duplicates of each other, so this runs before Move 2:
otherwise a duplicate filter may keep the retired version and throw the current one away.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from datetime import date as Date
from functools import lru_cache, partial
from itertools import repeat
from typing import Any

import numpy as np

from docket import deadline
from docket.claims import Claim, Similar, claims, contradiction, different_subjects, subject
from docket.claims.compare import PassageRead, contradiction_read
from docket.context import Context
from docket.dates import find_dates
from docket.features import title_terms
from docket.model import KNOWN_STATUSES, Chunk, Passage, is_retired, status_word
from docket.moves import reach
from docket.policy import VersionsPolicy
from docket.rescore import phrase
from docket.safeio import shown
from docket.store.base import VersionInfo, section_of, version_in_force

MOVE = "versions"


def authority(chunk: Chunk, policy: VersionsPolicy) -> int:
    """Authority of a chunk's source: its source_type's rank. Untrusted text (a stranger's post,
    a web page) never ranks above a forum post, whatever source type its metadata claims, nor above
    any trusted source (a policy that ranks a source type below "forum"); where the two tie, the
    trusted text wins (`outranks`)."""
    forum = _stranger_cap(policy)
    if chunk.source_type is not None:
        rank = policy.authority.get(chunk.source_type.lower(), policy.default_authority)
        return min(rank, forum) if chunk.untrusted else rank
    if chunk.untrusted:
        return forum
    return policy.default_authority


def _stranger_cap(policy: VersionsPolicy) -> int:
    """The highest authority a stranger's text may have: the forum's, and no more than the lowest
    rank any trusted source can have (the default, every source type's)."""
    return min(policy.authority.get("forum", 0), policy.default_authority, *policy.authority.values())


def outranks(auth_a: int, a_untrusted: bool, auth_b: int, b_untrusted: bool) -> bool:
    """Source a outranks source b: a higher authority, or the same one and only b is a stranger's."""
    return auth_a > auth_b or (auth_a == auth_b and b_untrusted and not a_untrusted)


def authorities(chunks: Iterable[Chunk], policy: VersionsPolicy) -> list[int]:
    """`authority` of each chunk, worked out once per (source type, trust): a pool has a few."""
    chunks = chunks if isinstance(chunks, (list, tuple)) else list(chunks)
    if chunks and all(len(set(map(get, chunks))) == 1 for get in _SOURCE_PARTS):
        return [authority(chunks[0], policy)] * len(chunks)  # one source key (most pools): no tuple per chunk
    keys = list(map(_SOURCE_KEY, chunks))  # what `authority` reads: source type, trust, status
    memo = {key: authority(c, policy) for key, c in dict(zip(keys, chunks)).items()}  # one chunk per key
    return list(map(memo.__getitem__, keys))


_SOURCE_KEY = operator.attrgetter("source_type", "trust", "status")
_SOURCE_PARTS = tuple(map(operator.attrgetter, ("source_type", "trust", "status")))


def _vlabel(v: VersionInfo) -> str:
    return f"v{v.version} ({v.date.isoformat()})" if v.date else f"v{v.version}"


class _Versions:
    """Every stored version of the candidates' documents, read once per assembly (for all the
    documents at once where the store can: `versions_many`), when first asked for: a question
    that names no date reads only the version in force (`in_force_many`), not every version."""

    def __init__(self, ctx: Context, docs: list[str] | None = None) -> None:
        self._store = ctx.store
        self._cache: dict[str, list[VersionInfo]] = {}
        self._docs = docs  # read together on the first `of`

    def of(self, doc: str) -> list[VersionInfo]:
        docs, self._docs = self._docs, None
        many = getattr(self._store, "versions_many", None)
        if docs and many is not None:
            self._cache.update(many(docs))
        if doc not in self._cache:
            self._cache[doc] = self._store.versions(doc)
        return self._cache[doc]

    def in_force_many(self, docs: list[str], day: Date) -> dict[str, VersionInfo | None]:
        """`in_force` of each document; a store that answers it in one go (`in_force`) is asked so."""
        many = getattr(self._store, "in_force", None)
        if many is not None:
            return many(docs, day)  # type: ignore[no-any-return]
        return {d: self.in_force(d, day) for d in docs}

    def in_force(self, doc: str, day: Date) -> VersionInfo | None:
        return version_in_force(self.of(doc), day)

    def during(self, doc: str, start: Date, end: Date) -> list[VersionInfo]:
        """The versions in force at some day of [start, end] (they change only on version dates)."""
        days = {start, end} | {d for v in self.of(doc) for d in (v.date, v.effective_to) if d and start < d <= end}
        found = {v.version: v for v in (self.in_force(doc, d) for d in sorted(days)) if v is not None}
        return [found[k] for k in sorted(found)]


def _num(v: VersionInfo | None) -> int | None:
    return v.version if v is not None else None


def _names(changes: list[tuple[str, VersionInfo | None, VersionInfo | None]]) -> str:
    return ", ".join(f"{doc} {'v' + str(new.version) if new else 'none'} instead of {'v' + str(old.version) if old else 'none'}"
                     for doc, old, new in changes)


def choose_as_of(docs: list[str], ctx: Context, vs: _Versions) -> Date:
    """The one date whose versions the brief holds: pinned (argument, --as-of, policy), else a
    date the question asks about when it changes which version of a candidate document is in
    force, else today (read once per assembly). Traced, with the reason; warned when the
    question asks about another date than the one used."""
    pol = ctx.policy.versions
    today, pinned = ctx.today, ctx.policy.as_of
    base = pinned or today
    refs = find_dates(ctx.question, today) if pol.question_dates != "off" else []
    chosen, source = base, "pinned" if pinned else "today"
    if refs:
        multi = [d for d in docs if len(vs.of(d)) > 1]  # documents with another version to choose
        asked = ", ".join(repr(r.text) for r in refs)
        days = sorted({r.as_of(today) for r in refs})
        if len(days) > 1:
            msg = (f"the question names several dates ({asked}); one brief holds one version per document, the one in "
                   f"force on {base.isoformat()}: ask about each date separately")
            ctx.trace.add(MOVE, "question_date", [], msg, dates=[d.isoformat() for d in days])
            if multi:
                ctx.warnings.append(msg)
        else:
            day = days[0]
            changes = [(d, vs.in_force(d, base), vs.in_force(d, day)) for d in docs]
            changes = [(d, old, new) for d, old, new in changes if _num(old) != _num(new)]
            existing = [c for c in changes if c[2] is not None]
            where = f"the question asks about {asked} (versions in force on {day.isoformat()})"
            if not changes:
                ctx.trace.add(MOVE, "question_date", [], f"{where}: every candidate document has the same version in force "
                              f"then as on {base.isoformat()}; nothing changes", date=day.isoformat())
            elif pinned or pol.question_dates == "warn" or not existing:
                why = (f"the as-of date is pinned to {pinned.isoformat()}" if pinned
                       else "versions.question_dates is 'warn'" if pol.question_dates == "warn"
                       else "no candidate document had another stored version in force then")
                msg = f"{where}, but {why}: the brief holds the versions in force on {base.isoformat()}"
                if existing:
                    msg += f" (that date would give {_names(existing)})"
                ctx.trace.add(MOVE, "question_date", [], msg, date=day.isoformat(), applied=False)
                if any(d in multi for d, _, _ in changes):
                    ctx.warnings.append(msg)
            else:
                chosen, source = day, "question"
                msg = f"{where}: the brief holds the versions in force then, {_names(existing)} (today's rule differs)"
                ctx.trace.add(MOVE, "question_date", [], msg, date=day.isoformat(), applied=True)
                ctx.warnings.append(msg)
                ref = refs[0]
                if ref.relation == "at" and ref.grain != "day":
                    for d in multi:
                        during = vs.during(d, ref.start, ref.end)
                        if len(during) > 1:
                            several = (f"{len(during)} versions of {d} were in force during {ref.text!r} "
                                       f"({', '.join(_vlabel(v) for v in during)}); the brief uses the one in force on "
                                       f"{day.isoformat()}: pin --as-of for another day")
                            ctx.trace.add(MOVE, "question_date", [], several, versions=[v.version for v in during])
                            ctx.warnings.append(several)
    why = {"today": "today's date, the default (pin it with --as-of or as_of in the policy to reproduce a run)",
           "pinned": "pinned by the caller (--as-of, the as_of argument or the policy)",
           "question": "the date the question asks about"}[source]
    ctx.trace.add(MOVE, "as_of", [], f"versions in force on {chosen.isoformat()}: {why}", as_of=chosen.isoformat(),
                  source=source, default=source == "today")
    ctx.as_of = {"date": chosen, "source": source}
    return chosen


def resolve(passages: list[Passage], ctx: Context) -> list[Passage]:
    """Drop chunks of versions not in force on the as-of date (see `choose_as_of`); fetch the
    in-force section when only an old one was retrieved; record conflicts between sources."""
    docs = list(dict.fromkeys(map(_DOC, passages)))
    vs = _Versions(ctx, docs)
    as_of = choose_as_of(docs, ctx, vs)
    day = as_of.isoformat()
    in_force = vs.in_force_many(docs, as_of)

    kept: list[Passage] = []
    dropped: list[tuple[Passage, VersionInfo | None]] = []
    deadline.check()
    posing: dict[str, set[int]] = {}
    if _all_in_force(passages, in_force, as_of):
        passages, kept = [], list(passages)  # every candidate is of the version in force (the common case)
    else:
        in_force, posing = _no_stranger_in_force(passages, in_force, vs, ctx, as_of)
    for p in passages:
        deadline.check()
        c = p.first
        current = in_force[p.doc]
        if p.untrusted and c.version in posing.get(p.doc, ()):
            ctx.trace.add(MOVE, "drop", [c.id], f"untrusted text under the id of the trusted document {c.doc} as its "
                          f"v{c.version}: a stranger's text is never a version of an official document "
                          f"({_vlabel(current) if current else 'no trusted version'} is in force on {day})",
                          version=c.version, as_of=day)
            dropped.append((p, None))
        elif current is None:
            why = f"no version of {c.doc} is in force on {day} (v{c.version} is {c.status}" + (
                f", dated {c.date.isoformat()})" if c.date else ")")
            if c.date is not None and c.date > as_of:
                why = f"{c.doc} v{c.version} takes effect {c.date.isoformat()}, after the as-of date {day}"
            ctx.trace.add(MOVE, "drop", [c.id], why, version=c.version, as_of=day)
            dropped.append((p, None))
        elif c.version != current.version:
            if c.version < current.version:
                why = f"v{c.version}" + (f" ({c.date.isoformat()})" if c.date else "") + f"; {_vlabel(current)} is in force on {day}"
            else:
                why = (f"v{c.version}" + (f" takes effect {c.date.isoformat()}" if c.date else " is newer")
                       + f", after the as-of date {day}; {_vlabel(current)} is in force")
            ctx.trace.add(MOVE, "drop", [c.id], why, version=c.version, in_force=current.version, as_of=day)
            dropped.append((p, current))
        elif c.date is not None and c.date > as_of:
            ctx.trace.add(MOVE, "drop", [c.id], f"published {c.date.isoformat()}, after the as-of date {day}", as_of=day)
            dropped.append((p, None))
        elif _says_not_in_force(c, current, as_of):
            said = (f"its own status is {c.status!r}" if c.retired
                    else f"its own effective_to {c.effective_to.isoformat() if c.effective_to else ''} is not after {day}")
            ctx.trace.add(MOVE, "drop", [c.id], f"{said}, although {_vlabel(current)} of {c.doc} is in force on {day} "
                          f"as {current.status!r}: the chunk disagrees with its version and says it is not the rule",
                          version=c.version, as_of=day)
            dropped.append((p, None))
        else:
            kept.append(p)

    _note_unknown_statuses(kept, ctx)
    _note_unknown_source_types(kept, ctx)
    if ctx.policy.versions.fetch_current and dropped:  # nothing dropped: nothing to fetch
        kept = _fetch_current(kept, dropped, ctx, as_of)
    reach.ensure(kept, ctx, MOVE, authorities)  # what can reach the prompt: Moves 1-2 compare it with the pool, not every pair
    _find_conflicts(kept, ctx)
    return kept


def _note_unknown_statuses(kept: list[Passage], ctx: Context) -> None:
    """A status docket does not know (a typo, a store's own word) is read as in force and
    trusted, and shown on the passage's tag; say so once, with the chunks, so a "retird" rule
    kept as current is visible in the trace. A spelling read as a known word ("user_submitted",
    "Superseded by v4", look-alike letters: docket.statuses) is said too, with the word it read."""
    odd: dict[str, list[str]] = {}
    for p in kept:
        for c in p.chunks:
            if c.status not in KNOWN_STATUSES:
                odd.setdefault(c.status, []).append(c.id)
    for status, ids in sorted(odd.items()):
        word = status_word(status)
        if word is not None:
            ctx.trace.add(MOVE, "note", ids, f"status {status!r} is read as {word!r}", status=status, read_as=word,
                          passages=len(ids))
            continue
        ctx.trace.add(MOVE, "note", ids, f"status {status!r} is not one docket knows: read as in force and trusted "
                      "(shown on the tag); retired ones include superseded, archived, expired, obsolete; "
                      "untrusted: user-generated, external", status=status, passages=len(ids))


def _note_unknown_source_types(kept: list[Passage], ctx: Context) -> None:
    """A source type the authority table does not name (a typo such as "polcy", a store's own
    word) ranks at `default_authority`, which decides packing, prompt order, the copy kept and who
    outranks whom in a conflict: say so once per source type, with the chunks, the authority used
    and the table's type it likely meant, so a policy typed "polcy" ranked below the help article
    is visible in the trace. The prompt is unchanged."""
    pol = ctx.policy.versions
    odd: dict[str, list[Chunk]] = {}
    for p in kept:
        for c in p.chunks:
            st = c.source_type
            if st is not None and st not in pol.authority and not pol.ranks_source_type(st):
                odd.setdefault(st, []).append(c)
    for st, chunks in sorted(odd.items()):
        used = sorted({authority(c, pol) for c in chunks}, reverse=True)
        meant = pol.source_type_meant(st)
        capped = f" ({used[-1]} for untrusted text)" if used[-1] != pol.default_authority else ""
        ctx.trace.add(MOVE, "note", [c.id for c in chunks],
                      f"source_type {shown(st)} is not in the authority table: ranked at default_authority "
                      f"{pol.default_authority}{capped}" + (f"; did you mean {meant!r}?" if meant else "")
                      + f" (the table's source types: {', '.join(sorted(pol.authority))}; add it under "
                      "[versions.authority] to rank it)", source_type=st, authority=used[0],
                      passages=len(chunks), **({"did_you_mean": meant} if meant else {}))


def _no_stranger_in_force(passages: list[Passage], in_force: dict[str, VersionInfo | None], vs: _Versions,
                          ctx: Context, as_of: Date) -> tuple[dict[str, VersionInfo | None], dict[str, set[int]]]:
    """An untrusted version never retires a trusted one. A stranger's text stored under an official
    document's id with a higher version ("refund-policy" v4, a forum post) would otherwise be the
    version in force and drop the policy from the brief. For each document with a trusted candidate
    of another version than the one in force, the version in force is read: when every chunk of it
    is untrusted, the document's versions are chosen again without the strangers' ones (a version
    all of whose chunks are untrusted). Returns the versions in force and, per document, the
    strangers' versions set aside (their candidates are dropped as posing, never shown as the rule).
    Only the documents where a trusted candidate would be dropped are read (one `chunks_of` each)."""
    suspects: dict[str, VersionInfo] = {}
    for p in passages:
        current = in_force[p.doc]
        if current is not None and p.version != current.version and not p.untrusted:
            suspects.setdefault(p.doc, current)
    if not suspects:
        return in_force, {}

    def stranger(doc: str, version: int) -> bool:
        chunks = ctx.store.chunks_of(doc, version)
        return bool(chunks) and all(c.untrusted for c in chunks)

    out, posing = dict(in_force), {}
    for doc, current in suspects.items():
        if not stranger(doc, current.version):
            continue  # the version in force has trusted text: it is the rule (the common case)
        versions = vs.of(doc)
        theirs = {v.version for v in versions if v.version == current.version or stranger(doc, v.version)}
        now = version_in_force([v for v in versions if v.version not in theirs], as_of)
        out[doc], posing[doc] = now, theirs
        ctx.trace.add(MOVE, "stranger_version", [], f"{doc} " + ", ".join(f"v{n}" for n in sorted(theirs))
                      + f" {'is' if len(theirs) == 1 else 'are'} untrusted text under a trusted document's id: an untrusted "
                      f"version never retires a trusted one; {_vlabel(now) if now else 'no trusted version'} is in force "
                      f"on {as_of.isoformat()}", doc=doc, versions=sorted(theirs))
    return out, posing


def _says_not_in_force(c: Chunk, version: VersionInfo, as_of: Date) -> bool:
    """The chunk's own status or effective_to says it is not the rule although its version is in
    force: a chunk that disagrees with its version (a store keeps one status and one pair of dates
    per version, read from one chunk: a stranger's chunk, or a careless edit, may say otherwise)."""
    return (c.retired and not is_retired(version.status)) or (c.effective_to is not None and c.effective_to <= as_of)


def _all_in_force(passages: list[Passage], in_force: dict[str, VersionInfo | None], as_of: Date) -> bool:
    """Every passage's chunk is of the version in force on `as_of` and not dated after it: read
    column by column (a C call per passage, no Python step), as the per-passage loop would decide."""
    now = list(map(in_force.__getitem__, map(_DOC, passages)))
    if any(map(operator.is_, now, repeat(None))):
        return False
    firsts = list(map(_FIRST, passages))
    if not all(map(operator.eq, map(_VERSION, firsts), map(_VERSION, now))):
        return False
    dates = list(map(_DATE, firsts))
    if not (all(map(operator.is_, dates, repeat(None))) or not any(d is not None and d > as_of for d in dates)):
        return False
    # no chunk says it is not the rule (its own status or effective_to: `_says_not_in_force`)
    return not any(map(_ENDS, firsts)) and not any(map(_RETIRED, firsts))


_DOC, _FIRST = operator.attrgetter("doc"), operator.attrgetter("first")
_VERSION, _DATE = operator.attrgetter("version"), operator.attrgetter("date")
_ENDS, _RETIRED = operator.attrgetter("effective_to"), operator.attrgetter("retired")


def _fetch_current(kept: list[Passage], dropped: list[tuple[Passage, VersionInfo | None]], ctx: Context,
                   as_of: Date) -> list[Passage]:
    """When only a retired version of a section was retrieved, bring in the same section of
    the version in force, or say loudly that the current rule was not found."""
    have = {(p.doc, p.version, p.first.section) for p in kept}
    kept_ids = {i for p in kept for i in p.ids}
    added: list[Passage] = []
    missing: list[tuple[Chunk, VersionInfo]] = []
    for p, current in dropped:
        if current is None:
            continue
        c = p.first
        key = (c.doc, current.version, c.section)
        if key in have:
            continue  # the current version of this section is already among the candidates
        section = [s for s in section_of(ctx.store, c.doc, current.version, c.section) if s.id not in kept_ids]
        if not section:
            missing.append((c, current))
            continue
        pick = _closest(section, c, ctx)
        have.add(key)
        kept_ids.add(pick.id)
        added.append(Passage(chunks=(pick,), score=p.score, rank=p.rank, hits=(pick.id,)))
        ctx.trace.add(
            MOVE,
            "replace",
            [c.id, pick.id],
            f"only v{c.version} of {c.doc} section {c.section!r} was retrieved; fetched {pick.id} from v{current.version}, "
            f"which is in force, at the old chunk's rank {p.rank}",
            score=round(p.score, 4),
        )
    result = sorted(kept + added, key=lambda x: (x.rank, x.ids)) if added else kept
    live = {(p.doc, p.version) for p in result}
    for c, current in missing:
        where = f"on {as_of.isoformat()}"
        msg = f"{c.doc} v{current.version} (in force {where}) has no section {c.section!r}; only v{c.version} of it was retrieved"
        if (c.doc, current.version) not in live:
            msg = "the current rule was not found: " + msg
            ctx.warnings.append(msg)
        ctx.trace.add(MOVE, "current_not_found", [c.id], msg, in_force=current.version)
    return result


def _closest(section: list[Chunk], old: Chunk, ctx: Context) -> Chunk:
    """The chunk of the current section that best stands in for the retrieved old one."""
    if ctx.has_vectors():
        sims = ctx.vectors(section) @ ctx.question_vector()
        best = max(range(len(section)), key=lambda i: (float(sims[i]), -i))
        return section[best]
    same_pos = [s for s in section if s.position == old.position]
    return same_pos[0] if same_pos else section[0]


Statement = Claim  # a sentence with its content words, names, quantities and negation (docket.claims)


def statements(text: str) -> list[Statement]:
    """The sentences of a passage as claims (see docket.claims)."""
    return claims(text)


def disagree(a: str, b: str, overlap: float = 0.6) -> str | None:
    """A cheap sign that two passages state different facts: a sentence of one and a sentence of
    the other say the same thing with a different value (for a unit both use, neither set of
    values holds the other: "40 EUR a day" vs "50 EUR for each day"), or one negates it. Returns
    the reason, or None. `overlap` is the word overlap asked of years and unit-less numbers.

    Comparing whole passages ("their numbers differ") flags any two similar encyclopaedia
    paragraphs (two managers' careers, two seasons of a team); comparing statements does not."""
    return contradiction(claims(a), claims(b), overlap)


def claims_read(p: Passage, f: Any, ctx: Context) -> PassageRead:
    """What Moves 1-2 read of a passage's claims (`PassageRead`: a sketch, the claims split when a
    pair needs them, or when a later assembly reads the chunk again: `PassageRead.seen_by`): a
    whole chunk's once per chunk (`ChunkFeatures.claims_read`, features `f`), another passage's
    once per query for both moves (`ctx.claims_read`, by its text)."""
    if f is not None:
        got = f.claims_read(p.first)
        return got if got.passage is not None else got.seen_by(ctx)  # type: ignore[no-any-return]
    got = ctx.claims_read.get(p.text)
    if got is None:
        got = ctx.claims_read[p.text] = PassageRead(p.text, partial(statements, p.text))
    return got  # type: ignore[no-any-return]


class ClaimsReads(dict[int, PassageRead]):
    """`claims_read` of each passage of a pool, by its position: `reads[k]`. Moves 1-2 read a
    passage in every similar pair it is in; it is looked up once per passage, and a read after that
    is one dict look-up."""

    def __init__(self, pool: Any, feats: Any, ctx: Context) -> None:
        super().__init__()
        self.pool, self.feats, self.ctx = pool, feats, ctx  # indexable by position: the passages, their features

    def __missing__(self, k: int) -> PassageRead:
        got = self[k] = claims_read(self.pool[k], self.feats[k], self.ctx)
        return got


def _sentence_similarity(ctx: Context) -> Similar | None:
    """Cosine of two sentences with the assembler's embedder, each sentence embedded once."""
    if ctx.embedder is None:
        return None
    embedder = ctx.embedder
    cache: dict[str, np.ndarray] = {}

    def similar(a: str, b: str) -> float:
        need = [t for t in dict.fromkeys((a, b)) if t not in cache]
        if need:
            for t, v in zip(need, embedder.embed(need)):
                cache[t] = v
        return float(cache[a] @ cache[b])

    return similar


#: a title's phrase, memoised: asked for both passages of every similar pair on every query
_title_phrase = lru_cache(maxsize=8192)(phrase)


@lru_cache(maxsize=8192)
def _names_title(title: str, text: str) -> bool:
    """The text names its title, or the title's part before a comma ("Sullivan County" of
    "Sullivan County, New Hampshire"; "Wangcun" of "Wangcun, Jimo"). Memoised: a pure function
    of two strings, asked for every similar pair, so a passage in many pairs was re-tokenised for
    each (and again on every query over the same chunks)."""
    head = title.split(",")[0].strip()
    hay = phrase(text)  # read once for the title and its head
    return _title_in(title, hay) or (head != title and bool(head) and _title_in(head, hay))


def _title_in(title: str, hay: str) -> bool:
    """`rescore.title_in(title, hay)`, from the title's variant phrases as `features.title_terms`
    keeps them (once per title: the chunks of one document share it), not read again per text."""
    return any(p in hay for p in title_terms(title)[0])


@lru_cache(maxsize=8192)
def _series(title: str) -> str:
    """A title without its numbers: two titles that differ only by a year or an ordinal are two
    editions of one series (seasons, elections, award ceremonies), not one subject."""
    return " ".join(w for w in _title_phrase(title).split() if not any(ch.isdigit() for ch in w))


class _Titles:
    """Whether two passages of one pool are about different subjects: each names its own title in
    its text, under different titles ("2009 Colorado Buffaloes football team" vs "2011 …"; two
    managers' careers), or the titles are two editions of one series ("2013 Young Hollywood Awards"
    vs "2014 …"); their numbers then differ because their subjects do. A policy passage that never
    names its document's title is compared as before. What it reads of each passage (its title's
    phrase and series, whether its text names its title) is read once per passage: it is asked for
    every similar pair (~1,800 a request on the service path, issue 21)."""

    __slots__ = ("pool", "heads", "named")

    def __init__(self, pool: list[Passage]) -> None:
        self.pool = pool
        self.heads: dict[int, tuple[str, str, str]] = {}  # k -> (title, its phrase, its series)
        self.named: dict[int, bool] = {}

    def _head(self, k: int) -> tuple[str, str, str]:
        h = self.heads.get(k)
        if h is None:
            t = self.pool[k].first.title.strip()
            h = self.heads[k] = (t, _title_phrase(t), _series(t)) if t else ("", "", "")
        return h

    def _names(self, k: int) -> bool:
        n = self.named.get(k)
        if n is None:
            n = self.named[k] = _names_title(self._head(k)[0], self.pool[k].text)
        return n

    def different_mask(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """`different_subjects(i, j)` of each pair (rows[n], cols[n]), as one boolean array: what
        is read of each passage is read once, and the pairs are tested by array operations instead
        of a call each (~1,800 pairs a request on the service path, issue 21). Whether a text names
        its title is read for the passages of the pairs whose titles differ, series too, and only
        there (`different_subjects` reads it of fewer: the same answers, a few more texts read)."""
        if not len(rows):
            return np.zeros(0, dtype=bool)
        involved = np.unique(np.concatenate([rows, cols])).tolist()
        size = max(involved) + 1
        has = np.zeros(size, dtype=bool)
        phrase_of = np.zeros(size, dtype=np.int64)
        series_of = np.zeros(size, dtype=np.int64)
        codes: dict[str, int] = {}
        for k in involved:
            t, pk, sk = self._head(k)
            has[k] = bool(t)
            phrase_of[k] = codes.setdefault(pk, len(codes))
            series_of[k] = codes.setdefault(sk, len(codes))
        titled = has[rows] & has[cols] & (phrase_of[rows] != phrase_of[cols])
        same_series = series_of[rows] == series_of[cols]
        ask = titled & ~same_series  # different series: different subjects when both texts name their titles
        named = np.zeros(size, dtype=bool)
        if ask.any():
            for k in np.unique(np.concatenate([rows[ask], cols[ask]])).tolist():
                named[k] = self._names(k)
        return titled & (same_series | (named[rows] & named[cols]))  # type: ignore[no-any-return]

    def different_subjects(self, i: int, j: int) -> bool:
        """Whether pool[i] and pool[j] are about different subjects (the class docstring). (Asked
        for every similar pair: what was read of each passage is looked up inline, without a call.)"""
        heads = self.heads
        (ta, pa, sa), (tb, pb, sb) = heads.get(i) or self._head(i), heads.get(j) or self._head(j)
        if not ta or not tb or pa == pb:
            return False
        if sa == sb:
            return True
        named = self.named
        ni = named.get(i)
        if not (self._names(i) if ni is None else ni):
            return False
        nj = named.get(j)
        return self._names(j) if nj is None else nj


def _same_title(a: Passage, b: Passage) -> bool:
    return _title_phrase(a.first.title) == _title_phrase(b.first.title)


#: The pair memo, `ctx.caches.pairs` (the session's, docket.caches): (features key of a, of b,
#: conflict_overlap, embedder) -> the reason the two single-chunk passages disagree, or "" (no
#: contradiction; pairs whose titles or opening names differ are told apart again, cheaply, and
#: not kept). What decides it is question-independent (both chunks'
#: text, titles and statements, the overlap asked, the embedder's sentence cosines), so a pair met
#: again on a later query is not compared again. Bounded (two generations).


def _find_conflicts(kept: list[Passage], ctx: Context) -> None:
    """Pairs of in-force chunks of different documents that are about the same thing and state
    different facts. Equal authority: keep both and tell the model. Unequal: the higher
    authority outranks it; the pair is reported (`higher` names the chunk that wins) so the
    prompt can say so and the order can put the winner first. A stranger's post is compared
    only with sources that outrank it (two strangers disagreeing is not worth a note)."""
    pol = ctx.policy.versions
    pool = [p for p in kept if not p.first.retired]
    if len(pool) < 2 or not ctx.has_vectors():
        return
    # the pool's one matrix, shared with Move 2; only the pairs at the similarity threshold are
    # read, in the order of combinations(pool, 2), and only their passages are looked at
    sims, rows, cols = reach.similar_pairs(pool, ctx, pol.conflict_similarity)
    if not rows:
        return
    involved = sorted(set(rows).union(cols))
    pool_feats = dict(zip(involved, ctx.features.of_passages([pool[k] for k in involved])))
    auth = dict(zip(involved, authorities([pool[k].first for k in involved], pol)))
    similar = _sentence_similarity(ctx)
    sentence_pairs: dict[tuple[str, str], str | None] = {}  # one query's sentence verdicts (claims.contradiction)
    emb_key = (ctx.embedder.name, ctx.embedder.dim) if ctx.embedder is not None else None
    memo = ctx.caches.pairs
    titles = _Titles(pool)

    subjects: dict[int, frozenset[str]] = {}

    def opens_with(k: int) -> frozenset[str]:
        # the subject every claim of passage k has (claims.subject), known before its claims are split
        if k not in subjects:
            f = pool_feats[k]
            subjects[k] = f.subject(pool[k].first) if f is not None else subject(pool[k].text)
        return subjects[k]

    # the features key of each whole-chunk passage (what the pair memo is keyed by), else None
    memo_part = {k: f.key if f is not None and _whole_chunk(pool[k]) else None for k, f in pool_feats.items()}
    overlap = pol.conflict_overlap
    reads = ClaimsReads(pool, pool_feats, ctx)
    deadline.check()
    rows, cols = _to_compare(pool, rows, cols, auth, titles)
    for i, j in zip(rows, cols):
        deadline.check()  # pairs grow with the square of the pool: a request's budget bounds them
        a, b = pool[i], pool[j]
        auth_a, auth_b = auth[i], auth[j]
        if different_subjects(subjects.get(i) or opens_with(i), subjects.get(j) or opens_with(j)):
            continue  # different opening names (contradiction's own first test): no claims split, no memo
        ka, kb = memo_part[i], memo_part[j]
        memo_key = (ka, kb, overlap, emb_key) if ka is not None and kb is not None else None
        why = memo.get(memo_key) if memo_key is not None else None
        if why is None:
            # the claims as contradiction reads them, read once per chunk (or per text) by claims_read and
            # split only when the two sketches leave the answer open (most similar pairs: they cannot
            # conflict, issue 21 decision 3); it skips what the other passage states
            ra, rb = reads[i], reads[j]
            why = contradiction_read(ra, rb, overlap, _same_title(a, b), similar, sentence_pairs) or ""
            if memo_key is not None:
                memo.put(memo_key, why)
        if not why:
            continue
        # (the cosine is read only for a conflict: most similar pairs are none)
        _report(ctx, a, b, (auth_a, auth_b), why, float(sims[i, j]))


def _to_compare(pool: list[Passage], rows: list[int], cols: list[int], auth: dict[int, int],
                titles: _Titles) -> tuple[list[int], list[int]]:
    """The similar pairs (rows[n], cols[n]) whose claims `_find_conflicts` compares, in their order:
    not of one document (unless one is a stranger's text stored under the other's document id: it is
    no part of the official text, and may contradict it), not two strangers' posts (not worth a note),
    and not about different subjects by their titles
    (`_Titles`). Tested as arrays over the pairs, what is read of each passage read once (issue 21:
    ~1,800 similar pairs a request on the service path, most ruled out here); a few pairs (a warm pool's reachable set) one by one,
    the same tests, where the arrays' fixed cost would exceed them."""
    if len(rows) < ARRAY_PAIRS:
        out_rows, out_cols = [], []
        for i, j in zip(rows, cols):
            a, b = pool[i], pool[j]
            if a.doc == b.doc and a.untrusted == b.untrusted:
                continue
            auth_a, auth_b = auth[i], auth[j]
            if a.untrusted and b.untrusted or (a.untrusted and auth_a > auth_b) or (b.untrusted and auth_b > auth_a):
                continue  # two strangers, or a stranger above a trusted source (the cap in `authority` rules it out)
            if not titles.different_subjects(i, j):
                out_rows.append(i)
                out_cols.append(j)
        return out_rows, out_cols
    r, c = np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)
    size = len(pool)
    docs: dict[str, int] = {}
    doc_of = np.fromiter((docs.setdefault(p.doc, len(docs)) for p in pool), dtype=np.int64, count=size)
    untrusted = np.fromiter(map(_UNTRUSTED, pool), dtype=bool, count=size)
    level = np.zeros(size, dtype=np.int64)
    for k, lv in auth.items():
        level[k] = lv
    ua, ub, la, lb = untrusted[r], untrusted[c], level[r], level[c]
    stranger = (ua & ub) | (ua & (la > lb)) | (ub & (lb > la))
    keep = ((doc_of[r] != doc_of[c]) | (ua != ub)) & ~stranger
    if keep.any():
        keep[keep] = ~titles.different_mask(r[keep], c[keep])
    at = np.flatnonzero(keep)
    return r[at].tolist(), c[at].tolist()


_UNTRUSTED = operator.attrgetter("untrusted")
#: from this many similar pairs on, `_to_compare` tests them as arrays
ARRAY_PAIRS = 64


def _report(ctx: Context, a: Passage, b: Passage, auth: tuple[int, int], why: str, cos: float) -> None:
    """Record and trace one conflict: kept both (equal authority) or `higher` outranks the other."""
    auth_a, auth_b = auth
    a_wins, b_wins = outranks(auth_a, a.untrusted, auth_b, b.untrusted), outranks(auth_b, b.untrusted, auth_a, a.untrusted)
    kind = "outranked" if a_wins or b_wins else "equal_authority"  # a trusted source outranks a stranger's at one level
    pair = [a.first.id, b.first.id]
    record: dict[str, Any] = {"chunks": pair, "docs": [a.doc, b.doc], "kind": kind, "authority": [auth_a, auth_b],
                              "source_types": [a.first.source_type, b.first.source_type], "reason": why,
                              "cosine": round(cos, 4)}
    if kind == "equal_authority":
        reason = f"{a.doc} and {b.doc} are in force, equally authoritative and disagree: {why}; both kept"
    else:
        (hi, auth_hi), (lo, auth_lo) = ((a, auth_a), (b, auth_b)) if a_wins else ((b, auth_b), (a, auth_a))
        record["higher"] = hi.first.id
        reason = (f"{lo.doc} ({_kind(lo)}, authority {auth_lo}) disagrees with {hi.doc} ({_kind(hi)}, "
                  f"authority {auth_hi}): {why}; {hi.doc} outranks it"
                  + (" (a trusted source outranks a stranger's at the same authority)" if auth_hi == auth_lo else ""))
    ctx.conflicts.append(record)
    ctx.trace.add(MOVE, "conflict", pair, reason, cosine=round(cos, 4), authority=[auth_a, auth_b])


def _whole_chunk(p: Passage) -> bool:
    """One chunk's text as stored: what its features describe."""
    return len(p.chunks) == 1 and p.text_override is None


def _kind(p: Passage) -> str:
    return p.first.source_type or ("untrusted" if p.untrusted else "no source type")


def find_conflicts(passages: list[Passage], ctx: Context) -> None:
    """Record in `ctx.conflicts` the pairs of `passages` that disagree (what `resolve` runs on
    the passages it keeps; public for measuring the detector on labelled pairs)."""
    _find_conflicts(passages, ctx)
