"""`docket index` shows real progress (issue 24 §11): files read and chunks embedded with their
totals from the start, chunks per second, and without a terminal one line per 10 % on stderr."""

from __future__ import annotations

import io
import re
from pathlib import Path

from bad_input_kit import run_cli

from docket.cli.progress import IndexProgress
from docket.embed import HashEmbedder
from docket.ingest import IndexOptions, index_paths
from docket.store.sqlite import SQLiteStore


def _folder(root: Path, n: int) -> Path:
    d = root / "docs"
    d.mkdir()
    for i in range(n):
        (d / f"d{i:03}.md").write_text(f"# Doc {i}\n\nRefunds take {i} days.\n\nAnother paragraph {i}.\n")
    return d


def test_without_a_terminal_each_phase_prints_a_line_per_ten_percent() -> None:
    out = io.StringIO()
    with IndexProgress(terminal=False, out=out) as shown:
        for i in range(1, 38):
            shown.reading(i, 37, i * 3)
        shown.progress(0, 1000)
        for done in range(100, 1001, 100):
            shown.progress(done, 1000)
    lines = out.getvalue().splitlines()
    reading = [ln for ln in lines if "reading" in ln]
    embedding = [ln for ln in lines if "embedding" in ln]
    assert [int(re.search(r"(\d+)%", ln).group(1)) for ln in reading] == list(range(10, 101, 10))  # type: ignore[union-attr]
    assert [int(re.search(r"(\d+)%", ln).group(1)) for ln in embedding] == list(range(10, 101, 10))  # type: ignore[union-attr]
    assert "37 of 37 files, 111 chunks" in reading[-1] and "chunks/s" in embedding[-1]
    assert "1,000 of 1,000 chunks" in embedding[-1]


def test_nothing_to_do_prints_nothing() -> None:
    out = io.StringIO()
    with IndexProgress(terminal=False, out=out) as shown:
        shown.progress(0, 0)
        shown.reading(0, 0, 0)
    assert out.getvalue() == ""


def test_the_totals_are_known_before_the_first_chunk_is_embedded(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    reads: list[tuple[int, int, int]] = []
    store = SQLiteStore(tmp_path / "s.db")
    try:
        options = IndexOptions(embedder=HashEmbedder(64), batch_chunks=16, progress=lambda d, t: calls.append((d, t)),
                               reading=lambda f, t, c: reads.append((f, t, c)))
        report = index_paths(store, [_folder(tmp_path, 30)], options)
    finally:
        store.close()
    assert reads[0][1] == 30 and [r[0] for r in reads] == list(range(1, 31))  # "file 1 of 30" from the first file
    assert calls[0] == (0, report.chunks_embedded) and calls[-1] == (report.chunks_embedded,) * 2
    assert len(calls) > 2 and all(t == report.chunks_embedded for _, t in calls)  # the total never moves


def test_index_of_a_folder_without_a_terminal_says_how_far_it_is(tmp_path: Path) -> None:
    out = run_cli(["index", str(_folder(tmp_path, 25)), "--db", str(tmp_path / "s.db"), "--embedder", "hash"])
    assert out.rc == 0, out.text
    assert "docket index: reading 100% (25 of 25 files" in out.err and "docket index: embedding 100%" in out.err
    lines = [ln for ln in out.err.splitlines() if ln.startswith("docket index:")]
    assert 10 <= len(lines) <= 22, lines  # a line per 10 % of each phase, not one per file


def test_with_json_and_no_terminal_stderr_stays_quiet(tmp_path: Path) -> None:
    out = run_cli(["index", str(_folder(tmp_path, 5)), "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--json"])
    assert out.rc == 0 and out.err == "" and out.out.lstrip().startswith("{"), out.text


def test_on_a_terminal_the_bars_take_the_same_calls() -> None:
    out = io.StringIO()
    with IndexProgress(terminal=True, out=out) as shown:
        shown.reading(3, 10, 7)
        shown.progress(0, 50)
        shown.progress(50, 50)
        shown.contexts(2)
    assert "docket index:" not in out.getvalue()  # bars, not log lines
