"""Comparing claims: when two statements are the same one with another value or negated
(`disagreement`, `contradiction`), and when a passage only restates another's values
(`restates`) (docket.claims)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from docket.claims.bounds import Sketch, may_contradict, may_restate, sketch, sketch_of
from docket.claims.extract import Claim, StatedKey
from docket.claims.quantities import Quantity
from docket.claims.words import different_subjects

# --- comparing --------------------------------------------------------------------------------


def _same_value(a: Quantity, b: Quantity) -> bool:
    """Equal up to the coarser of the two roundings: 20 % and 20.4 %, 1.2 km and 1,200 m, 14 days
    and two weeks are the same value; 1998 and 2001, 0.30 and 0.42 are not."""
    return abs(a.value - b.value) <= max(a.step, b.step) / 2 + 1e-9


def _contains(big: tuple[Quantity, ...], small: tuple[Quantity, ...]) -> bool:
    return all(any(_same_value(s, b) for b in big) for s in small)


def similarity(a: Claim, b: Claim) -> float:
    """Jaccard of the content words."""
    if not a.words or not b.words:
        return 0.0
    return len(a.words & b.words) / len(a.words | b.words)


def different_names(a: Claim, b: Claim) -> bool:
    """Both sentences name someone or somewhere, and not the same ones: different subjects."""
    return bool(a.names) and bool(b.names) and not (a.names & b.names)


#: how close the words of two sentences must be, by what differs between them
UNIT_OVERLAP = 0.3  # an amount with a unit (the usual content of a rule) in both
YEAR_OVERLAP = 0.6  # years or unit-less numbers
NEGATION_OVERLAP = 0.4  # the same statement, one negated


#: sentence cosine (MiniLM) at which two sentences with amounts of one unit are about the same
#: thing even when they share few words ("annual subscription costs" / "yearly subscription is
#: priced at"); above every different-subject pair of the design set (0.70)
SENTENCE_SIMILARITY = 0.72

Similar = Callable[[str, str], float]


def disagreement(a: Claim, b: Claim, overlap: float = YEAR_OVERLAP, similar: Similar | None = None) -> str | None:
    """Why the two claims contradict each other, or None. `overlap` is the word overlap asked of
    years and unit-less numbers (the policy's conflict_overlap); amounts with a unit ask for less,
    negations for `NEGATION_OVERLAP`."""
    # exact early exits (each condition below needs them): a shared word, and either a unit both
    # sentences use or a negation only one of them has
    if (a.words and b.words and a.words.isdisjoint(b.words)) or different_names(a, b):
        return None
    if a.negated == b.negated and (not a.quantities or not b.quantities or a.quantities == b.quantities
                                   or a.units().keys().isdisjoint(b.units())):
        return None  # (equal amounts: every unit's values contain the other's)
    sim = similarity(a, b)
    shared = len(a.words & b.words)
    ua, ub = a.units(), b.units()
    differing = [u for u in sorted(set(ua) & set(ub))
                 if not (_contains(ua[u], ub[u]) or _contains(ub[u], ua[u])) and not _other_things(ua[u], ub[u], a, b)]
    # one changed value is a conflict; two ("released in 1994 and sold 2 million" vs "in 1996 ...
    # 5 million") describe two different things
    if len(differing) == 1:
        unit = differing[0]
        loose = unit not in ("year", "date", "plain", "clock") and not unit.startswith("count:")
        need = UNIT_OVERLAP if loose else overlap
        same = shared >= min(2, len(a.words), len(b.words)) and sim >= need
        if not same and loose and similar is not None and shared >= 1:
            same = similar(a.text, b.text) >= SENTENCE_SIMILARITY
        if same:
            return (f"values differ ({_fmt(a, unit)} vs {_fmt(b, unit)}) in the same statement: "
                    f"{_short(a.text)!r} vs {_short(b.text)!r}")
    if a.negated != b.negated and sim >= NEGATION_OVERLAP and shared >= min(2, len(a.words), len(b.words)):
        if all(_contains(ua[u], ub[u]) and _contains(ub[u], ua[u]) for u in set(ua) & set(ub)):
            return f"one negates what the other states: {_short(a.text)!r} vs {_short(b.text)!r}"
    return None


def _other_things(va: tuple[Quantity, ...], vb: tuple[Quantity, ...], a: Claim, b: Claim) -> bool:
    """Amounts of different things: "25 days of annual leave" vs "10 days of sick leave" (each
    amount's qualifier is missing from the other sentence)."""
    qa = {q.of for q in va if q.of}
    qb = {q.of for q in vb if q.of}
    if not qa or not qb or qa & qb:
        return False
    return not (qa & b.words) and not (qb & a.words)


def _fmt(c: Claim, unit: str) -> str:
    return ", ".join(dict.fromkeys(q.text for q in c.quantities if q.unit == unit))


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def contradiction(sa: list[Claim], sb: list[Claim], overlap: float = YEAR_OVERLAP, anaphora: bool = True,
                  similar: Similar | None = None, memo: dict[tuple[str, str], str | None] | None = None,
                  read: tuple[PassageClaims, PassageClaims] | None = None) -> str | None:
    """The first pair of claims, one from each passage, that contradict each other. Passages that
    open with different names ("Sir Matt Busby ..." vs "Sir Alex Ferguson ...") are about
    different subjects, so their "He managed ... from 1945" and "... from 1986" never conflict.
    With `anaphora` False (the passages' documents have different titles), sentences that open
    with a pronoun are not compared: "It was added to the register in 1992" is about whatever
    its own page is about.

    `memo` (sentence pair -> verdict), for claims that `claims()` made from their text (so a
    sentence's text decides its claim): near-copies of one passage in a pool share sentences,
    and each sentence pair is then compared once per query instead of once per passage pair.

    `read` (`passage_claims(sa)`, `passage_claims(sb)`), for a caller that keeps them per passage:
    the pairs that cannot be the answer are not compared (`_unanswered`)."""
    if sa and sb and different_subjects(sa[0].subject, sb[0].subject):
        return None
    ca, cb = sa, sb  # the claims whose pairs are compared; `_stated_in` reads all of sa and sb
    if read is not None:
        ra, rb = read
        if _all_stated(ra, rb) and _all_stated(rb, ra):
            return None  # (`_unanswered` would leave no fact on either side)
        ca, cb = _unanswered(ra, rb), _unanswered(rb, ra)
    for a in ca:
        if a.anaphoric and not anaphora:
            continue
        aw, an, aneg, aq = a.words, a.names, a.negated, a.quantities
        for b in cb:
            bw, bn = b.words, b.names
            # `disagreement`'s own early exits, before a call and a memo key: no shared word (most
            # sentence pairs), names that exclude each other, or one negation and amounts on one side only
            if (b.anaphoric and not anaphora) or (aw and bw and aw.isdisjoint(bw)) or (an and bn and an.isdisjoint(bn)) \
                    or (aneg == b.negated and (not aq or not b.quantities)):
                continue
            if memo is None:
                why = disagreement(a, b, overlap, similar)
            else:
                key = (a.text, b.text)
                why = memo.get(key, _UNSEEN)  # type: ignore[arg-type]
                if why is _UNSEEN:
                    why = memo[key] = disagreement(a, b, overlap, similar)
            if why is not None and not (_stated_in(a, sb) or _stated_in(b, sa)):
                return why
    return None


def _unanswered(own: PassageClaims, other: PassageClaims) -> list[Claim]:
    """The claims of `own` that can be in the pair `contradiction` returns against `other`, in
    order. A pair is returned only when neither claim is stated in the other's passage, and a
    claim with a value or a negation whose key the other passage holds is stated there: no pair
    it is in is returned, so the first pair returned is the same. (Near-copies share most of their
    sentences: most pairs are left out.)"""
    keys = other.keys
    if own.keys.isdisjoint(keys):
        return own.claims
    return [c for c in own.claims if not ((c.quantities or c.negated) and c.stated_key() in keys)]


def _all_stated(own: PassageClaims, other: PassageClaims) -> bool:
    """Every fact of `own` is stated in `other` by key. When that holds both ways no pair can be
    returned: a pair `contradiction` compares has a fact on one side at least (its gate skips two
    claims without a value or a negation), and a pair with a fact stated in the other passage is
    never returned."""
    return own.all_keyed and own.keys <= other.keys


def _stated_in(c: Claim, others: list[Claim], overlap: float = UNIT_OVERLAP) -> bool:
    """The other passage states this claim too (the same values of every unit, with words close
    enough to be the same statement, and the same negation): a pair it is in compares two rows of
    one table, or two rules of one list ("Staff receive EUR 40. Managers receive EUR 60." copied
    into an FAQ), not two versions of one statement."""
    if not c.quantities and not c.negated:
        return False
    cu = c.units()
    for o in others:
        if o.negated != c.negated or different_names(c, o):
            continue
        ou = o.units()
        if cu.keys() != ou.keys() or not all(_contains(ou[u], cu[u]) and _contains(cu[u], ou[u]) for u in cu):
            continue
        if o.words == c.words or similarity(c, o) >= overlap:
            return True
    return False


#: how many value-bearing statements a copy must repeat to count as a copy of them
COPY_MIN_STATEMENTS = 2
#: how close the words of a copied statement stay to the source's (a copy, not a paraphrase)
COPY_OVERLAP = 0.7


def copy_facts(copy: list[Claim]) -> list[Claim]:
    """The statements `restates` asks a copy to repeat: those with a value or a negation."""
    return [c for c in copy if c.quantities or c.negated]


def all_names(source: list[Claim]) -> frozenset[str]:
    """Every name a passage uses: a copy names no one else."""
    return frozenset().union(*(c.names for c in source))


def restates(copy: list[Claim], source: list[Claim], facts: list[Claim] | None = None,
             names: frozenset[str] | None = None) -> bool:
    """`copy` only repeats what `source` says: every statement of it that carries a value or a
    negation is stated in `source` too (same values, close words), and there are at least
    `COPY_MIN_STATEMENTS` of them; "close" is `COPY_OVERLAP`, far stricter than for a conflict,
    since a passage folded into another is gone from the prompt; and it names no one the source
    does not, nor opens with another subject. An FAQ that pastes the policy's table of values per role, with
    a line of its own around it, restates the policy: a duplicate (Move 2), not a conflict.

    `facts` (`copy_facts(copy)`) and `names` (`all_names(source)`), when the caller keeps them: a
    passage is compared with many, and most pairs fail on a name (Move 2, issue 21)."""
    facts = copy_facts(copy) if facts is None else facts
    if len(facts) < COPY_MIN_STATEMENTS or not source:
        return False
    if different_subjects(copy[0].subject, source[0].subject):
        return False  # "Aspermont High School ... 1A ... 2015" is not a copy of "Baird High School ..."
    names = all_names(source) if names is None else names
    return all(c.names <= names and _stated_in(c, source, COPY_OVERLAP) for c in facts)


class PassageClaims(NamedTuple):
    """What `restates` and `contradiction` read of one passage's claims, read once: Moves 1 and 2
    meet a passage in many pairs (~1,400 ordered pairs a query on near-copies, issue 22)."""

    claims: list[Claim]
    #: `copy_facts(claims)`
    facts: list[Claim]
    #: every name the facts use: a copy's facts name no one its source does not (`restates`)
    fact_names: frozenset[str]
    #: `all_names(claims)`
    names: frozenset[str]
    #: the facts' `Claim.stated_key`s: a fact of another passage with one of them is stated here,
    #: without a scan (only a fact can share a fact's key: the key holds its negation and amounts)
    keys: frozenset[StatedKey]
    #: every fact has a key (one without is never skipped)
    all_keyed: bool


def passage_claims(found: list[Claim]) -> PassageClaims:
    """What `restates_read` and `contradiction` read of a passage with these claims (a few
    containers a passage: a pool reads ~150 passages a query)."""
    facts = copy_facts(found)
    keys = frozenset([c.stated_key() for c in facts])
    return PassageClaims(found, facts, all_names(facts), all_names(found), keys - {""} if "" in keys else keys,
                         "" not in keys)


class PassageRead:
    """One passage as Moves 1-2 read it, split into claims only when a pair needs them (issue 21,
    decision 3): its sketch (docket.claims.bounds) decides most pairs without them, and `read()`
    splits them (`PassageClaims`) on first use. Features keep one per chunk."""

    __slots__ = ("text", "_split", "_claims", "passage", "_sketch", "_seen_by")

    def __init__(self, text: str, split: Callable[[], list[Claim]], found: list[Claim] | None = None) -> None:
        """`split` gives the text's claims (`claims(text)`); `found`: the claims when they are in
        hand already (then the sketch is read from them)."""
        self.text = text
        self._split = split
        self._claims = found
        #: the claims as `restates_read` and `contradiction` read them, once split (`read()`), else None
        self.passage: PassageClaims | None = None
        self._sketch: Sketch | None = None
        self._seen_by: int | None = None

    @property
    def is_split(self) -> bool:
        """The claims are in hand: comparing them costs no more than bounding them."""
        return self.passage is not None or self._claims is not None

    def seen_by(self, assembly: object) -> PassageRead:
        """Mark that `assembly` (an object one assembly holds throughout: its Context) reads this
        passage. The second assembly to read it splits its claims: a passage met again is compared
        by them from then on, as cheap per pair as its sketch is on a first sight (re-scoring
        builds a chunk's full index on its second sight alike). Either way the answers are the same."""
        mark = id(assembly)
        if self._seen_by != mark:
            if self._seen_by is not None and self.passage is None:
                self.read()
            self._seen_by = mark
        return self

    def read(self) -> PassageClaims:
        got = self.passage
        if got is None:
            found = self._claims if self._claims is not None else self._split()
            got = self.passage = passage_claims(found)
            self._sketch = None  # (a text's sketch is about the size of its claims: not both kept)
        return got

    def sketch(self) -> Sketch:
        got = self._sketch
        if got is None:
            found = self.passage.claims if self.passage is not None else self._claims
            got = self._sketch = sketch(self.text) if found is None else sketch_of(found)
        return got


def contradiction_read(ra: PassageRead, rb: PassageRead, overlap: float = YEAR_OVERLAP, anaphora: bool = True,
                       similar: Similar | None = None,
                       memo: dict[tuple[str, str], str | None] | None = None) -> str | None:
    """`contradiction` of the two passages' claims (given their `passage_claims`), split only when
    their sketches leave it open (`bounds.may_contradict`): the same answer."""
    if not (ra.is_split and rb.is_split) and not may_contradict(
            ra.sketch(), rb.sketch(), overlap, anaphora, similar is not None, NEGATION_OVERLAP, UNIT_OVERLAP):
        return None
    a, b = ra.read(), rb.read()
    return contradiction(a.claims, b.claims, overlap, anaphora, similar, memo, (a, b))


def restates_read(copy: PassageClaims | PassageRead, source: PassageClaims | PassageRead) -> bool:
    """`restates(copy.claims, source.claims)`, from what `passage_claims` read of each. The same
    tests: every fact's names within the source's (the facts' names together, once), and every
    fact stated in the source; a fact whose `stated_key` the source holds is stated there (the
    key's proof), the others are scanned as `restates` scans them. Of a `PassageRead` the claims
    are split only when the sketches leave the answer open (`bounds.may_restate`)."""
    if type(copy) is PassageRead and type(source) is PassageRead:  # (the moves' reads: the common case inline)
        if (copy.passage is None or source.passage is None) and not may_restate(
                copy._sketch or copy.sketch(), source._sketch or source.sketch(), COPY_OVERLAP, COPY_MIN_STATEMENTS):
            return False  # (a read whose claims are only in hand, not read, is bounded by its sketch of them)
        copy, source = copy.passage or copy.read(), source.passage or source.read()
    elif isinstance(copy, PassageRead) or isinstance(source, PassageRead):
        if not _may_restate(copy, source):
            return False
        copy = copy.read() if isinstance(copy, PassageRead) else copy
        source = source.read() if isinstance(source, PassageRead) else source
    facts = copy.facts
    if len(facts) < COPY_MIN_STATEMENTS or not source.claims:
        return False
    if different_subjects(copy.claims[0].subject, source.claims[0].subject) or not copy.fact_names <= source.names:
        return False
    keys = source.keys
    if copy.all_keyed and copy.keys <= keys:
        return True
    others = source.claims
    return all(c.stated_key() in keys or _stated_in(c, others, COPY_OVERLAP) for c in facts)


def _may_restate(copy: PassageClaims | PassageRead, source: PassageClaims | PassageRead) -> bool:
    """`bounds.may_restate` of the two, unless both are split already (then their own tests are as cheap)."""
    if (not isinstance(copy, PassageRead) or copy.is_split) and (not isinstance(source, PassageRead) or source.is_split):
        return True
    return may_restate(_sketch_of(copy), _sketch_of(source), COPY_OVERLAP, COPY_MIN_STATEMENTS)


def _sketch_of(x: PassageClaims | PassageRead) -> Sketch:
    return x.sketch() if isinstance(x, PassageRead) else sketch_of(x.claims)


_UNSEEN: Any = object()
