"""The seam between the moves and the brief: what a passage costs as it will be rendered.

A move that has to respect the budget (pack, expand's cap, compress, the summary) needs to know
how many tokens a passage takes once it is labelled, fenced and escaped, and how much of the
input target the brief's own text leaves for evidence. Only the brief layer knows how it writes
a passage, so it implements `Sizer` and the wiring hands one to the moves on the context; a move
never imports `docket.brief`. This module owns the budget formula, so pack, expand and the
attachment mode compute the evidence budget the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from docket.errors import InputError
from docket.model import Passage

if TYPE_CHECKING:
    from docket.policy import PackPolicy


def label_for(n: int) -> str:
    """The label of the n-th passage the model reads (S1, S2, ...)."""
    return f"S{n}"


@runtime_checkable
class Sizer(Protocol):
    """How the brief layer sizes and writes passages, for the moves that must fit a budget."""

    def cost(self, passage: Passage, label: str) -> int:
        """Tokens `passage` adds to the documents block under `label`, separator included."""
        ...

    def costs(self, passages: Sequence[Passage], label: str) -> list[int]:
        """`cost` of each passage (from the per-chunk cache where the counter allows it)."""
        ...

    def at_least(self, passage: Passage, label: str) -> int:
        """A lower bound on `cost(passage, label)`, cheap to compute (nothing rendered or
        tokenised; 0 when no bound is known): the packer counts exactly only the passages a bound
        cannot rule out (docket.moves.pack), and its trace gives this bound for each of those it
        does. A pure function of the passage and the settings, never a count cached by an earlier
        assembly, so the same inputs give the same trace whatever ran before."""
        ...

    def bound_function(self, label: str) -> Callable[[Passage], int]:
        """`at_least(·, label)` for many passages."""
        ...

    def bounds(self, passages: Sequence[Passage], label: str, cheap: bool = False) -> list[int]:
        """`at_least(p, label)` of each passage, read for the whole list at once (the packer asks
        for every passage of the pool: one call, not one per passage). With `cheap`, a passage
        may get a cheaper bound already known (never above its `at_least`, maybe below it): a
        caller refines it with `at_least` where the difference matters."""
        ...

    def cost_function(self, label: str) -> Callable[[Passage], int]:
        """`cost(·, label)` for many passages, as a function that holds only what counting needs
        (not the assembly context)."""
        ...

    def wrapper_tokens(self) -> int:
        """Tokens of the documents block's opening and closing marks, less one separator."""
        ...

    def fixed_tokens(self) -> int:
        """Tokens of everything in the brief that is not evidence (system, question, format)."""
        ...

    def block_tokens(self, passages: Sequence[Passage]) -> int:
        """Tokens of the whole documents block for `passages`, labelled S1.. in this order, as the
        brief writes it (the exact check after the final order)."""
        ...

    def documents(self, passages: Sequence[Passage]) -> str:
        """The passages labelled S1.. and fenced as the documents block writes them (for a
        request a move sends to a model, such as the summary of what did not fit)."""
        ...

    def question(self) -> str:
        """The question as the format writes it (it cannot open, close or forge a document)."""
        ...


class Budget(NamedTuple):
    """The evidence budget and, when it was derived backward from the input target, why."""

    tokens: int
    derived: bool
    why: str


def evidence_budget(pack: PackPolicy, fixed_tokens: int) -> Budget:
    """The explicit budget, or the input target minus everything that is not evidence (the spec's
    budget arithmetic). `fixed_tokens` is `Sizer.fixed_tokens()`; raises when nothing is left."""
    if pack.budget is not None:
        return Budget(pack.budget, False, "")
    budget = pack.input_target - pack.answer_reserve - pack.history_tokens - fixed_tokens
    if budget <= 0:
        raise InputError(
            f"input_target {pack.input_target} leaves no room for evidence after the answer reserve "
            f"({pack.answer_reserve}), history ({pack.history_tokens}) and the system message, question and format "
            f"({fixed_tokens}); raise it, give an explicit evidence budget (--budget), or shorten the question",
            field="pack.input_target",
        )
    return Budget(budget, True, f"evidence budget {budget} = input target {pack.input_target} - answer reserve "
                                f"{pack.answer_reserve} - history {pack.history_tokens} - system, question and format "
                                f"{fixed_tokens}")


def raw_budget(pack: PackPolicy, fixed_tokens: int) -> int:
    """The same arithmetic without the check (expand's cap reads it before pack would raise)."""
    if pack.budget is not None:
        return pack.budget
    return pack.input_target - pack.answer_reserve - pack.history_tokens - fixed_tokens


__all__ = ["Sizer", "Budget", "evidence_budget", "raw_budget", "label_for"]
