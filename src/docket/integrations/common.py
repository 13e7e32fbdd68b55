"""What every integration does the same way: run docket on a framework's documents.

    framework objects -> RawDocs (the framework module) -> chunks (mapping) -> scores (here)
    -> assemble over a CallLookup (lookup) -> the brief + chat messages (here) -> the framework's
    own output types (the framework module)

Scores. docket's floor (0.40 by default) is calibrated for MiniLM cosine, so a missing score can
never become a silent 0 that the floor throws away. `scores="auto"` (the default) uses the
framework's scores when every document has one and ranks by them; when none or only some have
one (LangChain retrievers return bare Documents; LlamaIndex's PrevNext neighbours have
score=None) every document is scored by cosine to the question with docket's embedder, so the
floor compares one scale. `"framework"` demands a score on every document (an InputError names
the first without one); `"cosine"` always uses docket's own. The trace says which happened.
A framework's scores are used as given, higher = better: a BM25 or distance score needs its
own floor (`floor=`, or fit one with `docket calibrate`).

Access. A document with an `acl` takes part only for a principal who may read it (the one rule
of docket.store.access: `user:NAME`, `group:NAME`, a plain entry is a group); without a
principal only documents without an acl do. The principal is given at construction
(`principal=` a docket `Principal` or a user name, with `groups=`), per call (the framework
class's call arguments or inputs) or for a block of code (`acting_as(...)`, for calls the
framework makes for you); the call's wins, then the block's, then the construction's. Readability
is decided from the acl alone, before anything else maps the documents, so no trace entry, count,
warning or error names a document the principal may not read (the framework store's documents
too); the trace says whose documents were read, never how many were left out. Like
`assemble(principal=...)`, this trusts its caller: derive the principal from your session.

History. Earlier turns go to `assemble(history=...)`, the same path as `docket ask`
(docket.history): between the system message and the final user message, newest kept word for
word within `history_tokens` (the policy's `history.max_tokens`), older ones dropped with a trace
entry, documents blocks and labels of earlier answers removed; a `system` turn is refused
(docket's rules stay the only system message). With no explicit evidence budget the kept turns
come off the input target, as in the spec's arithmetic.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, Literal

from docket.assemble import assemble, rank_by_cosine
from docket.brief.render import sanitize
from docket.brief.result import Brief
from docket.check import CheckReport, SupportJudge, check_answer
from docket.embed import Embedder, default_embedder
from docket.errors import InputError, UnavailableError
from docket.integrations.lookup import CallLookup, Source, hint_of
from docket.integrations.mapping import FieldMap, Mapped, RawDoc, acl_of, map_documents
from docket.model import Candidate, TraceEvent
from docket.policy import Policy, load_policy_dict
from docket.store.access import Principal, may_read
from docket.tokens import TokenCounter, default_counter

ScoreMode = Literal["auto", "framework", "cosine"]
SCORE_MODES = ("auto", "framework", "cosine")
#: the spec's history line of the budget arithmetic
DEFAULT_HISTORY_TOKENS = 900
MOVE = "integration"
#: what the chunk record's defaults mean when no document has the field
ABSENT_MEANS = {
    "version": "every chunk is version 1",
    "status": "every chunk is current",
    "date": "no chunk is dated (as_of cannot tell versions apart)",
    "source_type": "every source has the default authority",
    "trust": "trust follows the status (user-generated, ugc, external, community, third-party... are untrusted)",
}


def missing_framework(extra: str, framework: str, err: ImportError) -> UnavailableError:
    """The one-line fix when a framework is not installed: the extra to install."""
    return UnavailableError(f"docket's {framework} integration needs {framework}: pip install 'docket[{extra}]' "
                            f"({err})")


def settings_error(err: Any, owner: str) -> InputError:
    """A pydantic ValidationError from a framework class's settings, as docket's one line."""
    first = err.errors()[0]
    name = ".".join(str(p) for p in first.get("loc", ())) or None
    msg = first.get("msg", "invalid").removeprefix("Value error, ")
    if first.get("type") == "extra_forbidden":
        msg = "is not a setting of " + owner
    return InputError(f"{msg} (got {first.get('input')!r})" if "input" in first else msg, where=owner, field=name)


@dataclass
class Options:
    """The settings every integration takes (each framework class exposes them as arguments)."""

    policy: Policy | Mapping[str, Any] | None = None
    budget: int | None = None
    floor: float | None = None
    as_of: Date | str | None = None
    fields: FieldMap = field(default_factory=FieldMap)
    scores: ScoreMode = "auto"
    history_tokens: int = DEFAULT_HISTORY_TOKENS
    counter: TokenCounter | None = None
    embedder: Embedder | None = None
    #: who is asking: a docket Principal, or a user name (with `groups`); None = anonymous
    principal: Principal | str | None = None
    groups: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.principal = principal_of(self.principal, self.groups)
        self.groups = None  # folded into the principal
        if isinstance(self.policy, Mapping):
            self.policy = load_policy_dict(dict(self.policy), where="policy")
        if self.policy is not None and not isinstance(self.policy, Policy):
            raise InputError(f"must be a docket Policy or a dict of its settings (docket.policy.load_policy reads "
                             f"a TOML file), got {type(self.policy).__name__}", field="policy")
        if self.budget is not None and (isinstance(self.budget, bool) or not isinstance(self.budget, int)
                                        or self.budget < 1):
            raise InputError(f"must be a positive whole number of tokens, got {self.budget!r}", field="budget")
        if self.floor is not None and (isinstance(self.floor, bool) or not isinstance(self.floor, (int, float))):
            raise InputError(f"must be a number, got {self.floor!r}", field="floor")
        if isinstance(self.as_of, str):
            try:
                self.as_of = Date.fromisoformat(self.as_of)
            except ValueError:
                raise InputError(f"must be an ISO date like 2026-03-01, got {self.as_of!r}", field="as_of") from None
        elif self.as_of is not None and not isinstance(self.as_of, Date):
            raise InputError(f"must be a date or an ISO date string, got {self.as_of!r}", field="as_of")
        if not isinstance(self.fields, FieldMap):
            raise InputError(f"must be a docket.integrations.FieldMap, got {type(self.fields).__name__}", field="fields")
        if self.scores not in SCORE_MODES:
            raise InputError(f"must be one of {', '.join(SCORE_MODES)}, got {self.scores!r}", field="scores")
        if isinstance(self.history_tokens, bool) or not isinstance(self.history_tokens, int) or self.history_tokens < 0:
            raise InputError(f"must be a whole number of tokens >= 0, got {self.history_tokens!r}", field="history_tokens")

    @property
    def the_policy(self) -> Policy:
        return self.policy if isinstance(self.policy, Policy) else Policy()

    @property
    def the_principal(self) -> Principal | None:
        return self.principal if isinstance(self.principal, Principal) else None


def principal_of(principal: Any, groups: Any = None) -> Principal | None:
    """A docket Principal from what an integration was given: a Principal (`groups` added to its
    own), or a user name and its groups. Neither = anonymous (public documents only)."""
    if groups is not None and (isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, (Sequence, set,
                                                                                                     frozenset))):
        raise InputError(f"must be a list of group names, got {type(groups).__name__}", field="groups")
    extra = frozenset(groups or ())
    if principal is None:
        if groups is not None:
            raise InputError("needs a principal: give principal='NAME' (the user) with its groups, or a docket "
                             "Principal", field="groups")
        return None
    if isinstance(principal, Principal):
        return Principal(principal.name, principal.groups | extra) if extra else principal  # extra checked there
    if isinstance(principal, str):
        return Principal(principal, extra)  # checks the names: one line naming principal or groups
    raise InputError(f"must be a docket Principal or a user name, got {type(principal).__name__}", field="principal")


_ACTING: contextvars.ContextVar[tuple[Principal | None] | None] = contextvars.ContextVar("docket_acting_as",
                                                                                         default=None)


@contextmanager
def acting_as(principal: Principal | str | None, groups: Sequence[str] | None = None) -> Iterator[Principal | None]:
    """Every integration call inside the block reads as `principal` (None: anonymous), for calls a
    framework makes for you (a query engine's postprocessor, a compression retriever's
    compressor). Per thread and per asyncio task; a principal given to the call itself wins."""
    who = principal_of(principal, groups)
    token = _ACTING.set((who,))
    try:
        yield who
    finally:
        _ACTING.reset(token)


def asker_of(options: Options, principal: Any = None, groups: Any = None) -> Principal | None:
    """Who this call reads as: the call's principal, else the `acting_as` block's, else the options'."""
    if principal is not None or groups is not None:
        return principal_of(principal, groups)
    acting = _ACTING.get()
    if acting is not None:
        return acting[0]
    return options.the_principal


@dataclass
class Outcome:
    """One docket run inside a framework: the brief, the chat messages to send, and the
    retrieved documents by chunk id (to map the chosen passages back to framework objects)."""

    brief: Brief
    messages: list[dict[str, str]]
    raws: dict[str, RawDoc]
    history: list[dict[str, str]] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.brief.found

    def brief_json(self) -> dict[str, Any]:
        out = self.brief.to_json()
        out["messages"] = self.messages
        return out


def _event(action: str, reason: str, chunks: Sequence[str] = (), **numbers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"move": MOVE, "action": action, "chunks": list(chunks), "reason": reason}
    if numbers:
        out["numbers"] = numbers
    return out


def run(question: str, raws: Sequence[RawDoc], options: Options, *, framework: str, source: Source | None = None,
        history: Sequence[Mapping[str, Any]] | None = None, principal: Any = None, groups: Any = None) -> Outcome:
    """Keep what the asker may read, then map, score, assemble; the events that explain the
    integration's own choices go first in the trace. `principal`/`groups`: this call's asker
    (see `asker_of`)."""
    asker = asker_of(options, principal, groups)
    if not isinstance(question, str) or not question.strip():
        raise InputError("is empty; ask a question", field="question")
    policy = options.the_policy
    counter = options.counter or default_counter()
    # the acl first: what the asker may not read is gone before mapping counts, notes or fails on it
    raws = [r for r in raws if may_read(asker, acl_of(r, options.fields))]
    mapped = map_documents(raws, options.fields)
    events: list[dict[str, Any]] = []
    lookup = CallLookup([(c, hint_of(r.order)) for c, r in zip(mapped.chunks, mapped.raws)], source, asker=asker)
    events.append(_lookup_event(framework, source, lookup, len(mapped.chunks)))
    events.extend(_mapping_events(mapped, framework))
    events.append(_access_event(asker))
    embedder = options.embedder
    candidates, event = _candidates(question, mapped, options, framework, lambda: embedder or default_embedder())
    events.append(event)

    # the history goes through assemble's own path (docket.history): capped to `history_tokens`,
    # fenced, its tokens off a derived budget, its decisions in the trace (move "history")
    policy = policy.updated(history={"max_tokens": options.history_tokens})
    brief = assemble(question, candidates, store=lookup, policy=policy, counter=counter, embedder=embedder,
                     budget=options.budget, floor=options.floor, as_of=options.as_of,  # type: ignore[arg-type]
                     principal=asker,  # the store look-ups go through the asker's view too
                     history=history or None)
    for note in lookup.notes():
        events.append(_event("lookup_problem", note))
    brief.trace[:0] = [TraceEvent.of(e) for e in events]
    return Outcome(brief=brief, messages=chat_messages(brief, policy), raws={c.id: r for c, r in
                                                                             zip(mapped.chunks, mapped.raws)},
                   history=[m.to_json() for m in brief.history])


def _access_event(asker: Principal | None) -> dict[str, Any]:
    """Whose documents take part, in every run (never how many were left out: a count would say
    that restricted documents were retrieved)."""
    if asker is None:
        return _event("access", "no principal: only documents without an acl take part (give principal= to read "
                      "restricted ones)")
    groups = f" (groups {', '.join(sorted(asker.groups))})" if asker.groups else ""
    return _event("access", f"documents read as user {asker.name!r}{groups}: a document whose acl names neither the "
                  "user nor one of its groups takes no part")


def _lookup_event(framework: str, source: Source | None, lookup: CallLookup, n: int) -> dict[str, Any]:
    if source is None:
        return _event("lookup", f"no {framework} document store was given: neighbour expansion and version look-ups "
                      f"see only the {n} retrieved document(s); pass the store to restore spans and find the version "
                      "in force", retrieved=n)
    missing = lookup.missing_from_store()
    reason = f"neighbour expansion and version look-ups read the {source.name}"
    readable = lookup.readable_in_store()
    if readable is not None:  # what the asker may read of it, never the whole store's size
        reason += f" ({readable} document(s) readable by this asker)"
    if missing:
        reason += f"; {len(missing)} retrieved document(s) are not in it (their neighbours cannot be found there)"
    return _event("lookup", reason, missing, retrieved=n)


def _mapping_events(mapped: Mapped, framework: str) -> list[dict[str, Any]]:
    notes = mapped.notes
    out = []
    for (name, where), count in sorted(notes.conventions.items()):
        out.append(_event("mapping", f"{name} read from {where} ({framework}'s convention) for {count} of "
                          f"{notes.total} document(s): docket's own key was absent", field=name, documents=count))
    absent = notes.absent() if notes.total else []
    if absent:
        what = "; ".join(ABSENT_MEANS[f] for f in absent)
        out.append(_event("mapping", f"no document has {', '.join(absent)}: {what}", fields=absent))
    if notes.repeats:
        out.append(_event("repeat", f"{len(notes.repeats)} document(s) came twice (same id and text): the best-ranked "
                          "copy is kept", notes.repeats))
    return out


def _candidates(question: str, mapped: Mapped, options: Options, framework: str,
                embedder: Any) -> tuple[list[Candidate], dict[str, Any]]:
    chunks, scores = mapped.chunks, mapped.scores
    have = sum(s is not None for s in scores)
    if options.scores == "framework" and have < len(scores):
        i = next(i for i, s in enumerate(scores) if s is None)
        raise InputError("is missing and scores='framework' needs one on every document (or use scores='auto' to "
                         "score by cosine)", where=f"{mapped.raws[i].where} (id {chunks[i].id!r})", field="score")
    if chunks and options.scores != "cosine" and have == len(scores):
        order = sorted(range(len(chunks)), key=lambda i: -scores[i])  # type: ignore[operator]  # stable
        cands = [Candidate(chunk=chunks[i], score=scores[i], rank=r) for r, i in enumerate(order, 1)]  # type: ignore[arg-type]
        reason = (f"scores: the {framework} scores as given (higher is better) for all {len(chunks)} document(s); "
                  "the floor assumes cosine-like scores (calibrate it for another scale)")
        if order != list(range(len(chunks))):
            reason += "; the documents were not in best-first order, so they were sorted by score"
        return cands, _event("scores", reason, source="framework", documents=len(chunks))
    emb = embedder()
    cands = rank_by_cosine(question, chunks, emb)
    if options.scores == "cosine":
        why = "scores='cosine'"
    elif have == 0:
        why = f"no {framework} document has a score"
    else:
        why = (f"{len(chunks) - have} of {len(chunks)} {framework} document(s) have no score (one scale is needed "
               "for the floor, so none of the framework's scores is used)")
    reason = f"scores: {why}; every document scored by cosine to the question with {getattr(emb, 'name', 'the embedder')}"
    return cands, _event("scores", reason, source="cosine", documents=len(chunks), with_score=have)


# -- messages ------------------------------------------------------------------------------------


def not_found_system(policy: Policy) -> str:
    return (f"{policy.brief.role}\n\nNo document that answers the question was found. "
            f'Reply exactly: "{policy.brief.refusal}"')


def chat_messages(brief: Brief, policy: Policy) -> list[dict[str, str]]:
    """What the chat model receives: system, the kept history, the final user message (the
    brief's own messages: user and assistant alternate, a last user turn joins the final message
    under its frame, brief/turns.py).

    Nothing found: a prompt that asks for the refusal sentence (cheap, and the pipeline keeps its
    shape); integrations that can skip the model (LlamaIndex's synthesizer) do."""
    if not brief.found:
        question = sanitize(brief.question)[0].strip()
        return [{"role": "system", "content": not_found_system(policy)}, {"role": "user", "content": f"Question: {question}"}]
    return brief.messages


def check_reply(reply: str, brief: Any, *, judge: SupportJudge | None = None, allowed_domains: Sequence[str] = (),
                strip: bool = False) -> CheckReport:
    """docket's citation check of a model's reply against the brief it was written from."""
    return check_answer(reply, brief, judge=judge, allowed_domains=allowed_domains, strip=strip)


# -- the chosen passages, for mapping back to framework objects ---------------------------------


@dataclass
class PassageOut:
    """One passage of the brief, ready to become a framework document or node."""

    label: str
    text: str
    score: float
    chunks: list[str]
    #: the brief's source record without its text (doc, version, chunks, hits, also_in, ...)
    source: dict[str, Any]
    #: every document this passage speaks for: itself, then the copies folded into it
    provenance: list[dict[str, Any]]
    #: the trace events that name any of its chunks
    trace: list[dict[str, Any]]
    #: the retrieved document it came from (its best hit), None when the store supplied it
    raw: RawDoc | None
    #: metadata for the framework object: the retrieved document's own, else the chunk record's
    metadata: dict[str, Any]


def passages(outcome: Outcome) -> list[PassageOut]:
    brief = outcome.brief
    out: list[PassageOut] = []
    for (label, src), passage in zip(brief.sources.items(), brief.passages):
        ids = list(src.get("chunks", []))
        also = list(src.get("also_in", []))
        named = set(ids) | set(src.get("hits", [])) | {c for a in also for c in a.get("chunks", [])}
        raw = next((outcome.raws[i] for i in [*src.get("hits", []), *ids] if i in outcome.raws), None)
        if raw is not None:
            metadata = dict(raw.metadata)
        else:
            metadata = {k: v for k, v in passage.first.to_record().items() if k not in ("id", "text", "metadata")}
            metadata.update(passage.first.metadata)
        keep = ("doc", "version", "chunks", "title", "section", "status", "trust", "date", "source_type")
        provenance = [{k: src.get(k) for k in keep if src.get(k) is not None}, *also]
        out.append(PassageOut(
            label=label, text=str(src.get("text", "")), score=float(src.get("score", 0.0)), chunks=ids,
            source={k: v for k, v in src.items() if k != "text"}, provenance=provenance,
            trace=[e.to_json() for e in brief.trace if named & set(e.chunks)], raw=raw, metadata=metadata,
        ))
    return out
