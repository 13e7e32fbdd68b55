"""What `docket index` shows while it works: files read, chunks embedded, chunks per second.

On a terminal, rich bars that know their totals from the start (files are listed before they are
read; the chunks to embed are counted before the first is embedded). Elsewhere (a log, CI, a
pipe), one line on stderr each time a phase passes another 10 %, so a long run is visibly alive
and a log says how fast it went.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class _Steps:
    """One line per 10 % of a phase (and one at its end), never the same step twice."""

    def __init__(self, out: TextIO, what: str, unit: str, command: str = "docket index") -> None:
        self.out, self.what, self.unit, self.command = out, what, unit, command
        self.shown = 0  # the first line at 10 %
        self.started = time.monotonic()

    def update(self, done: int, total: int, extra: str = "") -> None:
        if total <= 0:
            return
        step = min(10, done * 10 // total)
        if step <= self.shown:
            return
        self.shown = step
        rate = done / max(time.monotonic() - self.started, 1e-9)
        self.out.write(f"{self.command}: {self.what} {step * 10}% ({done:,} of {total:,} {self.unit}{extra}, "
                       f"{rate:,.0f} {self.unit}/s)\n")
        self.out.flush()


class IndexProgress:
    """The `reading` and `progress` callbacks of IndexOptions, and `contexts` for the contextualizer."""

    def __init__(self, *, terminal: bool | None = None, quiet: bool = False, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self.terminal = self.out.isatty() if terminal is None else terminal
        self.quiet = quiet
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._steps: dict[str, _Steps] = {}
        self._embed_started: float | None = None

    def __enter__(self) -> IndexProgress:
        if self.terminal and not self.quiet:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[note]}"), TimeRemainingColumn(),
                                 console=Console(file=self.out), transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def _task(self, name: str, total: int | None) -> TaskID:
        assert self._bar is not None
        if name not in self._tasks:
            self._tasks[name] = self._bar.add_task(name, total=total, note="")
        return self._tasks[name]

    def reading(self, files: int, total: int, chunks: int) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(self._task("reading files", total), completed=files, total=total,
                             note=f"{chunks:,} chunks")
        else:
            self._steps.setdefault("reading", _Steps(self.out, "reading", "files")).update(files, total,
                                                                                            f", {chunks:,} chunks")

    def progress(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self._embed_started is None:
            self._embed_started = time.monotonic()
        rate = done / max(time.monotonic() - self._embed_started, 1e-9)
        if self._bar is not None:
            self._bar.update(self._task("embedding", total), completed=done, total=total,
                             note=f"{rate:,.0f} chunks/s" if done else "")
        else:
            self._steps.setdefault("embedding", _Steps(self.out, "embedding", "chunks")).update(done, total)

    def contexts(self, n: int) -> None:
        if self._bar is not None and not self.quiet:
            self._bar.advance(self._task("contexts", None), n)


class FeaturesProgress:
    """`progress(done, total)` for filling feature records (`docket import --features`, `docket
    features`): a rich bar on a terminal, one line per 10 % elsewhere. The bar refreshes on each
    update rather than from a thread of its own, so the fill may still fork its worker processes
    (docket.store.fill_records: never beside another thread)."""

    def __init__(self, *, terminal: bool | None = None, quiet: bool = False, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self.terminal = self.out.isatty() if terminal is None else terminal
        self.quiet = quiet
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._steps = _Steps(self.out, "feature records", "chunks", command="docket features")

    def __enter__(self) -> FeaturesProgress:
        if self.terminal and not self.quiet:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("feature records"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[note]}"), TimeRemainingColumn(),
                                 console=Console(file=self.out), transient=True, auto_refresh=False)
            self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self._bar is None:
            self._steps.update(done, total)
            return
        if self._task is None:
            self._task = self._bar.add_task("features", total=total, note="")
        rate = done / max(time.monotonic() - self._steps.started, 1e-9)
        self._bar.update(self._task, completed=done, total=total, note=f"{rate:,.0f} chunks/s")
        self._bar.refresh()
