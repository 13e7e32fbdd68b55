"""When not to augment: the mode plan, taken before retrieval, and what every brief says about
its cache.

    plan()    attachments  -> the attached files are the context: sent whole (the plan holds the
                              brief), or chunked and ranked (the plan holds the candidates and
                              their store; the caller runs the assembler over them)
              route        -> no_retrieve: a brief without evidence
              corpus       -> the whole readable corpus fits: one stable, cacheable block
              otherwise    -> retrieve: the caller retrieves and assembles as usual
    finish()  every found brief: its mode, the Anthropic cache breakpoints, the cacheable
              tokens and the cost with and without the cache, the token counter used (and the
              pages of an attachment's sources)

Each decision writes a trace entry with its numbers. `Session.ask` and `docket.assemble` take the
plan before they retrieve or rank anything, so a request that needs no retrieval costs none. This
package never runs the assembler: it hands its candidates back, and the request path descends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docket.brief.clean import sanitize
from docket.brief.layout import build_brief, format_text, not_found_brief, question_text, system_text
from docket.brief.result import Brief
from docket.context import Context
from docket.embed import Embedder, default_embedder
from docket.errors import InputError
from docket.model import Candidate
from docket.modes import attach, caching, corpus, route
from docket.policy import Policy
from docket.presets import tokenizer_report
from docket.ranking import rank_by_cosine
from docket.results import TokenCounts
from docket.store.access import Principal
from docket.store.base import ChunkLookup, MemoryStore

RETRIEVE, WHOLE_CORPUS, ATTACHMENTS, NO_RETRIEVE = "retrieve", "whole_corpus", "attachments", "no_retrieve"

__all__ = ["Plan", "plan", "finish", "RETRIEVE", "WHOLE_CORPUS", "ATTACHMENTS", "NO_RETRIEVE"]


@dataclass(frozen=True)
class Plan:
    """What a request needs, decided before anything is retrieved.

    `brief`: the mode built the brief itself (no retrieval, the whole corpus, attachments sent
    whole); nothing is retrieved or assembled. Otherwise the caller assembles: over `candidates`
    read through `store` with `policy` and `embedder` when the plan holds them (attachments
    searched inside), else over what it retrieves (`mode` RETRIEVE)."""

    mode: str
    brief: Brief | None = None
    candidates: tuple[Candidate, ...] | None = None
    store: ChunkLookup | None = None
    policy: Policy | None = None
    embedder: Embedder | None = None

    @property
    def retrieves(self) -> bool:
        """The caller must retrieve (or rank) the candidates."""
        return self.brief is None and self.candidates is None


def plan(ctx: Context, *, principal: Principal | None = None, attachments: Sequence[Any] | None = None,
         router: Any | None = None, whole_corpus: bool | None = None) -> Plan:
    """The mode of the request (the trace records why). `whole_corpus` True/False overrides
    `corpus.mode` ("whole"/"retrieve"); None keeps the policy's."""
    if attachments:
        return attachment_plan(ctx, attachments)
    if ctx.policy.route.enabled:
        r = route.decide(ctx.question, ctx.policy.route, router)
        ctx.trace.add("route", r.action, [], r.reason, rule=r.rule, sure=r.sure, **r.numbers)
        if r.action == route.NO_RETRIEVE:
            return Plan(NO_RETRIEVE, brief=no_retrieve_brief(ctx))
    mode = ctx.policy.corpus.mode if whole_corpus is None else ("whole" if whole_corpus else "retrieve")
    if mode != "retrieve":
        brief = whole_corpus_brief(ctx, principal, explicit=mode == "whole")
        if brief is not None:
            return Plan(WHOLE_CORPUS, brief=brief)
    return Plan(RETRIEVE)


# --- the whole corpus ------------------------------------------------------------------------

def whole_corpus_brief(ctx: Context, principal: Principal | None, *, explicit: bool) -> Brief | None:
    block = corpus.corpus_block(ctx.store, principal, ctx)
    pol = ctx.policy
    limit = pol.corpus.max_tokens
    left = ", ".join(f"{n} {why}" for why, n in block.left_out.items())
    numbers: dict[str, Any] = {"corpus_tokens": block.tokens, "max_tokens": limit, "n_chunks": len(block.passages),
                               "documents": block.documents, "readable_key": block.readable_key[:16]}
    if block.left_out:
        numbers["left_out"] = dict(block.left_out)
    if not block.passages:
        ctx.trace.add("corpus", "not_found", [], "the asker may read no document in force: nothing to send", **numbers)
        return not_found_brief(ctx)
    fits = block.tokens <= limit
    arithmetic = f"corpus block {block.tokens:,} tokens {'<=' if fits else '>'} corpus.max_tokens {limit:,}"
    window = pol.model.context_window
    if fits and window is not None:
        style = pol.render.format
        rest = ctx.tokens(system_text(ctx, style)) + ctx.tokens(question_text(ctx)) + ctx.tokens(format_text(ctx))
        need = block.tokens + rest + pol.pack.answer_reserve + pol.pack.history_tokens
        fits = need <= window
        numbers |= {"prompt_and_answer": need, "context_window": window}
        arithmetic += (f"; with the rest of the prompt ({rest:,}), history ({pol.pack.history_tokens:,}) and the answer "
                       f"reserve ({pol.pack.answer_reserve:,}): {need:,} {'<=' if fits else '>'} the window {window:,}")
    if not fits:
        if explicit:
            raise InputError(f"the corpus this asker may read does not fit: {arithmetic}; raise corpus.max_tokens, "
                             "or retrieve (drop --whole-corpus)", field="corpus.mode")
        ctx.trace.add("corpus", "retrieve", [], f"{arithmetic}: retrieve instead", **numbers)
        return None
    why = f"{arithmetic}: the whole readable corpus ({block.documents} document(s), {len(block.passages)} chunk(s)) " \
          "goes in, in document order; no retrieval" + (f" (left out: {left})" if left else "")
    ctx.trace.add("corpus", "whole", [], why, **numbers)
    brief = finish(build_brief(list(block.passages), ctx, block.tokens), ctx, mode=WHOLE_CORPUS)
    if brief.cache:  # which readable set the block holds: differs whenever the set differs, even in ids only
        brief.cache["readable_key"] = block.readable_key[:16]
    return brief


# --- attachments -----------------------------------------------------------------------------

def attachment_plan(ctx: Context, items: Sequence[Any]) -> Plan:
    """Attachments sent whole when their block fits, else chunked and ranked for the assembler."""
    ctx.policy = attach.with_rule(ctx.policy)
    removed: Counter[str] = Counter()  # lone surrogates replaced, invisible characters removed: in the trace
    items = attach.read_all(items, ctx.policy, removed)  # once: searching inside chunks the same texts again
    whole = attach.load(items, ctx.policy, ctx.counter, whole=True)
    files = len({c.doc for c in whole})
    passages = corpus.passages_in_order(whole)
    from docket.brief.render import render_all

    documents, _, _ = render_all(passages, ctx.policy.render, ctx.caches)
    size, limit = ctx.tokens(documents), attach.whole_limit(ctx)
    numbers: dict[str, Any] = {"attachment_tokens": size, "limit": limit, "files": files, "passages": len(passages),
                               **({"removed": dict(sorted(removed.items()))} if removed else {})}
    if size <= limit:
        ctx.trace.add("attach", "whole", [], f"{files} attached file(s): block {size:,} tokens <= {limit:,}: sent whole, "
                      "no retrieval", **numbers)
        return Plan(ATTACHMENTS, brief=finish(build_brief(passages, ctx, max(limit, size)), ctx, mode=ATTACHMENTS))
    ctx.trace.add("attach", "search", [], f"{files} attached file(s): block {size:,} tokens > {limit:,}: chunked and "
                  "searched inside", **numbers)
    return search_plan(ctx, items)


def search_plan(ctx: Context, items: Sequence[Any]) -> Plan:
    """The attachments chunked like `docket index` does and ranked by cosine: the caller runs the
    assembler over them, read through a store of their own."""
    chunks = attach.load(items, ctx.policy, ctx.counter, whole=False)
    embedder = ctx.embedder or default_embedder()
    ranked = rank_by_cosine(ctx.question, chunks, embedder, features=ctx.features)
    return Plan(ATTACHMENTS, candidates=tuple(ranked), store=MemoryStore(chunks), policy=ctx.policy, embedder=embedder)


def _pages(brief: Brief) -> Brief:
    """Every source of an attachment says which page(s) it is on."""
    for p, src in zip(brief.passages, brief.sources.values()):
        pages = attach.pages_of(p.chunks)
        if pages:
            src["pages"] = pages
    return brief


# --- no retrieval ------------------------------------------------------------------------------

def no_retrieve_rules(ctx: Context) -> list[str]:
    refusal = ctx.policy.brief.refusal
    return [
        "No documents come with this request: it was judged not to need them (a rewrite of text the user gave, "
        "arithmetic on the user's numbers, or conversation).",
        "Do not state facts about the organisation, its policies, prices, products or people.",
        f'If the request needs such facts, reply exactly: "{refusal}"',
    ]


def no_retrieve_brief(ctx: Context) -> Brief:
    """System and user message, no evidence block, no sources: the model works from the request."""
    rules = "\n".join(f"{i}. {r}" for i, r in enumerate(no_retrieve_rules(ctx), 1))
    system = f"{ctx.policy.route.role}\n\nRules:\n{rules}"
    user, _ = sanitize(ctx.question)
    tokens = {"system": ctx.tokens(system), "documents": 0, "passage_text": 0, "notes": 0, "question": ctx.tokens(user),
              "format": 0, "user": ctx.tokens(user), "tags": 0, "passages": 0}
    tokens["total"] = tokens["system"] + tokens["user"]
    request = {"system": system, "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}]}
    brief = Brief(found=True, question=ctx.question, system=system, user=user, documents="", sources={},
                  tokens=TokenCounts.of(tokens), trace=list(ctx.trace.events), conflicts=[], warnings=list(ctx.warnings),
                  budget=0,
                  refusal=ctx.policy.brief.refusal, passages=[], anthropic_request=request)
    return finish(brief, ctx, mode=NO_RETRIEVE)


# --- every brief -----------------------------------------------------------------------------

def finish(brief: Brief, ctx: Context, *, mode: str = RETRIEVE) -> Brief:
    """Mode, cache breakpoints, the cache and cost report, and the counter, on a found brief; the
    pages of every source of an attachment."""
    brief.mode = mode
    brief.tokenizer = tokenizer_report(ctx.policy, ctx.counter)
    if not brief.found:
        return brief
    if mode == ATTACHMENTS:
        _pages(brief)
    with_corpus = mode == WHOLE_CORPUS
    prefix_text = (brief.system, brief.documents) if with_corpus else (brief.system,)
    prefix_tokens = brief.tokens["system"] + (brief.tokens["documents"] if with_corpus else 0)
    brief.cache = caching.report(prefix="system+corpus" if with_corpus else "system", prefix_tokens=prefix_tokens,
                                 total_tokens=brief.tokens["total"], key=caching.prefix_key(*prefix_text),
                                 pol=ctx.policy.cache)
    if ctx.policy.cache.breakpoints:
        brief.anthropic_request = caching.add_breakpoints(brief.anthropic_request, corpus=with_corpus)
    return brief

