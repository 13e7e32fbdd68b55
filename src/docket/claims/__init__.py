"""Statements with values: what two passages say about the same thing, and whether they agree.

A conflict is the same statement with a different value, or negated: "up to 40 EUR a day" vs
"reimbursed up to 50 EUR for each day", "20 weeks" vs "18 weeks of paid leave", "are refundable"
vs "are not refundable". Two passages that merely look alike with different numbers are not
("Support replies within 2 days" vs "Refunds within 30 days"; two seasons of one team).

Each sentence becomes a `Claim`: its content words (folded, crudely stemmed, a few synonyms
merged: refund/reimburse/repay, answer/reply, max/up to/limit, ...), its proper names, its
quantities (value + unit class, with units converted: weeks to days, km to m, "fifteen
percent" to 15 %, "twice" to 200 %, "1.5 million" to 1,500,000), and whether it is negated.
Two claims are about the same thing when their words overlap enough (or, for amounts with a
unit, their sentence embeddings are close: `similar`) and their names do not exclude each other
("The Berlin office" vs "The Lisbon office"). They disagree when, for a unit
they share, neither set of values contains the other (rounding forgiven: 20 % ~ 20.4 %), or when
one negates what the other states. Years and unit-less numbers need a closer match of words than
amounts with a unit, which are the usual content of rules.

The work is split by job: `words` (sentences, content words, names, subject, negation),
`quantities` (numbers, units, dates), `extract` (a passage's claims and their stored record) and
`compare` (disagreement, contradiction, restatement). Callers import from `docket.claims`.
"""

from __future__ import annotations

from docket.claims.compare import (
                                   COPY_MIN_STATEMENTS,
                                   COPY_OVERLAP,
                                   NEGATION_OVERLAP,
                                   SENTENCE_SIMILARITY,
                                   UNIT_OVERLAP,
                                   YEAR_OVERLAP,
                                   Similar,
                                   contradiction,
                                   different_names,
                                   disagreement,
                                   restates,
                                   similarity,
)
from docket.claims.extract import Claim, claims, from_record, to_record
from docket.claims.quantities import Quantity
from docket.claims.words import NEGATIONS, STOP, different_subjects, fold, subject

__all__ = ["COPY_MIN_STATEMENTS", "COPY_OVERLAP", "NEGATION_OVERLAP", "NEGATIONS", "SENTENCE_SIMILARITY", "STOP",
           "UNIT_OVERLAP", "YEAR_OVERLAP", "Claim", "Quantity", "Similar", "claims", "contradiction",
           "different_names", "different_subjects", "disagreement", "fold", "from_record", "restates",
           "similarity", "subject", "to_record"]
