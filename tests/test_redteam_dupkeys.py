"""Red team: a key given twice is refused on every surface that reads JSON or YAML from outside.

`{"id": "x", "acl": ["group:hr"], ..., "acl": null}` is one document that two readers read two
ways: Python's json.loads and PyYAML keep the last copy (a public chunk), jq's `first`, many Go
and Java readers or a reviewer reading top-down the first (a restricted one). docket refuses it
wherever it reads one (docket.safeio.decode_json, the YAML loader of safeio.loads_yaml), in one
line naming the key (and, for JSON, its path): `docket index` of JSONL, front matter and
sidecars, `--candidates`, `check --brief` and `--answer`, an eval set, a history file, a keys
file, the eval conflict pairs, the service's config and request bodies, an LLM's structured
reply. `docket import` has its own table (test_redteam_import.py).

Each row is (class, name, payload, the field the refusal must name). The default run replays every
row; `test_redteam_dupkeys` (slow) counts the escapes per surface for scripts/redteam.sh.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bad_input_kit import GOOD_CHUNK, Env, run_cli
from redteam_log import record

from docket.errors import InputError

HR = '"acl": ["group:hr"]'
TEXT = GOOD_CHUNK["text"]


def chunk_with(extra: str, **kw: Any) -> str:
    """A chunk record's JSON with `extra` (raw JSON members: the key given twice) before its brace."""
    return json.dumps({**GOOD_CHUNK, **kw})[:-1] + ", " + extra + "}"


#: (name, raw JSON members added to an object, the field the refusal names), shared by the JSON surfaces
ACL_TWICE = [
    ("acl then null", f'{HR}, "acl": null', "acl"),
    ("acl by an escape", f'{HR}, "\\u0061cl": []', "acl"),
    ("same value twice", f'{HR}, {HR}', "acl"),
]


# --- the surfaces: each returns "" when the payload was refused naming the key, else what escaped ----

Run = Callable[[Env, Path], str]


def cli(args: list[str], files: dict[str, str], key: str | None) -> Run:
    """A command that must fail saying a key is given twice, naming `key` (None: TOML, whose
    parser does not say which key)."""
    def run(env: Env, tmp: Path) -> str:
        out = run_cli(env.expand(args, tmp, files))
        if out.exc is not None:
            return "traceback: " + out.exc.strip().splitlines()[-1]
        if out.rc == 0:
            return "accepted (exit 0)"
        text = " ".join(out.text.split())
        if "given twice" not in text or (key is not None and f"'{key}'" not in text):
            return f"refused for another reason (exit {out.rc}): {text[-240:]}"
        return ""
    return run


def refused(call: Callable[[Path], Any], key: str) -> Run:
    """A function that must raise InputError naming `key` as given twice."""
    def run(env: Env, tmp: Path) -> str:
        try:
            call(tmp)
        except InputError as e:
            msg = str(e)
            return "" if "given twice" in msg and f"'{key}'" in msg else f"refused for another reason: {msg[:200]}"
        except Exception as e:  # noqa: BLE001 - anything else is the escape
            return f"traceback: {type(e).__name__}: {str(e)[:120]}"
        return "accepted"
    return run


def written(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return p


IDX = ["index", "--db", "{db}", "--embedder", "hash"]
A = ["assemble", "--store", "{nimbus}", "-q", "{q}"]
BRIEF = {"found": True, "refusal": "I do not know from the provided sources.",
         "sources": {"S1": {"doc": "a", "version": 1, "chunks": ["a-1"], "title": "Refunds", "text": TEXT}}}
REPLY = '{"sentences": [{"text": "Annual plans can be refunded within 30 days.", "citations": ["S1"]}]'
SET_ITEM = {"id": "q1", "question": "Can annual plans be refunded?", "gold": ["a-1"], "answers": ["30 days"],
            "candidates": [GOOD_CHUNK]}


def _history(tmp: Path, text: str) -> Any:
    from docket.history import load_history

    return load_history(written(tmp, "h.json", text))


def _keys(tmp: Path, text: str) -> Any:
    from docket.keys import parse_key_file

    return parse_key_file(written(tmp, "keys.json", text))


def _pairs(tmp: Path, text: str) -> Any:
    from docket.eval.conflicts import load_conflict_pairs

    return load_conflict_pairs(written(tmp, "pairs.jsonl", text))


def _config(tmp: Path, text: str) -> Any:
    pytest.importorskip("fastapi")
    from docket.service.config import ServerConfig

    return ServerConfig.from_json(text)


def _reply(text: str, key: str) -> Run:
    """An LLM's structured reply: a key given twice is a malformed reply (never a guess), saying why."""
    def run(env: Env, tmp: Path) -> str:
        from docket.llm.structured import parse_reply

        try:
            got = parse_reply(text)
        except Exception as e:  # noqa: BLE001 - parse_reply never raises
            return f"traceback: {type(e).__name__}: {str(e)[:120]}"
        if got.ok:
            return "accepted"
        error = got.error or ""
        return "" if "given twice" in error and key in error else f"refused for another reason: {error}"
    return run


CASES: list[tuple[str, str, Run]] = [
    *[("bad-input/dupkey/index-jsonl", f"index .jsonl: {n}", cli(IDX + ["{f}"], {"f.jsonl": chunk_with(x) + "\n"}, k))
      for n, x, k in ACL_TWICE],
    ("bad-input/dupkey/index-jsonl", "index .jsonl: metadata key twice",
     cli(IDX + ["{f}"], {"f.jsonl": chunk_with('"metadata": {"team": "a", "team": "b"}') + "\n"}, "metadata.team")),
    ("bad-input/dupkey/index-jsonl", "index .jsonl: in the second line",
     cli(IDX + ["{f}"], {"f.jsonl": json.dumps(GOOD_CHUNK) + "\n" + chunk_with(f'{HR}, "acl": null', id="a-2") + "\n"},
         "acl")),
    *[("bad-input/dupkey/assemble-store", f"assemble --store .jsonl: {n}",
       cli(["assemble", "--store", "{f}", "-q", "{q}"], {"f.jsonl": chunk_with(x) + "\n"}, k)) for n, x, k in ACL_TWICE],
    ("bad-input/dupkey/candidates", "candidates: score twice",
     cli(A + ["--candidates", "{f}"], {"f.jsonl": '{"id": "pol3-4", "score": 0.9, "score": 0.1}\n'}, "score")),
    ("bad-input/dupkey/candidates", "candidates: id twice",
     cli(A + ["--candidates", "{f}"], {"f.jsonl": '{"id": "pol3-4", "score": 0.9, "id": "faq-12"}\n'}, "id")),
    ("bad-input/dupkey/check-brief", "check --brief: found twice",
     cli(["check", "--answer", "{answer}", "--brief", "{f}"], {"f.json": json.dumps(BRIEF)[:-1] + ', "found": false}'},
         "found")),
    ("bad-input/dupkey/check-brief", "check --brief: a source's text twice",
     cli(["check", "--answer", "{answer}", "--brief", "{f}"],
         {"f.json": json.dumps(BRIEF).replace('"text": ', '"text": "Nothing.", "text": ')}, "sources.S1.text")),
    ("bad-input/dupkey/front-matter", "YAML front matter: acl twice",
     cli(IDX + ["{f}"], {"f.md": "---\nacl: [group:hr]\ntitle: Pay\nacl: []\n---\nSalary bands.\n"}, "acl")),
    ("bad-input/dupkey/front-matter", "YAML front matter: a merge overrides acl",
     cli(IDX + ["{f}"], {"f.md": "---\nopen: &open {acl: []}\nacl: [group:hr]\n<<: *open\n---\nSalary bands.\n"},
         "acl")),
    ("bad-input/dupkey/front-matter", "YAML front matter: 1 and '1'",
     cli(IDX + ["{f}"], {"f.md": "---\n1: a\n'1': b\n---\nSalary bands.\n"}, "1")),
    ("bad-input/dupkey/toml", "TOML front matter: acl twice (tomllib refuses it)",
     cli(IDX + ["{f}"], {"f.md": '+++\nacl = ["group:hr"]\nacl = []\n+++\nSalary bands.\n'}, None)),
    ("bad-input/dupkey/toml", "TOML sidecar: a table twice (tomllib refuses it)",
     cli(IDX + ["{f}"], {"f.md": "Salary bands.\n", "f.md.meta.toml": "[metadata]\nteam = 'a'\n[metadata]\nx = 1\n"},
         None)),
    ("bad-input/dupkey/sidecar", "JSON sidecar: acl twice",
     cli(IDX + ["{f}"], {"f.md": "Salary bands.\n", "f.md.meta.json": '{"acl": ["group:hr"], "acl": []}'}, "acl")),
    ("bad-input/dupkey/sidecar", "YAML sidecar: acl twice",
     cli(IDX + ["{f}"], {"f.md": "Salary bands.\n", "f.md.meta.yaml": "acl: [group:hr]\nacl: []\n"}, "acl")),
    ("bad-input/dupkey/sidecar", "YAML sidecar: nested key twice",
     cli(IDX + ["{f}"], {"f.md": "Salary bands.\n", "f.md.meta.yml": "metadata:\n  team: a\n  team: b\n"}, "team")),
    ("bad-input/dupkey/eval-set", "eval set: gold twice",
     cli(["eval", "{f}", "--embedder", "hash", "--budgets", "200"],
         {"f.jsonl": json.dumps(SET_ITEM)[:-1] + ', "gold": []}\n'}, "gold")),
    ("bad-input/dupkey/check-answer", "check --answer: sentences twice",
     cli(["check", "--answer", "{f}", "--brief", "{brief}", "--structured"],
         {"f.json": REPLY + ', "sentences": [{"text": "Refunds are never given.", "citations": []}]}'}, "sentences")),
    ("bad-input/dupkey/history", "history: role twice",
     refused(lambda t: _history(t, '[{"role": "user", "content": "hi", "role": "assistant"}]'), "role")),
    ("bad-input/dupkey/history", "history JSONL: content twice",
     refused(lambda t: _history(t, '{"role": "user", "content": "a"}\n{"role": "user", "content": "b", '
                                   '"content": "c"}\n'), "content")),
    ("bad-input/dupkey/keys-file", "keys file: admin twice",
     refused(lambda t: _keys(t, '{"keys": [{"name": "ann", "principal": "ann", "sha256": "' + "0" * 64 + '", '
                                '"admin": false, "admin": true}]}'), "keys[0].admin")),
    ("bad-input/dupkey/eval-conflicts", "conflict pairs: conflict twice",
     refused(lambda t: _pairs(t, '{"a": "x", "b": "y", "conflict": true, "conflict": false}\n'), "conflict")),
    ("bad-input/dupkey/service-config", "server config: db twice",
     refused(lambda t: _config(t, '{"db": "a.db", "db": "b.db"}'), "db")),
    ("bad-input/dupkey/llm-reply", "structured reply: sentences twice",
     _reply(REPLY + ', "sentences": [{"text": "Refunds are never given.", "citations": []}]}', "sentences")),
    ("bad-input/dupkey/llm-reply", "structured reply: citations twice",
     _reply(REPLY.replace('"citations": ["S1"]', '"citations": ["S1"], "citations": ["S2"]') + "}",
            "sentences[0].citations")),
    ("bad-input/dupkey/llm-reply", "structured reply in a fence: refusal twice",
     _reply('```json\n{"sentences": [], "refusal": null, "refusal": {"reason": "no source"}}\n```', "refusal")),
]


# --- the service: each body must be 400 duplicate_key naming the field --------------------------------

BODIES: list[tuple[str, str, str, str]] = [  # (name, route, body, field)
    ("assemble: question twice", "/v1/assemble", '{"question": "refund?", "question": "salary?"}', "question"),
    ("assemble: a candidate's acl twice", "/v1/assemble",
     '{"question": "refund?", "candidates": [{"id": "x", "doc": "d", "text": "t", "score": 0.5, ' + HR
     + ', "acl": null}]}', "candidates[0].acl"),
    ("assemble: escaped key", "/v1/assemble", '{"question": "refund?", "\\u0071uestion": "salary?"}', "question"),
    ("ask: filters.doc twice", "/v1/ask", '{"question": "refund?", "filters": {"doc": ["a"], "doc": ["b"]}}',
     "filters.doc"),
    ("check: brief found twice", "/v1/check",
     '{"answer": "Refunds within 30 days [S1].", "brief": ' + json.dumps(BRIEF)[:-1] + ', "found": false}}',
     "brief.found"),
    ("index: a record's acl twice", "/v1/index",
     '{"records": [' + chunk_with(f'{HR}, "acl": null') + "]}", "records[0].acl"),
]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(tmp_path_factory.mktemp("dupkeys-env"))


@pytest.fixture(scope="module")
def service(env: Env, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, str]]:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from docket.api import Session
    from docket.keys import KeyFile
    from docket.server import ServerConfig, create_app

    tmp = tmp_path_factory.mktemp("dupkeys-service")
    db = env.fresh_db(tmp)
    kf = KeyFile(tmp / "keys.json")
    token = kf.add("ops", "ops", admin=True)
    app = create_app(ServerConfig(db=db, keys=str(tmp / "keys.json")), session=Session.open(db))
    return TestClient(app), {"Authorization": f"Bearer {token}", "content-type": "application/json"}


def body_outcome(service: tuple[Any, dict[str, str]], route: str, body: str, fld: str) -> str:
    client, headers = service
    r = client.post(route, content=body.encode(), headers=headers)
    if r.status_code != 400:
        return f"answered {r.status_code}: {r.text[:160]}"
    err = r.json().get("error", {})
    if err.get("code") != "duplicate_key" or err.get("field") != fld or "given twice" not in err.get("message", ""):
        return f"400 for another reason: {r.text[:200]}"
    return ""


@pytest.mark.parametrize(("cls", "name", "run"), CASES, ids=[c[1] for c in CASES])
def test_a_key_given_twice_is_refused(env: Env, tmp_path: Path, cls: str, name: str, run: Run) -> None:
    assert run(env, tmp_path) == ""


@pytest.mark.parametrize(("name", "route", "body", "fld"), BODIES, ids=[b[0] for b in BODIES])
def test_a_body_giving_a_key_twice_is_400(service: tuple[Any, dict[str, str]], name: str, route: str, body: str,
                                          fld: str) -> None:
    assert body_outcome(service, route, body, fld) == ""


# --- the red team: every row, counted per surface -----------------------------------------------------

@pytest.mark.slow
def test_redteam_dupkeys(env: Env, service: tuple[Any, dict[str, str]], tmp_path: Path) -> None:
    escaped: dict[str, list[str]] = {}
    tried: dict[str, int] = {}
    for i, (cls, name, run) in enumerate(CASES):
        tmp = tmp_path / f"c{i}"
        tmp.mkdir()
        tried[cls] = tried.get(cls, 0) + 1
        why = run(env, tmp)
        if why:
            escaped.setdefault(cls, []).append(f"{name}: {why}")
    cls = "bad-input/dupkey/service-body"
    for name, route, body, fld in BODIES:
        tried[cls] = tried.get(cls, 0) + 1
        why = body_outcome(service, route, body, fld)
        if why:
            escaped.setdefault(cls, []).append(f"{name}: {why}")
    for cls, n in tried.items():
        record(cls, tried=n, escaped=len(escaped.get(cls, [])), note="; ".join(escaped.get(cls, []))[:300])
    assert not escaped, escaped


# --- the shared reader itself: what it refuses, what it must still read --------------------------------

def test_the_reader_names_the_key_path_and_the_line() -> None:
    from docket.safeio import loads_json

    with pytest.raises(InputError) as e:
        loads_json('{"a": [{"m": {\n "team": 1,\n "team": 2}}]}', "f.json")
    assert str(e.value) == ("f.json:3, field 'a[0].m.team': key 'team' is given twice in one object (readers differ "
                            "on which copy counts); keep one")
    with pytest.raises(InputError, match=r"^f.jsonl:7, field 'acl': key 'acl' is given twice"):
        loads_json('{"acl": [], "\\u0061cl": null}', "f.jsonl:7")  # equal once the escape is read


@pytest.mark.parametrize("text", [
    '{"a": 1, "A": 2}',                                  # case differs: two keys for every reader
    '{"caf\\u00e9": 1, "cafe\\u0301": 2}',               # NFC and NFD: two keys for every reader
    '[{"acl": []}, {"acl": null}]',                      # one key in two objects
    '{"a": {"a": {"a": 1}}}',                            # one name at three depths
    '{"text": "\\ufeff starts with a BOM inside a string"}',
])
def test_legitimate_json_is_still_read(text: str) -> None:
    from docket.safeio import loads_json

    assert loads_json(text, "f.json") == json.loads(text)


@pytest.mark.parametrize(("text", "fragment"), [
    ('{"score": NaN}', "field 'score': must be a finite number, got nan"),
    ('{"m": {"x": [Infinity]}}', "field 'm.x[0]': must be a finite number, got inf"),
    ('{"x": -Infinity}', "field 'x': must be a finite number, got -inf"),
    ('\ufeff{"id": "a"}', "starts with a byte order mark (U+FEFF)"),
    ('{"a\\ud800": 1, "a\\udc00": 2}', "gives two keys that differ only by lone surrogates"),
])
def test_what_strict_readers_refuse_is_refused_by_name(text: str, fragment: str) -> None:
    from docket.safeio import loads_json

    with pytest.raises(InputError) as e:
        loads_json(text, "f.json")
    assert fragment in str(e.value)


def test_a_bom_opens_a_file_but_not_a_later_line(tmp_path: Path) -> None:
    from docket.safeio import iter_jsonl, load_json

    p = written(tmp_path, "a.jsonl", '\ufeff{"id": "a"}\n\ufeff{"id": "b"}\n')
    got = iter_jsonl(p)
    assert next(got) == (1, {"id": "a"})
    with pytest.raises(InputError, match=r"a.jsonl:2: starts with a byte order mark"):
        next(got)
    assert load_json(written(tmp_path, "b.json", '\ufeff{"id": "a"}')) == {"id": "a"}


def test_toml_refuses_a_key_given_twice_itself() -> None:
    from docket.safeio import loads_toml

    for text in ('acl = ["hr"]\nacl = []', '"acl" = 1\nacl = 2\n', "[t]\na = 1\n[t]\nb = 2\n", "a = 1\na.b = 2\n"):
        with pytest.raises(InputError, match="is not valid TOML: a key or table is given twice"):
            loads_toml(text, "f.toml")


def test_yaml_reads_a_merge_that_overrides_nothing() -> None:
    from docket.safeio import loads_yaml

    text = "base: &b {team: ops}\nmore: &m {tier: 2}\ndoc:\n  <<: [*b, *m]\n  title: Pay\n"
    assert loads_yaml(text, "f.yaml")["doc"] == {"team": "ops", "tier": 2, "title": "Pay"}
    for bad, line in (("base: &b {acl: []}\ndoc:\n  acl: [hr]\n  <<: *b\n", 4),
                      ("a: &a {x: 1}\nb: &b {x: 2}\nc:\n  <<: [*a, *b]\n", 4),
                      ("true: a\n'true': b\n", 2), ("~: a\nnull: b\n", 2)):
        with pytest.raises(InputError, match=rf"^f.yaml:{line}, field '.+': key .+ is given twice in one mapping"):
            loads_yaml(bad, "f.yaml")


def test_one_implementation_serves_the_importer() -> None:
    from docket import safeio
    from docket.store import importer

    assert importer.decode_json is safeio.decode_json
    assert not hasattr(importer, "_object") and not hasattr(importer, "_DECODER")


def test_every_route_reads_its_body_strictly(service: tuple[Any, dict[str, str]]) -> None:
    """A router added later without route_class would read bodies with json.loads again."""
    from fastapi.routing import APIRoute

    from docket.service.errors import StrictJsonRoute

    client, _ = service
    routes, todo = [], list(client.app.router.routes)
    while todo:  # FastAPI 0.16x keeps an included router whole (_IncludedRouter), older ones copy its routes
        r = todo.pop()
        inner = getattr(r, "original_router", None)
        todo.extend(inner.routes if inner is not None else [])
        routes.extend([r] if isinstance(r, APIRoute) else [])
    assert len(routes) > 5 and all(isinstance(r, StrictJsonRoute) for r in routes), [r.path for r in routes]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_a_body_is_read_as_before(service: tuple[Any, dict[str, str]], encoding: str) -> None:
    """JSON in UTF-8, -16 or with a BOM (what json.loads(bytes) reads), one key in two objects: read."""
    client, headers = service
    body = json.dumps({"question": "Can annual plans be refunded?", "candidates": [
        {"id": "x", "doc": "d", "text": "Annual plans can be refunded.", "score": 0.5, "metadata": {"id": 1}}]})
    r = client.post("/v1/assemble", content=body.encode(encoding), headers=headers)
    assert r.status_code == 200, r.text
    r = client.post("/v1/assemble", content=b'{"question": "refund?",}', headers=headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
