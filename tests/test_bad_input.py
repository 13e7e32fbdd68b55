"""Bad input gets one clear line naming the file, line, record or option, the field and the fix
(exit 2, or the command's documented status), never a traceback and never a silent wrong result.

The command-line cases are one table (`CASES`): command line, the files it needs, the expected
exit status and a fragment of the message. Add the next case as one line. `{name}` in a command
line is a file of the case or one `Env` provides (tests/bad_input_kit.py): nimbus, good, cands,
policy, set, pairs, brief, answer, folder, loop, missing, db (a private copy of a hash-embedded
Nimbus store), q (the refund question).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input_kit import GOOD_CHUNK, Env, jsonl, problems, run_cli
from conftest_pg import pg_server, pg_url  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from redteam_log import record

from docket.assemble import assemble
from docket.demo import REFUND_QUESTION, nimbus_path
from docket.errors import InputError
from docket.io import load_candidates, load_chunks
from docket.model import parse_chunk
from docket.policy import load_policy
from docket.safeio import check_tree, loads_json, loads_toml, loads_yaml
from docket.store.base import MemoryStore

from helpers import mk


def write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return p


# --- inputs the cases share ------------------------------------------------------------------------

NONUTF = b'{"id": "a-1", "doc": "a", "text": "caf\xe9 refunds"}\n'
SURROGATE = '{"id": "s-1", "doc": "s", "text": "Annual plans \\ud800 can be refunded within 30 days."}\n'
DEEP = '{"id": "a", "doc": "d", "text": "t", "metadata": {"x": ' + "[" * 5000 + "]" * 5000 + "}}\n"
DEEP80 = '{"id": "a", "doc": "d", "text": "t", "metadata": {"x": ' + "[" * 80 + "]" * 80 + "}}\n"
ALIAS_BOMB = "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n" \
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n---\nSome text.\n"


def chunk(**kw):
    return json.dumps({**GOOD_CHUNK, **kw})


def raw_chunk(field, literal):
    """A chunk record with one field written as a raw JSON literal (NaN, 1e999, ...)."""
    return json.dumps({"id": "a-1", "doc": "a", "text": "Refunds within 30 days.", field: "@@"}).replace('"@@"', literal) + "\n"


ITEM = {"id": "q1", "question": "Can annual plans be refunded?", "gold": ["a-1"], "answers": ["30 days"],
        "candidates": [GOOD_CHUNK]}


def item(**kw):
    return json.dumps({**ITEM, **kw}) + "\n"


def raw_item(field, literal):
    rec = dict(ITEM)
    rec[field] = "@@"
    return json.dumps(rec).replace('"@@"', literal) + "\n"


A = ["assemble", "--store", "{nimbus}", "-q", "{q}"]
ASK = ["ask", "{q}", "--db", "{db}"]
EVAL = ["eval", "{set}", "--embedder", "hash", "--budgets", "200"]
CAL = ["calibrate", "{set}", "--embedder", "hash"]
CHECK = ["check", "--answer", "{answer}", "--brief", "{brief}"]
IDX = ["index", "--db", "{db}", "--embedder", "hash"]

# (case id, command line, the case's files, exit status, fragment of the message); None = no fragment
CASES = [
    # -- files that are not UTF-8, nest too deeply, hold numbers no store can keep, or surrogates
    ("assemble/store-not-utf8", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": NONUTF}, 2, "not UTF-8 text (byte 0xe9 at line 1"),
    ("assemble/candidates-not-utf8", A + ["--candidates", "{f}"], {"f": b'{"id": "pol3-4", "score": 0.5}\xff\n'}, 2, "not UTF-8"),
    ("assemble/store-surrogate", ["assemble", "--store", "{f}", "-q", "annual refund"], {"f": SURROGATE}, 0, None),
    ("assemble/question-surrogate", ["assemble", "--store", "{nimbus}", "-q", "refund \udc80 annual plan"], {}, 0, None),
    ("assemble/store-deep-json", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": DEEP}, 2, "f:1: is nested too deeply"),
    ("assemble/store-nested-80", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": DEEP80}, 2, "nested more than"),
    ("assemble/version-1e23", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("version", "1e23")}, 2, "field 'version': must be between 0 and"),
    ("assemble/version-1e999", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("version", "1e999")}, 2, "field 'version': must be a finite number"),
    ("assemble/position-1e23", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("position", "1e23")}, 2, "field 'position'"),
    ("assemble/version-negative", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("version", "-3")}, 2, "field 'version'"),
    ("assemble/vector-NaN-literal", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("vector", "[NaN, 1]")}, 2, "field 'vector[0]': must be a finite number"),
    ("assemble/metadata-int-128bit", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("metadata", '{"n": 123456789012345678901234567890}')}, 2, "field 'metadata.n'"),
    ("assemble/int-5000-digits", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": raw_chunk("rank", "1" * 5000)}, 2, "number that cannot be read"),
    ("assemble/store-bom", ["assemble", "--store", "{f}", "-q", "annual refund"], {"f": "\ufeff" + chunk()}, 0, None),
    ("assemble/store-u2028-in-text", ["assemble", "--store", "{f}", "-q", "annual refund"], {"f": chunk(text="Refunds\u2028within 30 days.") + "\n"}, 0, None),
    ("assemble/store-bad-field", ["assemble", "--store", "{c}", "-q", "{q}"], {"c.jsonl": jsonl(GOOD_CHUNK, {"id": "b", "doc": "d", "text": "t", "version": "x"})}, 2, "c.jsonl:2 (id 'b'), field 'version'"),
    ("assemble/store-langchain-records", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": '{"page_content": "Refunds within 30 days.", "metadata": {"source": "a.md"}}\n'}, 2, "field 'id': is required but missing (the record has 'page_content': a LangChain/LlamaIndex/Haystack document; write docket's keys id, doc and text"),
    ("assemble/store-json-array", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": "[" + chunk() + "]\n"}, 2, "f:1: expected a JSON object, got a JSON array: write one record per line (JSONL"),
    ("assemble/store-bare-strings", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": '"Refunds within 30 days."\n'}, 2, "got a string: each line is one object with id, doc and text"),
    ("assemble/store-acl-comma-string", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": chunk(acl="finance, group:hr") + "\n"}, 2, 'field \'acl\': is one string holding commas (\'finance, group:hr\'); give a list, one entry per user or group: ["finance", "group:hr"] (a single name that holds commas, such as an LDAP DN, as a list of one: ["finance, group:hr"])'),
    ("assemble/store-acl-one-string", ["assemble", "--store", "{f}", "-q", "annual refund"], {"f": chunk(acl="finance") + "\n"}, 0, None),
    ("assemble/store-empty-file", ["assemble", "--store", "{f}", "-q", "{q}"], {"f": "\n\n"}, 2, "holds no chunk records"),
    ("assemble/store-folder", ["assemble", "--store", "{folder}", "-q", "{q}"], {}, 2, "is a directory"),
    ("assemble/store-loop", ["assemble", "--store", "{loop}", "-q", "{q}"], {}, 2, "symlink loop"),
    ("assemble/store-missing", ["assemble", "--store", "{missing}", "-q", "{q}"], {}, 2, "file not found"),
    ("assemble/candidates-folder", A + ["--candidates", "{folder}"], {}, 2, "is a directory"),
    ("assemble/candidates-empty", A + ["--candidates", "{f}"], {"f": ""}, 2, "holds no candidates"),
    ("assemble/candidates-NaN", A + ["--candidates", "{f}"], {"f": '{"id": "pol3-4", "score": NaN}\n'}, 2, "field 'score': must be a finite number"),
    ("assemble/candidates-score-text", A + ["--candidates", "{f}"], {"f": '{"id": "pol3-4", "score": "high"}\n'}, 2, "must be a number"),
    ("assemble/candidates-rising-scores", A + ["--candidates", "{f}"], {"f": '{"id": "pol3-4", "score": 0.21}\n{"id": "pol3-5", "score": 0.35}\n{"id": "pol3-6", "score": 0.52}\n'}, 0, "f: the scores rise down the list (0.21 first, 0.52 last); docket reads the lines as the ranking, best first"),
    # -- policy files
    ("assemble/policy-not-utf8", A + ["--policy", "{p}"], {"p": b'[brief]\nrole = "\xff"\n'}, 2, "not UTF-8"),
    ("assemble/policy-folder", A + ["--policy", "{folder}"], {}, 2, "is a directory"),
    ("assemble/policy-loop", A + ["--policy", "{loop}"], {}, 2, "symlink loop"),
    ("assemble/policy-missing", A + ["--policy", "{missing}"], {}, 2, "file not found"),
    ("assemble/policy-bias-nan", A + ["--policy", "{p}"], {"p": "[answerable]\nbias = nan\n"}, 2, "field 'answerable.bias': must be a finite number"),
    ("assemble/policy-weight-inf", A + ["--policy", "{p}"], {"p": "[rescore]\ntitle_weight = inf\n"}, 2, "rescore.title_weight"),
    ("assemble/policy-floor-nan", A + ["--policy", "{p}"], {"p": "[pack]\nfloor = nan\n"}, 2, "pack.floor"),
    ("assemble/policy-render-field", A + ["--policy", "{p}"], {"p": '[render]\nfields = ["title", "sectoin"]\n'}, 2, "unknown header field(s) 'sectoin'; choose from title"),
    ("assemble/policy-signal-name", A + ["--policy", "{p}"], {"p": "[answerable]\nweights = {topp = 1.0}\n"}, 2, "unknown signal(s) 'topp'"),
    ("assemble/policy-huge-int", A + ["--policy", "{p}"], {"p": "[pack]\nbudget = 99999999999999999999999\n"}, 2, "pack.budget"),
    ("assemble/policy-as-of-int", A + ["--policy", "{p}"], {"p": "as_of = 5\n"}, 2, "field 'as_of': must be a date"),
    ("assemble/policy-deep", A + ["--policy", "{p}"], {"p": "x = " + "[" * 100 + "]" * 100 + "\n"}, 2, "nested"),
    ("assemble/policy-bad-toml", A + ["--policy", "{p}"], {"p": "[pack\n"}, 2, "not valid TOML"),
    # -- number options: finite and in range
    ("assemble/floor-nan", A + ["--floor", "nan"], {}, 2, "'--floor': must be a finite number, got nan"),
    ("assemble/floor-inf", A + ["--floor", "inf"], {}, 2, "--floor"),
    ("assemble/floor--inf", A + ["--floor=-inf"], {}, 2, "--floor"),
    ("assemble/question-unquoted", ["assemble", "--store", "{nimbus}", "-q", "refund", "annual", "plan"], {}, 2, 'Got unexpected extra argument(s) (annual plan); a value of several words, such as a question, goes in quotes: "..." (see: docket assemble --help)'),
    ("ask/question-unquoted", ["ask", "refund", "annual", "--db", "{db}"], {}, 2, "unexpected extra argument(s) (annual); a value of several words, such as a question, goes in quotes"),
    ("assemble/history-is-a-chunk-file", A + ["--history", "{nimbus}"], {}, 2, 'field \'role\': is required: each turn is {"role": "user" or "assistant", "content": TEXT}'),
    ("assemble/budget-0", A + ["--budget", "0"], {}, 2, "'--budget': must be at least 1"),
    ("assemble/budget-huge", A + ["--budget", "10000000000000"], {}, 2, "--budget"),
    ("assemble/budget-text", A + ["--budget", "abc"], {}, 2, "--budget"),
    # -- choices, dates, URLs
    ("assemble/format", A + ["--format", "yaml"], {}, 2, "must be 'xml' or 'lines', got 'yaml'"),
    ("assemble/as-of", A + ["--as-of", "June 2024"], {}, 2, "--as-of"),
    ("assemble/llm-ipv6", A + ["--llm", "http://[::1"], {}, 2, "'--llm': the model URL 'http://[::1' is malformed"),
    ("assemble/llm-port", A + ["--llm", "http://127.0.0.1:99999/v1"], {}, 2, "Port out of range"),
    ("assemble/llm-scheme", A + ["--llm", "ftp://models"], {}, 2, "--llm"),
    ("assemble/llm-empty", A + ["--llm", ""], {}, 2, "--llm"),
    ("assemble/model-without-llm", A + ["--model", "gpt-x"], {}, 2, "only used with --llm"),
    ("assemble/allow-domain-without-llm", A + ["--allow-domain", "example.com"], {}, 2, "'--allow-domain': is only used with --llm"),
    ("ask/strip-links-without-llm", ASK + ["--strip-links"], {}, 2, "'--strip-links': is only used with --llm"),
    # -- questions without a word
    ("assemble/question-controls", ["assemble", "--store", "{nimbus}", "-q", "\x01\x02\x03"], {}, 2, "holds no words"),
    ("assemble/question-blank", ["assemble", "--store", "{nimbus}", "-q", "   "], {}, 2, "is empty"),
    ("assemble/question-invisible", ["assemble", "--store", "{nimbus}", "-q", "\u200b\u2060\ufeff"], {}, 2, "holds no words"),
    ("assemble/question-ansi", ["assemble", "--store", "{nimbus}", "-q", "\x1b[31m\x1b[2J"], {}, 2, "holds no words"),
    ("assemble/store-nul", ["assemble", "--store", "{f}", "-q", "annual refund", "--json"], {"f": chunk(text="Refunds\u0000 within 30 days.") + "\n"}, 0, "Refunds\ufffd within"),
    ("assemble/question-punctuation", ["assemble", "--store", "{nimbus}", "-q", "?!..."], {}, 2, "holds no words"),
    ("assemble/ok", A + ["--json"], {}, 0, '"found": true'),
    # -- ask
    ("ask/ok", ASK + ["--json"], {}, 0, '"found"'),
    ("ask/floor-nan", ASK + ["--floor", "nan"], {}, 2, "--floor"),
    ("ask/principal-empty", ASK + ["--principal", ""], {}, 2, "'--principal': must not be empty"),
    ("ask/principal-blank", ASK + ["--principal", "  "], {}, 2, "must not be empty"),
    ("ask/principal-control", ASK + ["--principal", "bob\x00"], {}, 2, "control characters"),
    ("ask/question-controls", ["ask", "\x1b\x07", "--db", "{db}"], {}, 2, "holds no words"),
    ("ask/mode", ASK + ["--mode", "semantic"], {}, 2, "must be 'fused', 'dense' or 'bm25'"),
    ("ask/candidates-0", ASK + ["--candidates", "0"], {}, 2, "--candidates"),
    ("ask/since-after-until", ASK + ["--since", "2026-01-01", "--until", "2020-01-01"], {}, 2, "no chunk can match"),
    ("ask/since-bad", ASK + ["--since", "yesterday"], {}, 2, "--since"),
    ("ask/groups-alone", ASK + ["--groups", "finance"], {}, 2, "needs --principal"),
    ("ask/doc-blank", ASK + ["--doc", " "], {}, 2, "'--doc': is empty"),
    ("ask/status-blank", ASK + ["--status", ","], {}, 2, "--status"),
    ("ask/source-type-tab", ASK + ["--source-type", "\t, "], {}, 2, "--source-type"),
    ("ask/groups-control", ASK + ["--principal", "bob", "--groups", "fin\x01"], {}, 2, "--groups"),
    ("ask/policy-folder", ASK + ["--policy", "{folder}"], {}, 2, "is a directory"),
    ("ask/llm", ASK + ["--llm", "http://[::1"], {}, 2, "--llm"),
    ("ask/model-without-llm", ASK + ["--model", "m"], {}, 2, "only used with --llm"),
    ("ask/db-missing", ["ask", "{q}", "--db", "{missing}"], {}, 2, "no store here"),
    ("ask/db-folder", ["ask", "{q}", "--db", "{folder}"], {}, 2, "'--db': "),
    ("ask/db-loop", ["ask", "{q}", "--db", "{loop}"], {}, 2, "symlink loop"),
    ("index/db-no-folder", ["index", "--db", "{missing}/sub/s.db", "--embedder", "hash", "{good}"], {}, 2, "does not exist"),
    ("index/db-folder", ["index", "--db", "{folder}", "--embedder", "hash", "{good}"], {}, 2, "is a directory"),
    ("ask/db-not-sqlite", ["ask", "{q}", "--db", "{policy}"], {}, 2, "not a docket SQLite store"),
    # -- index: a bad file is reported (exit 1) and the batch goes on; a lone PATH that cannot be
    # read at all is refused before the store is opened (exit 2)
    ("index/loop", IDX + ["{loop}"], {}, 2, "symlink loop"),
    ("index/empty-folder", IDX + ["{d}"], {"d": None}, 1, "holds no files to index"),
    ("index/missing", IDX + ["{missing}"], {}, 2, "nothing to index, so no store was opened"),
    ("index/not-utf8", IDX + ["{f}"], {"f.jsonl": NONUTF}, 1, "not UTF-8"),
    ("index/deep-json", IDX + ["{f}"], {"f.jsonl": DEEP}, 1, "nested too deeply"),
    ("index/version-1e999", IDX + ["{f}"], {"f.jsonl": raw_chunk("version", "1e999")}, 1, "finite number"),
    ("index/version-1e23", IDX + ["{f}"], {"f.jsonl": raw_chunk("version", "1e23")}, 1, "field 'version'"),
    ("index/surrogate", IDX + ["{f}"], {"f.jsonl": SURROGATE}, 0, None),
    ("index/front-matter-alias-bomb", IDX + ["{f}"], {"f.md": ALIAS_BOMB}, 1, "values"),
    ("index/front-matter-version-huge", IDX + ["{f}"], {"f.md": "---\nversion: 99999999999999\n---\nText.\n"}, 1, "field 'version'"),
    ("index/sidecar-nan", IDX + ["{f}"], {"f.md": "Some text.\n", "f.md.meta.toml": "rank = nan\n"}, 1, "finite number"),
    ("index/sidecar-not-utf8", IDX + ["{f}"], {"f.md": "Some text.\n", "f.md.meta.json": b'{"title": "\xff"}'}, 1, "not UTF-8"),
    ("index/no-path", ["index", "--db", "{db}"], {}, 2, "give files or directories"),
    ("index/chunk-size", IDX + ["--chunk-size", "3", "{good}"], {}, 2, "--chunk-size"),
    ("index/overlap-negative", IDX + ["--overlap=-1", "{good}"], {}, 2, "--overlap"),
    ("index/overlap-too-big", IDX + ["--chunk-size", "100", "--overlap", "80", "{good}"], {}, 2, "--overlap"),
    ("index/embedder", ["index", "--db", "{db}", "--embedder", "bert", "{good}"], {}, 2, "must be 'minilm' or 'hash'"),
    # -- export, delete, principal
    ("export/ok", ["export", "{o}", "--db", "{db}"], {}, 0, "exported"),
    ("export/folder", ["export", "{folder}", "--db", "{db}"], {}, 2, "is a directory"),
    ("export/no-parent", ["export", "{missing}/x/out.jsonl", "--db", "{db}"], {}, 2, "does not exist"),
    ("export/loop", ["export", "{loop}", "--db", "{db}"], {}, 2, "symlink loop"),
    ("export/onto-the-store", ["export", "{db}", "--db", "{db}"], {}, 2, "is the store itself"),
    ("delete/version-99", ["delete", "refund-policy", "--db", "{db}", "--version", "99"], {}, 2, "has no version 99; stored: v2, v3"),
    ("delete/unknown-doc", ["delete", "nope", "--db", "{db}"], {}, 2, "is not in the store"),
    ("delete/empty-doc", ["delete", "", "--db", "{db}"], {}, 2, "must not be empty"),
    ("delete/version-negative", ["delete", "refund-policy", "--db", "{db}", "--version=-1"], {}, 2, "--version"),
    ("principal/empty", ["principal", "", "--db", "{db}", "--groups", "finance"], {}, 2, "must not be empty"),
    ("principal/blank", ["principal", "   ", "--db", "{db}"], {}, 2, "must not be empty"),
    ("principal/control", ["principal", "bo\x07b", "--db", "{db}"], {}, 2, "control characters"),
    ("principal/group-control", ["principal", "bob", "--db", "{db}", "--groups", "a,\x1b[31m"], {}, 2, "--groups"),
    ("principal/ok", ["principal", "bob", "--db", "{db}", "--groups", "finance"], {}, 0, '"finance"'),
    # -- check
    ("check/ok", CHECK, {}, 0, None),
    ("check/brief-not-utf8", ["check", "--answer", "{answer}", "--brief", "{b}"], {"b": b'{"sources": {"S1": {"text": "\xe9"}}}'}, 2, "not UTF-8"),
    ("check/brief-deep", ["check", "--answer", "{answer}", "--brief", "{b}"], {"b": '{"sources": ' + "[" * 5000 + "]" * 5000 + "}"}, 2, "nested too deeply"),
    ("check/brief-not-json", ["check", "--answer", "{answer}", "--brief", "{b}"], {"b": "{oops"}, 2, "not valid JSON"),
    ("check/brief-list", ["check", "--answer", "{answer}", "--brief", "{b}"], {"b": "[1, 2]"}, 2, "must be a JSON object"),
    ("check/brief-folder", ["check", "--answer", "{answer}", "--brief", "{folder}"], {}, 2, "is a directory"),
    ("check/brief-missing", ["check", "--answer", "{answer}", "--brief", "{missing}"], {}, 2, "file not found"),
    ("check/answer-folder", ["check", "--answer", "{folder}", "--brief", "{brief}"], {}, 2, "is a directory"),
    ("check/answer-empty", ["check", "--answer", "{a}", "--brief", "{brief}"], {"a": "  \n"}, 2, "there is no answer to check"),
    ("check/answer-not-utf8", ["check", "--answer", "{a}", "--brief", "{brief}"], {"a": b"caf\xe9 [S1]"}, 2, "not UTF-8"),
    ("check/answer-is-a-brief", ["check", "--answer", "{brief}", "--brief", "{brief}"], {}, 2, "option '--answer': is a brief (what `docket assemble --json` prints), not an answer: give the brief to --brief"),
    ("check/answer-and-brief-swapped", ["check", "--answer", "{brief}", "--brief", "{answer}"], {}, 2, "option '--answer': is a brief"),
    ("check/judge-url", CHECK + ["--judge", "http://[::1"], {}, 2, "--judge"),
    ("check/judge-model-alone", CHECK + ["--judge-model", "m"], {}, 2, "only used with --judge"),
    # -- eval
    ("eval/ok", EVAL, {}, 0, None),
    ("eval/not-utf8", ["eval", "{s}", "--embedder", "hash"], {"s": item().encode() + b"\xff\n"}, 2, "not UTF-8"),
    ("eval/deep", ["eval", "{s}", "--embedder", "hash"], {"s": raw_item("meta", "[" * 5000 + "]" * 5000)}, 2, "nested too deeply"),
    ("eval/scores-nan", ["eval", "{s}", "--embedder", "hash"], {"s": raw_item("scores", "[NaN]")}, 2, "field 'scores[0]': must be a finite number"),
    ("eval/scores-bool", ["eval", "{s}", "--embedder", "hash"], {"s": item(scores=[True])}, 2, "scores[0]"),
    ("eval/scores-length", ["eval", "{s}", "--embedder", "hash"], {"s": item(scores=[0.1, 0.2])}, 2, "parallel to the candidates"),
    ("eval/answerable-string", ["eval", "{s}", "--embedder", "hash"], {"s": item(answerable="false")}, 2, "field 'answerable': must be true or false"),
    ("eval/duplicate-id", ["eval", "{s}", "--embedder", "hash"], {"s": item() + item()}, 2, "ids must be unique"),
    ("eval/answers-string", ["eval", "{s}", "--embedder", "hash"], {"s": item(answers="30 days")}, 2, "field 'answers'"),
    ("eval/question-missing", ["eval", "{s}", "--embedder", "hash"], {"s": json.dumps({k: v for k, v in ITEM.items() if k != "question"}) + "\n"}, 2, "s:1, field 'question': is required"),
    ("eval/question-as-query", ["eval", "{s}", "--embedder", "hash"], {"s": json.dumps({"query" if k == "question" else k: v for k, v in ITEM.items()}) + "\n"}, 2, "s:1, field 'question': is required"),
    ("eval/candidates-dict", ["eval", "{s}", "--embedder", "hash"], {"s": item(candidates={"a": 1})}, 2, "field 'candidates'"),
    ("eval/pool-duplicate", ["eval", "{s}", "--embedder", "hash"], {"s": item(candidates=[GOOD_CHUNK, GOOD_CHUNK])}, 2, "appears twice"),
    ("eval/store-number", ["eval", "{s}", "--embedder", "hash"], {"s": json.dumps({"question": "q?", "store": 5}) + "\n"}, 2, "field 'store'"),
    ("eval/gold-not-in-store", ["eval", "{s}", "--embedder", "hash", "--budgets", "100"], {"s": json.dumps({"question": "Refund?", "store": "c.jsonl", "gold": ["zz"]}) + "\n", "c.jsonl": jsonl(GOOD_CHUNK)}, 2, "field 'gold': ids not in the store"),
    ("eval/gold-outside-pool-warns", ["eval", "{s}", "--embedder", "hash", "--budgets", "100"], {"s": item(gold=["zz"])}, 0, "can never be covered"),
    ("eval/question-controls", ["eval", "{s}", "--embedder", "hash"], {"s": item(question="\u0000\u0001")}, 2, "holds no words"),
    ("eval/empty-set", ["eval", "{s}", "--embedder", "hash"], {"s": "\n\n"}, 2, "holds no questions"),
    ("eval/price-nan", EVAL + ["--price", "nan"], {}, 2, "'--price': must be a finite number"),
    ("eval/price-negative", EVAL + ["--price=-1"], {}, 2, "'--price': must be at least 0"),
    ("eval/price-inf", EVAL + ["--price", "inf"], {}, 2, "--price"),
    ("eval/report-file", EVAL + ["--report", "{policy}"], {}, 2, "is a file; give a folder"),
    ("eval/report-under-file", EVAL + ["--report", "{policy}/out"], {}, 2, "is a file, so the folder cannot be created"),
    ("eval/report-loop", EVAL + ["--report", "{loop}"], {}, 2, "symlink loop"),
    ("eval/limit-0", EVAL + ["--limit", "0"], {}, 2, "--limit"),
    ("eval/budgets-0", ["eval", "{set}", "--embedder", "hash", "--budgets", "0"], {}, 2, "--budgets"),
    ("eval/budgets-text", ["eval", "{set}", "--embedder", "hash", "--budgets", "a,b"], {}, 2, "--budgets"),
    ("eval/set-format", EVAL + ["--set-format", "csv"], {}, 2, "must be 'docket', 'hotpotqa'"),
    ("eval/set-format-mismatch", EVAL + ["--set-format", "hotpotqa"], {}, 2, "is not a valid hotpotqa file"),
    ("eval/set-format-musique-on-jsonl", EVAL + ["--set-format", "musique"], {}, 2, "musique"),
    ("eval/embedder", ["eval", "{set}", "--embedder", "bert"], {}, 2, "must be 'minilm' or 'hash'"),
    ("eval/compare", EVAL + ["--compare", "gpt"], {}, 2, "unknown system"),
    ("eval/llm", EVAL + ["--llm", "http://[::1"], {}, 2, "--llm"),
    ("eval/generation-budget-alone", EVAL + ["--generation-budget", "300"], {}, 2, "only used with --llm"),
    ("eval/policy-folder", EVAL + ["--policy", "{folder}"], {}, 2, "is a directory"),
    ("eval/path-loop", ["eval", "{loop}", "--embedder", "hash"], {}, 2, "symlink loop"),
    ("eval/path-missing", ["eval", "{missing}", "--embedder", "hash"], {}, 2, "not found"),
    # -- calibrate
    ("calibrate/ok", CAL + ["--write", "{o}"], {}, 0, None),
    ("calibrate/folds-0", CAL + ["--folds", "0"], {}, 2, "'--folds': must be at least 2"),
    ("calibrate/folds-1", CAL + ["--folds", "1"], {}, 2, "--folds"),
    ("calibrate/group-by", CAL + ["--group-by", "author"], {}, 2, "must be 'paragraph', 'article' or 'item'"),
    ("calibrate/write-folder", CAL + ["--write", "{folder}"], {}, 2, "is a directory"),
    ("calibrate/write-no-parent", CAL + ["--write", "{missing}/p.toml"], {}, 2, "does not exist"),
    ("calibrate/write-not-utf8", CAL + ["--write", "{p}"], {"p": b"x = '\xff'\n"}, 2, "not UTF-8"),
    ("calibrate/write-not-policy", CAL + ["--write", "{p}"], {"p": "[packk]\n"}, 2, "is not a known setting"),
    ("calibrate/margin-keep-nan", CAL + ["--margin-keep", "nan"], {}, 2, "--margin-keep"),
    ("calibrate/margin-keep-0", CAL + ["--margin-keep", "0"], {}, 2, "--margin-keep"),
    ("calibrate/margin-keep-big", CAL + ["--margin-keep", "1.5"], {}, 2, "--margin-keep"),
    ("calibrate/pairs-not-utf8", ["calibrate", "--pairs", "{p}", "--embedder", "hash"], {"p": b'{"a": "\xe9", "b": "x", "same": true}\n'}, 2, "not UTF-8"),
    ("calibrate/pairs-same-string", ["calibrate", "--pairs", "{p}", "--embedder", "hash"], {"p": '{"a": "x", "b": "y", "same": "yes"}\n'}, 2, "field 'same'"),
    ("calibrate/pairs-empty", ["calibrate", "--pairs", "{p}", "--embedder", "hash"], {"p": ""}, 2, "holds no pairs"),
    ("calibrate/pairs-folder", ["calibrate", "--pairs", "{folder}", "--embedder", "hash"], {}, 2, "is a directory"),
    ("calibrate/derive-without-set", ["calibrate", "--pairs", "{pairs}", "--derive-pairs", "--embedder", "hash"], {}, 2, "needs a labelled set"),
    ("calibrate/nothing", ["calibrate"], {}, 2, "give a labelled set"),
    # -- budget, demo, llm
    ("budget/ok", ["budget", "--system", "500"], {}, 0, "evidence budget"),
    ("budget/price-nan", ["budget", "--system", "500", "--price", "nan"], {}, 2, "--price"),
    ("budget/price-negative", ["budget", "--system", "500", "--price=-3"], {}, 2, "'--price': must be at least 0"),
    ("budget/price-inf", ["budget", "--system", "500", "--price", "inf"], {}, 2, "--price"),
    ("budget/input-target-0", ["budget", "--input-target", "0"], {}, 2, "--input-target"),
    ("budget/history-negative", ["budget", "--history=-1"], {}, 2, "--history"),
    ("budget/question-alone", ["budget", "--system", "500", "-q", "{q}"], {}, 2, "only used with --store"),
    ("budget/question-controls", ["budget", "--store", "{nimbus}", "-q", "\x00"], {}, 2, "holds no words"),
    ("budget/store-folder", ["budget", "--store", "{folder}", "-q", "{q}"], {}, 2, "is a directory"),
    ("demo/budget-0", ["demo", "--budget", "0"], {}, 2, "--budget"),
    ("llm/models-url", ["llm", "models", "http://[::1"], {}, 2, "is malformed"),
    ("llm/models-empty", ["llm", "models", ""], {}, 2, "no model URL"),
    ("llm/serve-port-0", ["llm", "serve-local", "--port", "0"], {}, 2, "--port"),
    ("llm/serve-port-big", ["llm", "serve-local", "--port", "70000"], {}, 2, "--port"),
    ("llm/serve-wait-nan", ["llm", "serve-local", "--wait", "nan"], {}, 2, "--wait"),
    ("llm/serve-n-ctx-0", ["llm", "serve-local", "--n-ctx", "0"], {}, 2, "--n-ctx"),
    # -- empty values (often an unset shell variable) and lists with no name: refused, never "off"
    ("index/doc-prefix-empty", IDX + ["--doc-prefix", "", "{good}"], {}, 2, "'--doc-prefix': is empty"),
    ("index/doc-prefix-blank", IDX + ["--doc-prefix", "  ", "{good}"], {}, 2, "'--doc-prefix': is empty"),
    ("index/set-empty-value", IDX + ["--set", "trust=", "{good}"], {}, 2, "gives trust no value"),
    ("index/set-blank-value", IDX + ["--set", "status=  ", "{good}"], {}, 2, "gives status no value"),
    ("index/from-itself", ["index", "--from", "{db}", "--db", "{db}"], {}, 2, "is the store being written"),
    ("index/from-empty", ["index", "--from", "", "--db", "{db}"], {}, 2, "'--from': is empty"),
    ("index/from-not-a-store", ["index", "--from", "{policy}", "--db", "{o}"], {}, 2, "not a docket SQLite store"),
    ("index/db-empty", ["index", "--db", "", "{good}"], {}, 2, "'--db': is empty"),
    ("ask/db-empty", ["ask", "{q}", "--db", " "], {}, 2, "'--db': is empty"),
    ("export/db-empty", ["export", "{o}", "--db", ""], {}, 2, "'--db': is empty"),
    ("principal/groups-commas", ["principal", "ann", "--db", "{db}", "--groups", ",,,"], {}, 2, "'--groups': is empty"),
    ("principal/groups-blank", ["principal", "ann", "--db", "{db}", "--groups", " , "], {}, 2, "'--groups': is empty"),
    ("principal/groups-clear", ["principal", "ann", "--db", "{db}", "--groups", ""], {}, 0, '"groups": []'),
    ("ask/groups-commas", ASK + ["--principal", "bob", "--groups", ",,"], {}, 2, "'--groups': is empty"),
    ("assemble/groups-commas", A + ["--principal", "bob", "--groups", ",,,"], {}, 2, "'--groups': is empty"),
    ("check/allow-domain-empty", CHECK + ["--allow-domain", ""], {}, 2, "'--allow-domain': is empty"),
    ("check/allow-domain-blank", CHECK + ["--allow-domain", "  "], {}, 2, "'--allow-domain': is empty"),
    ("check/allow-domain-two", CHECK + ["--allow-domain", "a.com b.com"], {}, 2, "must be one domain"),
    ("check/allow-domain-suffix", CHECK + ["--allow-domain", "co.uk"], {}, 2, "public suffix"),
    ("assemble/allow-domain-empty", A + ["--llm", "local", "--allow-domain", ""], {}, 2, "'--allow-domain': is empty"),
    ("ask/model-preset-empty", ASK + ["--model-preset", ""], {}, 2, "'--model-preset': is empty"),
    ("ask/route-llm-empty", ASK + ["--route-llm", ""], {}, 2, "--route-llm"),
    ("ask/html-folder", ASK + ["--html", "{folder}"], {}, 2, "'--html'"),
    ("eval/compare-commas", EVAL + ["--compare", ",,"], {}, 2, "'--compare': holds no system name"),
    ("eval/compare-empty", EVAL + ["--compare", ""], {}, 2, "holds no system name"),
    ("budget/cache-read-alone", ["budget", "--cache-read", "0.2"], {}, 2, "'--cache-read': is only used with --corpus-tokens"),
    ("budget/cache-write-alone", ["budget", "--cache-write", "2"], {}, 2, "is only used with --corpus-tokens"),
    ("budget/cache-read-zero-alone", ["budget", "--cache-read", "0"], {}, 2, "is only used with --corpus-tokens"),
    ("budget/cache-ttl-alone", ["budget", "--cache-ttl", "60"], {}, 2, "is only used with --corpus-tokens"),
    ("budget/cache-read-free", ["budget", "--system", "500", "--corpus-tokens", "100000", "--cache-read", "0",
                                "--cache-write", "0"], {}, 0, "no corpus size makes them cost the same"),
    # -- the command line itself
    ("cli/unknown-command", ["assembel"], {}, 2, "No such command"),
    ("cli/unknown-option", ["assemble", "--stor", "x"], {}, 2, "No such option"),
    ("cli/missing-option", ["assemble", "--store", "{nimbus}"], {}, 2, "Missing option"),
]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return Env(tmp_path_factory.mktemp("bad-input-env"))


@pytest.mark.parametrize("case, args, files, status, fragment", CASES, ids=[c[0] for c in CASES])
def test_cli_bad_input(env, tmp_path, case, args, files, status, fragment):
    out = run_cli(env.expand(args, tmp_path, files))
    why = problems(out, args[0], must_fail=status != 0)
    assert not why, (why, out.text[-800:])
    assert out.rc == status, out.text[-800:]
    if fragment:  # rich wraps long lines of the index report: compare with spaces folded
        assert " ".join(fragment.split()) in " ".join(out.text.split()), out.text[-800:]


def test_cli_bad_input_through_the_real_entry_point(tmp_path):
    """The same contract through `python -m docket`: the process exit status, one line on stderr;
    and argv bytes that are not UTF-8 (they reach Python as lone surrogates) are no crash."""
    bad = tmp_path / "c.jsonl"
    bad.write_bytes(NONUTF)
    proc = subprocess.run([sys.executable, "-m", "docket", "assemble", "--store", str(bad), "-q", "refund"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "not UTF-8" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([sys.executable, "-m", "docket", "assemble", "--store", nimbus_path(), "-q",
                           os.fsdecode(b"refund annual plan \xff\xfe"), "--json"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")


def test_check_answer_on_stdin_not_utf8(env):
    out = run_cli(["check", "--answer", "-", "--brief", env.paths["brief"]], stdin=b"caf\xe9 [S1]")
    assert out.rc == 2 and "stdin: is not UTF-8" in out.err


# --- nothing already stored is lost; a batch goes on past a bad file -----------------------------------


BAD_FILES = {
    "not-utf8.jsonl": NONUTF,
    "deep.jsonl": DEEP.encode(),
    "v23.jsonl": raw_chunk("version", "1e23").encode(),
    "v999.jsonl": raw_chunk("version", "1e999").encode(),
    "nan.jsonl": raw_chunk("vector", "[NaN]").encode(),
    "bomb.md": ALIAS_BOMB.encode(),
    "side.md": b"Some text.\n",
    "side.md.meta.toml": b"x = nan\n",
}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_bad_batch_keeps_what_is_stored_and_indexes_the_rest(tmp_path, backend, request):
    db = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    first = run_cli(["index", nimbus_path(), "--db", db, "--embedder", "hash", "--json"])
    assert first.rc == 0, first.text
    before = json.loads(first.out)["chunks_written"]
    batch = tmp_path / "batch"
    batch.mkdir()
    for name, content in BAD_FILES.items():
        (batch / name).write_bytes(content)
    (batch / "loop").symlink_to("loop")
    (batch / "good.jsonl").write_text(jsonl(GOOD_CHUNK, {**GOOD_CHUNK, "id": "s-1", "doc": "s", "title": "T\u0000",
                                                          "metadata": {"k": "v\u0000"}}).replace(
        '"s", "text": "', '"s", "text": "\\ud800 '))
    out = run_cli(["index", str(batch), "--db", db, "--embedder", "hash", "--json"])
    assert out.exc is None and out.rc == 1, out.text
    report = json.loads(out.out)
    reported = {Path(p["where"].split(":")[0].split(" (")[0]).name for p in report["problems"]}
    assert {"not-utf8.jsonl", "deep.jsonl", "v23.jsonl", "v999.jsonl", "nan.jsonl", "bomb.md", "loop"} <= reported, report
    assert any("side.md" in p["where"] for p in report["problems"]), report
    assert sorted(report["added"]) == ["a v1", "s v1"]
    from docket.store.factory import open_store

    store = open_store(db, create=False)
    try:
        assert store.count() == before + 2
        s1 = store.get("s-1")
        assert s1.text.startswith("\ufffd ")  # the lone surrogate, replaced
        assert s1.title == "T\ufffd" and s1.metadata["k"] == "v\ufffd"  # NUL too: PostgreSQL refuses it
    finally:
        store.close()


def test_failed_export_leaves_the_old_file(env, tmp_path, monkeypatch):
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    from docket.store.sqlite import SQLiteStore

    def broken(self):
        yield from ()
        raise InputError("the store broke mid-export")

    monkeypatch.setattr(SQLiteStore, "export", broken)
    r = run_cli(["export", str(out), "--db", env.fresh_db(tmp_path)])
    assert r.rc == 2 and "broke mid-export" in r.err
    assert out.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # no temporary left behind


def test_delete_of_a_missing_version_deletes_nothing(env, tmp_path):
    db = env.fresh_db(tmp_path)
    from docket.store.factory import open_store

    def versions():
        s = open_store(db, create=False)
        try:
            return [v.version for v in s.stored_versions("refund-policy")]
        finally:
            s.close()

    before = versions()
    assert run_cli(["delete", "refund-policy", "--db", db, "--version", "99"]).rc == 2
    assert versions() == before


# --- the loaders and validators, directly ------------------------------------------------------------------

LOADS = [
    # (JSON text, fragment of the error; None = it loads)
    ('{"a": NaN}', "field 'a': must be a finite number"),
    ('{"a": [1, Infinity]}', "field 'a[1]'"),
    ('{"a": -Infinity}', "finite"),
    ('{"a": 1e999}', "finite"),
    ('{"a": -1e400}', "finite"),
    ('{"a": 1e-400}', None),
    ('{"a": 9223372036854775807}', None),
    ('{"a": 9223372036854775808}', "64 bits"),
    ('{"a": ' + "9" * 5000 + "}", "cannot be read"),
    ("[" * 65 + "]" * 65, "nested more than 64"),
    ("[" * 64 + "]" * 64, None),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ('{"a": "x\\udc00y"}', None),
    ('{"\\ud800": 1}', None),
    ('{"a": 1', "not valid JSON"),
]


@pytest.mark.parametrize("text, fragment", LOADS, ids=[f"loads-{i}" for i in range(len(LOADS))])
def test_safe_json_loader(text, fragment):
    if fragment is None:
        obj = loads_json(text, "f.jsonl:3")
        assert "\ud800" not in json.dumps(obj, ensure_ascii=False).encode("utf-16", "surrogatepass").decode("utf-16")
        json.dumps(obj, ensure_ascii=False).encode("utf-8")  # storable: no lone surrogate left
    else:
        with pytest.raises(InputError) as e:
            loads_json(text, "f.jsonl:3")
        assert fragment in str(e.value) and str(e.value).startswith("f.jsonl:3")


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_safe_json_loader_never_raises_anything_else(text):
    try:
        obj = loads_json(text, "x")
    except InputError:
        return
    json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                       lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
                       max_leaves=30)


@given(JSONISH)
@settings(max_examples=300, deadline=None)
def test_check_tree_accepts_only_what_a_store_can_hold(value):
    try:
        out = check_tree(value, "x")
    except InputError as e:
        assert "finite" in str(e) or "64 bits" in str(e) or "nested" in str(e)
        return
    json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")


def test_toml_and_yaml_loaders():
    with pytest.raises(InputError, match=r"p.toml, field 'a.b': must be a finite number, got nan"):
        loads_toml("[a]\nb = nan\n", "p.toml")
    with pytest.raises(InputError, match="values"):
        loads_yaml(ALIAS_BOMB.split("---")[1], "front")
    assert loads_yaml("a: '\\ud800'", "y") == {"a": "\\ud800"}
    assert loads_yaml('a: "\\ud800"', "y") == {"a": "\ufffd"}


def test_chunks_and_counters_take_lone_surrogates():
    from docket.embed import HashEmbedder
    from docket.tokens import default_counter

    c = parse_chunk({"id": "a\ud800", "doc": "d", "text": "x \udfff y", "title": "\ud83d", "acl": ["g\udc00"],
                     "metadata": {"k\ud800": ["\udc00"]}, "extra": "\ud800"})
    for v in (c.id, c.text, c.title, c.acl[0], *c.metadata, c.metadata["k\ufffd"][0], c.metadata["extra"]):
        v.encode("utf-8")
    assert default_counter().count("a \ud800 b") > 0
    assert HashEmbedder(8).embed(["a \ud800 b"]).shape == (1, 8)


def test_api_questions_and_scores():
    store = MemoryStore([mk("a")])
    from docket.model import Candidate

    for q in ("", "  ", "\x00\x01", "\u200b", None, 5):
        with pytest.raises(InputError, match="question"):
            assemble(q, store=store)  # type: ignore[arg-type]
    for score in (math.nan, math.inf, "0.5", None, True):
        with pytest.raises(InputError, match=r"candidate 1 \(id 'a'\), field 'score'"):
            assemble("what?", [Candidate(chunk=mk("a"), score=score, rank=1)], store=store)  # type: ignore[arg-type]


def test_acl_string_with_commas_is_refused_not_one_group():
    """`"acl": "finance, hr"` (a list written as CSV, in a record or front matter) was read as one group
    named 'finance, hr': nobody could read the chunk and nothing said so. One name stays fine."""
    with pytest.raises(InputError, match=r"field 'acl': is one string holding commas"):
        parse_chunk({"id": "a", "doc": "d", "text": "t", "acl": "finance,hr"})
    assert parse_chunk({"id": "a", "doc": "d", "text": "t", "acl": "finance"}).acl == ("finance",)
    assert parse_chunk({"id": "a", "doc": "d", "text": "t", "acl": ["cn=fin,ou=groups"]}).acl == ("cn=fin,ou=groups",)


def test_session_index_takes_one_path_and_chunks_and_refuses_the_rest(tmp_path):
    """`s.index("chunks.jsonl")` iterated the string: each character a path, "/" the file system's root
    (it walked / until a PermissionError). `records=load_chunks(...)` and `records=["text"]` raised
    TypeError/ValueError from dict(). Now one path is that path, Chunks are records, the rest is
    refused by position before any write."""
    from docket.api import Session

    nimbus = str(nimbus_path())
    with Session.open(str(tmp_path / "a.db"), create=True, embedder="hash") as s:
        rep = s.index(nimbus)
        assert rep.files == 1 and rep.chunks_written == len(load_chunks(nimbus)) and not rep.problems
    with Session.open(str(tmp_path / "b.db"), create=True, embedder="hash") as s:
        assert s.index(records=load_chunks(nimbus)).chunks_written == len(load_chunks(nimbus))
        for bad, field in ((["plain text"], r"records\[0\]"), ("text", "records"), ({"id": "a"}, "records")):
            with pytest.raises(InputError, match=rf"field '{field}': must be"):
                s.index(records=bad)  # type: ignore[arg-type]
        with pytest.raises(InputError, match=r"field 'paths\[0\]': must be a file or folder path, got int"):
            s.index([3])  # type: ignore[list-item]
        assert s.store.count() == len(load_chunks(nimbus))


def test_a_question_longer_than_the_input_target_says_what_to_do():
    """A pasted 20,000-token question left 'no room for evidence after ... the brief's fixed text
    (20224); raise it': the question was not named, nor the other ways out."""
    store = MemoryStore(load_chunks(nimbus_path()))
    q = REFUND_QUESTION + " Here is my long story about billing." * 1500
    with pytest.raises(InputError, match=r"field 'pack.input_target': .*the system message, question and format "
                       r"\(\d+\); raise it, give an explicit evidence budget \(--budget\), or shorten the question"):
        assemble(q, store=store)


def test_api_numpy_scores_are_read_as_numbers():
    """A reranker hands back np.float32 scores and np.argsort np.int64 ranks: read as the numbers they
    hold (np.float32 was refused as 'not a finite number'; an np.int64 rank broke the brief's JSON)."""
    import numpy as np

    from docket.model import Candidate

    store = MemoryStore([mk("a"), mk("b", text="Monthly plans renew every month.")])
    given = [Candidate(mk("a"), np.float32(0.9), np.int64(1)), Candidate(mk("b"), np.float64(0.8), np.int64(2))]
    brief = assemble("Can annual plans be refunded?", given, store=store)
    plain = assemble("Can annual plans be refunded?", [Candidate(mk("a"), float(np.float32(0.9)), 1),
                                                         Candidate(mk("b"), 0.8, 2)], store=store)
    assert brief.to_json() == plain.to_json()
    assert all(type(s.score) is float and type(s.rank) is int for s in brief.sources.values())
    for bad in (np.float32("nan"), np.bool_(True)):
        with pytest.raises(InputError, match=r"candidate 1 \(id 'a'\), field 'score'"):
            assemble("what?", [Candidate(mk("a"), bad, 1)], store=store)  # type: ignore[arg-type]


def test_api_store_and_policy_as_a_new_caller_writes_them(tmp_path):
    """`store=` a path and `policy=` a dict or a TOML path: the store is refused naming the two ways to
    open one (it said 'the store cannot list its chunks'); the policy is read as --policy reads it
    (it was an AttributeError from inside a move)."""
    store = MemoryStore(load_chunks(nimbus_path()))
    with pytest.raises(InputError, match=r"field 'store': must be a store object, got the path .*docket.open_store"):
        assemble(REFUND_QUESTION, store=str(nimbus_path()))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="field 'store'"):
        assemble(REFUND_QUESTION, store=nimbus_path())  # type: ignore[arg-type]
    toml = tmp_path / "p.toml"
    toml.write_text("[pack]\nbudget = 120\n")
    want = assemble(REFUND_QUESTION, store=store, policy=load_policy(toml)).to_json()
    assert assemble(REFUND_QUESTION, store=store, policy={"pack": {"budget": 120}}).to_json() == want  # type: ignore[arg-type]
    assert assemble(REFUND_QUESTION, store=store, policy=str(toml)).to_json() == want  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"field 'pack.flor': is not a known setting"):
        assemble(REFUND_QUESTION, store=store, policy={"pack": {"flor": 0.3}})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="field 'policy': must be a docket Policy"):
        assemble(REFUND_QUESTION, store=store, policy=42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"field 'embedder': must be a docket Embedder .*got str"):
        assemble(REFUND_QUESTION, store=store, embedder="hash")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"field 'counter': must be a docket TokenCounter .*got str"):
        assemble(REFUND_QUESTION, store=store, counter="o200k_base")  # type: ignore[arg-type]
    from docket.api import Session
    from docket.embed import HashEmbedder

    assert Session(policy={"pack": {"budget": 120}}).policy.pack.budget == 120  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"field 'store': this session has no searchable store"):
        Session().ask(REFUND_QUESTION)
    with pytest.raises(InputError, match=r"field 'store': this session's MemoryStore cannot be searched: .*assemble"):
        Session(store).ask(REFUND_QUESTION)
    assert isinstance(Session(embedder="hash").embedder(), HashEmbedder)  # was kept as a str: AttributeError later
    with pytest.raises(InputError, match="field 'embedder': must be one of"):
        Session(embedder="minilm-v2")


def test_policy_api_rejects_non_finite_overrides():
    from docket.policy import Policy

    for section, values in (("pack", {"floor": math.nan}), ("answerable", {"bias": math.inf}),
                            ("rescore", {"link_weight": math.nan}), ("render", {"fields": ["titel"]})):
        with pytest.raises(InputError, match=rf"field '{section}\."):
            Policy().updated(**{section: values})
    with pytest.raises(InputError, match="not a policy section"):
        Policy().updated(packing={"floor": 0.1})


def test_every_header_field_the_policy_allows_renders():
    """policy.HEADER_FIELDS and brief/render.header_fields must agree (docs/policy.md: no name is ignored)."""
    from datetime import date

    from docket.brief.render import header_fields
    from docket.model import passage_of
    from docket.policy import HEADER_FIELDS

    from helpers import cands

    c = mk("a", title="T", section="S", version=2, date="2026-01-01", status="superseded", source_type="faq",
           trust="untrusted")
    assert c.date == date(2026, 1, 1)
    got = {k for k, _ in header_fields(passage_of(cands([c])[0]), list(HEADER_FIELDS), repeated_title=True)}
    assert set(HEADER_FIELDS) <= got, set(HEADER_FIELDS) - got


GOOD = {"id": "a", "doc": "d", "text": "Some text."}


@pytest.mark.parametrize(
    "record, field, words",
    [
        ({"doc": "d", "text": "x"}, "id", "required"),
        ({"id": "a", "text": "x"}, "doc", "required"),
        ({"id": "a", "doc": "d"}, "text", "required"),
        ({"id": "a", "doc": "d", "text": "   "}, "text", "empty"),
        ({"id": "a", "doc": "d", "text": "x", "version": "three"}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "version": 2.5}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "version": True}, "version", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "date": "01/03/2026"}, "date", "ISO date"),
        ({"id": "a", "doc": "d", "text": "x", "date": "2026-02-30"}, "date", "ISO date"),
        ({"id": "a", "doc": "d", "text": "x", "position": "first"}, "position", "integer"),
        ({"id": "a", "doc": "d", "text": "x", "vector": [0.1, float("nan")]}, "vector", "NaN"),
        ({"id": "a", "doc": "d", "text": "x", "trust": "maybe"}, "trust", ""),
        ({"id": "a", "doc": "d", "text": "x", "date": "2026-03-01", "effective_to": "2025-01-01"}, "record", "before"),
    ],
)
def test_bad_chunk_fields_name_record_and_field(record, field, words):
    with pytest.raises(InputError) as e:
        parse_chunk(record, where="chunks.jsonl:7")
    msg = str(e.value)
    assert "chunks.jsonl:7" in msg
    if field != "record":
        assert f"field '{field}'" in msg
    assert words in msg
    assert "\n" not in msg


def test_unknown_fields_are_kept_in_metadata_not_dropped():
    c = parse_chunk({**GOOD, "url": "https://x", "metadata": {"k": 1}})
    assert c.metadata == {"k": 1, "url": "https://x"}


def test_duplicate_ids_rejected_with_both_lines(tmp_path):
    p = write(tmp_path, "c.jsonl", [GOOD, {**GOOD, "text": "other"}])
    with pytest.raises(InputError, match=r"c.jsonl:2.*duplicate id 'a' \(first on line 1\)"):
        load_chunks(p)


def test_line_that_is_not_json(tmp_path):
    p = write(tmp_path, "c.jsonl", [GOOD, "{not json"])
    with pytest.raises(InputError, match=r"c.jsonl:2: is not valid JSON"):
        load_chunks(p)


def test_candidates_nan_unknown_and_repeated(tmp_path):
    store = MemoryStore([mk("a"), mk("b")])
    for lines, pat in (
        (['{"id": "a", "score": NaN}'], r"field 'score': must be a finite number"),
        ([{"id": "zz", "score": 0.5}], r"'zz'.*not in the store"),
        ([{"id": "a", "score": 0.5}, {"id": "a", "score": 0.4}], "ranked twice"),
        ([{"id": "a", "score": "high"}], "must be a number"),
        ([{"score": 0.5}], "field 'id'"),
    ):
        with pytest.raises(InputError, match=pat):
            load_candidates(write(tmp_path, "r.jsonl", lines), store)


def test_vectors_wrong_size_or_not_normalised():
    from docket.embed import HashEmbedder

    emb = HashEmbedder(dim=4)
    bad_dim = mk("a", vector=[1.0, 0.0, 0.0])
    with pytest.raises(InputError, match=r"chunk 'a'.*field 'vector'.*3 dimensions"):
        assemble("q?", store=MemoryStore([bad_dim]), embedder=emb)
    not_unit = mk("a", vector=[1.0, 1.0, 0.0, 0.0])
    with pytest.raises(InputError, match=r"not unit length"):
        assemble("q?", store=MemoryStore([not_unit]), embedder=emb)


def test_budget_smaller_than_any_passage_is_documented_not_found():
    from docket.demo import nimbus_chunks

    brief = assemble(REFUND_QUESTION, store=MemoryStore(nimbus_chunks()), budget=10)
    assert brief.found is False
    assert any("smaller than every passage" in w for w in brief.warnings)
    assert any(e["action"] == "skip" for e in brief.trace)  # nothing silently dropped


def test_policy_unknown_setting_and_bad_values(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[dedup]\nthreshhold = 0.9\n")
    with pytest.raises(InputError, match=r"field 'dedup.threshhold': is not a known setting"):
        load_policy(p)
    p.write_text("[dedup]\nthreshold = 1.5\n")
    with pytest.raises(InputError, match=r"dedup.threshold"):
        load_policy(p)
    p.write_text("[order]\nmode = 'sideways'\n")
    with pytest.raises(InputError, match=r"order.mode"):
        load_policy(p)
    p.write_text("[dedup\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_policy(p)
    for text, field, hint in (("[pack]\nmargin = -1\n", "pack.margin", "greater than 0"),
                              ("[render]\nspotlight = 'yes'\n", "render.spotlight", "'off' or 'datamark'"),
                              ("[pack]\nuntrusted = 'sometimes'\n", "pack.untrusted", "'use', 'fallback' or 'never'"),
                              ("[rescore]\nlink_rounds = 0\n", "rescore.link_rounds", "greater than or equal to 1")):
        p.write_text(text)
        with pytest.raises(InputError, match=rf"field '{field}'.*{hint}"):
            load_policy(p)


def test_empty_question():
    with pytest.raises(InputError, match="question"):
        assemble("  ", store=MemoryStore([mk("a")]))


def test_the_example_policy_is_every_default_spelled_out():
    """examples/policy.toml says "every setting with its default": keep it true as settings change."""
    from pathlib import Path

    from docket.policy import Policy, load_policy

    example = load_policy(Path(__file__).resolve().parents[1] / "examples" / "policy.toml")
    assert example.model_dump() == Policy().model_dump()


# --- the red team: many random bad inputs per command ---------------------------------------------------


def _fuzz_and_check(env, tmp_path, n):
    from bad_input_kit import fuzz

    results = fuzz(env, tmp_path, n, seed=int(os.environ.get("DOCKET_REDTEAM_SEED", "0")))
    escapes = {k: v[2] for k, v in results.items() if v[1]}
    return results, escapes


def test_bad_input_fuzz_smoke(env, tmp_path):
    """A few random bad inputs per command in the default run, so the red-team generator cannot rot."""
    _, escapes = _fuzz_and_check(env, tmp_path, 3)
    assert not escapes, escapes


@pytest.mark.slow
def test_redteam_bad_input(env, tmp_path):
    """Random bad inputs for every command: option values, paths of every wrong kind, records with
    each field broken, damaged bytes. Escaped = a traceback, an undocumented exit status, an exit 2
    that is not one line, or bad input accepted. DOCKET_REDTEAM_BAD_INPUT_N sets cases per
    command and class (default 100)."""
    n = int(os.environ.get("DOCKET_REDTEAM_BAD_INPUT_N", "100"))
    results, escapes = _fuzz_and_check(env, tmp_path, n)
    for cls, (tried, escaped, _) in sorted(results.items()):
        record(cls, tried, escaped)
    assert not escapes, escapes


def test_index_reports_every_link_and_special_file_in_a_folder(tmp_path):
    """Inside a folder nothing is skipped without a word: dangling links, loops, links to folders
    and pipes are reported; the regular files are indexed."""
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.md").write_text("Annual plans refund within 30 days.\n")
    (d / "dangling.md").symlink_to("nowhere.md")
    (d / "loop.md").symlink_to("loop.md")
    (d / "linked").symlink_to("sub")
    os.mkfifo(d / "pipe.md")
    (d / ".hidden.md").write_text("skipped by design\n")
    out = run_cli(["index", str(d), "--db", str(tmp_path / "s.db"), "--embedder", "hash", "--json"])
    assert out.exc is None and out.rc == 1, out.text
    report = json.loads(out.out)
    msgs = {Path(p["where"]).name: p["message"] for p in report["problems"]}
    assert "does not exist" in msgs["dangling.md"] and "symlink loop" in msgs["loop.md"]
    assert "not followed" in msgs["linked"] and "not a regular file" in msgs["pipe.md"]
    assert report["added"] == ["sub/a.md v1"] and ".hidden.md" not in msgs


def test_index_of_nothing_leaves_no_store(tmp_path):
    """A mistyped PATH used to create an empty store that `ask` then answered "not found" from.
    Every PATH missing: refused before the store is opened. Every PATH read but nothing indexed
    (an empty folder, a file that fails): the store this run created is removed again, and
    said so. A store that existed before is never removed."""
    db = tmp_path / "s.db"
    out = run_cli(["index", "--db", str(db), "--embedder", "hash", str(tmp_path / "typo.md"), str(tmp_path / "nope")])
    assert out.rc == 2 and "typo.md: not found" in out.err and "nope: not found" in out.err, out.text
    assert not list(tmp_path.glob("s.db*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": 1}\n')
    for paths in ([empty], [bad], [empty, bad, tmp_path / "typo.md"]):
        out = run_cli(["index", "--db", str(db), "--embedder", "hash", *map(str, paths)])
        assert out.rc == 1, out.text
        assert "removed again" in " ".join(out.text.split())
        assert not list(tmp_path.glob("s.db*")), paths
    good = tmp_path / "good.md"
    good.write_text("# Refunds\n\nAnnual plans are refunded within 30 days.\n", encoding="utf-8")
    out = run_cli(["index", "--db", str(db), "--embedder", "hash", str(good), str(tmp_path / "typo.md")])
    assert out.rc == 1 and "typo.md: not found" in "".join(out.text.split("\n")) and db.exists(), out.text
    before = db.read_bytes()
    out = run_cli(["index", "--db", str(db), "--embedder", "hash", str(empty)])
    assert out.rc == 1 and db.exists() and "removed again" not in out.text, out.text  # an older store stays
    assert db.stat().st_size >= len(before) > 0


# --- the cheap pre-check that decides whether a JSON text is walked ------------------------------

_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=40)
_NUMBER = st.builds(lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}", st.sampled_from(["", "-"]), _DIGITS,
                    st.one_of(st.just(""), _DIGITS.map(lambda d: "." + d)),
                    st.one_of(st.just(""), st.builds(lambda e, s, d: f"{e}{s}{d}", st.sampled_from("eE"),
                                                     st.sampled_from(["", "+", "-"]), _DIGITS)))
_ESCAPE = st.one_of(st.integers(0, 0xFFFF).map(lambda cp: f"\\u{cp:04x}"), st.integers(0, 0xFFFF).map(lambda cp: f"\\u{cp:04X}"))
_STRING = st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'),
                                     max_size=8), _ESCAPE), max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
_LEAF = st.one_of(_NUMBER, _STRING, st.sampled_from(["NaN", "Infinity", "-Infinity", "true", "null"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_STRING, _LEAF), max_size=8))
def test_every_text_check_tree_would_change_is_walked(pairs: list[tuple[str, str]]):
    """safeio._suspect may say yes to a harmless text (a walk for nothing), never no to one holding
    a number check_tree refuses or a string it scrubs: every such text must reach the walk."""
    from docket.safeio import _suspect

    text = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    try:
        value = json.loads(text)
    except ValueError:  # a number too long for int(): loads_json refuses it before the pre-check
        return
    try:
        walked = check_tree(json.loads(text), "t")
    except InputError:
        assert _suspect(text), text
        return
    if walked != value or repr(walked) != repr(value):
        assert _suspect(text), text


def test_prose_is_not_walked_but_big_numbers_are():
    from docket.safeio import _suspect

    assert not _suspect('{"text": "The release of 1999 was more expensive, see ee123e and E 123."}')
    for bad in ('{"n": 1e308}', '{"n": 1E+400}', '{"n": 12.5e-0400}', '{"n": 9223372036854775808}',
                '{"n": -12345678901234567890}', '{"s": "\\ud800"}', '{"s": "\\uDFFF"}', '{"s": "a\\u0000"}',
                '{"n": NaN}', '{"n": -Infinity}'):
        assert _suspect(bad), bad


def test_a_chunk_key_at_the_top_and_under_metadata_must_agree():
    """An unknown key is kept as metadata; the same key under `metadata` with another value made
    the metadata's copy win in silence (the ingest front matter's rule was the opposite)."""
    rec = {"id": "a", "doc": "d", "text": "t", "team": "sales", "metadata": {"team": "legal"}}
    with pytest.raises(InputError, match=r"field 'metadata.team': gives 'team' twice"):
        parse_chunk(rec)
    assert parse_chunk({**rec, "team": "legal"}).metadata == {"team": "legal"}
