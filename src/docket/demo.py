"""The spec's Nimbus example: eight chunks and two questions, shipped with the package."""

from __future__ import annotations

import json
from importlib import resources

from docket.model import Chunk, parse_chunk

REFUND_QUESTION = "Can I get a refund on my annual plan after 30 days?"
DISCOUNT_QUESTION = "Do you offer a student discount?"


def nimbus_path() -> str:
    return str(resources.files("docket").joinpath("data/nimbus.jsonl"))


def nimbus_chunks() -> list[Chunk]:
    text = resources.files("docket").joinpath("data/nimbus.jsonl").read_text(encoding="utf-8")
    return [parse_chunk(json.loads(line), where=f"nimbus.jsonl:{n}") for n, line in enumerate(text.splitlines(), 1) if line]
