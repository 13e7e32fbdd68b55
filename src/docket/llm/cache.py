"""Model calls answered from disk when the same request was made before.

A model call is the slow, paid part of everything docket does with an LLM: answers in an
evaluation, the summary of the passages that did not fit (compress.summary), a context per chunk
at index time (index --contextualize). At temperature 0 the same request gives the same answer,
so each is stored in SQLite under the sha256 of the model's name, the messages and the settings,
and a re-run (a rebuilt store, an interrupted run, the same question again) calls the model only
for what it has not seen. A loopback port is left out of the key: the local server gets a new
port on each start, and the answers depend on the model it serves, not on the port.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from docket.llm.base import Answer, Citation

_LOOPBACK = re.compile(r"@https?://(?:127\.0\.0\.1|localhost|\[::1\]):\d+")


def default_path() -> Path:
    """$DOCKET_CACHE/llm/generations.sqlite (default ~/.cache/docket)."""
    base = Path(os.environ.get("DOCKET_CACHE") or Path.home() / ".cache" / "docket")
    return base / "llm" / "generations.sqlite"


def model_key(generator: Any) -> str:
    """The generator's identity for cache keys: its name without a loopback port."""
    return _LOOPBACK.sub("@loopback", str(getattr(generator, "name", type(generator).__name__)))


class CachedGenerator:
    """Wraps a generator; identical requests are answered from an SQLite file.

    `generate` is always offered; `complete_structured` only when the wrapped generator has it
    (so a caller's "can it enforce a schema?" test sees the truth). `calls` and `hits` count
    model calls and answers from the file.
    """

    def __init__(self, inner: Any, path: str | Path | None = None) -> None:
        self.inner = inner
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("CREATE TABLE IF NOT EXISTS gen (k TEXT PRIMARY KEY, answer TEXT)")
        self._lock = threading.Lock()
        self.calls = 0
        self.hits = 0
        self._key_name = model_key(inner)
        if callable(getattr(inner, "complete_structured", None)):
            self.complete_structured = self._complete_structured

    @property
    def name(self) -> str:
        return str(getattr(self.inner, "name", "generator"))

    #: plain attributes of the wrapped generator readers may look at (never its call methods:
    #: those would bypass the cache)
    _FORWARDED = frozenset({"structured_dialect", "base_url", "model", "extra_body"})

    def __getattr__(self, item: str) -> Any:
        if item in CachedGenerator._FORWARDED:
            return getattr(self.inner, item)
        raise AttributeError(item)

    def _get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT answer FROM gen WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO gen VALUES (?, ?)", (key, value))
            self._db.commit()

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 256, temperature: float = 0.0) -> str:
        key = hashlib.sha256(json.dumps([self._key_name, getattr(self.inner, "model", ""), messages, max_tokens, temperature],
                                        sort_keys=True).encode()).hexdigest()
        got = self._get(key)
        if got is not None:
            self.hits += 1
            return got
        answer = self.inner.generate(messages, max_tokens=max_tokens, temperature=temperature)
        self.calls += 1
        self._put(key, answer)
        return str(answer)

    def _complete_structured(self, messages: list[dict[str, Any]], schema: dict[str, Any], *, max_tokens: int = 512,
                             temperature: float = 0.0) -> Answer:
        key = hashlib.sha256(json.dumps(["complete_structured", self._key_name, getattr(self.inner, "model", ""), messages,
                                         schema, max_tokens, temperature], sort_keys=True).encode()).hexdigest()
        got = self._get(key)
        if got is not None:
            self.hits += 1
            return _answer_from(json.loads(got))
        ans = self.inner.complete_structured(messages, schema, max_tokens=max_tokens, temperature=temperature)
        self.calls += 1
        self._put(key, json.dumps(ans.to_json()))
        return ans  # type: ignore[no-any-return]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _answer_from(d: dict[str, Any]) -> Answer:
    return Answer(text=d.get("text", ""), model=d.get("model", ""), seconds=0.0, usage=dict(d.get("usage") or {}),
                  citations=[Citation(label=c["label"]) for c in d.get("citations", [])], mode=d.get("mode", "text"),
                  finish_reason=d.get("finish_reason"), note=d.get("note"))


__all__ = ["CachedGenerator", "default_path", "model_key"]
