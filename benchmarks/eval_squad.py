"""'Not found' on SQuAD 2.0 (Normans + Rhine, 706 questions, 320 unanswerable): the best single
cosine floor against docket's answerability model, both judged on held-out questions.

    .venv/bin/python benchmarks/eval_squad.py [--llm URL --model NAME --limit N]

Candidates are the article's paragraphs ranked by MiniLM cosine. Held-out figures come from
5-fold cross-validation grouped by paragraph (no question is judged by a model fit on a
question about the same paragraph) and from the 2-fold split by article (train on Normans,
test on Rhine and back). With --llm, the model is also asked whether the best passages answer
the question (yes/no), alone and combined with the signals.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DOCKET_SHARED_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "benchmarks" / "out"

JUDGE = ("Passages:\n{passages}\n\nQuestion: {question}\n\nDo the passages state the answer to the question? "
         "Reply with one word: yes or no.")
# --judge extract: the model acts as a reader; "not found" when it says NONE or quotes words the
# passages do not contain (a reader that must copy cannot answer from thin air)
EXTRACT = ("Passages:\n{passages}\n\nQuestion: {question}\n\nCopy the shortest exact phrase from the passages "
           "that answers the question. If the passages do not answer it, reply exactly: NONE")


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def extract_says_answerable(reply: str, passages: str) -> bool:
    reply = reply.strip().strip('"').strip()
    if not reply or reply.upper().startswith("NONE"):
        return False
    return _norm(reply) in _norm(passages)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--judge", choices=("yesno", "extract"), default="yesno",
                    help="how the LLM is asked: a yes/no question, or as a reader that must copy the answer")
    ap.add_argument("--llm-sample", type=int, default=60, help="questions (half unanswerable) the LLM judges")
    args = ap.parse_args()


    from docket import answerable as A
    from docket.eval import calibrate as C
    from docket.eval import metrics as M
    from docket.eval.cache import eval_embedder
    from docket.eval.dataset import load_set
    from docket.eval.runner import prepare

    lset = load_set(SHARED / "squad-v2" / "dev-v2.0.subset.json").limit(args.limit)
    emb = eval_embedder()
    prepared = prepare(lset, emb)
    y = [p.item.answerable for p in prepared]
    tops = [p.query.ranked[0].score for p in prepared]
    by_para = [f"{p.item.meta['article']}#{p.item.meta['paragraph']}" for p in prepared]
    by_art = [str(p.item.meta["article"]) for p in prepared]
    X = C.signal_matrix(lset, emb)
    res: dict = {"n": len(y), "unanswerable": sum(not a for a in y)}
    res["floor_in_sample"] = C.fit_floor(tops, y)
    res["floor_cv_paragraph"] = C.cv_floor(tops, y, by_para, 5)
    res["floor_cv_article"] = C.cv_floor(tops, y, by_art, 2)
    res["model_cv_paragraph"] = C.fit_answerable(X, y, by_para, A.SIGNALS, folds=5)["cv"]
    res["model_cv_article"] = C.fit_answerable(X, y, by_art, A.SIGNALS, folds=2)["cv"]
    res["signal_auc"] = {n: M.auc(list(X[:, i]), y) for i, n in enumerate(A.SIGNALS)}
    if args.llm:
        from docket.eval.generation import make_generator

        gen = make_generator(args.llm, args.model)
        # a balanced sample (every k-th question of each class), judged by the LLM and by the
        # held-out floor and model, so the three are compared on the same questions
        pos = [i for i, a in enumerate(y) if a]
        neg = [i for i, a in enumerate(y) if not a]
        half = args.llm_sample // 2
        sample = pos[:: max(1, len(pos) // half)][:half] + neg[:: max(1, len(neg) // half)][:half]
        yes = {}
        for i in sample:
            p = prepared[i]
            passages = "\n\n".join(c.chunk.text for c in p.query.ranked[:2])
            if args.judge == "extract":
                msg = [{"role": "user", "content": EXTRACT.format(passages=passages, question=p.item.question)}]
                yes[i] = extract_says_answerable(gen.generate(msg, max_tokens=24), passages)
            else:
                msg = [{"role": "user", "content": JUDGE.format(passages=passages, question=p.item.question)}]
                yes[i] = gen.generate(msg, max_tokens=3).strip().lower().startswith("y")
        ys = [y[i] for i in sample]
        floor_pred = C.cv_floor_predictions(tops, y, by_para, 5)
        res["llm_sample"] = {
            "n": len(sample),
            "judge": args.judge,
            "llm_alone": M.confusion([not yes[i] for i in sample], [not a for a in ys]).to_json(),
            "floor_held_out_same_questions": M.confusion([floor_pred[i] for i in sample], [not a for a in ys]).to_json(),
            "llm_or_floor": M.confusion([(not yes[i]) or floor_pred[i] for i in sample], [not a for a in ys]).to_json(),
        }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "squad-notfound.json").write_text(json.dumps(res, indent=2), encoding="utf-8")

    def row(name: str, d: dict) -> str:
        f = lambda v: "–" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        return f"| {name} | {f(d.get('precision'))} | {f(d.get('recall'))} | {f(d.get('balanced_accuracy'))} | {f(d.get('accuracy'))} |"

    print(f"SQuAD 2.0 subset: {res['n']} questions, {res['unanswerable']} unanswerable\n")
    print("| decision ('not found' = positive) | precision | recall | balanced accuracy | accuracy |")
    print("|---|---|---|---|---|")
    print(row(f"best cosine floor {res['floor_in_sample']['floor']}, in sample (AUC {res['floor_in_sample']['auc']:.3f})",
              res["floor_in_sample"]["not_found"]))
    print(row("cosine floor, held out (5 folds by paragraph)", res["floor_cv_paragraph"]))
    print(row("cosine floor, held out (by article)", res["floor_cv_article"]))
    print(row(f"answerability model, held out (5 folds by paragraph, AUC {res['model_cv_paragraph']['auc']:.3f})",
              res["model_cv_paragraph"]))
    print(row(f"answerability model, held out (by article, AUC {res['model_cv_article']['auc']:.3f})", res["model_cv_article"]))
    if "llm_sample" in res:
        ls = res["llm_sample"]
        print(f"\nOn a balanced sample of {ls['n']} questions:\n")
        print("| decision ('not found' = positive) | precision | recall | balanced accuracy | accuracy |")
        print("|---|---|---|---|---|")
        how = ("LLM as a reader: NONE, or a quote the passages lack" if ls.get("judge") == "extract"
               else "LLM asked 'do the passages state the answer?'")
        print(row(f"{how} (top 2 passages)", ls["llm_alone"]))
        print(row("cosine floor, held out", ls["floor_held_out_same_questions"]))
        print(row("LLM says no OR below the floor", ls["llm_or_floor"]))
    print("\nsignal AUCs: " + ", ".join(f"{k} {v:.3f}" for k, v in res["signal_auc"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
