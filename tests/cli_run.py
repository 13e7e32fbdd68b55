"""Run a `docket` command in this process (no interpreter start-up, the embedder loaded once),
with the same exit codes and the one-line error `docket.cli.main` prints for a DocketError."""

from __future__ import annotations

from dataclasses import dataclass

from typer.testing import CliRunner

from docket.cli import _register, app
from docket.errors import DocketError


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str, columns: int = 200) -> Result:
    _register()
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)}, catch_exceptions=True)
    if isinstance(r.exception, DocketError):
        return Result(2, r.stdout, f"docket: error: {r.exception}\n")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr)
