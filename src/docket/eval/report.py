"""Markdown tables and PNG plots of an evaluation result (the `--json` document)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _num(v: Any) -> str:
    return "–" if v is None else f"{v:,.0f}"


def systems(result: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """name -> budget -> summary, docket first."""
    out = {"docket": result["budgets"]}
    out.update(result.get("compare", {}))
    return out


def knee(points: list[tuple[float, float]]) -> int | None:
    """Index of the knee of an increasing, flattening curve (largest distance above the chord,
    on axes scaled to 0..1); None with fewer than three points."""
    if len(points) < 3:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 == x0 or y1 == y0:
        return None
    d = [((y - y0) / (y1 - y0)) - ((x - x0) / (x1 - x0)) for x, y in points]
    i = max(range(len(d)), key=lambda k: d[k])
    return i if d[i] > 0 else None


def comparison_table(result: dict[str, Any]) -> str:
    budgets = list(result["budgets"])
    head = "| system | " + " | ".join(f"{b}: gold in prompt · mean / p95 tokens" for b in budgets) + " |"
    sep = "|---|" + "---|" * len(budgets)
    rows = []
    for name, by_b in systems(result).items():
        cells = []
        for b in budgets:
            s = by_b.get(b)
            if not s:
                cells.append("–")
                continue
            k = f" (k={s['k']})" if "k" in s else ""
            cells.append(f"{_pct(s['gold_in_prompt'])} · {_num(s['evidence_tokens_mean'])} / {_num(s['tokens_p95'])}{k}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *rows])


def docket_table(result: dict[str, Any]) -> str:
    has_cost = any("cost_per_1000_usd" in s for s in result["budgets"].values())
    cols = ["budget", "gold in prompt", "gold recall", "evidence p50", "evidence p95", "total p50", "total p95",
            "duplicate pairs", "conflict notes"]
    if has_cost:
        cols.append("USD / 1,000 queries")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for b, s in result["budgets"].items():
        row = [b, _pct(s["gold_in_prompt"]), _pct(s["gold_recall"]), _num(s["tokens_p50"]), _num(s["tokens_p95"]),
               _num(s["total_tokens_p50"]), _num(s["total_tokens_p95"]), _pct(s["duplicate_share"]),
               _pct(s.get("conflict_share"))]
        if has_cost:
            row.append(f"{s.get('cost_per_1000_usd', 0):.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def ablation_table(result: dict[str, Any]) -> str:
    abl = result.get("ablation")
    if not abl:
        return ""
    budgets = list(result["budgets"])
    lines = ["| switched off | " + " | ".join(f"{b}: gold in prompt (Δ) · mean tokens" for b in budgets) + " |",
             "|---|" + "---|" * len(budgets)]
    base = result["budgets"]
    lines.append("| (nothing: full docket) | " + " | ".join(
        f"{_pct(base[b]['gold_in_prompt'])} · {_num(base[b]['evidence_tokens_mean'])}" for b in budgets) + " |")
    for move, by_b in abl.items():
        cells = []
        for b in budgets:
            s = by_b[b]
            g, g0 = s["gold_in_prompt"], base[b]["gold_in_prompt"]
            delta = "" if g is None or g0 is None else f" ({100 * (g - g0):+.1f})"
            cells.append(f"{_pct(g)}{delta} · {_num(s['evidence_tokens_mean'])}")
        lines.append(f"| {move} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def not_found_table(result: dict[str, Any]) -> str:
    rows = []
    for name, by_b in systems(result).items():
        for b, s in by_b.items():
            nf = s.get("not_found")
            if nf:
                rows.append(f"| {name} | {b} | {_pct(nf['precision'])} | {_pct(nf['recall'])} | "
                            f"{_pct(nf['balanced_accuracy'])} |")
    if not rows:
        return ""
    return "\n".join(["| system | budget | not-found precision | not-found recall | balanced accuracy |",
                      "|---|---|---|---|---|", *rows])


def gate_table(result: dict[str, Any]) -> str:
    """docket's not-found gate per budget: its cost (answerable questions refused, gold lost) next
    to its gain (unanswerable questions caught)."""
    rows = []
    for b, s in result.get("budgets", {}).items():
        if "false_not_found" not in s:
            continue
        on, off = s.get("gold_in_prompt"), s.get("gold_in_prompt_ungated")
        delta = "" if on is None or off is None else f" ({100 * (on - off):+.1f})"
        nf = s.get("not_found")
        rows.append(f"| {b} | {_pct(s['false_not_found'])} | {_pct(on)}{delta} | {_pct(off)} | "
                    f"{_pct(nf['recall']) if nf else '–'} |")
    if not rows:
        return ""
    return "\n".join(["| budget | false not found (answerable) | gold in prompt, gate on | gate off | "
                      "unanswerable caught |", "|---|---|---|---|---|", *rows])


def markdown(result: dict[str, Any], plot: str | None = None) -> str:
    st = result.get("settings", {})
    parts = [
        f"# docket eval: {result['set']} ({result['n']} questions)",
        "",
        f"Ranking: cosine ({st.get('embedder', '?')}); tokens: {st.get('counter', '?')}; floor {st.get('floor')}; "
        f"duplicate threshold {st.get('duplicate_threshold')}; rescore {'on' if st.get('rescore') else 'off'}; "
        f"answerability model {'on' if st.get('answerable') else 'off'}.",
        "",
        "Gold in prompt = every gold chunk of the question wholly inside the final prompt. Evidence tokens = the "
        "documents block as sent (docket: tags and headers included).",
        "",
        "## docket per budget",
        "",
        docket_table(result),
    ]
    if result.get("compare"):
        parts += ["", "## Side by side (same candidates, same token counter)", "", comparison_table(result)]
    if plot:
        parts += ["", f"![gold in prompt against mean evidence tokens]({plot})"]
    abl = ablation_table(result)
    if abl:
        parts += ["", "## Ablation: each move switched off in turn", "", abl]
    nf = not_found_table(result)
    if nf:
        parts += ["", '## "Not found"', "", nf]
    gt = gate_table(result)
    if gt:
        parts += ["", "## The not-found gate: cost and gain", "", gt]
    return "\n".join(parts) + "\n"


def plot(result: dict[str, Any], path: str | Path) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover
        from docket.errors import UnavailableError

        raise UnavailableError("plots need matplotlib: pip install matplotlib") from e
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for name, by_b in systems(result).items():
        pts = [(s["evidence_tokens_mean"], s["gold_in_prompt"]) for s in by_b.values() if s.get("gold_in_prompt") is not None]
        if not pts:
            continue
        xs, ys = zip(*pts)
        lw = 2.6 if name == "docket" else 1.3
        ax.plot(xs, [100 * y for y in ys], marker="o", lw=lw, label=name)
        if name == "docket":
            k = knee(list(pts))
            if k is not None:
                ax.scatter([xs[k]], [100 * ys[k]], s=180, facecolors="none", edgecolors="black", zorder=5)
                ax.annotate("knee", (xs[k], 100 * ys[k]), textcoords="offset points", xytext=(8, -14))
    ax.set_xlabel("mean evidence tokens per question")
    ax.set_ylabel("gold in prompt (%)")
    ax.set_title(f"{result['set']}: gold in prompt against evidence tokens")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def write_report(result: dict[str, Any], outdir: str | Path) -> Path:
    d = Path(outdir)
    d.mkdir(parents=True, exist_ok=True)
    png = plot(result, d / f"{result['set']}-gold-vs-tokens.png")
    md = d / f"{result['set']}.md"
    md.write_text(markdown(result, png.name), encoding="utf-8")
    return md
