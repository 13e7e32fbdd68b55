"""On-disk caches for evaluation: embeddings (SQLite, keyed by sha256 of model name + text).

Embedding a benchmark with MiniLM on two cores takes about a minute per 3,000 paragraphs; with
the cache a second run embeds nothing. The cache lives in `.docket-cache/` (or $DOCKET_EVAL_CACHE).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from docket.embed import Embedder


def cache_dir() -> Path:
    d = Path(os.environ.get("DOCKET_EVAL_CACHE", ".docket-cache"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\n{text}".encode()).hexdigest()


class DiskCachedEmbedder:
    """Wraps an embedder with an in-memory and an SQLite cache. Same text, same vector."""

    def __init__(self, inner: Embedder, path: str | Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = Path(path) if path else cache_dir() / "embeddings.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (k TEXT PRIMARY KEY, v BLOB)")
        self._mem: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.computed = 0
        self.on_progress: Callable[[int], None] | None = None

    def _lookup(self, keys: list[str]) -> None:
        need = [k for k in keys if k not in self._mem]
        for start in range(0, len(need), 500):
            part = need[start : start + 500]
            q = f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(part))})"
            for k, v in self._db.execute(q, part):
                self._mem[k] = np.frombuffer(v, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(self.name, t) for t in texts]
        with self._lock:
            self._lookup(keys)
            missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self._mem))
            batch = 64
            for start in range(0, len(missing), batch):
                part = missing[start : start + batch]
                vecs = self.inner.embed(part)
                rows = []
                for t, v in zip(part, vecs):
                    k = text_key(self.name, t)
                    v = np.asarray(v, dtype=np.float32)
                    self._mem[k] = v
                    rows.append((k, v.tobytes()))
                self._db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?)", rows)
                self._db.commit()
                self.computed += len(part)
                if self.on_progress:
                    self.on_progress(len(part))
            return np.stack([self._mem[k] for k in keys])

    def missing(self, texts: Sequence[str]) -> list[str]:
        keys = [text_key(self.name, t) for t in texts]
        with self._lock:
            self._lookup(keys)
        return list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self._mem))


def eval_embedder(name: str = "minilm") -> DiskCachedEmbedder:
    """The embedder evaluation uses: MiniLM (default) or the hash embedder (for quick tests)."""
    if name == "hash":
        from docket.embed import HashEmbedder

        return DiskCachedEmbedder(HashEmbedder(), cache_dir() / "embeddings-hash.sqlite")
    from docket.embed import MiniLMEmbedder

    return DiskCachedEmbedder(MiniLMEmbedder())
