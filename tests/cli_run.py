"""Run a `docket` command in this process (no interpreter start-up, the embedder loaded once),
with the exit codes and one-line errors of `docket.cli.main` (a DocketError, or a usage error
such as a bad option value, printed as `docket: error: ...`)."""

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
    from docket import cli

    _register()
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)}, catch_exceptions=True,
                           standalone_mode=False)
    e = r.exception
    if isinstance(e, DocketError):
        return Result(2, r.stdout, f"docket: error: {e}\n")
    if e is not None and hasattr(e, "format_message") and isinstance(getattr(e, "exit_code", None), int):
        usage_line = getattr(cli, "_usage_line", None)
        text = usage_line(e) if usage_line else " ".join(e.format_message().split())
        return Result(e.exit_code, r.stdout, f"docket: error: {text}\n")
    if isinstance(e, SystemExit):
        return Result(int(e.code or 0), r.stdout, r.stderr)
    if e is not None:
        raise e
    rc = r.return_value
    return Result(rc if isinstance(rc, int) else 0, r.stdout, r.stderr)
