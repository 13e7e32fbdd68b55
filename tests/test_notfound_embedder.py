"""The "not found" floor belongs to the embedder: MiniLM's shipped floor never reaches another
embedder's cosines silently; the gate is off there until calibrated, and the brief says so once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from docket.answerable import CALIBRATE_COMMAND, floors
from docket.assemble import assemble
from docket.embed import HashEmbedder, default_embedder
from docket.policy import NOT_FOUND_FLOOR, Policy
from docket.presets import embedder_preset, embedder_presets
from docket.store.base import MemoryStore

from helpers import mk

HR = [
    mk("leave-1", doc="leave", title="Parental leave", text="Employees receive sixteen weeks of paid parental leave."),
    mk("travel-1", doc="travel", title="Travel", text="The per diem for Paris is EUR 150 per day."),
    mk("it-1", doc="it", title="Laptops", text="Laptops are replaced every four years by the IT desk."),
]


class LowCosineEmbedder:
    """A user's own model whose cosines sit far below MiniLM's (every one under 0.3)."""

    name = "acme-embed-v1"
    dim = 16

    def embed(self, texts):  # noqa: ANN001, ANN201
        inner = HashEmbedder(self.dim).embed(list(texts))
        out = inner * 0.5 + np.ones((len(texts), self.dim), np.float32) * 0.0
        out[:, 0] += 2.0  # a shared direction: pairs all look alike, cosines compress
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _events(brief, move, action):  # noqa: ANN001, ANN202
    return [e for e in brief.trace if e["move"] == move and e["action"] == action]


def test_the_shipped_presets_name_the_embedders_docket_ships():
    minilm = embedder_preset(default_embedder().name)
    assert minilm is not None and minilm.not_found_floor == NOT_FOUND_FLOOR and minilm.noise_floor == 0.40
    hashed = embedder_preset(HashEmbedder.name)
    assert hashed is not None and hashed.not_found_floor is None and hashed.noise_floor is None
    assert embedder_preset("acme-embed-v1") is None
    assert all(p.source and p.checked for p in embedder_presets().values())


@pytest.mark.parametrize("embedder", [HashEmbedder(64), LowCosineEmbedder()], ids=["hash", "custom"])
def test_another_embedder_gets_no_minilm_floor(embedder):
    store = MemoryStore(HR)
    b = assemble("How many weeks of parental leave do employees get?", store=store, embedder=embedder, budget=400)
    assert b.found, [e["reason"] for e in b.trace]
    assert "leave-1" in {c for s in b.sources.values() for c in s["chunks"]}
    off = _events(b, "answerable", "off")
    assert len(off) == 1 and embedder.name in off[0]["reason"] and CALIBRATE_COMMAND in off[0]["reason"]
    assert sum(CALIBRATE_COMMAND in w for w in b.warnings) == 1  # said once
    assert not _events(b, "floor", "not_found") and not _events(b, "floor", "drop")
    assert floors(Policy(), embedder.name).not_found is None


@pytest.mark.parametrize("embedder", [HashEmbedder(64), LowCosineEmbedder()], ids=["hash", "custom"])
def test_no_move_stops_at_the_minilm_floor_for_another_embedder(embedder):
    """The screen applies no floor to an embedder without one, and neither does pack (nor the
    reachable set, nor the summary): before, pack still stopped at pack.floor 0.40, a MiniLM number,
    so a pool of low cosines was screened in and then packed out: found false, nothing in the prompt."""
    from docket.cli.show import screened_out
    from docket.model import Candidate

    cands = [Candidate(c, s, i + 1) for i, (c, s) in enumerate(zip(HR, [0.21, 0.12, 0.05], strict=True))]
    b = assemble("How many weeks of parental leave do employees get?", cands, store=MemoryStore(HR),
                 embedder=embedder, budget=400)
    assert b.found, [e["reason"] for e in b.trace]
    packed = {c for s in b.sources.values() for c in s["chunks"]}
    assert packed == {"leave-1", "travel-1", "it-1"}, packed  # the budget holds all three: nothing is noise
    assert not _events(b, "pack", "stop") and not _events(b, "floor", "drop")
    assert screened_out(b) == {}  # `docket ask` marks none of them "below floor"
    # the same pool with MiniLM's name on the scores: its noise floor applies, at the screen and in pack alike
    b = assemble("How many weeks of parental leave do employees get?", cands, store=MemoryStore(HR), budget=400)
    dropped = screened_out(b)
    assert not b.found and dropped.get("travel-1") == dropped.get("it-1") == "below floor", dropped


def test_the_answerability_model_without_weights_reads_the_embedders_floor():
    """`answerable.enabled` with no fitted weights falls back to a floor: the embedder's, like the
    gate's (before, the policy's MiniLM 0.48 for any embedder)."""
    from docket.answerable import judge
    from docket.context import Context
    from docket.model import Candidate
    from docket.tokens import default_counter

    cands = [Candidate(c, s, i + 1) for i, (c, s) in enumerate(zip(HR, [0.21, 0.12, 0.05], strict=True))]
    pol = Policy().updated(answerable={"enabled": True})

    def ctx(embedder):  # noqa: ANN001, ANN202
        return Context(question="parental leave?", store=MemoryStore(HR), policy=pol, counter=default_counter(),
                       embedder=embedder)

    assert judge(cands, ctx(HashEmbedder(64)))[0] is True  # no floor known for hash-bow: found
    assert judge(cands, ctx(LowCosineEmbedder()))[0] is True
    assert judge(cands, ctx(default_embedder()))[0] is False  # MiniLM: 0.21 < 0.48
    fitted = Policy().updated(answerable={"enabled": True, "floor": 0.1, "embedder": HashEmbedder.name})
    hashed = Context(question="q", store=MemoryStore(HR), policy=fitted, counter=default_counter(),
                     embedder=HashEmbedder(64))
    assert judge(cands, hashed)[0] is True and judge(cands[2:], hashed)[0] is False  # 0.05 < its own 0.1


def test_minilm_keeps_its_floor_and_no_warning():
    fl = floors(Policy(), default_embedder().name)
    assert fl.not_found == NOT_FOUND_FLOOR and fl.noise == 0.40 and fl.off is None
    b = assemble("Do you sell garden furniture?", store=MemoryStore(HR), budget=400)
    assert not b.found and not _events(b, "answerable", "off")


def test_a_calibrated_floor_applies_to_its_embedder_only():
    fitted = Policy().updated(answerable={"floor": 0.9, "embedder": HashEmbedder.name})
    b = assemble("How many weeks of parental leave?", store=MemoryStore(HR), embedder=HashEmbedder(64),
                 policy=fitted, budget=400)
    assert not b.found and "fitted for hash-bow" in _events(b, "floor", "not_found")[0]["reason"]
    # the same policy with another embedder: the floor is not carried over
    b = assemble("How many weeks of parental leave?", store=MemoryStore(HR), embedder=LowCosineEmbedder(),
                 policy=fitted, budget=400)
    assert b.found
    reason = _events(b, "answerable", "off")[0]["reason"]
    assert "hash-bow" in reason and "acme-embed-v1" in reason
    # a floor without an embedder is the user's own choice: it applies to any scorer
    assert floors(Policy().updated(answerable={"floor": 0.3}), "acme-embed-v1").not_found == 0.3


def test_an_explicit_pack_floor_still_decides_alone_for_any_embedder():
    fl = floors(Policy().updated(pack={"floor": 0.1}), "acme-embed-v1")
    assert fl.not_found is None and fl.noise == 0.1 and fl.off is None


def test_docket_ask_on_a_hash_store_says_the_gate_is_off_once(tmp_path: Path):
    from cli_run import run

    docs = tmp_path / "docs"
    docs.mkdir()
    for c in HR:
        (docs / f"{c.doc}.md").write_text(f"# {c.title}\n\n{c.text}\n")
    db = str(tmp_path / "s.db")
    assert run("index", str(docs), "--db", db, "--embedder", "hash").returncode == 0
    r = run("ask", "How many weeks of parental leave?", "--db", db, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["found"] is True
    assert sum("docket calibrate" in w for w in out["warnings"]) == 1
    r = run("ask", "How many weeks of parental leave?", "--db", db)
    text = " ".join(r.stdout.split())  # the console wraps long lines
    assert text.count("warning: no \"not found\" floor is known for embedder 'hash-bow'") == 1
    assert "docket calibrate --db STORE" in text


def _hr_docs(tmp_path: Path) -> Path:
    """Twelve short policy documents, each on its own subject."""
    docs = tmp_path / "hr"
    docs.mkdir()
    subjects = {
        "leave": "Employees receive sixteen weeks of paid parental leave after six months of continuous service.",
        "travel": "The daily per diem allowance covers meals, local transport and incidental expenses abroad.",
        "laptops": "Company laptops are replaced every four years by the central information technology desk.",
        "pension": "The employer matches pension contributions up to five percent of the gross annual salary.",
        "parking": "Visitors park in the north garage and register their licence plate at the reception desk.",
        "security": "Badges must be worn visibly inside the building and reported immediately when they are lost.",
        "training": "Each engineer may spend ten working days per year on external courses and certifications.",
        "remote": "Staff may work remotely three days a week after agreeing core hours with their manager.",
        "expenses": "Receipts for every claimed expense must be uploaded within thirty days of the purchase date.",
        "health": "Private health insurance covers dental treatment, physiotherapy and annual eye examinations.",
        "canteen": "The canteen serves vegetarian lunches daily and closes early on public holiday evenings.",
        "hiring": "Candidates complete two technical interviews and one conversation with the future team lead.",
    }
    for name, text in subjects.items():
        (docs / f"{name}.md").write_text(f"# {name.title()}\n\n{text} {text.replace('.', ' again.')}\n")
    return docs


def test_calibrate_on_a_hash_store_fits_a_floor_for_hash_bow(tmp_path: Path):
    from cli_run import run

    from docket.policy import load_policy

    db = str(tmp_path / "s.db")
    assert run("index", str(_hr_docs(tmp_path)), "--db", db, "--embedder", "hash").returncode == 0
    pol = tmp_path / "policy.toml"
    r = run("calibrate", "--db", db, "--write", str(pol), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["floor"]["embedder"] == "hash-bow" and out["floor"]["probes"] >= 10
    p = load_policy(pol)
    assert p.answerable.embedder == "hash-bow" and p.answerable.floor == out["floor"]["floor"]
    fl = floors(p, "hash-bow")
    assert fl.not_found == p.answerable.floor and fl.off is None
    # the gate is now on for this store, and silent about calibration
    r = run("ask", "How many weeks of parental leave do employees receive?", "--db", db, "--policy", str(pol), "--json")
    brief = json.loads(r.stdout)
    assert brief["found"] is True and not any("docket calibrate" in w for w in brief["warnings"])
    # the same deterministic sample gives the same floor
    again = json.loads(run("calibrate", "--db", db, "--json").stdout)
    assert again["floor"]["floor"] == out["floor"]["floor"]


def test_calibrate_on_a_store_too_small_says_what_to_do(tmp_path: Path):
    from cli_run import run

    docs = tmp_path / "one"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nShort.\n")
    db = str(tmp_path / "s.db")
    assert run("index", str(docs), "--db", db, "--embedder", "hash").returncode == 0
    r = run("calibrate", "--db", db)
    assert r.returncode == 2 and "usable probe question" in r.stderr and "labelled set" in r.stderr
