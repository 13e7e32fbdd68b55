"""Options shared by the commands, declared once, and the checks every option goes through.

Each check is a Typer callback, so it runs while the command line is parsed: a bad value stops
the command before any work starts (no half-written export, no evaluation thrown away because
`--report` points at a file). A failed check raises `InputError` naming the option, which the
CLI prints as one line with exit status 2. The classes:

- numbers: finite (NaN compares false with everything, so `--floor nan` would silently turn the
  floor off) and in range (`finite`, `int_range`);
- choices: one of a fixed list, the list in the message (`choice`);
- paths: an input exists and is the right kind (file, folder; no symlink loop), an output can be
  written (its folder exists, it is not a directory) (`input_file`, `input_path`, `output_file`,
  `output_dir`);
- text: a question holds a word; a name is not empty (`question`, `name`);
- dates and model URLs parse (`iso_date`, `llm_url`).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date as Date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from docket.errors import InputError
from docket.safeio import clean_question, input_problem, output_dir_problem, output_file_problem, scrub, shown

if TYPE_CHECKING:  # the command line starts without pydantic, numpy or a model client (tests/test_cli_startup.py)
    from docket.llm.base import Generator
    from docket.policy import Policy

Callback = Callable[..., Any]


def option_name(param: Any) -> str:
    """`--floor` for an option, `QUESTION` for an argument."""
    if getattr(param, "param_type_name", "") == "option":
        longs = [o for o in param.opts if o.startswith("--")]
        return (longs or param.opts or [str(param.name)])[0]
    return str(getattr(param, "name", None) or "value").upper()


def _each(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _checker(check: Callable[[Any, str], Any]) -> Callback:
    """A Typer callback that applies `check(item, option name)` to the value (each item of a list),
    returning what the checks return; None (option not given) passes."""

    def callback(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is None or ctx.resilient_parsing:
            return value
        name = option_name(param)
        try:
            if isinstance(value, (list, tuple)):
                return type(value)(check(v, name) for v in value)
            return check(value, name)
        except InputError as e:
            # a usage error: exit status 2 however the app is run (`main`, CliRunner, an adapter)
            raise typer.BadParameter(f"{e.where}: {e.detail}" if e.where else e.detail, ctx=ctx,
                                     param_hint=f"'{name}'") from None

    return callback


# --- numbers ------------------------------------------------------------------------------------------


def check_finite(value: float, name: str, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False, hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"must be a finite number, got {shown(value)}", field=name)
    if lo is not None and (value <= lo if lo_open else value < lo):
        raise InputError(f"must be {'greater than' if lo_open else 'at least'} {lo:g}, got {value:g}", field=name)
    if hi is not None and (value >= hi if hi_open else value > hi):
        raise InputError(f"must be {'less than' if hi_open else 'at most'} {hi:g}, got {value:g}", field=name)
    return float(value)


def finite(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False) -> Callback:
    return _checker(lambda v, n: check_finite(v, n, lo, hi, lo_open=lo_open, hi_open=hi_open))


def check_int(value: int, name: str, lo: int | None = None, hi: int | None = None) -> int:
    if lo is not None and value < lo:
        raise InputError(f"must be at least {lo:,}, got {value}", field=name)
    if hi is not None and value > hi:
        raise InputError(f"must be at most {hi:,}, got {value}", field=name)
    return value


def int_range(lo: int | None = None, hi: int | None = None) -> Callback:
    return _checker(lambda v, n: check_int(v, n, lo, hi))


#: the largest token count or count of anything docket accepts (a 64-bit store column)
MAX_COUNT = 2**31 - 1
positive = int_range(1, MAX_COUNT)
non_negative = int_range(0, MAX_COUNT)


# --- choices --------------------------------------------------------------------------------------------


def one_of(allowed: Sequence[str]) -> str:
    """'a', 'b' or 'c' (the style of pydantic's messages for the policy's own choices)."""
    quoted = [repr(a) for a in allowed]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_choice(value: str, name: str, allowed: Sequence[str]) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise InputError(f"must be {one_of(allowed)}, got {shown(value)}", field=name)
    return v


def choice(*allowed: str) -> Callback:
    return _checker(lambda v, n: check_choice(v, n, allowed))


# --- paths ----------------------------------------------------------------------------------------------


def _path_check(problem_of: Callable[[Path], str | None]) -> Callable[[Any, str], Any]:
    def check(value: Any, name: str) -> Any:
        problem = problem_of(Path(value))
        if problem:
            raise InputError(problem, where=str(value), field=name)
        return value

    return check


input_file = _checker(_path_check(lambda p: input_problem(p, "file")))
input_path = _checker(_path_check(lambda p: input_problem(p, "any")))
input_file_or_stdin = _checker(lambda v, n: v if str(v) == "-" else _path_check(lambda p: input_problem(p, "file"))(v, n))
#: `docket check --answer`: a file, - for stdin, or a structured answer given inline as JSON
input_answer = _checker(lambda v, n: v if str(v) == "-" or str(v).lstrip().startswith("{")
                        else _path_check(lambda p: input_problem(p, "file"))(v, n))
output_file = _checker(_path_check(output_file_problem))
output_dir = _checker(_path_check(output_dir_problem))


def _db_problem(value: str) -> str | None:
    """A `--db` SQLite path: not a loop, not a directory, in a folder that exists (URLs pass)."""
    if "://" in value:
        return None
    p = Path(value)
    if p.is_symlink() and not p.exists():
        return input_problem(p, "file")
    if p.is_dir():
        return "is a directory; give the store's file name (e.g. docket.db)"
    if not p.exists():
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            return f"folder {str(parent)!r} does not exist; create it first"
    return None


def _check_db(value: str, name: str) -> str:
    if not value.strip():
        raise InputError("is empty (an unset variable?); give the store's file name or a postgresql:// URL", field=name)
    problem = _db_problem(value)  # the raw string: Path() would fold the "//" of a URL
    if problem:
        raise InputError(problem, where=value, field=name)
    return value


db_path = _checker(_check_db)


def _check_file_mode(value: str, name: str) -> str:
    from docket.store.sqlite_file import parse_mode

    parse_mode(value, name)
    return value


#: `index --file-mode 0640`: octal permission bits the owner can read and write
file_mode = _checker(_check_file_mode)


def same_location(a: str | Path, b: str | Path) -> bool:
    """Do two --db style values name the same store (one file however it is spelt, or the same URL)?"""
    sa, sb = str(a), str(b)
    if "://" in sa or "://" in sb:
        return sa.rstrip("/") == sb.rstrip("/")
    pa, pb = Path(sa), Path(sb)
    try:
        if pa.exists() and pb.exists():
            return pa.samefile(pb)
        return pa.resolve() == pb.resolve()
    except OSError:
        return False


def check_not_same_file(a: Path, b: str | Path, name: str, what: str) -> None:
    """Refuse writing over an input (e.g. `export` onto the store it reads: the store would be lost)."""
    try:
        same = Path(a).exists() and Path(b).exists() and Path(a).resolve().samefile(Path(b).resolve())
    except OSError:
        same = False
    if same:
        raise InputError(f"is the {what} itself; writing there would destroy it - give another file name",
                         where=str(a), field=name)


# --- text ------------------------------------------------------------------------------------------------


def check_text(value: str, name: str) -> str:
    """A free-text option that must hold something: an empty value (often an unset shell variable,
    `--doc-prefix "$PREFIX"`) would otherwise switch the option's effect off without a word."""
    if not value.strip():
        raise InputError("is empty (an unset variable?); give a value or leave the option out", field=name)
    return value


text = _checker(check_text)


def split_names(values: Sequence[str] | None, name: str, *, clear: bool = False) -> tuple[str, ...]:
    """A repeatable option that also takes comma-separated names (`--groups a,b --groups c`). Each
    name is checked; a value with no name in it (`""`, `",,,"`, `" , "`) is refused, since it would
    silently mean "none" - except, with `clear`, exactly `""`, the way to say "none" on purpose."""
    out: list[str] = []
    for item in values or []:
        parts = [v.strip() for v in item.split(",") if v.strip()]
        if not parts:
            if clear and item == "":
                continue
            how = " (or exactly \"\" to clear them)" if clear else " (or leave the option out)"
            raise InputError(f"is empty ({shown(item)} holds no name); give names separated by commas{how}", field=name)
        out.extend(check_name(v, name) for v in parts)
    return tuple(out)


def check_domain(value: str, name: str) -> str:
    """One `--allow-domain`: a host name; an empty value would be an allow-list entry that allows
    nothing while looking like a setting, so it is refused, as is a public suffix (links.py)."""
    if not value.strip():
        raise InputError("is empty (an unset variable?); give a domain like example.com", field=name)
    if any(ch.isspace() for ch in value.strip()):
        raise InputError(f"must be one domain like example.com, got {shown(value)}", field=name)
    from docket.checks.links import normalize_domains

    try:
        normalize_domains([value])
    except InputError as e:
        raise InputError(e.detail, field=name) from None
    return value


domain = _checker(check_domain)

question = _checker(lambda v, n: clean_question(v, field=n))


def check_name(value: str, name: str) -> str:
    """A principal, group or document name: not empty, no control or invisible formatting
    characters (lone surrogates from undecodable argv bytes are replaced, like everywhere)."""
    if not value.strip():
        raise InputError("must not be empty", field=name)
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in value):
        raise InputError(f"holds control characters: {shown(value)}", field=name)
    return scrub(value)


name = _checker(check_name)


def parse_date(value: str | None, field: str = "--as-of") -> Date | None:
    if value is None:
        return None
    try:
        return Date.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"must be an ISO date like 2025-03-01, got {shown(value)}", field=field) from None


iso_date = _checker(lambda v, n: (parse_date(v, n), v.strip())[1])


def check_llm_url(value: str, name: str) -> str:
    from docket.llm import parse_url
    from docket.llm.errors import LLMError

    try:
        parse_url(value)
    except LLMError as e:
        raise InputError(str(e), field=name) from None
    return value


llm_url = _checker(check_llm_url)


# --- the options several commands share ------------------------------------------------------------------

Db = Annotated[str, typer.Option("--db", help="SQLite file, or a postgresql:// URL.", callback=db_path)]
Budget = Annotated[int | None, typer.Option("--budget", help="Evidence budget: tokens of the documents block.",
                                            callback=positive)]
Floor = Annotated[float | None, typer.Option(
    "--floor", help="One floor for both decisions (MiniLM cosines): candidates below it are dropped, and a best "
    "candidate below it means not found. Default: two floors, 0.40 to drop (pack.floor) and 0.48 for not found "
    "(answerable.floor); see README, 'Two floors'.", callback=finite())]
PolicyPath = Annotated[Path | None, typer.Option("--policy", help="Policy TOML (every knob of every move).",
                                                 callback=input_file)]
AsOf = Annotated[str | None, typer.Option("--as-of", help="Use the versions in force on this date (YYYY-MM-DD).",
                                          callback=iso_date)]
AsJson = Annotated[bool, typer.Option("--json", help="Print the `docket assemble --json` contract on stdout.")]
Explain = Annotated[bool, typer.Option("--explain", help="Print every decision with its numbers (with --json: on "
                                                         "stderr, stdout stays JSON; the JSON's trace holds them too).")]
Exact = Annotated[bool, typer.Option("--exact", help="Exact dense search, whatever the store's size (a large "
                                     "SQLite store otherwise searches an approximate index; docs/store.md).")]
Llm = Annotated[str | None, typer.Option("--llm", help="Also answer with this model and check the answer: local, "
                                         "http://host:port/v1, openai, anthropic, ollama://host:port.",
                                         callback=llm_url)]
Model = Annotated[str | None, typer.Option("--model", help="Model name for --llm.", callback=name)]
AllowDomain = Annotated[list[str] | None, typer.Option(
    "--allow-domain", help="With --llm: a domain the answer's links and images may point to (subdomains too). Repeatable.",
    callback=domain)]
StripLinks = Annotated[bool, typer.Option(
    "--strip-links", help="With --llm: also give the answer with disallowed links and images removed.")]
History = Annotated[Path | None, typer.Option("--history", help="Earlier chat turns: a JSON list (or JSONL) of "
                                              "{role, content}, oldest first; capped by the policy's [history].",
                                              callback=input_file)]
WholeCorpus = Annotated[bool | None, typer.Option(
    "--whole-corpus/--retrieve", help="Send everything the asker may read instead of retrieving (an error when it does "
    "not fit corpus.max_tokens); --retrieve forces retrieval. Default: the policy's corpus.mode.")]
ModelPreset = Annotated[str | None, typer.Option(
    "--model-preset", help="Budget preset for a model (gpt-4o, claude-sonnet, llama-3.1-8b, gemini-1.5-pro, ...; "
    "`docket presets` lists them): input target, answer reserve, context window, token counter.", callback=text)]
Html = Annotated[Path | None, typer.Option("--html", help="Also write the trace as one self-contained HTML page.",
                                           callback=output_file)]
Route = Annotated[bool, typer.Option("--route", help="Decide first whether the request needs the documents at all "
                                     "(route.enabled); no_retrieve gives a brief without evidence.")]
RouteLlm = Annotated[str | None, typer.Option("--route-llm", help="Let this model (a --llm URL) decide what the "
                                              "routing rules are unsure of (implies --route).", callback=llm_url)]
Structured = Annotated[bool, typer.Option("--structured", help="With --llm: answer in JSON (sentences with their "
                                          "citations, or a typed refusal), held to a schema where the endpoint allows "
                                          "(response_format, llama.cpp grammar, Anthropic forced tool; Anthropic's "
                                          "native citations are then off).")]


def load_policy_with(path: Path | None, fmt: str | None = None) -> Policy:
    """The policy file (or the defaults), with `--format` over its render format."""
    from docket.brief.formats import text_formats
    from docket.policy import load_policy

    policy = load_policy(path)
    if fmt is not None:
        policy = policy.updated(render={"format": check_choice(fmt, "--format", tuple(text_formats()))})
    return policy


def emit_json(payload: dict) -> None:  # type: ignore[type-arg]
    """A JSON contract on stdout, one line."""
    import sys

    from docket.cli.terminal import json_text

    sys.stdout.write(json_text(payload) + "\n")


def _given(value: object) -> bool:
    """An option's value was given: not None/False/empty; a number is given even when 0 (0 == False
    would make `--cache-read 0` look absent)."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, tuple)):
        return len(value) > 0
    return True


def requires(value: object, other: object, name: str, other_name: str) -> None:
    """An option that only means something with another one must not be ignored silently."""
    if _given(value) and not _given(other):
        raise InputError(f"is only used with {other_name}; add {other_name} or leave {name} out", field=name)


def check_budget(budget: int | None) -> None:
    """Kept for callers outside the CLI options (the callback on `Budget` does this at parse time)."""
    if budget is not None and budget < 1:
        raise InputError(f"must be a positive number of tokens, got {budget}", field="--budget")


def mode_policy(policy: Policy, preset: str | None, route: bool, route_llm: str | None) -> Policy:
    """The policy with `--model-preset` and `--route` applied."""
    from docket.presets import apply_preset, get_preset

    if preset is not None:
        get_preset(preset, field="--model-preset")
        policy = apply_preset(policy, preset)
    if route or route_llm:
        policy = policy.updated(route={"enabled": True})
    return policy


def router_for(route_llm: str | None, model: str | None = None) -> Generator | None:
    if not route_llm:
        return None
    from docket.llm import generator_from_url

    return generator_from_url(route_llm, model)


def write_html(path: Path | None, brief: object, candidates: object = None) -> None:
    if path is None:
        return
    from docket.trace_html import render_trace

    try:
        path.write_text(render_trace(brief, candidates), encoding="utf-8")  # type: ignore[arg-type]
    except OSError as e:
        raise InputError(f"cannot be written ({e.strerror})", where=str(path), field="--html") from None


def summary_generator(policy: Policy, llm: str | None, model: str | None) -> Generator | None:
    """The generator that writes compress.summary's passage: the --llm model (None without either)."""
    if not policy.compress.summary or not llm:
        return None
    from docket.llm import generator_from_url

    return generator_from_url(llm, model=model)
