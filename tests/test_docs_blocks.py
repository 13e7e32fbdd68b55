"""Every code block of README.md and docs/*.md runs as written (issue 24 §9); docs/integrations/
has its own runner (tests/test_integration_docs.py), whose output convention this reuses.

In a temporary folder holding the shipped Nimbus chunks (as `chunks.jsonl` and under `docs/`)
and a forum post under `uploads/`:

* ```python blocks run in order in one namespace per page, and print what their `# ...` lines say;
* ```bash blocks run line by line: `docket ...` through the CLI in this process, `docket serve` as
  the app behind a TestClient (its own keys for `$K` and `$ADMIN`, a stand-in model for `--llm`), `curl ...` against that
  client (every curl that sends a body names its content type; one whose body the shell builds,
  `$(cat brief.json)`, is checked for the header only); a `# comment`, `VAR=...` and `cmd &` suffixes are read as a shell would;
* ```json, ```toml and ```yaml blocks parse.

A block that cannot run here (a synopsis with placeholders, a model, a PostgreSQL server, a
network, a long compile) carries `<!-- docs-test: skip: WHY -->` on the line above it; the reason is
required. Blocks without a language are output or diagrams, never commands (a block that opens
with a docket, curl, scripts/ or pip command must be tagged).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
import tomllib
import warnings
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_run import run as cli
from test_integration_docs import expected_output

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!-- docs-test: skip(?::\s*(.*?))?\s*-->\s*$")


def blocks(page: str) -> list[tuple[int, str, str, str | None]]:
    """(line, language, code, skip reason or None) of each fenced block of a page."""
    text = (ROOT / page).read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        out.append((line, m.group(1), m.group(2), (skip.group(1) or "") if skip else None))
    return out


def commands(code: str) -> list[str]:
    """The shell commands of a bash block: continuations and quoted bodies over several lines
    joined, comments and blank lines out."""
    out, cur = [], ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue  # a comment line (its apostrophes open no quote)
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        try:
            _curl_body(cur)
        except ValueError:  # an open quote: a body that spans lines
            cur += "\n"
            continue
        cmd = cur.strip()
        cur = ""
        if cmd and not cmd.startswith("#") and not cmd.lstrip().startswith("# "):
            out.append(cmd)
    return out


def _curl_body(cmd: str) -> list[str]:
    """A curl command's words, a multi-line quoted body included (shlex, comments off)."""
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=False)
    lexer.whitespace_split, lexer.commenters = True, ""
    return list(lexer)


class StandInModel:
    """STAND-IN for `docket serve --llm URL`: /v1/answer runs without a model server."""

    name = "stand-in"

    def generate(self, messages: list[dict[str, Any]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        return "Annual plans can be refunded within 30 days of purchase [S1]."


class Shell:
    """What a bash block's commands need: a folder with the Nimbus data, the CLI, a served app."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.client: Any = None
        self.env: dict[str, str] = {}

    def run(self, cmd: str, where: str) -> None:
        cmd = re.sub(r"\s+#\s.*$", "", cmd).rstrip(" &")  # a trailing comment; `&` = in the background
        if re.fullmatch(r"[A-Z_]+=.*", cmd):
            return  # K="Authorization: Bearer $(cat ann.key)": the served app's keys stand in (self.env)
        if cmd.startswith("docket serve"):
            from fastapi.testclient import TestClient

            from docket import Session
            from docket.server import ServerConfig, create_app

            args = shlex.split(cmd)
            db = str(self.tmp / (args[args.index("--db") + 1] if "--db" in args else "docket.db"))
            from docket.keys import KeyFile

            if not self.env:  # $K: ann's key, $ADMIN: an admin key
                kf = KeyFile(self.tmp / "served-keys.json")
                self.env = {"K": "Authorization: Bearer " + kf.add("ann", "ann", ("finance",)),
                            "ADMIN": kf.add("ops", "ops", admin=True)}
            session = Session.open(db, create=True, generator=StandInModel())  # `--llm URL` stands in
            self.client = TestClient(create_app(ServerConfig(db=db, keys=str(self.tmp / "served-keys.json")),
                                                session=session))
            return
        if cmd.startswith("docket "):
            r = cli(*shlex.split(cmd)[1:])
            ok = (0, 1) if cmd.startswith("docket check") else (0,)  # check: 1 = findings
            assert r.returncode in ok, f"{where}: `{cmd}` exited {r.returncode}: {r.stderr or r.stdout[-500:]}"
            return
        if cmd.startswith("curl "):
            self.curl(cmd, where)
            return
        raise AssertionError(f"{where}: `{cmd[:60]}` is not a command this runner knows: mark the block "
                             f"<!-- docs-test: skip: WHY --> or make it a docket/curl line")

    def curl(self, cmd: str, where: str) -> None:
        for name, value in self.env.items():  # the shell's variables, as the page sets them
            cmd = cmd.replace(f'"${name}"', shlex.quote(value)).replace(f"${name}", value)
        words = _curl_body(cmd)
        url = next(w for w in words if "localhost:" in w or w.startswith("http"))
        headers, body, method = {}, None, "GET"
        for i, w in enumerate(words):
            if w == "-H":
                k, _, v = words[i + 1].partition(":")
                headers[k.strip().lower()] = v.strip()
            elif w == "-d":
                body, method = words[i + 1], "POST"
            elif w == "-X":
                method = words[i + 1]
        if body is not None:
            assert headers.get("content-type") == "application/json", \
                f"{where}: `{cmd[:70]}` sends a body without -H 'content-type: application/json'"
        if "$" in (body or "") or "$" in url:
            return  # a body built by the shell ($(cat brief.json), $(base64 ...)): checked above, not sent
        assert self.client is not None, f"{where}: curl before `docket serve`"
        path = url.split("localhost:8000", 1)[-1]
        r = self.client.request(method, path, content=body, headers=headers)
        assert r.status_code < 400, f"{where}: `{cmd[:70]}` -> {r.status_code} {r.text[:300]}"


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    nimbus = Path(str(files("docket") / "data" / "nimbus.jsonl"))
    shutil.copy(nimbus, tmp_path / "chunks.jsonl")
    (tmp_path / "docs").mkdir()
    shutil.copy(nimbus, tmp_path / "docs" / "nimbus.jsonl")
    (tmp_path / "uploads").mkdir()  # strangers' files (docs/store.md)
    (tmp_path / "uploads" / "post.md").write_text("# Refund tip\n\nAsk support twice and they refund anything.\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", PAGES)
def test_every_code_block_runs_as_written(page: str, folder: Path) -> None:
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem}"}
    shell = Shell(folder)
    for line, lang, code, skip in blocks(page):
        where = f"{page}:{line}"
        if skip is not None:
            assert skip.strip(), f"{where}: a skipped block says why (<!-- docs-test: skip: WHY -->)"
            continue
        first = code.lstrip().split("\n", 1)[0]
        assert lang or not re.match(r"(?:docket|curl|scripts/|pip) ", first), \
            f"{where}: a block of commands without a language: tag it ```bash (and run it, or say why not)"
        if lang == "python":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(code, where, "exec"), namespace)  # noqa: S102
            lines = [ln.rstrip() for ln in printed.getvalue().splitlines()]
            for want in expected_output(code):
                assert want in lines, f"{where}: expected {want!r} in the output:\n{printed.getvalue()}"
        elif lang == "bash":
            for cmd in commands(code):
                shell.run(cmd, where)
        elif lang == "json":
            text, dec = code.strip(), json.JSONDecoder()
            while text:
                _, end = dec.raw_decode(text)
                text = text[end:].strip()
        elif lang == "toml":
            tomllib.loads(code)
        elif lang == "yaml":
            list(yaml.safe_load_all(code))


def test_the_runner_refuses_a_skip_without_a_reason_and_a_curl_without_content_type(tmp_path: Path) -> None:
    assert SKIP.search("<!-- docs-test: skip -->").group(1) is None
    shell = Shell(tmp_path)
    with pytest.raises(AssertionError, match="content-type"):
        shell.curl("""curl -s localhost:8000/v1/ask -d '{"question": "x"}'""", "t")
    with pytest.raises(AssertionError, match="not a command this runner knows"):
        shell.run("make install", "t")
