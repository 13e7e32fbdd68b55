"""The labelled-set format `docket eval` reads, and loaders that turn public sets into it.

One JSON object per line (see docs/eval.md):

    {"id": "q1",
     "question": "Can I get a refund on my annual plan after 30 days?",
     "candidates": [ {chunk record}, ... ],        # the pool: full chunk records (docs/store.md)
     "scores": [0.71, 0.64, ...],                  # optional: your ranker's scores, parallel to candidates
     "gold": ["pol3-4", "pol3-5"],                 # chunk ids that must ALL reach the prompt
     "answers": ["15%", "fifteen percent"],        # reference answers (string match)
     "answerable": true,                           # false: the pool does not answer it
     "as_of": "2026-06-01"}                        # optional

Instead of `candidates`, a line may give `"store": "chunks.jsonl"` (a path relative to the set
file) and optionally `"candidate_ids": [...]`; without ids every chunk of the store is a
candidate. Without `scores`, every system gets the same ranking: cosine to the question with
the default embedder.

Loaders for hotpotqa, musique, squad-v2, bipia and poisonedrag are picked by `load_set(path)`,
which recognises a shared-data file by its format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any

from docket.errors import InputError
from docket.io import iter_jsonl, load_chunks
from docket.model import Chunk, parse_chunk
from docket.safeio import check_input, clean_question, decode, load_json, loads_json, shown
from docket.store.base import MemoryStore

FORMATS = ("docket", "hotpotqa", "musique", "squad-v2", "bipia", "poisonedrag")


@dataclass
class Item:
    """One labelled question."""

    id: str
    question: str
    chunks: list[Chunk]
    gold: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    answerable: bool = True
    scores: list[float] | None = None
    as_of: Date | None = None
    #: an injection planted in the pool: {"kind", "chunk_id", "instruction"/"incorrect", ...}
    attack: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "candidates": [c.to_record() for c in self.chunks],
            "gold": self.gold,
            "answers": self.answers,
            "answerable": self.answerable,
        }
        if self.scores is not None:
            out["scores"] = self.scores
        if self.as_of is not None:
            out["as_of"] = self.as_of.isoformat()
        if self.attack is not None:
            out["attack"] = self.attack
        if self.meta:
            out["meta"] = self.meta
        return out


@dataclass
class LabelledSet:
    name: str
    items: list[Item]
    format: str = "docket"
    #: one store shared by all items (neighbours, versions); None = each item's pool is its store
    store: MemoryStore | None = None
    _stores: dict[str, MemoryStore] = field(default_factory=dict, repr=False)
    #: what the loader noticed but did not refuse (e.g. gold chunks outside the pool); printed by the CLI
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.items)

    def store_for(self, item: Item) -> MemoryStore:
        if self.store is not None:
            return self.store
        st = self._stores.get(item.id)
        if st is None:
            st = MemoryStore(item.chunks)
            if len(self._stores) < 4096:
                self._stores[item.id] = st
        return st

    def limit(self, n: int | None) -> LabelledSet:
        if n is None or n >= len(self.items):
            return self
        return LabelledSet(self.name, self.items[:n], self.format, self.store, warnings=list(self.warnings))

    @property
    def has_unanswerable(self) -> bool:
        return any(not it.answerable for it in self.items)

    def write_jsonl(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for it in self.items:
                f.write(json.dumps(it.to_record(), ensure_ascii=False) + "\n")


# --- detection --------------------------------------------------------------------------------


def detect_format(path: str | Path) -> str:
    """Recognise a labelled set or one of the shared public sets by its content."""
    p = Path(path)
    if p.is_dir():
        if any((p / sub / "test.jsonl").exists() for sub in ("email", "table", "code")):
            return "bipia"
        raise InputError("is a directory but not a BIPIA benchmark folder", where=str(p))
    check_input(p)
    with open(p, "rb") as f:
        raw = f.readline(1 << 22)
        while raw and not raw.strip():
            raw = f.readline(1 << 22)
    if not raw:
        raise InputError("is empty: it holds no questions", where=str(p))
    first = decode(raw, f"{p}:1") if raw.endswith(b"\n") or len(raw) < 1 << 22 else ""
    head = first.lstrip()
    if head.startswith("{") and first.rstrip().endswith("}"):
        try:
            rec = loads_json(first, f"{p}:1")
        except InputError:
            rec = None
        if isinstance(rec, dict):
            if "question_text" in rec and "contexts" in rec:
                return "hotpotqa"
            if "question" in rec and ("candidates" in rec or "store" in rec or "candidate_ids" in rec):
                return "docket"
            if "context" in rec and "question" in rec and "ideal" in rec:
                return "bipia"
            if "candidates" in rec or "candidate_ids" in rec:  # docket's format with its question missing or
                return "docket"  # misspelt: the loader names the field, where "format not recognised" did not
    try:
        data = load_json(p)
    except InputError as e:
        if "valid JSON" not in e.detail:
            raise
        raise InputError(
            "is neither a docket labelled set (JSONL) nor a known public set (hotpotqa, musique, squad-v2, bipia, poisonedrag)",
            where=str(p),
        ) from None
    if isinstance(data, list) and data and isinstance(data[0], dict) and "paragraphs" in data[0]:
        return "musique"
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return "squad-v2"
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "adv_texts" in v for v in list(data.values())[:3]):
        return "poisonedrag"
    raise InputError("format not recognised (see docs/eval.md for the labelled-set format)", where=str(p))


def load_set(path: str | Path, fmt: str | None = None, **options: Any) -> LabelledSet:
    """Load a labelled set; `fmt` None means detect it."""
    forced = fmt is not None
    fmt = fmt or detect_format(path)
    loaders = {
        "docket": load_docket,
        "hotpotqa": load_hotpotqa,
        "musique": load_musique,
        "squad-v2": load_squad_v2,
        "bipia": load_bipia,
        "poisonedrag": load_poisonedrag,
    }
    if fmt not in loaders:
        raise InputError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}", field="format")
    check_input(path, "any")
    try:
        lset = loaders[fmt](path, **options)  # type: ignore[operator]
    except InputError as e:
        if forced and e.where == str(path):
            raise InputError(f"{e.detail} (read as {fmt}: check the file or --set-format)", where=e.where,
                             field=e.field) from None
        raise
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as e:
        # a public set's loader reads the published layout; anything else is not that set
        what = f"missing key {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {e}"
        raise InputError(f"is not a valid {fmt} file ({what}); check the file or --set-format", where=str(path)) from None
    if not lset.items:
        raise InputError("holds no questions", where=str(path))
    return lset


# --- docket's own format -------------------------------------------------------------------------


def _str_list(rec: dict[str, Any], key: str, where: str, what: str) -> list[str]:
    v = rec.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise InputError(f"must be a list of {what}, got {shown(v)}", where=where, field=key)
    return v


def _scores(rec: dict[str, Any], n: int, where: str) -> list[float] | None:
    scores = rec.get("scores")
    if scores is None:
        return None
    if not isinstance(scores, list) or len(scores) != n:
        raise InputError(f"must be a list of {n} numbers, parallel to the candidates", where=where, field="scores")
    for i, x in enumerate(scores):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise InputError(f"must be a finite number, got {shown(x)}", where=where, field=f"scores[{i}]")
    return [float(x) for x in scores]


def load_docket(path: str | Path) -> LabelledSet:
    """A docket labelled set: every field of every line checked, the line named on error."""
    p = Path(path)
    items: list[Item] = []
    stores: dict[Path, list[Chunk]] = {}
    shared: MemoryStore | None = None
    ids: dict[str, int] = {}
    missing_gold: list[str] = []
    for n, rec in iter_jsonl(p):
        where = f"{p}:{n}"
        if not isinstance(rec, dict):
            raise InputError("expected a JSON object", where=where)
        q = rec.get("question")
        if not isinstance(q, str) or not q.strip():
            raise InputError("is required: a non-empty string", where=where, field="question")
        clean_question(q)  # a question of only control characters would be scored as noise
        if "candidates" in rec:
            cands = rec["candidates"]
            if not isinstance(cands, list):
                raise InputError("must be a list of chunk records", where=where, field="candidates")
            chunks = [parse_chunk(c, where=f"{where} candidate {i}") for i, c in enumerate(cands)]
        elif "store" in rec:
            if not isinstance(rec["store"], str) or not rec["store"].strip():
                raise InputError("must be the path of a chunk JSONL file, relative to the set", where=where, field="store")
            sp = (p.parent / rec["store"]).resolve()
            if sp not in stores:
                stores[sp] = load_chunks(sp)
                shared = MemoryStore(stores[sp]) if len(stores) == 1 else None
            by_id = {c.id: c for c in stores[sp]}
            if rec.get("candidate_ids") is None:
                chunks = list(stores[sp])
            else:
                wanted = _str_list(rec, "candidate_ids", where, "chunk ids")
                missing = [i for i in wanted if i not in by_id]
                if missing:
                    raise InputError(f"ids not in the store: {missing[:5]}", where=where, field="candidate_ids")
                chunks = [by_id[i] for i in wanted]
        else:
            raise InputError("needs 'candidates' (chunk records) or 'store' (a chunk JSONL path)", where=where)
        seen: set[str] = set()
        for c in chunks:
            if c.id in seen:
                raise InputError(f"id {shown(c.id)} appears twice in the pool", where=where, field="candidates")
            seen.add(c.id)
        scores = _scores(rec, len(chunks), where)
        gold = _str_list(rec, "gold", where, "chunk ids")
        absent = [g for g in gold if g not in seen]
        if absent and "store" in rec and "candidates" not in rec:
            unknown = [g for g in absent if g not in by_id]
            if unknown:
                raise InputError(f"ids not in the store: {unknown[:5]}", where=where, field="gold")
        if absent:
            missing_gold.append(f"{where} ({', '.join(absent[:3])})")
        answers = _str_list(rec, "answers", where, "strings")
        answerable = rec.get("answerable", bool(gold))
        if not isinstance(answerable, bool):
            raise InputError(f"must be true or false, got {shown(answerable)}", where=where, field="answerable")
        as_of = rec.get("as_of")
        try:
            as_of_d = Date.fromisoformat(as_of) if as_of else None
        except (TypeError, ValueError):
            raise InputError(f"must be an ISO date, got {shown(as_of)}", where=where, field="as_of") from None
        meta = rec.get("meta", {})
        if not isinstance(meta, dict):
            raise InputError(f"must be an object, got {shown(meta)}", where=where, field="meta")
        attack = rec.get("attack")
        if attack is not None and not isinstance(attack, dict):
            raise InputError(f"must be an object, got {shown(attack)}", where=where, field="attack")
        qid = rec.get("id", n)
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
            raise InputError(f"must be a non-empty string, got {shown(qid)}", where=where, field="id")
        if str(qid) in ids:
            raise InputError(f"{shown(str(qid))} is used by line {ids[str(qid)]} too; ids must be unique", where=where,
                             field="id")
        ids[str(qid)] = n
        items.append(
            Item(
                id=str(qid),
                question=q,
                chunks=chunks,
                gold=gold,
                answers=answers,
                answerable=answerable,
                scores=scores,
                as_of=as_of_d,
                attack=attack,
                meta=meta,
            )
        )
    out = LabelledSet(p.stem, items, "docket", shared)
    if missing_gold:
        out.warnings.append(f"{len(missing_gold)} question(s) name gold chunks that are not in their pool, so they can "
                            f"never be covered (a retrieval miss, or a typo): {'; '.join(missing_gold[:3])}"
                            + (" ..." if len(missing_gold) > 3 else ""))
    return out


# --- public sets -------------------------------------------------------------------------------


def _para_chunk(cid: str, title: str, text: str, *, doc: str | None = None, position: int | None = None, **kw: Any) -> Chunk:
    rec: dict[str, Any] = {"id": cid, "doc": doc or cid, "text": text, "title": title}
    if position is not None:
        rec["position"] = position
    rec.update(kw)
    return parse_chunk(rec, where=cid)


def load_hotpotqa(path: str | Path, drop_gold: bool = False) -> LabelledSet:
    """HotpotQA distractor setting: 10 paragraphs, the `is_supporting` ones are gold.

    `drop_gold=True` removes the supporting paragraphs, making every question unanswerable
    (for floor tuning)."""
    items = []
    for _, rec in iter_jsonl(path):
        qid = rec["question_id"]
        chunks, gold = _paragraph_chunks(qid, rec["contexts"], "id", drop_gold)
        answers = [s for a in rec.get("answers_objects", []) for s in a.get("spans", [])]
        items.append(Item(qid, rec["question_text"], chunks, gold, answers, answerable=not drop_gold))
    return LabelledSet(Path(path).stem, items, "hotpotqa")


def _paragraph_chunks(qid: str, paragraphs: list[dict[str, Any]], id_key: str, drop_gold: bool) -> tuple[list[Chunk], list[str]]:
    """HotpotQA and MuSiQue paragraphs as one chunk each; the `is_supporting` ones are gold (or,
    with `drop_gold`, left out)."""
    chunks, gold = [], []
    for para in paragraphs:
        if drop_gold and para.get("is_supporting"):
            continue
        cid = f"{qid}-{para[id_key]}"
        chunks.append(_para_chunk(cid, para["title"], para["paragraph_text"]))
        if para.get("is_supporting"):
            gold.append(cid)
    return chunks, gold


def load_musique(path: str | Path, drop_gold: bool = False) -> LabelledSet:
    """MuSiQue-Ans: 20 paragraphs, 2-4 supporting ones are gold."""
    data = load_json(path)
    items = []
    for rec in data:
        qid = rec["id"]
        chunks, gold = _paragraph_chunks(qid, rec["paragraphs"], "idx", drop_gold)
        answers = [rec["answer"], *rec.get("answer_aliases", [])]
        items.append(
            Item(qid, rec["question"], chunks, gold, answers, answerable=bool(rec.get("answerable", True)) and not drop_gold)
        )
    return LabelledSet(Path(path).stem, items, "musique")


def load_squad_v2(path: str | Path) -> LabelledSet:
    """SQuAD 2.0: candidates are the article's paragraphs (one chunk each, in article order).

    The gold chunk is the paragraph the question was written on; `is_impossible` questions are
    unanswerable (gold empty). One store per article, so neighbours exist for Move 3."""
    data = load_json(path)
    items = []
    all_chunks: list[Chunk] = []
    for a_i, art in enumerate(data["data"]):
        title = art["title"]
        art_chunks = [
            _para_chunk(f"a{a_i}-p{p_i}", title.replace("_", " "), para["context"], doc=title, position=p_i)
            for p_i, para in enumerate(art["paragraphs"])
        ]
        all_chunks.extend(art_chunks)
        for p_i, para in enumerate(art["paragraphs"]):
            for qa in para["qas"]:
                impossible = bool(qa.get("is_impossible"))
                answers = list(dict.fromkeys(a["text"] for a in qa.get("answers", [])))
                items.append(
                    Item(
                        qa["id"],
                        qa["question"],
                        art_chunks,
                        [] if impossible else [art_chunks[p_i].id],
                        answers,
                        answerable=not impossible,
                        meta={"article": title, "paragraph": p_i},
                    )
                )
    return LabelledSet(Path(path).stem, items, "squad-v2", MemoryStore(all_chunks))


def _bipia_attacks(root: Path, kind: str) -> list[tuple[str, str]]:
    name = "code_attack_train.json" if kind == "code" else "text_attack_train.json"
    f = root / name
    if not f.exists():
        return []
    data = load_json(f)
    return [(cat, ins) for cat, lst in data.items() for ins in lst]


def load_bipia(path: str | Path, task: str = "email", split: str = "test", with_attacks: bool = True) -> LabelledSet:
    """BIPIA: each context (an email, a table, code) is one chunk from an external sender; the
    attack instruction is planted at its end (BIPIA's 'end' position). Attacks cycle through all
    categories. `path` is the bipia folder or one of its context files."""
    p = Path(path)
    root = p if p.is_dir() else p.parent.parent
    ctx_file = p if p.is_file() else root / task / f"{split}.jsonl"
    kind = ctx_file.parent.name
    attacks = _bipia_attacks(root, kind) if with_attacks else []
    items = []
    for n, (_, rec) in enumerate(iter_jsonl(ctx_file)):
        ctx = rec["context"]
        if isinstance(ctx, list):
            ctx = "\n".join(ctx)
        question = rec["question"]
        if isinstance(question, list):
            question = "\n".join(question)
        if kind == "code" and rec.get("error"):
            question = "Fix this error:\n" + "\n".join(rec["error"])
        attack = None
        text = ctx
        if attacks:
            cat, ins = attacks[n % len(attacks)]
            text = f"{ctx}\n{ins}"
            attack = {"kind": "bipia", "category": cat, "instruction": ins, "chunk_id": f"{kind}-{n}"}
        ideal = rec.get("ideal", "")
        chunk = _para_chunk(f"{kind}-{n}", f"{kind} {n}", text, status="user-generated", source_type=kind)
        items.append(
            Item(
                f"{kind}-{n}",
                question.removeprefix("Q: "),
                [chunk],
                [chunk.id],
                [ideal] if isinstance(ideal, str) and ideal and ideal != "unknown" else [],
                answerable=True,
                attack=attack,
                meta={"clean_text": ctx},
            )
        )
    return LabelledSet(f"bipia-{kind}", items, "bipia")


def load_poisonedrag(path: str | Path, untrusted: bool = True) -> LabelledSet:
    """PoisonedRAG: 5 adversarial passages per question argue for the incorrect answer.

    The shared files hold no clean passage, so the loader adds one short synthetic reference
    passage stating the correct answer ("Reference: the answer to <q> is <a>."): it is the gold
    chunk. The adversarial passages are marked `trust: untrusted` (web content) unless
    `untrusted=False`; say which in any figure you report, since the trust mark, not the fence,
    is what can help against passages that carry no instruction."""
    data = load_json(path)
    items = []
    for key, rec in data.items():
        q = rec["question"]
        ref = _para_chunk(
            f"{key}-ref", "Reference", f"Reference answer to the question '{q}': {rec['correct answer']}.",
            source_type="reference", trust="trusted",
        )
        advs = [
            _para_chunk(f"{key}-adv{i}", "Web page", t, source_type="web", trust="untrusted" if untrusted else "trusted")
            for i, t in enumerate(rec["adv_texts"])
        ]
        items.append(
            Item(
                key, q, [ref, *advs], [ref.id], [rec["correct answer"]], answerable=True,
                attack={"kind": "poisonedrag", "incorrect": rec["incorrect answer"], "chunk_ids": [a.id for a in advs]},
            )
        )
    return LabelledSet(Path(path).stem, items, "poisonedrag")


def concat_sets(sets: Iterable[LabelledSet], name: str) -> LabelledSet:
    items = [it for s in sets for it in s.items]
    return LabelledSet(name, items)
