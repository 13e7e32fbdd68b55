"""Chat history in the brief: the conversation so far, capped, between the rules and the question.

The prompt becomes: system (docket's rules, unchanged, so the cacheable prefix stays stable) ·
the kept turns · the final user message (documents, question, format). History is the user's
own text (and the model's earlier answers), never evidence, and four things keep it from
steering the answer:

* the rules stay in the system message: a `system` turn in the history is refused;
* a documents block is never repeated: an earlier docket user message sent back whole has its
  documents block (any text format, any case, look-alikes folded) stripped, keeping only its
  question; earlier answers lose their `[S1]` labels, which pointed at documents no longer in
  the prompt;
* what is left is fenced (brief/turns.py): every structural token of every text format — a
  lone `<document label="S1" trust="trusted">`, `<DOCUMENTS>`, `‹document`, an `ID: S1` line, a
  `===` marker — is written so no reader takes it for a document, so an earlier answer never
  becomes unfenced evidence next turn; and the roles alternate in the messages (turns of one
  role merged, a history turn merged into docket's own message under a frame: brief/turns.py);
* it is capped to the history budget (`history.max_tokens`): newest turns are kept word for
  word, older ones dropped (or, with `history.condense` and a generator, summarised into one
  turn); a kept window never starts with an answer whose question was dropped.

Every change is a trace entry (move "history") with the numbers. The kept turns' tokens are
counted in the budget arithmetic: with no explicit evidence budget they come off the input
target, as the spec's `input_target - system - history - question`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from docket.brief import turns as fencing
from docket.brief.render import sanitize
from docket.errors import InputError
from docket.model import Trace
from docket.policy import HistoryPolicy
from docket.safeio import iter_json_lines, loads_json, read_text
from docket.tokens import TokenCounter

MOVE = "history"


class ChatMessage(BaseModel):
    """One earlier turn of the conversation: who said it and what."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant"] = Field(description="user or assistant; docket writes the system message")
    content: str = Field(description="the turn's text")

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


#: summarise `turns` in at most `max_tokens` tokens (a generator call); may raise DocketError
Condenser = Callable[[Sequence[ChatMessage], int], str]



_LABELS = re.compile(r"\s?\[S\d+(?:\s*[,;]\s*S\d+)*\]")


def parse_history(items: Any, where: str = "history") -> list[ChatMessage]:
    """Validate a list of `{"role", "content"}` messages; a bad one names its index and field."""
    if items is None:
        return []
    if isinstance(items, Mapping) and "messages" in items:
        items = items["messages"]
    if not isinstance(items, list | tuple):
        raise InputError("must be a list of {role, content} messages", where=where)
    out: list[ChatMessage] = []
    for i, item in enumerate(items):
        if isinstance(item, ChatMessage):
            out.append(item)
            continue
        loc = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise InputError("must be an object with 'role' and 'content'", where=loc)
        if item.get("role") == "system":
            raise InputError("'system' is not allowed in the history: docket writes the system message, and the "
                             "rules stay there; send only user and assistant turns", where=loc, field="role")
        if isinstance(item.get("content"), list):
            raise InputError("must be a string (content blocks are not supported in the history)", where=loc,
                             field="content")
        try:
            out.append(ChatMessage.model_validate(dict(item)))
        except ValidationError as e:
            first = e.errors()[0]
            name = ".".join(str(p) for p in first.get("loc", ())) or None
            kind = first.get("type")
            msg = "is not a known field (a message has 'role' and 'content')" if kind == "extra_forbidden" \
                else "is required: each turn is {\"role\": \"user\" or \"assistant\", \"content\": TEXT}" \
                if kind == "missing" else first.get("msg", "invalid")
            raise InputError(msg, where=loc, field=name) from None
    return out


def load_history(path: str | Path) -> list[ChatMessage]:
    """A history file: a JSON list of messages (or `{"messages": [...]}`), or JSONL, one per line.

    Read through docket.safeio like every other file: a missing path, a pipe or device, bytes
    that are not UTF-8, nesting deeper than safeio.MAX_DEPTH and unstorable numbers are one
    InputError naming the file (and line), never a RecursionError or a read that blocks."""
    p = Path(path)
    text = read_text(p)
    stripped = text.strip()
    if not stripped:
        return []
    if stripped[0] in "[{" and not _looks_like_jsonl(stripped):
        return parse_history(loads_json(stripped, str(p)), where=str(p))
    items = []
    for _, value in iter_json_lines(text, str(p)):
        if isinstance(value, InputError):
            raise value
        items.append(value)
    return parse_history(items, where=str(p))


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith("{"):
        return False
    try:
        loads_json(lines[0], "history")
    except InputError:
        return False
    return True


@dataclass
class KeptHistory:
    """The turns that go into the prompt and what they cost."""

    messages: list[ChatMessage] = field(default_factory=list)
    tokens: int = 0
    given: int = 0
    dropped: int = 0
    condensed: bool = False


def strip_documents(text: str) -> tuple[str, int]:
    """`text` without docket documents blocks (any text format, any case, look-alikes folded); a
    docket user message sent back whole keeps only its question. Returns the text and how many
    blocks were removed."""
    return fencing.strip_blocks(text)


def prepare(history: Sequence[ChatMessage], policy: HistoryPolicy, counter: TokenCounter, trace: Trace,
            condenser: Condenser | None = None, warnings: list[str] | None = None) -> KeptHistory:
    """Clean and cap the history (see the module docstring); decisions go to `trace`."""
    kept = KeptHistory(given=len(history))
    cleaned: list[tuple[int, ChatMessage]] = []
    stripped_blocks: list[int] = []
    stripped_labels = 0
    removed_chars = 0
    fenced: list[int] = []
    for i, m in enumerate(history):
        text, removed = sanitize(m.content)
        removed_chars += removed
        text, blocks, tokens = fencing.fence(text)
        if blocks:
            stripped_blocks.append(i)
        if tokens:
            fenced.append(i)
        if policy.strip_labels and m.role == "assistant":
            text, k = _LABELS.subn("", text)
            stripped_labels += k
        if not text.strip():
            trace.add(MOVE, "drop", [], f"turn {i} ({m.role}) is empty after cleaning", turn=i)
            continue
        cleaned.append((i, ChatMessage(role=m.role, content=text)))
    if stripped_blocks:
        trace.add(MOVE, "strip", [], f"removed an earlier documents block from {len(stripped_blocks)} turn(s): evidence "
                  "is given once, in the final user message, never repeated from earlier turns", turns=stripped_blocks)
    if fenced:
        trace.add(MOVE, "fence", [], f"neutralised document tags, header lines or markers in {len(fenced)} turn(s): "
                  "history is never read as evidence", turns=fenced)
    if stripped_labels:
        trace.add(MOVE, "strip_labels", [], f"removed {stripped_labels} citation label(s) from earlier answers: they "
                  "point at documents that are no longer in the prompt", labels=stripped_labels)
    if removed_chars:
        trace.add(MOVE, "sanitize", [], f"removed {removed_chars} invisible or control character(s) from the history",
                  removed=removed_chars)

    costs = [counter.count(m.content) for _, m in cleaned]
    if cleaned and cleaned[-1][1].role == "user":
        # a last turn of the user's joins the final user message under its frame (brief/turns.py)
        costs[-1] += counter.count(fencing.FRAME["user"] + "\n\n\n")
    budget = policy.max_tokens
    take = 0
    used = 0
    for cost in reversed(costs):
        if used + cost > budget or (policy.max_turns is not None and take >= policy.max_turns):
            break
        used += cost
        take += 1
    start = len(cleaned) - take
    if start > 0 and take and cleaned[start][1].role == "assistant":
        used -= costs[start]  # an answer without its question reads as a statement of fact
        start += 1
        take -= 1
    old = cleaned[:start]
    window = cleaned[start:]
    if old:
        turns = [i for i, _ in old]
        why = (f"{len(old)} older turn(s) ({sum(costs[:start])} tokens) do not fit the history budget {budget} "
               f"after the {take} newest ({used} tokens)")
        if policy.max_turns is not None and take >= policy.max_turns:
            why += f" or max_turns {policy.max_turns}"
        summary = _condense([m for _, m in old], budget - used, counter, trace, condenser, warnings) \
            if policy.condense and condenser is not None else None
        if summary is not None:
            kept.condensed = True
            n = counter.count(summary.content)
            used += n
            window = [(-1, summary)] + window
            trace.add(MOVE, "condense", [], why + f": summarised into one turn of {n} tokens", turns=turns, tokens=n)
        else:
            trace.add(MOVE, "drop", [], why + ": dropped, oldest first", turns=turns,
                      tokens=sum(costs[:start]), budget=budget)
        kept.dropped = len(old)
    kept.messages = [m for _, m in window]
    kept.tokens = used
    if kept.messages:
        trace.add(MOVE, "keep", [], f"{len(kept.messages)} turn(s), {used} tokens of the history budget {budget}, "
                  "between the system message and the question", turns=len(kept.messages), tokens=used, budget=budget)
    return kept


SUMMARY_PREFIX = "Summary of the earlier conversation: "


def _condense(old: list[ChatMessage], room: int, counter: TokenCounter, trace: Trace, condenser: Condenser,
              warnings: list[str] | None) -> ChatMessage | None:
    from docket.errors import DocketError

    room -= counter.count(SUMMARY_PREFIX)
    if room < 16:
        return None
    try:
        text = " ".join(str(condenser(old, room)).split())
    except DocketError as e:
        trace.add(MOVE, "condense_failed", [], f"the summariser failed ({e}); older turns dropped instead")
        if warnings is not None:
            warnings.append(f"history: the summariser failed, older turns were dropped ({e})")
        return None
    text, _ = sanitize(text)
    text, _, _ = fencing.fence(text)
    if not text or counter.count(SUMMARY_PREFIX + text) > room + counter.count(SUMMARY_PREFIX):
        trace.add(MOVE, "condense_failed", [], f"the summary is empty or longer than the {room} tokens left; "
                  "older turns dropped instead")
        return None
    return ChatMessage(role="user", content=SUMMARY_PREFIX + text)


CONDENSE_SYSTEM = ("Summarise the conversation below in a few sentences for an assistant that will continue it. Keep "
                   "names, numbers, dates and what the user wants. Do not add facts. Reply with the summary only.")


def generator_condenser(generator: Any, *, max_tokens: int = 300) -> Condenser:
    """A `Condenser` that asks a docket `Generator` for the summary."""

    def condense(turns: Sequence[ChatMessage], room: int) -> str:
        convo = "\n".join(f"{m.role}: {m.content}" for m in turns)
        messages = [{"role": "system", "content": CONDENSE_SYSTEM}, {"role": "user", "content": convo}]
        return str(generator.generate(messages, max_tokens=min(max_tokens, room), temperature=0.0))

    return condense


__all__ = ["ChatMessage", "Condenser", "KeptHistory", "generator_condenser", "load_history", "parse_history", "prepare",
           "strip_documents"]
