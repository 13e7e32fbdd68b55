"""Nothing the CLI prints carries a control sequence from the data (issue 20 §4, terminal escapes).

Chunk ids, doc ids, source types, statuses, titles, sections and file names full of ESC, OSC, C1,
DEL, carriage returns and bidi overrides go through `index`, `ask`, `assemble` (tables,
`--explain`, the prompt) and the error line: the output holds none of them raw.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from cli_run import run
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.table import Table

from docket.cli.terminal import SafeConsole, json_text, safe, show
from docket.demo import REFUND_QUESTION, nimbus_chunks

CLEAR = "\x1b[2J\x1b[H\x1b]0;owned\x1b\\"
HOSTILE = [CLEAR, "\x9b31m", "\x9d0;t\x9c", "\x7f", "\r", "\x08", "\x07", "\u202e", "\u2066", "\u200f", "\u061c",
           "\u2028", "\x00"]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def hostile_store(tmp_path: Path) -> Path:
    recs = []
    for n, c in enumerate(nimbus_chunks()):
        r = c.to_record()
        bad = HOSTILE[n % len(HOSTILE)]
        r.update(id=f"refund{bad}{n}.md", doc=f"{r['doc']}{bad}", source_type=f"policy{bad}",
                 title=f"{r.get('title') or ''}{bad}", section=f"S{bad}", status=r.get("status", "current"))
        recs.append(r)
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_assemble_and_ask_print_no_raw_control_character(tmp_path: Path) -> None:
    store = hostile_store(tmp_path)
    outs = [run("assemble", "--store", str(store), "-q", REFUND_QUESTION, "--explain"),
            run("assemble", "--store", str(store), "-q", REFUND_QUESTION, "--json")]
    db = tmp_path / "h.db"
    assert run("index", str(store), "--db", str(db)).returncode == 0
    outs += [run("ask", REFUND_QUESTION, "--db", str(db), "--explain"), run("ask", REFUND_QUESTION, "--db", str(db), "--json")]
    for r in outs:
        assert r.returncode == 0, r.stderr
        for text in (r.stdout, r.stderr):
            assert not RAW.search(text), repr(RAW.search(text))
    assert "\\x1b[2J" in outs[0].stdout and "\\x1b[2J" in outs[2].stdout  # shown, not acted on
    assert json.loads(outs[1].stdout)["sources"]  # the JSON still reads back


def test_an_error_line_names_a_hostile_file_without_acting_on_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from docket.cli import main

    for args in (["assemble", "--store", str(tmp_path / f"missing{CLEAR}.jsonl"), "-q", "x"],  # a usage error
                 ["assemble", "--store", str(hostile_store(tmp_path)), "-q", "x", "--history",
                  str(tmp_path / f"h{CLEAR}.json")]):  # a DocketError
        monkeypatch.setattr("sys.argv", ["docket", *args])
        with pytest.raises(SystemExit) as e:
            main()
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.startswith("docket: error:") and not RAW.search(err) and "\\x1b" in err, err


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(HOSTILE + list("ab[]/\\ \n\t")) | st.characters(), max_size=12).map("".join))
def test_every_helper_leaves_no_control_character(text: str) -> None:
    for out in (safe(text), show(text)):
        assert not RAW.search(out)
    assert json.loads(json_text({"v": text})) == {"v": text}  # the same data
    assert not RAW.search(json_text({"v": text}))
    buf = io.StringIO()
    con = SafeConsole(file=buf, force_terminal=True, width=80)
    t = Table()
    t.add_column(text, style="bold")
    t.add_row(text)  # even a value no printer escaped
    con.print(t)
    con.print(text, markup=False)
    styled = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())  # Rich's own styling is the only escape left
    assert not RAW.search(styled), repr(styled)


@pytest.mark.parametrize("ch, shown", [("\x1b", "\\x1b"), ("\x9b", "\\x9b"), ("\u202e", "\\u202e"), ("\x7f", "\\x7f")])
def test_controls_are_shown_as_escapes(ch: str, shown: str) -> None:
    assert safe(f"a{ch}b") == f"a{shown}b" and safe("tab\tand\nnewline") == "tab\tand\nnewline"


@pytest.mark.parametrize("text", ["[/31m]", "[/]", "Refunds [/EU] only", "[/\x1b]"])
def test_data_that_looks_like_a_closing_tag_is_shown_not_raised(text: str) -> None:
    """A table cell or header is read as Rich markup; a title like "Refunds [/EU]" made Rich raise
    MarkupError (a traceback for the user). The console shows such a string as it is."""
    buf = io.StringIO()
    con = SafeConsole(file=buf, force_terminal=True, width=80)
    t = Table()
    t.add_column(text)
    t.add_row(text)
    con.print(t)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())
    assert not RAW.search(plain)
    if "\x1b" not in text:
        assert plain.count(text) == 2
