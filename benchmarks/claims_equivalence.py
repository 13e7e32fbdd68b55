"""The claims code of this tree against an older revision's, on every text of ../shared/data.

    .venv/bin/python benchmarks/claims_equivalence.py [--rev main] [--random-pairs 40000]

A change meant to make claims extraction or the conflict search cheaper must not change what
they decide. This loads `docket.claims` as it was at `--rev` (git show: the package, or the
single module `src/docket/claims.py` before issue 21 split it, e.g. 3deb547) next to the working
tree's `docket.claims`,
and compares on every distinct passage text of ../shared/data (paragraphs, contexts, adversarial
passages, evidence, questions, answers: 21,8xx texts):

- `claims(text)`: every claim's words, names, quantities, negation, sentence, subject, anaphora;
- `to_record` / `from_record`: the stored record, and the claims read back from it;
- `contradiction` (default overlap, overlap 0.3, anaphora off, with a sentence memo) and
  `restates` both ways (and this tree's `contradiction_read` / `restates_read` of unsplit
  passages, which split claims only where the sketches of docket.claims.bounds leave it open), on every pair of the paragraphs of each HotpotQA and MuSiQue question,
  the PoisonedRAG passages of each question, and `--random-pairs` random pairs (seeded).

Prints the counts that differ (all 0 when the two agree) and CPU seconds for each side's
claims; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
#: the JSON keys whose string values are passage-like texts
KEYS = {"paragraph_text", "text", "context", "adv_texts", "evidence", "claim_string", "answer_string", "question",
        "question_text"}


def _walk(x: Any, out: list[str]) -> None:
    if isinstance(x, dict):
        for k, v in x.items():
            if k in KEYS and isinstance(v, str):
                out.append(v)
            elif k in KEYS and isinstance(v, list) and all(isinstance(s, str) for s in v):
                out.extend(v)
            else:
                _walk(v, out)
    elif isinstance(x, list):
        for v in x:
            _walk(v, out)


def _load(p: Path) -> Any:
    if p.suffix == ".gz":
        with gzip.open(p, "rt", encoding="utf-8") as f:
            return json.load(f)
    if p.suffix == ".jsonl":
        return [json.loads(line) for line in p.open(encoding="utf-8") if line.strip()]
    return json.loads(p.read_text(encoding="utf-8"))


def texts() -> list[str]:
    out: list[str] = []
    for p in sorted(DATA.rglob("*")):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".gz"):
            _walk(_load(p), out)
    return sorted({t for t in out if t.strip()})


def groups() -> list[list[str]]:
    """Passages met together: the paragraphs of one question, one question's poisoned passages."""
    out = [[c["paragraph_text"] for c in r["contexts"]] for r in _load(DATA / "hotpotqa" / "dev250.jsonl")]
    out += [[p["paragraph_text"] for p in q["paragraphs"]] for q in _load(DATA / "musique" / "musique_train.json")]
    for name in ("nq.json", "msmarco.json"):
        out += [list(v["adv_texts"]) for v in _load(DATA / "poisonedrag" / name).values()]
    return out


def _git_show(rev: str, path: str) -> str | None:
    got = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return got.stdout if got.returncode == 0 else None


def reference(rev: str) -> ModuleType:
    """`docket.claims` at `rev`, imported as `claims_reference`: the single module
    `src/docket/claims.py` before issue 21 split it, else the package `src/docket/claims/` (its
    imports of `docket.claims.*` pointed at the copy)."""
    tmp = Path(tempfile.mkdtemp())
    single = _git_show(rev, "src/docket/claims.py")
    if single is not None:
        path = tmp / "claims_reference.py"
        path.write_text(single, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("claims_reference", path)
    else:
        pkg = tmp / "claims_reference"
        pkg.mkdir()
        for name in ("__init__", "words", "quantities", "extract", "compare", "bounds"):
            src = _git_show(rev, f"src/docket/claims/{name}.py")
            if src is None and name == "bounds":
                continue  # (sketches came in round 5 of issue 21: an older package has none)
            if src is None:
                raise SystemExit(f"{rev} has neither src/docket/claims.py nor src/docket/claims/{name}.py")
            (pkg / f"{name}.py").write_text(src.replace("docket.claims.", "claims_reference."), encoding="utf-8")
        spec = importlib.util.spec_from_file_location("claims_reference", pkg / "__init__.py",
                                                      submodule_search_locations=[str(pkg)])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["claims_reference"] = mod  # (dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def _plain(cs: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.words, c.names, tuple((q.value, q.unit, q.text, q.step, q.of) for q in c.quantities), c.negated,
             c.text, c.subject, c.anaphoric) for c in cs]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="main", help="the revision whose docket.claims is the reference (module or package)")
    ap.add_argument("--random-pairs", type=int, default=40_000)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import docket.claims as new

    old = reference(args.rev)
    all_texts = texts()
    spent: dict[str, list[float]] = {"old": [], "new": []}
    for side in ("old", "new", "new", "old"):  # timed apart, nothing kept, in an ABBA order
        mod = old if side == "old" else new
        t = time.process_time()
        for x in all_texts:
            mod.claims(x)
        spent[side].append(time.process_time() - t)
    t_old, t_new = min(spent["old"]), min(spent["new"])
    oc = {x: old.claims(x) for x in all_texts}
    nc = {x: new.claims(x) for x in all_texts}
    claims_differ = sum(_plain(oc[x]) != _plain(nc[x]) for x in all_texts)
    records_differ = sum(new.to_record(x, nc[x]) != old.to_record(x, oc[x])
                         or _plain(new.from_record(x, new.to_record(x, nc[x]))) != _plain(nc[x]) for x in all_texts)

    pairs = [(a, b) for g in groups() for i, a in enumerate(g) for b in g[i + 1:]]
    rnd = random.Random(21)
    pairs += [(rnd.choice(all_texts), rnd.choice(all_texts)) for _ in range(args.random_pairs)]
    diff = dict.fromkeys(("contradiction", "overlap 0.3", "anaphora off", "with memo", "restates"), 0)
    # this tree's reads over PassageRead (claims split only where the sketches leave a pair open)
    read = getattr(new.compare, "PassageRead", None)
    if read is not None:
        diff.update(dict.fromkeys(("contradiction, sketched first", "restates, sketched first"), 0))
    found = {"contradiction": 0, "restates": 0}
    memo_old: dict[Any, Any] = {}
    memo_new: dict[Any, Any] = {}
    for a, b in pairs:
        oa, ob, na, nb = oc[a], oc[b], nc[a], nc[b]
        why = old.contradiction(oa, ob)
        found["contradiction"] += why is not None
        diff["contradiction"] += why != new.contradiction(na, nb)
        diff["overlap 0.3"] += old.contradiction(oa, ob, 0.3) != new.contradiction(na, nb, 0.3)
        diff["anaphora off"] += old.contradiction(oa, ob, anaphora=False) != new.contradiction(na, nb, anaphora=False)
        diff["with memo"] += old.contradiction(oa, ob, memo=memo_old) != new.contradiction(na, nb, memo=memo_new)
        copies = (old.restates(oa, ob), old.restates(ob, oa))
        found["restates"] += any(copies)
        diff["restates"] += copies != (new.restates(na, nb), new.restates(nb, na))
        if read is not None:  # fresh reads: neither passage split, as on a first sight
            ra, rb = read(a, lambda a=a: new.claims(a)), read(b, lambda b=b: new.claims(b))
            diff["contradiction, sketched first"] += why != new.compare.contradiction_read(ra, rb)
            ra, rb = read(a, lambda a=a: new.claims(a)), read(b, lambda b=b: new.claims(b))
            diff["restates, sketched first"] += copies != (new.compare.restates_read(ra, rb),
                                                           new.compare.restates_read(rb, ra))

    print(f"reference: docket.claims at {args.rev}; data: {DATA}\n")
    print("| compared | items | differ | found by the reference |")
    print("|---|---|---|---|")
    print(f"| claims (words, names, quantities, negation, sentence, subject, anaphora) | {len(all_texts)} texts | "
          f"{claims_differ} | {sum(map(len, oc.values()))} claims |")
    print(f"| stored record, and claims read back | {len(all_texts)} texts | {records_differ} | |")
    for k, v in diff.items():
        shown = found.get(k.split(",")[0], "")
        print(f"| {k} | {len(pairs)} pairs | {v} | {shown} |")
    print(f"\nclaims of every text, CPU (the better of two runs each): reference {t_old:.2f} s, this tree "
          f"{t_new:.2f} s ({t_new / max(t_old, 1e-9):.2f}x)")
    return 1 if claims_differ or records_differ or any(diff.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
