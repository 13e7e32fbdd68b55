"""scripts/setup.sh installs what the README's examples use (issue 24 §8): `docket serve`, `--file`
and `--llm` work right after it, without hunting for extras further down."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"


def _extras(name: str) -> list[str]:
    m = re.search(rf'^{name}="([^"]+)"', SETUP.read_text(), re.M)
    assert m, f"{name} not found in setup.sh"
    return m.group(1).split(",")


def test_default_extras_cover_the_readme_examples_and_exist() -> None:
    defined = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    default = _extras("DEFAULT_EXTRAS")
    assert {"server", "files", "llm"} <= set(default)  # docket serve, --file, --llm
    for extra in default + _extras("ALL_EXTRAS"):
        assert extra in defined, f"setup.sh installs [{extra}], which pyproject.toml does not define"
    # every extra the README names in a `pip install 'docket[X]'` is in the default or in --all
    named = set(re.findall(r"docket\[(\w+)\]", (ROOT / "README.md").read_text()))
    assert named <= set(_extras("ALL_EXTRAS")) | {"peers", "test"}, named


def _fake_checkout(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout whose .venv is a stand-in that logs what it is asked to run (no network)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts" / "setup.sh")
    log = tmp_path / "log"
    bin_ = repo / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").write_text(
        f'#!/usr/bin/env bash\necho "python $*" >> {log}\n'
        f'if [ "$1" = "-" ]; then exec {sys.executable} "$@"; fi\nexit 0\n')
    (bin_ / "docket").write_text(f'#!/usr/bin/env bash\necho "docket $*" >> {log}\n')
    for f in bin_.iterdir():
        f.chmod(0o755)
    return repo, log


def test_setup_installs_the_extras_checks_their_imports_and_runs_the_demo(tmp_path: Path) -> None:
    repo, log = _fake_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "DOCKET_EXTRAS"}
    done = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert "python -m pip install -q -e .[server,files,llm]" in lines
    assert lines[-1] == "docket demo"
    assert "docket serve" in done.stdout


def test_setup_refuses_an_unknown_option_naming_it(tmp_path: Path) -> None:
    repo, log = _fake_checkout(tmp_path)
    done = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--everything"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "--everything" in done.stderr and "--all" in done.stderr
    assert not log.exists()


def test_setup_names_a_missing_import(tmp_path: Path) -> None:
    repo, _ = _fake_checkout(tmp_path)
    pyproject = "[project]\nname='x'\n"
    (repo / "pyproject.toml").write_text(pyproject)
    env = dict(os.environ, DOCKET_EXTRAS="server,nosuch", PYTHONPATH="")
    # an extra whose module is absent: the stand-in python really runs the import check
    script = (repo / "scripts" / "setup.sh").read_text().replace('"files": ["pypdf", "docx"]',
                                                                  '"nosuch": ["no_such_module_xyz"]')
    (repo / "scripts" / "setup.sh").write_text(script)
    done = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode != 0 and "nosuch: no_such_module_xyz" in done.stderr


@pytest.mark.parametrize("module", ["fastapi", "uvicorn", "pypdf", "docx"])
def test_the_default_extras_modules_are_what_serve_and_file_import(module: str) -> None:
    text = SETUP.read_text()
    assert f'"{module}"' in text
