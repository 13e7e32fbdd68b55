"""`_Index.positions` (rowid -> live row) answers the same by offset, when the loaded rowids run
without a gap, as by bisection: dead rows, appended rows and rowids it does not hold included."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from store_cases import EMB, version

from docket.store.sqlite import SQLiteStore


def _both(m) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    asked = np.arange(-3, int(m.rowids.max()) + 4, dtype=np.int64)
    asked = np.concatenate([asked, asked[::-1]])
    by_bisection = dataclasses.replace(m, consecutive=False, appended_at=None)
    return m.positions(asked), by_bisection.positions(asked)


def test_offsets_and_bisection_agree(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "s.db")
    s.set_meta({"embedder": EMB.name, "dim": str(EMB.dim)})
    for d in range(8):
        s.write_version(version(f"d{d}", 1, [f"text {d} one", f"text {d} two", f"text {d} three"]))
    m = s._search_index()
    got, want = _both(m)
    assert m.consecutive is True and (got == want).all() and (got >= 0).sum() == 2 * 24
    s.write_version(version("d2", 2, ["changed", "text"]))  # dead rows and appended ones
    s.delete("d5")
    m = s._search_index()
    got, want = _both(m)
    assert m.alive is not None and (got == want).all()
    s.close()
    s = SQLiteStore(tmp_path / "s.db")  # a full load of rowids with gaps: bisection
    m = s._search_index()
    got, want = _both(m)
    assert m.consecutive is False and (got == want).all()
    s.close()
