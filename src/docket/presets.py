"""Per-model budget presets: the input target, the answer reservation, the context window and the
token counter for a named model, from `docket/data/presets.toml` (every figure with its source
and the date it was recorded).

A preset only fills numbers the policy already has (`pack.input_target`, `pack.answer_reserve`,
`model.context_window`, `model.tokenizer`); nothing downstream knows presets exist. Where the
model's own tokenizer does not ship offline, the counter is a stand-in and the brief says so.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from docket.errors import InputError
from docket.tokens import COUNTERS, TokenCounter, counter_named

if TYPE_CHECKING:
    from docket.policy import Policy

_FIELDS = ("label", "context_window", "system_rules", "evidence_min", "evidence_max", "question", "answer_reserve",
           "input_target", "tokenizer", "tokenizer_exact", "source", "checked")


@dataclass(frozen=True)
class Preset:
    name: str
    label: str
    context_window: int
    system_rules: int
    evidence_min: int
    evidence_max: int
    question: int
    answer_reserve: int
    input_target: int
    tokenizer: str
    tokenizer_exact: bool
    source: str
    checked: str

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in ("name", *_FIELDS)}


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    return tomllib.loads(resources.files("docket").joinpath("data/presets.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def presets() -> dict[str, Preset]:
    """Every shipped preset by name (the data file is validated as it is read)."""
    raw = _raw()
    out: dict[str, Preset] = {}
    for name, rec in raw.items():
        if name == "embedders":
            continue  # the embedders' floors (embedder_presets), not a model
        missing = [f for f in _FIELDS if f not in rec]
        if missing or set(rec) - set(_FIELDS):
            raise ValueError(f"presets.toml [{name}]: missing {missing} or unknown {sorted(set(rec) - set(_FIELDS))}")
        if rec["tokenizer"] not in COUNTERS:
            raise ValueError(f"presets.toml [{name}]: tokenizer {rec['tokenizer']!r} does not ship offline")
        out[name] = Preset(name=name, **rec)
    return out


def preset_names() -> tuple[str, ...]:
    return tuple(presets())


def get_preset(name: str, field: str = "model.preset") -> Preset:
    try:
        return presets()[name]
    except KeyError:
        raise InputError(f"unknown model preset {name!r}; known: {', '.join(preset_names())}", field=field) from None


def preset_values(name: str) -> dict[str, dict[str, Any]]:
    """The policy values a preset sets, by section."""
    p = get_preset(name)
    return {"pack": {"input_target": p.input_target, "answer_reserve": p.answer_reserve},
            "model": {"preset": name, "context_window": p.context_window, "tokenizer": p.tokenizer}}


def fill_from_preset(data: dict[str, Any]) -> dict[str, Any]:
    """Raw policy data (from TOML) with the preset's values filled in where the file sets none:
    a value written in the file wins over the preset."""
    model = data.get("model")
    if not isinstance(model, dict) or model.get("preset") not in presets():
        return data  # no preset, or an unknown one (the validator names it, with the file)
    values = preset_values(model["preset"])
    out = dict(data)
    for section, fields in values.items():
        current = out.get(section)
        if current is not None and not isinstance(current, dict):
            continue  # the validator names the bad section
        merged = dict(fields) | dict(current or {})
        out[section] = merged
    return out


def apply_preset(policy: Policy, name: str) -> Policy:
    """`--model-preset NAME`: the preset's four figures replace the policy's (the flag is the
    later, more specific instruction); `--budget` still overrides the evidence budget."""
    values = preset_values(name)
    return policy.updated(**values)


def counter_for(policy: Policy) -> TokenCounter:
    """The token counter the policy names (`model.tokenizer`)."""
    return counter_named(policy.model.tokenizer)


def tokenizer_report(policy: Policy, counter: TokenCounter) -> dict[str, Any]:
    """What the brief says about its counts: which counter, for which model, and whether it is the
    model's own tokenizer or a stand-in."""
    name = policy.model.preset
    out: dict[str, Any] = {"counter": counter.name}
    if name is None:
        out["exact"] = None  # no model named: exact for the GPT-4o family, a stand-in for others
        return out
    p = get_preset(name)
    exact = p.tokenizer_exact and counter.name == p.tokenizer
    out |= {"model": p.label, "preset": name, "exact": exact}
    if not exact:
        out["note"] = f"{counter.name} is a stand-in for {p.label}'s tokenizer, which does not ship offline"
    return out


# --- embedders ------------------------------------------------------------------------------------

_EMB_FIELDS = ("label", "not_found_floor", "noise_floor", "source", "checked")


@dataclass(frozen=True)
class EmbedderPreset:
    """The floors fitted for one embedder's cosines. None: no floor carries for this embedder
    (the gate is off until `docket calibrate` fits one on the user's own store)."""

    name: str
    label: str
    not_found_floor: float | None
    noise_floor: float | None
    source: str
    checked: str


@lru_cache(maxsize=1)
def embedder_presets() -> dict[str, EmbedderPreset]:
    """The shipped embedders' floors by embedder name (`Embedder.name`, as the store records it)."""
    out: dict[str, EmbedderPreset] = {}
    for name, rec in _raw().get("embedders", {}).items():
        unknown = set(rec) - set(_EMB_FIELDS)
        missing = [f for f in ("label", "source", "checked") if f not in rec]
        if unknown or missing:
            raise ValueError(f"presets.toml [embedders.{name!r}]: missing {missing} or unknown {sorted(unknown)}")
        floors = {f: rec.get(f) for f in ("not_found_floor", "noise_floor")}
        for f, v in floors.items():
            if v is not None and not isinstance(v, (int, float)):
                raise ValueError(f"presets.toml [embedders.{name!r}]: {f} must be a number, got {v!r}")
        out[name] = EmbedderPreset(name=name, label=rec["label"], source=rec["source"], checked=rec["checked"],
                                   not_found_floor=None if floors["not_found_floor"] is None else float(floors["not_found_floor"]),
                                   noise_floor=None if floors["noise_floor"] is None else float(floors["noise_floor"]))
    return out


def embedder_preset(name: str | None) -> EmbedderPreset | None:
    """The shipped floors for the embedder named `name`; None for an embedder docket does not ship."""
    return embedder_presets().get(name) if name is not None else None
