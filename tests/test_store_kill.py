"""A `kill -9` in the middle of indexing leaves a SQLite store that opens and answers with either
the old or the new state of each document, never a half-written one."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from store_cases import version

from docket.store.protocol import Filters
from docket.store.sqlite import SQLiteStore

N_DOCS, N_CHUNKS = 6, 5

WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from store_cases import version
    from docket.store.sqlite import SQLiteStore

    class SlowStore(SQLiteStore):
        def _insert_chunks(self, cur, dv, *args):
            super()._insert_chunks(cur, dv, *args)    # every row of this version is written...
            if dv.doc == "doc3":                      # ...but the transaction is not committed yet
                print("MID", flush=True)
                time.sleep(60)

    store = SlowStore({db!r})
    for i in range({n_docs}):
        store.write_version(version(f"doc{{i}}", 1, [f"new text {{i}} {{j}}" for j in range({n_chunks})]))
    store.write_version(version("brand-new", 1, ["never committed"]))
    print("DONE", flush=True)
    """
)


def _old(i: int) -> list[str]:
    return [f"old text {i} {j}" for j in range(N_CHUNKS)]


def test_sigkill_mid_index_leaves_old_or_new_state(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    store = SQLiteStore(db)
    store.set_meta({"embedder": "hash-bow", "dim": "64"})
    for i in range(N_DOCS):
        store.write_version(version(f"doc{i}", 1, _old(i)))
    store.close()

    code = WRITER.format(tests=str(Path(__file__).parent), db=str(db), n_docs=N_DOCS, n_chunks=N_CHUNKS)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "MID", f"writer did not reach the middle of doc3: {line!r}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    store = SQLiteStore(db)
    states = {}
    for i in range(N_DOCS):
        texts = [c.text for c in store.chunks_of(f"doc{i}", 1)]
        assert len(texts) == N_CHUNKS, f"doc{i} is half-written: {texts}"
        kinds = {t.split()[0] for t in texts}
        assert len(kinds) == 1, f"doc{i} mixes old and new chunks: {texts}"
        states[i] = kinds.pop()
    assert states == {0: "new", 1: "new", 2: "new", 3: "old", 4: "old", 5: "old"}
    assert store.stored_versions("brand-new") == []
    assert store.count() == N_DOCS * N_CHUNKS
    # the keyword index and the vectors agree with the chunk rows
    assert len(store.search_bm25("text", 100, Filters())) == N_DOCS * N_CHUNKS
    assert {c for c, _ in store.search_bm25("old", 100, Filters())} == {f"doc{i}-v1-{j}" for i in (3, 4, 5) for j in range(N_CHUNKS)}
    assert len(store.search_dense(store.get("doc0-v1-0").vector, 100, Filters())) == N_DOCS * N_CHUNKS  # type: ignore[union-attr,arg-type]
    # and the store still takes writes
    store.write_version(version("doc3", 1, [f"new text 3 {j}" for j in range(N_CHUNKS)]))
    assert {c.text.split()[0] for c in store.chunks_of("doc3", 1)} == {"new"}
    store.close()
