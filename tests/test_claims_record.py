"""Claims persisted with a chunk's features (docket.features records) decode to exactly what
`claims(text)` computes: conflict detection reads them instead of re-parsing each passage."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from docket.claims import claims, from_record, to_record

_WORDS = st.sampled_from(["The", "fee", "is", "40", "EUR", "a", "day", "not", "refunds", "take", "10", "business",
                          "days", "since", "21", "October", "1992", "it", "was", "1,200", "km", "20.4", "%", "$",
                          "5", "million", "Sir", "Matt", "Busby", "non-album", "two", "weeks", "n't", "Müller",
                          "über", "。", "東京", ",", ";", "!", "?", "\n", "  ", "2-3", "June", "2000"])


def _roundtrip(text: str) -> None:
    found = claims(text)
    record = json.loads(json.dumps(to_record(text, found)))  # as a store keeps it: JSON text
    assert from_record(text, record) == found


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=60).map(" ".join))
def test_claims_roundtrip_on_generated_text(text: str) -> None:
    _roundtrip(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_claims_roundtrip_on_any_text(text: str) -> None:
    _roundtrip(text)


def test_claims_roundtrip_on_real_paragraphs(shared_data: Path) -> None:
    seen = 0
    with (shared_data / "hotpotqa" / "dev250.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            for c in json.loads(line)["contexts"]:
                _roundtrip(c["paragraph_text"])
                seen += 1
            if seen >= 400:
                break
    assert seen >= 400


def test_a_record_keeps_sentences_as_offsets_not_a_second_copy() -> None:
    text = "Refunds take 10 days. Refunds take 14 days since 2021."
    record = to_record(text, claims(text))
    assert text not in json.dumps(record) and "Refunds take 10 days." not in json.dumps(record)
    assert [text[a:b] for a, b, *_ in record[1:]] == [c.text for c in claims(text)]
