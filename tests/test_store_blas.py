"""SQLite's dense scan runs with BLAS limited to DOCKET_DENSE_THREADS threads (default 1) and
leaves BLAS as it found it, also when searches overlap in threads; the limit never changes what
a search returns."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from docket.blas import BlasThreads as _BlasThreads
from docket.blas import threads_setting as _dense_threads
from docket.errors import InputError
from docket.store import sqlite as sqlite_store


def _blas_threads(ctl: ThreadpoolController) -> set[int]:
    """Thread counts of the BLAS libraries numpy uses. faiss (the SQLite store's approximate
    search, loaded once a test has used it) brings an OpenMP OpenBLAS of its own for its k-means;
    docket's limiter, made before faiss was loaded, does not see it, and docket's own products
    never run on it."""
    return {int(i["num_threads"]) for i in ctl.info() if i["user_api"] == "blas" and "faiss" not in i["filepath"]}


@pytest.fixture
def ctl() -> ThreadpoolController:
    np.ones(2) @ np.ones(2)  # BLAS loaded
    c = ThreadpoolController()
    if not _blas_threads(c):
        pytest.skip("no BLAS library that threadpoolctl can see")
    return c


def test_limit_applies_inside_and_restores_after(ctl: ThreadpoolController) -> None:
    with ctl.limit(limits=2, user_api="blas"):  # a known starting point, whatever the machine's default
        limit = _BlasThreads(1)
        with limit():
            assert _blas_threads(ctl) == {1}
        assert _blas_threads(ctl) == {2}
        with _BlasThreads(0)():  # 0: BLAS left alone
            assert _blas_threads(ctl) == {2}


def test_nested_blocks_restore_once_at_the_end(ctl: ThreadpoolController) -> None:
    with ctl.limit(limits=2, user_api="blas"):
        limit = _BlasThreads(1)
        with limit():
            with limit():
                assert _blas_threads(ctl) == {1}
            assert _blas_threads(ctl) == {1}
        assert _blas_threads(ctl) == {2}


def test_searches_in_worker_threads_leave_blas_alone(ctl: ThreadpoolController) -> None:
    with ctl.limit(limits=2, user_api="blas"):
        limit = _BlasThreads(1)
        seen: list[set[int]] = []

        def search() -> None:
            with limit():
                seen.append(_blas_threads(ctl))

        threads = [threading.Thread(target=search) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [{2}, {2}, {2}]
        assert _blas_threads(ctl) == {2}


def test_an_exception_inside_still_restores(ctl: ThreadpoolController) -> None:
    with ctl.limit(limits=2, user_api="blas"):
        limit = _BlasThreads(1)
        with pytest.raises(RuntimeError), limit():
            raise RuntimeError("boom")
        assert _blas_threads(ctl) == {2}


@pytest.mark.parametrize(("raw", "want"), [(None, 1), ("", 1), (" 3 ", 3), ("0", 0)])
def test_dense_threads_setting(raw: str | None, want: int) -> None:
    assert _dense_threads(raw) == want


@pytest.mark.parametrize("raw", ["two", "-1", "1.5"])
def test_dense_threads_setting_refuses_nonsense(raw: str) -> None:
    with pytest.raises(InputError, match="DOCKET_DENSE_THREADS|whole number"):
        _dense_threads(raw)


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKET_DENSE_THREADS", "lots")
    with pytest.raises(InputError, match="lots"), _BlasThreads()():
        pass
    monkeypatch.setenv("DOCKET_DENSE_THREADS", "0")
    limit = _BlasThreads()
    with limit():
        assert limit.threads == 0
    assert isinstance(sqlite_store._DENSE_BLAS, _BlasThreads)


def test_assembly_runs_with_blas_limited_and_restores_it(ctl: ThreadpoolController, monkeypatch: pytest.MonkeyPatch) -> None:
    """`assemble` holds BLAS like the dense scan: its pool products are small, and idle BLAS
    workers spinning after them took a core from the Python moves."""
    import importlib

    assemble_mod = importlib.import_module("docket.assemble")  # the module, not the function docket exports
    from docket.embed import HashEmbedder
    from docket.model import Candidate, parse_chunk
    from docket.store.base import MemoryStore

    emb = HashEmbedder(64)
    texts = ["Refunds take 10 days.", "Refunds take 14 days.", "Shipping is free over 50 EUR."]
    chunks = [parse_chunk({"id": f"c{i}", "doc": f"d{i}", "text": t, "vector": [float(x) for x in v]})
              for i, (t, v) in enumerate(zip(texts, emb.embed(texts)))]
    seen: list[set[int]] = []
    real = assemble_mod._assemble_ranked

    def spy(*a: object, **k: object) -> object:
        seen.append(_blas_threads(ctl))
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(assemble_mod, "_assemble_ranked", spy)
    monkeypatch.setattr(assemble_mod._ASSEMBLY_BLAS, "threads", None)  # read DOCKET_DENSE_THREADS again
    with ctl.limit(limits=2, user_api="blas"):
        limited = assemble_mod.assemble("how long do refunds take?", [Candidate(c, 0.9 - 0.1 * i, i + 1)
                                        for i, c in enumerate(chunks)], store=MemoryStore(chunks), embedder=emb,
                                        floor=0.0)
        assert seen == [{1}] and _blas_threads(ctl) == {2}
        monkeypatch.setenv("DOCKET_DENSE_THREADS", "0")
        monkeypatch.setattr(assemble_mod._ASSEMBLY_BLAS, "threads", None)
        free = assemble_mod.assemble("how long do refunds take?", [Candidate(c, 0.9 - 0.1 * i, i + 1)
                                     for i, c in enumerate(chunks)], store=MemoryStore(chunks), embedder=emb, floor=0.0)
        assert seen[-1] == {2}
    assert limited.messages == free.messages


def test_limit_process_holds_blas_for_a_server(ctl: ThreadpoolController, monkeypatch: pytest.MonkeyPatch) -> None:
    from docket import blas

    with ctl.limit(limits=2, user_api="blas"):
        monkeypatch.setenv("DOCKET_DENSE_THREADS", "0")
        blas.limit_process()
        assert _blas_threads(ctl) == {2}  # 0: left alone
        monkeypatch.delenv("DOCKET_DENSE_THREADS")
        blas.limit_process()
        assert _blas_threads(ctl) == {1}
        blas._process_limit.restore_original_limits()
    monkeypatch.setenv("DOCKET_DENSE_THREADS", "many")
    with pytest.raises(InputError, match="DOCKET_DENSE_THREADS"):
        blas.limit_process()
