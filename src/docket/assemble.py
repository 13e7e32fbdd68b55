"""The wiring: decide the mode, screen the candidates, run the steps, build the brief.

    screening (floor, untrusted screen, re-scoring, not-found floor, answerability)
    -> docket.steps.STEPS: 1 versions -> 2 dedup -> 3 expand -> 4 pack (+ 6 compress on a needed
       misfit, or a summary of the rest) -> 5 order -> fit
    -> 7 label + 8 fence -> the five-block brief

The steps are a table (docket.steps); each is switchable in the policy (for ablations). Nothing above the floor gives
`found: false` and no prompt, so the caller can answer "not found" without calling a model.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date as Date
from itertools import repeat
from operator import itemgetter
from pathlib import PurePath
from typing import Any

import numpy as np

from docket import answerable, rescore
from docket.blas import BlasThreads, limited
from docket.brief.layout import build_brief, not_found_brief
from docket.brief.sizer import RenderSizer
from docket.caches import Caches, default_caches
from docket.context import Context, check_entries
from docket.embed import Embedder, default_embedder
from docket.errors import InputError
from docket.followup import searched_query
from docket.history import ChatMessage, Condenser, KeptHistory, parse_history
from docket.history import prepare as prepare_history
from docket.model import Candidate, Chunk, Passage, Trace, check_kinds, check_scores
from docket.modes import Plan
from docket.modes import finish as finish_mode
from docket.modes import plan as plan_mode
from docket.policy import Policy, load_policy, load_policy_dict
from docket.ranking import rank_by_cosine
from docket.request import Request
from docket.safeio import clean_question
from docket.safeio import shown as _shown
from docket.steps import Run, run_steps
from docket.store.access import Principal, readable
from docket.store.base import ChunkLookup
from docket.store.protocol import scoped
from docket.tokens import TokenCounter

#: BLAS threads while a brief is assembled (docket.blas: DOCKET_DENSE_THREADS, default 1). The
#: pool's products are small; with BLAS's default threads, its workers spun after each one and
#: took a core from the Python moves that follow.
_ASSEMBLY_BLAS = BlasThreads()


@limited(_ASSEMBLY_BLAS)
def assemble(
    question: str,
    candidates: Sequence[Candidate] | None = None,
    *,
    store: ChunkLookup,
    policy: Policy | None = None,
    counter: TokenCounter | None = None,
    embedder: Embedder | None = None,
    budget: int | None = None,
    floor: float | None = None,
    as_of: Date | None = None,
    principal: Principal | None = None,
    history: Sequence[ChatMessage | Mapping[str, Any]] | None = None,
    condenser: Condenser | None = None,
    attachments: Sequence[Any] | None = None,
    whole_corpus: bool | None = None,
    router: Any | None = None,
    trace: Trace | None = None,
    generator: Any = None,
    caches: Caches | None = None,
) -> Brief:
    """Assemble the brief for one question from ranked candidates (best first).

    Without `candidates`, every chunk of the store is ranked by cosine to the question (the
    store must offer `all()`, like MemoryStore). `budget`, `floor` and `as_of` override the policy.

    Access control: only what `principal` may read takes part (without one: public chunks only).
    Candidates it may not read are removed before any move, and the store is read through a view
    scoped to it, so no move, trace entry, warning, conflict or source can name such a chunk. The
    brief does not say how many were removed either (a count tells that restricted text on the
    topic exists); a caller that wants the number compares its list with `access.readable`.

    `history` (earlier `{"role", "content"}` turns, oldest first) goes between the system message
    and the question, capped to `policy.history` (see docket.history); `condenser` summarises the
    turns that do not fit when `history.condense` is on.

    Before anything is ranked, docket.modes plans the request: `attachments` (paths, `(name,
    bytes)` pairs or `Attachment`s) are the context; with `route.enabled`, a request that needs no
    documents gets a brief without evidence (`router`, a `Generator`, decides what the rules are
    unsure of); with `whole_corpus` (or `corpus.mode`), everything `principal` may read goes in when
    it fits. `trace` collects decisions taken before this call.

    `generator` (docket.llm) writes the summary of the passages that did not fit when the policy
    asks for one (`compress.summary`); its calls are cached on disk (docket.llm.cache).

    `caches` (docket.caches): the caches the assembly reads and fills; a Session passes its own,
    a caller without one gets the process-wide `default_caches()`.
    """
    request = Request.of(question, principal=principal, history=history, attachments=attachments, budget=budget,
                         floor=floor, as_of=as_of, whole_corpus=whole_corpus)
    if candidates is None and embedder is None:
        embedder = default_embedder()  # the store is ranked by cosine, and the moves read the same vectors
    planned = plan(request, candidates, store=store, policy=policy, counter=counter, embedder=embedder,
                   condenser=condenser, router=router, trace=trace, generator=generator, caches=caches)
    ranked, vector = planned.candidates, None
    if ranked is None and planned.plan.retrieves:  # no ranking given: a follow-up ranks the store with the history
        query = searched_query(clean_question(question), history, generator, planned.ctx.trace)
        emb = planned.ctx.embedder or default_embedder()
        vector = (query, emb.embed([query])[0])
        ranked = rank_by_cosine(query, planned.ctx.store.all(), emb, vector[1],  # type: ignore[attr-defined]  # a store with all()
                                features=planned.ctx.features)
    return assemble_candidates(planned, ranked, query_vector=vector)


@dataclass(frozen=True)
class Planned:
    """A request made ready for the assembler: its context (the store scoped to the principal,
    the policy with the request's overrides and the history's tokens, the counter, the trace),
    the kept history, the caller's candidates (access-filtered) and the mode plan."""

    request: Request
    ctx: Context
    plan: Plan
    kept: KeptHistory | None
    candidates: list[Candidate] | None
    generator: Any = None
    #: the finished brief (with its history) when the mode needs no assembly (no retrieval, the
    #: whole corpus, attachments sent whole), else None
    brief: Brief | None = None


def plan(request: Request, candidates: Sequence[Candidate] | None = None, *, store: ChunkLookup,
         policy: Policy | None = None, counter: TokenCounter | None = None, embedder: Embedder | None = None,
         condenser: Condenser | None = None, router: Any | None = None, trace: Trace | None = None,
         generator: Any = None, caches: Caches | None = None) -> Planned:
    """Check the request, scope the store to its principal, keep the capped history and plan the
    mode (docket.modes), before anything is retrieved; nothing here calls a retriever. `caches`:
    the session's (docket.caches), else the process-wide ones."""
    question = clean_question(request.question)
    principal = request.principal
    if principal is not None and not isinstance(principal, Principal):
        raise InputError(f"must be a docket Principal or None, got {type(principal).__name__}", field="principal")
    if embedder is not None and not callable(getattr(embedder, "embed", None)):  # "hash", a model name
        raise InputError(f"must be a docket Embedder (an object with .embed(texts)), got {type(embedder).__name__}: "
                         "docket.default_embedder() for MiniLM, or leave it out", field="embedder")
    if counter is not None and (isinstance(counter, (str, bytes)) or not callable(getattr(counter, "count", None))):
        raise InputError(f"must be a docket TokenCounter (an object with .count(text)), got {type(counter).__name__}"
                         ": docket.default_counter(), a policy's model preset, or leave it out", field="counter")
    if isinstance(store, (str, bytes, PurePath)):  # a path where a store object belongs
        raise InputError(f"must be a store object, got the path {_shown(str(store))}: docket.open_store(PATH) for "
                         "an index built by `docket index`, docket.MemoryStore(docket.load_chunks(PATH)) for a "
                         "chunk file", field="store")
    store = scoped(store, principal)
    if candidates is not None:
        candidates = list(readable(check_kinds(candidates), principal))
        candidates = check_scores(candidates)  # after the access filter: an error must not name a chunk the asker may not read
    opts = request.options
    policy = _with_overrides(policy, opts.budget, opts.floor, opts.as_of)
    if policy.compress.summary and generator is None:
        raise InputError("= true needs a model to write the summary: pass --llm URL (or assemble(..., generator=...)), "
                         "or set it to false", field="compress.summary")
    counter = counter or counter_for(policy)
    trace = trace if trace is not None else Trace()
    warnings: list[str] = []
    kept, policy = _kept_history(request.history, policy, counter, trace, condenser, warnings)
    caches = caches or default_caches()
    ctx = Context(question=question.strip(), store=store, policy=policy, counter=counter, embedder=embedder,
                  trace=trace, warnings=warnings, caches=caches, sizer_factory=RenderSizer)
    early = Context(question=ctx.question, store=store, policy=policy, counter=counter, embedder=embedder,
                    trace=trace, warnings=list(warnings), caches=caches, sizer_factory=RenderSizer)
    mode = plan_mode(early, principal=principal, attachments=request.attachments, router=router,
                     whole_corpus=opts.whole_corpus)
    done = None if mode.brief is None else _with_history(mode.brief, kept)
    return Planned(request, ctx, mode, kept, None if candidates is None else list(candidates), generator, done)


@limited(_ASSEMBLY_BLAS)
def assemble_candidates(planned: Planned, candidates: Sequence[Candidate] | None = None, *,
                        query_vector: tuple[str, np.ndarray] | None = None) -> Brief:
    """Run the assembler over the ranked candidates (the plan's own when it holds them), then
    finish the brief. `query_vector`: the text the retrieval embedded and its vector, reused when
    that text is the question. A plan that built its brief returns it."""
    done = planned.brief
    if done is not None:
        return done
    p, ctx = planned.plan, planned.ctx
    if p.candidates is not None:  # attachments searched inside: their own store, policy and embedder
        candidates = p.candidates
        ctx = Context(question=ctx.question, store=scoped(p.store or ctx.store, planned.request.principal), policy=p.policy or ctx.policy,
                      counter=ctx.counter, embedder=p.embedder, trace=ctx.trace, warnings=ctx.warnings,
                      caches=ctx.caches, sizer_factory=RenderSizer)
    elif candidates is None:
        raise InputError("the plan is to retrieve: pass the retrieved candidates", field="candidates")
    filtered = planned.candidates  # the plan's own candidates passed the access filter already (from `assemble`)
    if filtered is not None and candidates is filtered:
        ranked = list(filtered)
    else:
        ranked = list(readable(check_kinds(candidates), planned.request.principal))
        ranked = check_scores(ranked)  # after the access filter, as in `plan`
    policy = ctx.policy
    embedder = ctx.embedder
    if embedder is None and (policy.dedup.enabled or policy.versions.enabled):
        embedder = default_embedder()
    qvec = query_vector[1] if query_vector is not None and query_vector[0] == ctx.question else None
    ctx = Context(question=ctx.question, store=ctx.store, policy=policy, counter=ctx.counter, embedder=embedder,
                  trace=ctx.trace, warnings=ctx.warnings, caches=ctx.caches, sizer_factory=RenderSizer, _qvec=qvec)
    chunks = list(map(_OF_CANDIDATE, ranked))
    entries = ctx.entries(chunks)
    check_entries(chunks, embedder, ctx.features, entries)  # looked up once: re-scoring reads them too
    brief = _assemble_ranked(ctx, ranked, planned.generator, entries)
    brief.ranked = ranked
    return _with_history(finish_mode(brief, ctx, mode=p.mode), planned.kept)


def _kept_history(history: Sequence[ChatMessage | Mapping[str, Any]] | None, policy: Policy, counter: TokenCounter,
                  trace: Trace, condenser: Condenser | None, warnings: list[str]) -> tuple[KeptHistory | None, Policy]:
    """The turns that go in (capped to `policy.history`), and the policy with their tokens off the
    input target (the spec's arithmetic) when the budget is derived."""
    if history is None:
        return None, policy
    kept = prepare_history(parse_history(list(history)), policy.history, counter, trace, condenser, warnings)
    if policy.pack.budget is None:
        policy = policy.updated(pack={"history_tokens": kept.tokens})
    return kept, policy


def _with_history(brief: Brief, kept: KeptHistory | None) -> Brief:
    if kept is None:
        return brief
    brief.history = list(kept.messages) if brief.found else []
    brief.tokens.history = kept.tokens if brief.found else 0
    brief.tokens.total += brief.tokens.history
    return brief


def as_policy(policy: Any) -> Policy:
    """`policy=` as given to the Python API: a Policy, or (as a new caller writes it) a dict of
    sections or a TOML path, read the way `--policy` reads them; anything else is refused by name
    instead of failing as an AttributeError deep in a move."""
    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return load_policy_dict(dict(policy))
    if isinstance(policy, (str, PurePath)):
        return load_policy(str(policy))
    raise InputError(f"must be a docket Policy, a dict of sections or a TOML path, got {type(policy).__name__}",
                     field="policy")


def _with_overrides(policy: Policy | None, budget: int | None, floor: float | None, as_of: Date | None) -> Policy:
    policy = as_policy(policy)
    overrides: dict = {}
    if budget is not None:
        overrides["budget"] = budget
    if floor is not None:
        overrides["floor"] = floor
    if overrides:
        policy = policy.overridden(pack=overrides)
    if as_of is not None:
        policy = policy.overridden(as_of=as_of)
    return policy


def _assemble_ranked(ctx: Context, candidates: list[Candidate], generator: Any = None,
                     entries: list[Any] | None = None) -> Brief:
    """`entries`: the candidates' feature entries, in their order, when the caller looked them up."""
    policy = ctx.policy
    retriever_scores = dict(zip(map(_CHUNK_ID, candidates), map(_CANDIDATE_SCORE, candidates)))  # the last per id
    # the pool as (chunk, score, rank): candidates are built only if a move asks for them
    pool: list[Ranked]
    if policy.rescore.enabled and len(candidates) >= 2:
        best, scores = rescore.rescore_order(candidates, ctx)
        pool = list(zip(map(_OF_CANDIDATE, map(candidates.__getitem__, best)), scores, range(1, len(best) + 1)))
        if entries is not None:  # the pool's entries are the candidates' (looked up once) in the new order
            ctx.remember_entries([c for c, _, _ in pool], list(map(entries.__getitem__, best)))
    else:
        pool = list(map(_RANKED, candidates))
    above = _screen_untrusted(_apply_floor(pool, ctx), ctx)
    if not above or not _clears_not_found_floor(above, retriever_scores, ctx, candidates):
        return not_found_brief(ctx)
    if policy.answerable.enabled:
        judged = [Candidate(c, s, r) for c, s, r in pool] if policy.rescore.enabled and len(candidates) >= 2 else candidates
        ok, signals = answerable.judge(judged, ctx)
        if not ok:
            ctx.trace.add("answerable", "not_found", [], "the answerability check says the pool does not answer the question", **signals)
            return not_found_brief(ctx)

    ctx.pool = list(map(_CHUNK, above))
    of_chunk = Passage.of_chunk
    passages = list(map(of_chunk, ctx.pool, map(_SCORE, above), map(_RANK, above), map(_UNTRUSTED, ctx.entries(ctx.pool))))
    run = run_steps(Run(passages, generator=generator), ctx)
    if not run.passages:
        return not_found_brief(ctx, budget=run.budget)
    return build_brief(run.passages, ctx, run.budget)


Ranked = tuple[Chunk, float, int]  # a candidate as the moves read it: chunk, score, rank
_CHUNK, _SCORE, _RANK = itemgetter(0), itemgetter(1), itemgetter(2)
_OF_CANDIDATE, _RANKED = operator.attrgetter("chunk"), operator.attrgetter("chunk", "score", "rank")
_UNTRUSTED = operator.attrgetter("features.untrusted")
_ID, _CHUNK_ID, _CANDIDATE_SCORE = operator.attrgetter("id"), operator.attrgetter("chunk.id"), operator.attrgetter("score")


def _apply_floor(candidates: list[Ranked], ctx: Context) -> list[Ranked]:
    """Candidates at or above the floor, and within `pack.margin` of the best when one is set; the
    rest are noise (logged once per rule, with the best of them)."""
    floor = answerable.noise_floor(ctx, candidates)  # the embedder's own (or none), exact hits kept
    ctx.noise_floor = floor  # the moves stop at the same floor (Context.floor)
    if all(map(operator.ge, map(_SCORE, candidates), repeat(floor))):
        above, below = list(candidates), []  # every score clears it (the common case): no pass per candidate
    else:
        above = [c for c in candidates if c[1] >= floor]
        below = [c for c in candidates if c[1] < floor]
    # lowered to a candidate's score (the reader's best, an exact hit) the floor is a raw cosine:
    # traced to 4 places as every other trace number (the comparison above uses the exact value)
    shown = round(floor, 4)
    if below:
        ctx.trace.add(
            "floor",
            "drop",
            [c[0].id for c in below],
            f"{len(below)} candidate(s) score below the floor {shown}",
            best_below=round(max(c[1] for c in below), 4),
            floor=shown,
        )
    if not candidates:  # said alike for an empty ranking and one the asker may read none of: nothing leaks
        ctx.trace.add("floor", "not_found", [], "no candidate to assemble from (the ranking is empty, or the asker may "
                      "read none of it): answer 'not found' without an LLM call")
        return above
    if not above:
        ctx.trace.add("floor", "not_found", [], f"no candidate reaches the floor {shown}: answer 'not found' without an LLM call")
        return above
    margin = ctx.policy.pack.margin
    if margin is not None:
        best = max(c[1] for c in above)
        cut = best - margin
        far = [c for c in above if c[1] < cut]
        if far:
            ctx.trace.add(
                "floor", "drop", [c[0].id for c in far],
                f"{len(far)} candidate(s) score more than the margin {margin} below the best ({best:.3f}): "
                f"below {cut:.3f}", best=round(best, 4), margin=margin,
                best_below=round(max(c[1] for c in far), 4),
            )
            above = [c for c in above if c[1] >= cut]
    return above


def _clears_not_found_floor(candidates: list[Ranked], retriever_scores: dict[str, float], ctx: Context,
                            pool: Sequence[Candidate] = ()) -> bool:
    """The not-found gate (docket.answerable.clears_not_found), on the ranker's scores; the reader
    reads the whole `pool` as the ranker gave it."""
    chunks = list(map(_CHUNK, candidates))
    scores: list[float] = list(map(retriever_scores.get, map(_ID, chunks), map(_SCORE, candidates)))  # type: ignore[arg-type]  # .get(id, its own score): never None
    return answerable.clears_not_found(chunks, scores, ctx, pool=pool)


def _screen_untrusted(candidates: list[Ranked], ctx: Context) -> list[Ranked]:
    """`pack.untrusted`: keep strangers' text out unless the answer needs it ("fallback": no
    trusted candidate cleared the floor) or always ("never")."""
    mode = ctx.policy.pack.untrusted
    if mode == "use":
        return candidates
    flags = [e.features.untrusted for e in ctx.entries([c[0] for c in candidates])]
    strangers = [c for c, u in zip(candidates, flags) if u]
    if not strangers:
        return candidates
    trusted = [c for c, u in zip(candidates, flags) if not u]
    if mode == "fallback" and not trusted:
        ctx.trace.add("untrusted", "keep", [c[0].id for c in strangers],
                      "no trusted candidate clears the floor: untrusted sources are the only evidence (fallback)")
        return candidates
    why = ("a trusted candidate clears the floor, so untrusted sources are not needed (fallback)" if mode == "fallback"
           else "untrusted sources are never used (pack.untrusted = never)")
    ctx.trace.add("untrusted", "drop", [c[0].id for c in strangers], why, trusted=len(trusted))
    return trusted


from docket.brief.result import Brief  # noqa: E402  (re-exported for type hints)
from docket.presets import counter_for  # noqa: E402

__all__ = ["Planned", "assemble", "assemble_candidates", "plan", "rank_by_cosine", "Brief"]
