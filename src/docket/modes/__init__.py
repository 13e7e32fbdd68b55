"""When not to augment: the decisions taken before retrieval, and what every brief says about
its cache.

    decide()  attachments  -> the attached files are the context (whole, or searched inside)
              route        -> no_retrieve: a brief without evidence
              corpus       -> the whole readable corpus fits: one stable, cacheable block
              otherwise None: retrieve and assemble as usual
    finish()  every found brief: its mode, the Anthropic cache breakpoints, the cacheable
              tokens and the cost with and without the cache, the token counter used

Each decision writes a trace entry with its numbers. `assemble` calls `decide` before it ranks
anything, and `retrieve.ask` before it retrieves, so a request that needs no retrieval costs none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from docket.brief.clean import sanitize
from docket.brief.layout import build_brief, format_text, not_found_brief, question_text, system_text
from docket.brief.result import Brief
from docket.context import Context
from docket.errors import InputError
from docket.modes import attach, caching, corpus, route
from docket.presets import tokenizer_report
from docket.results import TokenCounts
from docket.store.access import Principal

RETRIEVE, WHOLE_CORPUS, ATTACHMENTS, NO_RETRIEVE = "retrieve", "whole_corpus", "attachments", "no_retrieve"

__all__ = ["decide", "finish", "RETRIEVE", "WHOLE_CORPUS", "ATTACHMENTS", "NO_RETRIEVE"]


def decide(ctx: Context, *, principal: Principal | None = None, attachments: Sequence[Any] | None = None,
           router: Any | None = None, whole_corpus: bool | None = None) -> Brief | None:
    """The brief when the request needs no retrieval, else None (the trace records why either way).

    `whole_corpus` True/False overrides `corpus.mode` ("whole"/"retrieve"); None keeps the policy's.
    """
    if attachments:
        return attachment_brief(ctx, attachments)
    if ctx.policy.route.enabled:
        r = route.decide(ctx.question, ctx.policy.route, router)
        ctx.trace.add("route", r.action, [], r.reason, rule=r.rule, sure=r.sure, **r.numbers)
        if r.action == route.NO_RETRIEVE:
            return no_retrieve_brief(ctx)
    mode = ctx.policy.corpus.mode if whole_corpus is None else ("whole" if whole_corpus else "retrieve")
    if mode != "retrieve":
        return whole_corpus_brief(ctx, principal, explicit=mode == "whole")
    return None


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

def attachment_brief(ctx: Context, items: Sequence[Any]) -> Brief:
    ctx.policy = attach.with_rule(ctx.policy)
    removed: Counter[str] = Counter()  # lone surrogates replaced, invisible characters removed: in the trace
    items = attach.read_all(items, ctx.policy, removed)  # once: searching inside chunks the same texts again
    whole = attach.load(items, ctx.policy, ctx.counter, whole=True)
    files = len({c.doc for c in whole})
    passages = corpus.passages_in_order(whole)
    from docket.brief.render import render_all

    documents, _, _ = render_all(passages, ctx.policy.render)
    size, limit = ctx.tokens(documents), attach.whole_limit(ctx)
    numbers: dict[str, Any] = {"attachment_tokens": size, "limit": limit, "files": files, "passages": len(passages),
                               **({"removed": dict(sorted(removed.items()))} if removed else {})}
    if size <= limit:
        ctx.trace.add("attach", "whole", [], f"{files} attached file(s): block {size:,} tokens <= {limit:,}: sent whole, "
                      "no retrieval", **numbers)
        return _pages(finish(build_brief(passages, ctx, max(limit, size)), ctx, mode=ATTACHMENTS))
    ctx.trace.add("attach", "search", [], f"{files} attached file(s): block {size:,} tokens > {limit:,}: chunked and "
                  "searched inside", **numbers)
    return _pages(search_attachments(ctx, items))


def search_attachments(ctx: Context, items: Sequence[Any]) -> Brief:
    """The attachments chunked like `docket index` does, ranked by cosine, and assembled."""
    from docket.assemble import assemble, rank_by_cosine
    from docket.embed import default_embedder
    from docket.store.base import MemoryStore

    chunks = attach.load(items, ctx.policy, ctx.counter, whole=False)
    embedder = ctx.embedder or default_embedder()
    ranked = rank_by_cosine(ctx.question, chunks, embedder)
    brief = assemble(ctx.question, ranked, store=MemoryStore(chunks), policy=ctx.policy, counter=ctx.counter,
                     embedder=embedder, trace=ctx.trace, modes=False)
    brief.mode = ATTACHMENTS
    return brief


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
    """Mode, cache breakpoints, the cache and cost report, and the counter, on a found brief."""
    brief.mode = mode
    brief.tokenizer = tokenizer_report(ctx.policy, ctx.counter)
    if not brief.found:
        return brief
    with_corpus = mode == WHOLE_CORPUS
    prefix_text = (brief.system, brief.documents) if with_corpus else (brief.system,)
    prefix_tokens = brief.tokens["system"] + (brief.tokens["documents"] if with_corpus else 0)
    brief.cache = caching.report(prefix="system+corpus" if with_corpus else "system", prefix_tokens=prefix_tokens,
                                 total_tokens=brief.tokens["total"], key=caching.prefix_key(*prefix_text),
                                 pol=ctx.policy.cache)
    if ctx.policy.cache.breakpoints:
        brief.anthropic_request = caching.add_breakpoints(brief.anthropic_request, corpus=with_corpus)
    return brief

