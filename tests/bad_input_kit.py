"""Running `docket` in-process on prepared inputs, and judging what came back.

Shared by the table-driven bad-input tests and the red-team fuzz (test_bad_input.py). A case is
one command line with `{name}` placeholders; `Env` provides the files every case may refer to
(a valid chunk file, store, policy, labelled set, brief, answer; a folder, a symlink loop, a
missing path), and a case adds its own files by name.

An outcome *escapes* when an exception leaves `main()` (a traceback for the user), when the exit
status is not one the command documents, when an exit 2 is not exactly one line on stderr, or
when input that must be refused is accepted (exit 0).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docket.demo import REFUND_QUESTION, nimbus_path

#: exit statuses each command documents (bad input is always 2)
DOCUMENTED = {
    "assemble": {0, 2}, "ask": {0, 2}, "demo": {0, 2}, "budget": {0, 2}, "index": {0, 1, 2}, "export": {0, 2},
    "delete": {0, 2}, "principal": {0, 2}, "check": {0, 1, 2}, "eval": {0, 2}, "calibrate": {0, 2}, "llm": {0, 1, 2},
}

_PLACEHOLDER = re.compile(r"\{(\w+)\}")

GOOD_CHUNK = {"id": "a-1", "doc": "a", "text": "Annual plans can be refunded within 30 days of purchase.",
              "title": "Refunds", "section": "Annual plans", "position": 1, "version": 1}


@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str
    exc: str | None = None  # the traceback, when an exception left main()

    @property
    def text(self) -> str:
        return self.out + self.err


def run_cli(args: list[str], stdin: bytes = b"") -> Outcome:
    """`docket ARGS` through the real entry point (`docket.cli.main`), in this process."""
    from docket.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_argv, old_stdin = sys.argv, sys.stdin
    sys.argv = ["docket", *args]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    rc: int | None = None
    exc = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                rc = 0
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception:  # noqa: BLE001 - this is what the user would have seen as a traceback
        exc = traceback.format_exc()
    finally:
        sys.argv, sys.stdin = old_argv, old_stdin
    return Outcome(rc, out.getvalue(), err.getvalue(), exc)


def problems(outcome: Outcome, command: str, must_fail: bool) -> list[str]:
    """Why this outcome counts as an escape (empty: it held)."""
    why = []
    if outcome.exc is not None:
        why.append("traceback: " + outcome.exc.strip().splitlines()[-1])
        return why
    if outcome.rc not in DOCUMENTED.get(command, {0, 2}):
        why.append(f"undocumented exit status {outcome.rc}")
    if outcome.rc == 2:
        lines = [ln for ln in outcome.err.strip().splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith("docket: error: "):
            why.append(f"exit 2 without exactly one 'docket: error:' line on stderr: {outcome.err[-300:]!r}")
        if "Traceback" in outcome.err:
            why.append("traceback text on stderr")
    if must_fail and outcome.rc == 0:
        why.append("bad input accepted (exit 0)")
    return why


class Env:
    """The files a case may name, built once per test session (copy what a command writes to)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.paths: dict[str, str] = {"nimbus": nimbus_path(), "q": REFUND_QUESTION}
        good = root / "good.jsonl"
        good.write_text(json.dumps(GOOD_CHUNK) + "\n", encoding="utf-8")
        self.paths["good"] = str(good)
        (root / "cands.jsonl").write_text(json.dumps({"id": "pol3-4", "score": 0.8}) + "\n")
        self.paths["cands"] = str(root / "cands.jsonl")
        (root / "policy.toml").write_text("[pack]\nfloor = 0.3\n")
        self.paths["policy"] = str(root / "policy.toml")
        (root / "folder").mkdir(exist_ok=True)
        self.paths["folder"] = str(root / "folder")
        loop_a, loop_b = root / "loop-a", root / "loop-b"
        for a, b in ((loop_a, loop_b), (loop_b, loop_a)):
            if not a.is_symlink():
                a.symlink_to(b.name)
        self.paths["loop"] = str(loop_a)
        self.paths["missing"] = str(root / "no-such-file.jsonl")
        self.paths["textfile"] = str(root / "policy.toml")
        item = {"id": "q1", "question": "Can annual plans be refunded?", "gold": ["a-1"], "answers": ["30 days"],
                "candidates": [GOOD_CHUNK, {**GOOD_CHUNK, "id": "b-1", "doc": "b", "text": "Apples grow on trees."}]}
        unans = {**item, "id": "q2", "gold": [], "answerable": False, "question": "What colour is the sky on Mars?"}
        (root / "set.jsonl").write_text(json.dumps(item) + "\n" + json.dumps(unans) + "\n")
        self.paths["set"] = str(root / "set.jsonl")
        (root / "pairs.jsonl").write_text(json.dumps({"a": "x y z", "b": "x y z.", "same": True}) + "\n")
        self.paths["pairs"] = str(root / "pairs.jsonl")
        (root / "answer.txt").write_text("Annual plans can be refunded within 30 days [S1].\n")
        self.paths["answer"] = str(root / "answer.txt")
        brief = {"found": True, "refusal": "I do not know from the provided sources.",
                 "sources": {"S1": {"doc": "a", "version": 1, "chunks": ["a-1"], "title": "Refunds",
                                    "text": GOOD_CHUNK["text"]}}}
        (root / "brief.json").write_text(json.dumps(brief))
        self.paths["brief"] = str(root / "brief.json")
        self.db = root / "store.db"
        if not self.db.exists():
            r = run_cli(["index", nimbus_path(), "--db", str(self.db), "--embedder", "hash", "--json"])
            assert r.rc == 0, r.text + (r.exc or "")

    def fresh_db(self, where: Path) -> str:
        """A private copy of the Nimbus store (for commands that write)."""
        dst = where / "store.db"
        shutil.copy(self.db, dst)
        return str(dst)

    def expand(self, args: list[str], case_dir: Path, files: dict[str, Any] | None = None) -> list[str]:
        """The command line with every `{name}` filled: the case's own files (a file `f.md` is `{f}`;
        bytes or text are written, None makes a folder), then Env's; `{o}` is a path not yet there."""
        names = dict(self.paths)
        names["o"] = str(case_dir / "out")  # an output path that does not exist yet
        for name, content in (files or {}).items():
            p = case_dir / name
            if isinstance(content, bytes):
                p.write_bytes(content)
            elif isinstance(content, str):
                p.write_text(content, encoding="utf-8")
            elif content is None:  # a folder
                p.mkdir(exist_ok=True)
            names.setdefault(name.split(".")[0], str(p))  # "f.md" is {f}; "f.md.meta.toml" rides along
        if any("{db}" in a for a in args):
            names["db"] = self.fresh_db(case_dir)
        return [_PLACEHOLDER.sub(lambda m: names.get(m.group(1), m.group(0)), a) for a in args]


def jsonl(*records: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


# --- the red-team fuzz: many random bad inputs per command ----------------------------------------------

MALFORMED_URLS = ["http://[::1", "http://[::1]:99999", "http://host:port/v1", "ftp://x", "http://", "http:// spaces/v1",
                  "ollama://[", "http://:8080", "https://h:-1", "", "   ", "http://a\x00b", "//nohost", "htp:/x"]
NUMBER_WORDS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999", "x", "", "1,5", "0x10", "--"]
BAD_QUESTIONS = ["", " ", "\t\n", "\x00", "\x01\x02\x03", "\x1b[31m", "\u200b\u200d", "\ufeff", "?!", "...", "\u202e",
                 "\x7f\x7f", "\U000e0041\U000e0042", "- --", "\u2028\u2029"]
BAD_NAMES = ["", " ", "\t", "\x00", "a\x07b", "line\nbreak", "\x1b[2J"]


def _bytes_kind(kind: str, rng: Any, where: Path) -> str:
    """A path of the given bad kind under `where`."""
    p = where / f"k-{kind}-{rng.randrange(10**9)}"
    if kind == "folder":
        p.mkdir()
    elif kind == "loop":
        p.symlink_to(p.name)
    elif kind == "dangling":
        p.symlink_to("nowhere-" + p.name)
    elif kind == "missing":
        pass
    elif kind == "missing-parent":
        p = p / "sub" / "file"
    elif kind == "under-file":
        p.write_text("x")
        p = p / "inside"
    elif kind == "not-utf8":
        p.write_bytes(b'{"id": "a", "text": "caf\xe9"}\n' + bytes([rng.randrange(0x80, 0x100)]) * 3 + b"\n")
    elif kind == "binary":
        p.write_bytes(b"\xff\xfe" + bytes(rng.randrange(256) for _ in range(200)))
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind in STORE_DAMAGE or kind == "other-sqlite":
        _bad_store(p, kind)
    elif kind == "deep":
        d = rng.randrange(70, 6000)
        p.write_text('{"id": "a", "doc": "d", "text": "t", "metadata": {"x": ' + "[" * d + "]" * d + "}}\n")
    else:
        raise ValueError(kind)
    return str(p)


#: a docket store damaged one way (the SQL run on a fresh store), for every command that opens one
STORE_DAMAGE = {
    "store-schema-text": "UPDATE meta SET value = 'v4' WHERE key = 'schema'",
    "store-schema-newer": "UPDATE meta SET value = '99' WHERE key = 'schema'",
    "store-schema-gone": "DELETE FROM meta WHERE key = 'schema'",
    "store-generation-text": "UPDATE meta SET value = 'zz' WHERE key = 'generation'",
    "store-dim-text": "INSERT OR REPLACE INTO meta VALUES ('dim', 'abc')",
    "store-dim-zero": "INSERT OR REPLACE INTO meta VALUES ('dim', '0')",
    "store-no-chunks": "DROP TABLE chunks",
    "store-no-versions": "DROP TABLE versions",
    "store-no-acl": "DROP TABLE chunk_acl",
    "store-no-meta": "DROP TABLE meta",
}


def _bad_store(p: Path, kind: str) -> None:
    import sqlite3

    if kind == "other-sqlite":
        conn = sqlite3.connect(p)
        conn.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY)")
    else:
        from docket.store.sqlite import SQLiteStore

        SQLiteStore(p).close()
        conn = sqlite3.connect(p)
        conn.executescript(STORE_DAMAGE[kind])
    conn.commit()
    conn.close()


STORE_BAD = ("empty", "binary", "not-utf8", "other-sqlite", *STORE_DAMAGE)
IN_BAD = ("folder", "loop", "dangling", "missing", "not-utf8", "binary", "deep")  # bad for every JSON(L) input
OUT_FILE_BAD = ("folder", "loop", "missing-parent", "under-file")
OUT_DIR_BAD = ("loop", "under-file", "not-utf8")  # an existing file is not a folder

#: per command: a valid command line, and its options with the values that must be refused
#: (a value list, or ("path", kinds) for paths of those bad kinds)
OPTION_FUZZ: dict[str, tuple[list[str], list[tuple[str, Any]]]] = {
    "assemble": (["assemble", "--store", "{nimbus}", "-q", "{q}", "--json"], [
        ("--budget", ["0", "-1", "abc", "1e3", "99999999999999", ""]), ("--floor", NUMBER_WORDS[:8] + ["x"]),
        ("--format", ["yaml", "", "XMLL", "json"]), ("--as-of", ["2026-02-30", "x", "", "2026/01/01", "01-01-2026"]),
        ("--llm", MALFORMED_URLS), ("--policy", ("path", IN_BAD)), ("--candidates", ("path", IN_BAD + ("empty",))),
        ("--store", ("path", IN_BAD + ("empty",))), ("-q", BAD_QUESTIONS), ("--model", ["x"])]),
    "ask": (["ask", "{q}", "--db", "{db}", "--json"], [
        ("--budget", ["0", "-3", "x"]), ("--floor", NUMBER_WORDS[:8]), ("--candidates", ["0", "-5", "x", "1000000000"]),
        ("--mode", ["x", "", "hybrid"]), ("--since", ["2026-13-01", "x", ""]), ("--until", ["2026-00-10", "y"]),
        ("--principal", BAD_NAMES), ("--policy", ("path", IN_BAD)), ("QUESTION", BAD_QUESTIONS),
        ("--db", ("path", ("folder", "missing", *STORE_BAD))), ("--llm", MALFORMED_URLS),
        ("--groups", ["x"]), ("--doc", BAD_NAMES[1:]), ("--model-preset", ["", " "]), ("--html", ("path", OUT_FILE_BAD)),
        ("--allow-domain", ["", " ", "a b"])]),
    "eval": (["eval", "{set}", "--embedder", "hash", "--budgets", "200", "--json"], [
        ("--price", NUMBER_WORDS[:8] + ["-1", "-0.5"]), ("--limit", ["0", "-1", "x"]),
        ("--budgets", ["0", "", ",", "a", "-5", "1e3", "99999999999"]), ("--set-format", ["x", "", "squad"]),
        ("--embedder", ["x", ""]), ("--report", ("path", OUT_DIR_BAD)), ("--policy", ("path", IN_BAD)),
        ("--compare", ["x", "langchain,x", "", ",", " , "]), ("--generation-budget", ["0", "-1"]), ("--llm", MALFORMED_URLS),
        ("PATH", ("path", IN_BAD + ("empty",)))]),
    "calibrate": (["calibrate", "{set}", "--embedder", "hash", "--json"], [
        ("--folds", ["0", "1", "-3", "x"]), ("--group-by", ["x", "", "author"]),
        ("--margin-keep", NUMBER_WORDS[:8] + ["0", "-1", "1.01"]), ("--write", ("path", OUT_FILE_BAD)),
        ("--pairs", ("path", IN_BAD + ("empty",))), ("--limit", ["0"]), ("--policy", ("path", IN_BAD)),
        ("--set-format", ["x"]), ("PATH", ("path", IN_BAD + ("empty",)))]),
    "budget": (["budget", "--system", "500"], [
        ("--price", NUMBER_WORDS[:8] + ["-1"]), ("--input-target", ["0", "-1", "x"]), ("--history", ["-1"]),
        ("--tags", ["-1"]), ("--chunk-tokens", ["0"]), ("--queries-per-day", ["-1"]), ("--system", ["-1"]),
        ("--answer-reserve", ["-5"]), ("--question-tokens", ["-1"]), ("-q", ["refund?"]),
        ("--cache-read", ["0.2", "0"]), ("--cache-write", ["2"]), ("--cache-ttl", ["60"])]),
    "index": (["index", "--db", "{db}", "--embedder", "hash", "--json", "{good}"], [
        ("--chunk-size", ["0", "3", "-1", "x"]), ("--overlap", ["-1", "1000", "x"]), ("--embedder", ["x", ""]),
        ("PATH", ("path", ("loop", "dangling", "missing", "not-utf8", "binary", "deep", "folder"))),
        ("--doc-prefix", ["", " ", "\t"]), ("--set", ["trust=", "status= ", "acl="]), ("--from", ["", "{db}"]),
        ("--db", ("path", ("folder", "other-sqlite", "binary", *STORE_DAMAGE))), ("--file-mode", ["0400", "x", "", "8"])]),
    "export": (["export", "{o}", "--db", "{db}"], [("OUT", ("path", OUT_FILE_BAD)),
                                                  ("--db", ("path", ("missing", "folder", *STORE_BAD)))]),
    "delete": (["delete", "refund-policy", "--db", "{db}", "--version", "3"], [
        ("DOC", BAD_NAMES + ["no-such-doc"]), ("--version", ["-1", "99", "x", "4"]),
        ("--db", ("path", ("folder", "missing", *STORE_BAD)))]),
    "principal": (["principal", "bob", "--db", "{db}", "--groups", "finance"], [
        ("NAME", BAD_NAMES), ("--groups", ["\x00", "a,\x1b[0m", "x\ny", ",,,", " , ", ","]),
        ("--db", ("path", ("folder", "binary", "other-sqlite", *STORE_DAMAGE)))]),
    "check": (["check", "--answer", "{answer}", "--brief", "{brief}", "--json"], [
        ("--answer", ("path", ("folder", "loop", "dangling", "missing", "not-utf8", "binary", "empty"))),
        ("--brief", ("path", IN_BAD + ("empty",))), ("--judge", MALFORMED_URLS), ("--judge-model", ["m"]),
        ("--allow-domain", ["", " ", "a b", "com", "co.uk"])]),
}
#: positional arguments: where they sit in the valid command line
POSITIONAL = {("ask", "QUESTION"): 1, ("eval", "PATH"): 1, ("calibrate", "PATH"): 1, ("export", "OUT"): 1,
              ("delete", "DOC"): 1, ("principal", "NAME"): 1, ("index", "PATH"): 6}


def option_case(command: str, rng: Any, where: Path) -> list[str]:
    """The command's valid line with one or two options given a value it must refuse."""
    base, options = OPTION_FUZZ[command]
    args = list(base)
    for name, values in rng.sample(options, k=min(len(options), rng.choice((1, 1, 2)))):
        if isinstance(values, tuple) and values[0] == "path":
            value = _bytes_kind(rng.choice(values[1]), rng, where)
        else:
            value = rng.choice(values)
        if (command, name) in POSITIONAL:
            args[POSITIONAL[(command, name)]] = value
        elif name in args:
            args[args.index(name) + 1] = value
        else:
            args += [f"{name}={value}"] if value.startswith("-") else [name, value]
    return args


# field-aware record mutations: values each field must refuse (JSON text, so NaN and 1e999 can be written)
CHUNK_BAD = {
    "id": ["null", "5", "[]", "{}", '""', '"   "', "true"],
    "doc": ["null", "7", '""', "[1]"],
    "text": ["null", "3", '""', '"  \\n "', "[]"],
    "version": ["-1", "2147483648", "1e23", "1e999", "-1e999", "2.5", "true", "NaN", "Infinity", "123456789012345678901234567890", '"x"'],
    "position": ["-2", "1e23", "NaN", "4294967296", '"first"', "1.5"],
    "date": ['"2026-13-01"', '"yesterday"', "5", '"2026-02-30"'],
    "effective_to": ['"1999-01-01"'],  # before the chunk's date
    "vector": ["[NaN]", "[]", '["a"]', "[1e999]", "[Infinity, 0]"],
    "trust": ['"maybe"', "5", '"TRUSTED!"'],
    "status": ['""', '"   "', "5"],
    "metadata": ["[" * 80 + "]" * 80, '{"x": NaN}', '{"x": 123456789012345678901234567890}', '{"x": ' + "1" * 5000 + "}",
                 '{"x": ' + "{\"y\": " * 70 + "1" + "}" * 70 + "}"],
}
CANDIDATE_BAD = {"id": ["null", "5", '""', '"not-in-store"'], "score": ["NaN", "Infinity", '"x"', "true", "null", "1e999", "-Infinity"]}
ITEM_BAD = {
    "question": ["null", "5", '""', '"\\u0000\\u0001"', '"\\u200b"', '"   "'],
    "candidates": ['"x"', "5", "{}", "[5]", '[{"id": "z"}]'],
    "scores": ["[NaN]", '"x"', "[0.1, 0.2, 0.3]", "[true]", "[Infinity]", "[1e999]"],
    "gold": ['"x"', "[5]", "{}"],
    "answers": ['"x"', "[5]", "5"],
    "answerable": ['"false"', "1", "null", '"yes"'],
    "as_of": ['"x"', "5", '"2026-02-30"'],
    "meta": ["5", '"x"', "[" * 90 + "]" * 90],
    "id": ["[]", "true", '""', "{}"],
}
PAIR_BAD = {"a": ["5", '""', "null"], "b": ["[]", '"  "'], "same": ['"yes"', "1", "null"]}
BRIEF_BAD = {"sources": ["[]", "5", '{"X1": {"text": "t"}}', '{"S1": {"text": 5}}', '{"S1": 5}', "null"],
             "refusal": ["5", "[]"]}


def _with_field(record: dict[str, Any], field: str, literal: str) -> str:
    rec = dict(record)
    rec[field] = "@@FUZZ@@"
    return json.dumps(rec).replace('"@@FUZZ@@"', literal)


def _byte_noise(data: bytes, rng: Any) -> bytes:
    """Random damage: flipped, dropped or inserted bytes, a cut, a doubled line."""
    b = bytearray(data)
    for _ in range(rng.randrange(1, 6)):
        op = rng.randrange(5)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] = rng.randrange(256)
        elif op == 1 and b:
            del b[i]
        elif op == 2:
            b.insert(i, rng.choice(b'{}[]",:\\\x00\xff\xc3\n'))
        elif op == 3:
            b = b[: rng.randrange(len(b) + 1)]
        else:
            lines = bytes(b).split(b"\n")
            j = rng.randrange(len(lines))
            lines.insert(j, lines[j])
            b = bytearray(b"\n".join(lines))
    return bytes(b)


def record_case(command: str, rng: Any, where: Path, base_records: dict[str, list[dict[str, Any]]]) -> tuple[list[str], bool]:
    """A file-reading command on a mutated input file: (command line, must it be refused?)."""
    kind = {"assemble": rng.choice(("chunks", "candidates")), "index": "chunks", "eval": "items",
            "calibrate": "pairs", "check": "brief"}[command]
    recs = base_records[kind]
    table = {"chunks": CHUNK_BAD, "candidates": CANDIDATE_BAD, "items": ITEM_BAD, "pairs": PAIR_BAD, "brief": BRIEF_BAD}[kind]
    must_fail = rng.random() < 0.75
    lines = [json.dumps(r) for r in recs]
    if must_fail:
        i = rng.randrange(len(recs))
        field = rng.choice(sorted(table))
        lines[i] = _with_field(recs[i], field, rng.choice(table[field]))
        if kind == "chunks" and field == "effective_to":
            lines[i] = _with_field({**recs[i], "date": "2026-01-01"}, field, table[field][0])
        data = ("\n".join(lines) + "\n").encode()
    else:
        data = _byte_noise(("\n".join(lines) + "\n").encode(), rng)
    p = where / f"input-{rng.randrange(10**9)}.{'json' if kind == 'brief' else 'jsonl'}"
    p.write_bytes(data)
    f = str(p)
    if command == "assemble":
        args = (["assemble", "--store", f, "-q", "{q}", "--json"] if kind == "chunks"
                else ["assemble", "--store", "{nimbus}", "-q", "{q}", "--candidates", f, "--json"])
    elif command == "index":
        args = ["index", "--db", "{db}", "--embedder", "hash", "--json", f]
    elif command == "eval":
        args = ["eval", f, "--embedder", "hash", "--budgets", "200", "--json"]
    elif command == "calibrate":
        args = ["calibrate", "--pairs", f, "--embedder", "hash", "--json"]
    else:
        args = ["check", "--answer", "{answer}", "--brief", f, "--json"]
    return args, must_fail


def base_records() -> dict[str, list[dict[str, Any]]]:
    from docket.demo import nimbus_path

    chunks = [json.loads(line) for line in Path(nimbus_path()).read_text(encoding="utf-8").splitlines() if line]
    item = {"id": "q1", "question": "Can annual plans be refunded?", "gold": ["a-1"], "answers": ["30 days"],
            "candidates": [GOOD_CHUNK, {**GOOD_CHUNK, "id": "b-1", "doc": "b", "text": "Apples grow on trees."}]}
    return {
        "chunks": chunks,
        "candidates": [{"id": "pol3-4", "score": 0.8}, {"id": "pol3-5", "score": 0.7}],
        "items": [item, {**item, "id": "q2", "question": "Where do apples grow?", "gold": ["b-1"]}],
        "pairs": [{"a": "the fee is 15%", "b": "The fee is 15%.", "same": True},
                  {"a": "the fee is 15%", "b": "refunds take ten days", "same": False}],
        "brief": [{"found": True, "refusal": "I do not know from the provided sources.",
                   "sources": {"S1": {"doc": "a", "text": GOOD_CHUNK["text"], "chunks": ["a-1"]}}}],
    }


def fuzz(env: Env, where: Path, n_per_command: int, seed: int = 0) -> dict[str, list[int | list[str]]]:
    """Run `n_per_command` random bad inputs per command and class; per class: [tried, escaped, examples]."""
    import random

    rng = random.Random(seed)
    recs = base_records()
    results: dict[str, list[Any]] = {}
    file_commands = ("assemble", "index", "eval", "calibrate", "check")
    for command in OPTION_FUZZ:
        for cls in ("options", "files") if command in file_commands else ("options",):
            key = f"bad-input/{command}/{cls}"
            tried = escaped = 0
            examples: list[str] = []
            for i in range(n_per_command):
                case_dir = where / f"{command}-{cls}-{i}"
                case_dir.mkdir(parents=True)
                if cls == "options":
                    args, must_fail = option_case(command, rng, case_dir), True
                else:
                    args, must_fail = record_case(command, rng, case_dir, recs)
                argv = env.expand(args, case_dir)
                out = run_cli(argv)
                why = problems(out, command, must_fail)
                tried += 1
                if why:
                    escaped += 1
                    if len(examples) < 5:
                        examples.append(f"{argv!r}: {'; '.join(why)}")
                shutil.rmtree(case_dir, ignore_errors=True)
            results[key] = [tried, escaped, examples]
    return results
