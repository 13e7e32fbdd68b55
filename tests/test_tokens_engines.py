"""toktok-rs counts what tiktoken counts (docket.tokens counts with toktok-rs where it is installed;
benchmarks/token_agreement.py runs the same comparison over every string of ../shared/data)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docket.errors import UnavailableError
from docket.tokens import Cl100kCounter, O200kCounter, default_counter

pytest.importorskip("toktok")

# texts the pre-tokenizer treats unlike plain words: contractions, digit runs, CJK, marks,
# emoji, every kind of space and line break, special-token look-alikes
PIECES = ["'s", "'LL", "123456", "日本語", "e\u0301", "🧠", "\u00a0", "\u3000", "\r\n", "\n\n", "\t", " ",
          "<|endoftext|>", "<|endofprompt|>", "/", "</document>", "&amp;", "S12", "Ǆ", "ß", "İ", "\u200b"]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=20).map("".join)


@pytest.mark.parametrize("cls", [O200kCounter, Cl100kCounter])
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_toktok_counts_as_tiktoken(cls: type[O200kCounter], text: str) -> None:
    assert cls(engine="toktok").count(text) == cls(engine="tiktoken").count(text)


def test_the_default_is_toktok_and_agrees_on_rendered_passages() -> None:
    from docket.brief import formats
    from docket.brief.render import render_passage
    from docket.model import Chunk, Passage
    from docket.policy import Policy

    assert default_counter().engine == "toktok"
    ref = O200kCounter(engine="tiktoken")
    text = 'He said "stop" & left <b>now</b>.\nIt\'s 1,234,567 km — 日本語 🧠 ' + "word " * 300
    p = Passage.of_chunk(Chunk(id="c1", doc="d1", text=text, title="A & B"), 0.5, 1)
    for name in formats.text_formats():
        block = render_passage(p, "S123", Policy().updated(render={"format": name}).render).block
        assert default_counter().count(block) == ref.count(block) == len(ref._enc.encode(block, disallowed_special=()))


def test_a_lone_surrogate_counts_as_the_replacement_character() -> None:
    fast, ref = O200kCounter(engine="toktok"), O200kCounter(engine="tiktoken")
    assert fast.count("a\ud800b") == ref.count("a\ud800b") == ref.count("a\ufffdb")


def test_an_unknown_engine_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="engine must be one of toktok, tiktoken, got 'fast'"):
        O200kCounter(engine="fast")


def test_without_toktok_the_counter_falls_back_to_tiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    import docket.tokens as tokens

    monkeypatch.setattr(tokens, "_toktok", lambda name: None)
    assert O200kCounter().engine == "tiktoken"
    assert O200kCounter().count("hello world") == 2
    with pytest.raises(UnavailableError, match="pip install toktok-rs"):
        O200kCounter(engine="toktok")


#: probe contexts: each code point beside letters, digits, spaces, punctuation, line breaks and itself
PROBES = ["{c}", "a{c}", "{c}a", "A{c}", "{c}A", "1{c}", "{c}1", " {c}", "{c} ", "!{c}", "{c}!", "'{c}", "{c}'s",
          "\n{c}", "{c}\n", "{c}{c}{c}{c}", "a{c}a", "A{c}a", "1{c}1", " {c} "]


def _probe(step: int, start: int = 0x80) -> list[str]:
    out = []
    for cls in (O200kCounter, Cl100kCounter):
        fast, ref = cls(engine="toktok"), cls(engine="tiktoken")
        for cp in range(start, 0x110000, step):
            if not 0xD800 <= cp <= 0xDFFF:
                for p in PROBES:
                    s = p.format(c=chr(cp))
                    if fast.count(s) != ref.count(s):
                        out.append(f"{cls.name} {s!r}")
    return out


def test_code_points_assigned_after_unicode_14_are_counted_by_tiktoken() -> None:
    """U+323B0 (CJK Extension J, Unicode 17) is a letter to toktok-rs, unassigned to tiktoken:
    "\\U000323b0:A" is 6 tokens to one and 7 to the other on its own; docket counts tiktoken's."""
    for text in ("\U000323b0:A", "x\u088f1", "\u0c5c a", "ok " * 50 + "\U0001fae9"):
        for cls in (O200kCounter, Cl100kCounter):
            assert cls(engine="toktok").count(text) == cls(engine="tiktoken").count(text)


def test_a_sample_of_code_points_counts_alike_in_every_probe() -> None:
    assert _probe(step=997) == []


@pytest.mark.slow
def test_every_code_point_counts_alike_in_every_probe() -> None:
    assert _probe(step=1) == []


def test_the_unassigned_table_is_unicode_14() -> None:
    import unicodedata

    from docket._unassigned14 import RANGES

    if unicodedata.unidata_version != "14.0.0":
        pytest.skip("this Python's unicodedata is not Unicode 14.0.0")
    cn = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cn"]
    assert cn == [cp for a, b in RANGES for cp in range(a, b + 1)]


def test_counts_from_many_threads_at_once_are_tiktoken_s() -> None:
    """The service counts in its worker threads; one toktok tokenizer is shared by all of them."""
    import threading

    texts = [f"Paragraph {i}: the river's {'ü' * (i % 3)}bank, {i * 7919} km — " + "word " * (i % 50) for i in range(800)]
    ref = O200kCounter(engine="tiktoken")
    want = [ref.count(t) for t in texts]
    bad: list[int] = []

    def work(k: int) -> None:
        counter = O200kCounter(engine="toktok")  # its own cache: every text reaches the tokenizer
        bad.extend(i for i in range(k, len(texts), 8) if counter.count(texts[i]) != want[i])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
