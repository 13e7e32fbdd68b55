"""Every command's --help shows its texts whole (issue 24 §10): no `[...]` eaten as markup (the
`--history` help once ended "capped by the policy's ."), no pointer to a file the repository
does not hold, and the two floors explained where `--floor` is met."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from docket.cli import _register, app

ROOT = Path(__file__).resolve().parents[1]
BRACKETS = re.compile(r"\[[^\[\]\n]+\]")


def _commands() -> Iterator[tuple[list[str], Any]]:
    _register()
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, cmd
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, [*path, name])

    yield from walk(root, [])


COMMANDS = list(_commands())


def _fold(text: str) -> str:
    """Wrapping folded away: whitespace runs to one space, a word broken after a hyphen joined."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def _texts(cmd: Any) -> list[str]:
    texts = [cmd.help or "", getattr(cmd, "short_help", None) or ""]
    texts += [getattr(p, "help", None) or "" for p in cmd.params]
    return [t for t in texts if t]


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) or "docket" for p, _ in COMMANDS])
def test_help_shows_every_bracket_and_names_no_missing_file(path: list[str], cmd: Any) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    shown = _fold(result.output)
    for text in _texts(cmd):
        for bracket in BRACKETS.findall(text):
            assert _fold(bracket) in shown, (path, bracket, result.output)
    assert "DESIGN.md" not in result.output
    for ref in re.findall(r"\b(?:docs/[\w/.-]+\.md|README(?:\.md)?)\b", result.output):
        assert (ROOT / (ref if ref.endswith(".md") else "README.md")).exists(), ref


def test_the_history_help_ends_with_its_section() -> None:
    out = _fold(CliRunner().invoke(app, ["ask", "--help"], env={"COLUMNS": "80"}).output)
    assert "capped by the policy's [history]." in out


def test_the_docs_point_to_files_that_exist() -> None:
    """DESIGN.md lives outside the repository; every docs/*.md a doc or the README names exists."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert "DESIGN.md" not in text, doc
        for ref in re.findall(r"\bdocs/[\w/.-]+?\.md\b", text):
            assert (ROOT / ref).exists(), (doc, ref)


def test_the_two_floors_are_explained_where_a_user_meets_them() -> None:
    from docket.policy import NOT_FOUND_FLOOR, Policy

    readme = _fold((ROOT / "README.md").read_text(encoding="utf-8"))
    floor_help = _fold(CliRunner().invoke(app, ["ask", "--help"], env={"COLUMNS": "200"}).output)
    for text in (readme, floor_help):
        assert f"{Policy().pack.floor:.2f}" in text and f"{NOT_FOUND_FLOOR:.2f}" in text
        assert "pack.floor" in text and "answerable.floor" in text


def test_help_lists_the_commands_along_a_new_users_path() -> None:
    """demo, index, ask, assemble, check, eval first; then tuning, the store's upkeep, the service."""
    _register()
    out = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"}).output
    listed = re.findall(r"^  ([a-z-]+)\s", out.split("Commands:", 1)[1], flags=re.M)
    assert listed == ["demo", "index", "ask", "assemble", "check", "eval", "calibrate", "budget", "presets", "import",
                      "export", "delete", "features", "principal", "serve", "keys", "llm"]


def test_every_command_has_its_place_in_the_help_order() -> None:
    from docket.cli import HELP_ORDER

    _register()
    root = typer.main.get_command(app)
    assert sorted(root.commands) == sorted(HELP_ORDER)  # type: ignore[attr-defined]
