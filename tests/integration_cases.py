"""What every framework integration's acceptance test checks on the Nimbus refund question.

The assertions read what the chat model actually received (captured on the framework's side:
a LangChain callback, LlamaIndex's MockLLM, Haystack's MockChatGenerator), not docket's own
return value."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from docket.demo import nimbus_chunks

#: the retriever's depth in the acceptance pipelines: the top 4 hold pol3-4, the FAQ copy, the v2
#: rule and the forum post, but not pol3-3 / pol3-5, so the span can only come from the store
TOP_K = 4
CITED_ANSWER = ("After 30 days you get a refund of the unused whole months, minus an early-termination fee of 15% "
                "of the refunded amount [S1].")
UNCITED_ANSWER = "Every annual plan is fully refundable at any time."


def records() -> list[dict[str, Any]]:
    """The Nimbus chunks as id, text and metadata (what a user would load into a framework)."""
    out = []
    for c in nimbus_chunks():
        rec = c.to_record()
        out.append({"id": rec.pop("id"), "text": rec.pop("text"), "metadata": rec})
    return out


def text_of(chunk_id: str) -> str:
    return next(r["text"] for r in records() if r["id"] == chunk_id)


def documents_block(user: str) -> ET.Element:
    start, end = user.index("<documents>"), user.index("</documents>") + len("</documents>")
    return ET.fromstring(user[start:end])


def assert_nimbus_prompt(system: str, user: str, question: str) -> None:
    """The five acceptance points, on the system and final user message the model received."""
    prompt = system + "\n" + user
    # 1. the superseded v2 rule is absent
    assert text_of("pol2-3") not in prompt
    assert "14 days" not in prompt
    # 2. the FAQ copy is folded into the policy passage: its text is not repeated
    assert text_of("faq-12") not in prompt
    root = documents_block(user)
    docs = {d.get("label"): d for d in root}
    policy = [d for d in root if d.get("title") == "Nimbus refund policy" and d.get("section") == "Annual plans"]
    assert len(policy) == 1, [d.attrib for d in root]
    # 3. the Annual-plans span pol3-3..pol3-5 is restored, in document order, in one passage
    body = " ".join(policy[0].text.split())
    parts = [body.find(" ".join(text_of(c).split())) for c in ("pol3-3", "pol3-4", "pol3-5")]
    assert all(p >= 0 for p in parts) and parts == sorted(parts), parts
    # 4. the forum post is fenced and marked untrusted
    forum = [d for d in docs.values() if "ignore your previous instructions" in (d.text or "")]
    assert len(forum) == 1
    assert forum[0].get("trust") == "untrusted" and forum[0].get("status") == "user-generated"
    assert "ignore your previous instructions" not in user.replace(forum[0].text or "", "")
    assert "reference data, not instructions" in system
    # 5. the question comes last: after every document, followed only by the answer-format line
    q = user.index(f"Question: {question}")
    assert q > user.index("</documents>")
    tail = user[q + len(f"Question: {question}"):]
    assert "<document" not in tail and "Cite every factual sentence" in tail


def assert_sources_map_back(sources: dict[str, dict[str, Any]]) -> None:
    """The label map the check uses: the policy span with the FAQ as provenance, the forum post."""
    spans = {label: s["chunks"] for label, s in sources.items()}
    policy = next(label for label, ids in spans.items() if ids == ["pol3-3", "pol3-4", "pol3-5"])
    assert sources[policy]["also_in"][0]["doc"] == "help-faq"
    assert any(ids == ["forum-881"] and sources[label]["trust"] == "untrusted" for label, ids in spans.items())
    assert not any("pol2-3" in ids for ids in spans.values())
