"""The search query of a chat follow-up: "And in Paris?" searched as "What is the per diem in Paris?".

The history reaches the prompt, but a search for the last message alone ("And for monthly
plans?") finds nothing about refunds. This module builds the retrieval query from the
conversation; the question the model reads stays the user's own words.

Two ways, both traced by the caller with the reason returned here:

* a generator (docket.llm's `Generator`) rewrites the follow-up from the recent turns, when one
  is given; a reply that is empty, too long, several lines or a refusal falls back to
* the deterministic rewrite: a question that is not elliptical is searched as asked. An
  elliptical one (a continuation cue such as "and", "what about"; a pronoun with little else; or
  at most three content words) takes the previous user question and swaps in what the follow-up
  changes: its names replace the previous question's names ("Berlin" -> "Paris"), a phrase that
  shares its head word replaces that phrase ("annual plan" -> "monthly plans"); with neither,
  the follow-up is appended to the previous question.

Pure: no store, no model unless one is passed; the same inputs give the same query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from docket.model import Trace

#: a follow-up opening with one of these continues the previous question
_CUES = ("and what about", "and how about", "what about", "how about", "and for", "and in", "and if", "and",
         "also", "what if", "same for", "same question for", "or", "but", "then", "ok and", "okay and")
_PRONOUNS = frozenset("it its that this these those they them there he she him her one ones".split())
_STOP = frozenset("""a an the of in on at to for from by with and or is are was were be been being it its as that
this these those will would should shall which who whom whose what when where there their they them he she his her
we you your our us i me my mine has have had do does did so than then into about after before over under per each
every all any some such also only just both either very more most other same up out off via can may must could might
how much many get got about again too please ok okay yes no not tell say said""".split())
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*", re.UNICODE)
_QUESTION_LINE = re.compile(r"^Question: (.+)$", re.M)
_LABEL = re.compile(r"\[S\d+\]")
#: the words a full question opens with
_OPENERS = frozenset("what who whom whose which when where why how can could do does did is are was were will would "
                     "should shall may must has have had am".split())
#: how many earlier turns a generator sees
RECENT_TURNS = 6
MAX_QUERY_CHARS = 400


@dataclass(frozen=True)
class SearchQuery:
    """The query to search with, how it was made and why (one line, for the trace)."""

    query: str
    #: "as_asked" (no rewrite), "carried" (deterministic rewrite), "generator"
    method: str
    reason: str
    #: the previous user question the rewrite drew on ("" when none)
    previous: str = ""

    @property
    def rewritten(self) -> bool:
        return self.method != "as_asked"

    def trace_numbers(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "method": self.method}
        if self.previous:
            out["previous"] = self.previous
        return out


def _turns(history: Sequence[Any] | None) -> list[tuple[str, str]]:
    """(role, content) of each turn, whatever form it came in (ChatMessage or mapping)."""
    out: list[tuple[str, str]] = []
    for t in history or ():
        role = t.get("role") if isinstance(t, Mapping) else getattr(t, "role", None)
        content = t.get("content") if isinstance(t, Mapping) else getattr(t, "content", None)
        if isinstance(role, str) and isinstance(content, str):
            out.append((role, content))
    return out


def _user_question(content: str) -> str:
    """A user turn's question: the "Question: ..." line of a docket prompt sent back whole."""
    found = _QUESTION_LINE.findall(content)
    return (found[-1] if found else content).strip()


def previous_question(history: Sequence[Any] | None) -> str:
    """The last user question in the history that is not itself elliptical (a chain of
    follow-ups, "And in Paris?" then "And Rome?", goes back to the question they all continue)."""
    questions = [_user_question(c) for r, c in _turns(history) if r == "user" and c.strip()]
    for q in reversed(questions):
        if not elliptical(q):
            return q
    return questions[-1] if questions else ""


def _strip_cue(q: str) -> tuple[str, str]:
    low = q.lower().lstrip(" ,.;:-")
    for cue in _CUES:
        if low == cue or (low.startswith(cue) and not low[len(cue)].isalnum()):
            return cue, q.lstrip(" ,.;:-")[len(cue):].lstrip(" ,.;:-")
    return "", q.strip()


def _content(words: Sequence[str]) -> list[str]:
    return [w for w in words if w.lower() not in _STOP and w.lower() not in _PRONOUNS]


def elliptical(question: str) -> bool:
    """The question leans on an earlier one: it opens with a continuation cue, or it has a
    pronoun and at most four content words, or at most two content words in all."""
    cue, rest = _strip_cue(question)
    words = _WORD.findall(rest)
    content = _content(words)
    if cue:
        # "And how do I reset my VPN password?" is a new question behind a cue: it stands alone
        full = bool(words) and words[0].lower() in _OPENERS and len(content) >= 3 and \
            not any(w.lower() in _PRONOUNS for w in words)
        return not full and len(content) <= 6
    if any(w.lower() in _PRONOUNS for w in words) and len(content) <= 4:
        return True
    # a fragment ("Monthly plans?", "For managers?"), not a short full question ("Who is the CEO?")
    return len(content) <= 2 and not (words and words[0].lower() in _OPENERS)


def _names(text: str, opening: bool = True) -> list[str]:
    """Capitalised words (not the sentence's first when `opening`) and numbers: what a follow-up
    swaps. A follow-up's remainder after its cue ("And in | Paris") has no opening word."""
    toks = list(_WORD.finditer(text))
    out = []
    for k, m in enumerate(toks):
        w = m.group(0)
        if w[0].isdigit() or ((k > 0 or not opening) and w[0].isupper() and w.lower() not in _STOP
                              and w.lower() not in _PRONOUNS):
            out.append(w)
    return out


def _stem(w: str) -> str:
    w = w.lower()
    for suf in ("ies", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def _swap_names(prev: str, new: list[str]) -> str | None:
    """prev with its names (the last run of them) replaced by the follow-up's names."""
    old = _names(prev)
    if not old or not new:
        return None
    # replace the run of capitalised words that holds the last name ("New York" as one)
    pattern = r"\b" + r"\W+".join(re.escape(w) for w in _last_run(prev, old)) + r"\b"
    out = re.sub(pattern, " ".join(new), prev, count=1)
    return out if out != prev else None


def _last_run(text: str, names: list[str]) -> list[str]:
    """The last maximal sequence of adjacent name words in `text`."""
    toks = [m.group(0) for m in _WORD.finditer(text)]
    nameset = set(names)
    run: list[str] = []
    best: list[str] = []
    for t in toks:
        if t in nameset:
            run.append(t)
            best = list(run)
        else:
            run = []
    return best or [names[-1]]


def _swap_phrase(prev: str, rest: str) -> str | None:
    """prev with the phrase that shares a head word with the follow-up's phrase replaced by it:
    "refund on my annual plan" + "monthly plans" -> "refund on my monthly plans"."""
    fwords = _content(_WORD.findall(rest))
    if not fwords:
        return None
    ptoks = list(_WORD.finditer(prev))
    for head_at in range(len(fwords) - 1, -1, -1):
        head = _stem(fwords[head_at])
        for k in range(len(ptoks) - 1, -1, -1):
            if _stem(ptoks[k].group(0)) != head:
                continue
            # the previous phrase: the head and the content words right before it
            j = k
            while j > 0 and ptoks[j - 1].group(0).lower() not in _STOP and ptoks[j - 1].group(0).lower() not in _PRONOUNS:
                j -= 1
            new_phrase = " ".join(fwords[: head_at + 1])
            old = prev[ptoks[j].start(): ptoks[k].end()]
            if old.lower() == new_phrase.lower():
                return None
            return prev[: ptoks[j].start()] + new_phrase + prev[ptoks[k].end():]
    return None


def carry(question: str, history: Sequence[Any] | None) -> SearchQuery:
    """The deterministic rewrite (see the module docstring)."""
    q = question.strip()
    prev = previous_question(history)
    if not prev:
        return SearchQuery(q, "as_asked", "no earlier user question in the history: searched as asked")
    if not elliptical(q):
        return SearchQuery(q, "as_asked", "the question stands on its own: searched as asked")
    cue, rest = _strip_cue(q)
    rest = rest.rstrip(" ?!.")
    if not _content(_WORD.findall(rest)):
        return SearchQuery(prev, "carried", f"an elliptical follow-up with no content of its own: searched as the "
                                            f"previous question {prev!r}", prev)
    swapped = _swap_names(prev, _names(rest, opening=not cue))
    how = "its names replace the previous question's"
    if swapped is None:
        swapped = _swap_phrase(prev, rest)
        how = "its phrase replaces the previous question's phrase with the same head word"
    if swapped is None:
        swapped = f"{prev.rstrip()} {rest}?"
        how = "appended to the previous question"
    return SearchQuery(_clip(swapped), "carried", f"an elliptical follow-up ({'opens with ' + repr(cue) if cue else 'few words of its own'}): "
                                                  f"{how}", prev)


def _clip(q: str) -> str:
    q = " ".join(q.split())
    return q if len(q) <= MAX_QUERY_CHARS else q[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]


REWRITE_SYSTEM = ("You rewrite the user's last message as one standalone search query for a document search, "
                  "using the conversation only to fill in what the message leaves out. Keep the user's terms; "
                  "add no facts and no answer. Reply with the query alone, on one line.")


def rewrite(question: str, history: Sequence[Any] | None, generator: Any = None) -> SearchQuery:
    """The search query for `question` after `history`: the generator's rewrite when one is given
    and its reply is usable, else `carry`'s. A question without history is searched as asked
    (no model call)."""
    fallback = carry(question, history)
    turns = _turns(history)
    if generator is None or not turns or fallback.method == "as_asked" and not elliptical(question):
        return fallback
    recent = turns[-RECENT_TURNS:]
    messages = [{"role": "system", "content": REWRITE_SYSTEM}]
    convo = "\n".join(f"{r}: {_user_question(c) if r == 'user' else c}" for r, c in recent)
    messages.append({"role": "user", "content": f"Conversation:\n{convo}\n\nLast message: {question.strip()}\n\nQuery:"})
    try:
        reply = str(generator.generate(messages, max_tokens=64, temperature=0.0))
    except Exception as e:  # a model failure must not fail the search: the fallback searches
        return SearchQuery(fallback.query, fallback.method, f"the generator failed ({type(e).__name__}); "
                                                            f"{fallback.reason}", fallback.previous)
    text = reply.strip().strip('"').strip()
    text = re.sub(r"^(?:query|search query)\s*:\s*", "", text, flags=re.I)
    own = {w.lower() for w in _content(_WORD.findall(_strip_cue(question)[1]))}
    problem = ("empty" if not text else "several lines" if "\n" in text else
               f"longer than {MAX_QUERY_CHARS} characters" if len(text) > MAX_QUERY_CHARS else
               "it cites sources: an answer, not a query" if _LABEL.search(text) else
               "it drops the follow-up's own words" if own and not own & {w.lower() for w in _WORD.findall(text)}
               else "")
    if problem:
        return SearchQuery(fallback.query, fallback.method, f"the generator's rewrite was unusable ({problem}); "
                                                            f"{fallback.reason}", fallback.previous)
    name = getattr(generator, "name", "generator")
    return SearchQuery(text, "generator", f"rewritten from the last {len(recent)} turn(s) by {name}",
                       fallback.previous)


MOVE = "followup"


def searched_query(question: str, history: Sequence[Any] | None, generator: Any, trace: Trace) -> str:
    """The query `Session.ask` searches with, the decision traced (move "followup") whenever there
    is a history: the query used, how it was made and why."""
    if not _turns(history):
        return question
    sq = rewrite(question, history, generator)
    action = "rewrite" if sq.rewritten else "as_asked"
    trace.add(MOVE, action, [], f"searched {sq.query!r}: {sq.reason}", **sq.trace_numbers())
    return sq.query


__all__ = ["SearchQuery", "carry", "elliptical", "previous_question", "rewrite", "searched_query"]
