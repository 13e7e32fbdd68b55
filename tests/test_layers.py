"""The layers of docs/architecture.md, enforced: no module imports a layer above its own, and no
import cycle. Imports inside functions count (they run on the request path too); imports under
`if TYPE_CHECKING:` do not (they never run). An exception is listed in EXCEPTIONS with its reason,
and docs/architecture.md names it too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

#: lowest first; a module belongs to the layer of its longest matching prefix (the exact name, or
#: a package followed by ".")
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("docket.errors", "docket.safeio", "docket.text", "docket.dates", "docket.tokens", "docket._unassigned14",
                    "docket.counting",
                    "docket.blas", "docket.claims", "docket.claims.words", "docket.claims.quantities",
                    "docket.claims.extract", "docket.claims.bounds", "docket.claims.compare", "docket.statuses",
                    "docket._latin_lookalikes", "docket.model", "docket.results", "docket.store.access",
                    "docket.embed", "docket.ingest.unicode", "docket.deadline")),
    ("formats", ("docket.brief.formats", "docket.brief.clean", "docket.brief.lookalikes",
                 "docket.brief._lookalikes_data")),
    ("features", ("docket.features", "docket.caches")),
    ("store", ("docket.store", "docket.io")),
    ("llm", ("docket.llm",)),
    ("ingest", ("docket.ingest",)),
    ("policy", ("docket.policy", "docket.presets", "docket.sizing",
                "docket.context", "docket.checks")),
    ("moves", ("docket.moves", "docket.rescore", "docket.answerable", "docket.reader")),
    ("brief", ("docket.brief", "docket.history")),
    ("assembly", ("docket.followup", "docket.steps", "docket.ranking", "docket.request", "docket.assemble",
                  "docket.modes", "docket.check")),
    ("session", ("docket.llm.answer", "docket.api", "docket.session_stores", "docket.timeouts", "docket.retrieve",
                 "docket.trace_store", "docket.trace_html",
                 "docket.keys", "docket.schemas", "docket.integrations", "docket.eval", "docket.demo")),
    ("surfaces", ("docket.server", "docket.service", "docket.http_guard", "docket.cli", "docket", "docket.__main__")),
]

#: (importer, imported) -> why the arrow is allowed for now (docs/architecture.md lists each)
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for p in (SRC / "docket").rglob("*.py"):
        parts = p.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


MODULES = _modules()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                if sub in MODULES:
                    out.add(sub)
                elif mod in MODULES:
                    out.add(mod)
    out.discard(name)
    return {m for m in out if m.startswith("docket")}


def layer_of(name: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if name == p or (p != "docket" and name.startswith(p + ".")):
                if best is None or len(p) > best[0]:
                    best = (len(p), i)
    if best is not None:
        return best[1]
    raise AssertionError(f"{name} is in no layer of tests/test_layers.py: add it (and to docs/architecture.md)")


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        layer_of(m)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for m, deps in sorted(GRAPH.items()):
        for d in sorted(deps):
            if layer_of(d) > layer_of(m) and (m, d) not in EXCEPTIONS and not (m == "docket" or d.startswith(m + ".")):
                upward.append(f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})")
    assert not upward, "upward imports (see docs/architecture.md):\n  " + "\n  ".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components (a few hundred modules: recursion is fine)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    graph = {m: {d for d in deps if (m, d) not in EXCEPTIONS} for m, deps in GRAPH.items()}
    assert not _cycles(graph), f"import cycles: {_cycles(graph)}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_moves_never_import_the_brief_and_stores_never_import_a_move() -> None:
    for m, deps in GRAPH.items():
        if m.startswith("docket.moves."):
            assert not any(d.startswith("docket.brief") for d in deps), f"{m} imports the brief layer: size through ctx.sizer"
        if m.startswith("docket.store."):
            assert not any(d.startswith(("docket.moves", "docket.brief", "docket.context")) for d in deps), m


def test_the_docs_name_every_layer_and_exception() -> None:
    text = DOCS.read_text()
    for name, _ in LAYERS:
        assert f"**{name}**" in text, f"docs/architecture.md does not describe the {name} layer"
    for (a, b) in EXCEPTIONS:
        assert f"`{a}` → `{b}`" in text, f"docs/architecture.md does not name the exception {a} → {b}"


def test_the_step_table_is_the_one_list_of_moves() -> None:
    from docket import steps
    from docket.policy import MOVE_NAMES

    switches = {s.switch for s in steps.STEPS if s.switch} | set(steps.SCREENS) | {"pack", "compress"}
    assert set(MOVE_NAMES) == switches
    for s in steps.STEPS:
        mod = MODULES.get(f"docket.moves.{s.name}")
        if s.name != "fit":
            assert mod is not None and f'MOVE = "{s.name}"' in mod.read_text(), \
                f"docket.moves.{s.name}.MOVE is not the step name {s.name!r}"


def test_a_switched_off_step_passes_the_passages_through(nimbus_store) -> None:
    from docket.assemble import assemble
    from docket.policy import Policy

    q = "Can I get a refund on my annual plan after 30 days?"
    off = assemble(q, store=nimbus_store, policy=Policy().with_moves_off("expand"), budget=400)
    assert off.found and not any(e.move == "expand" for e in off.trace)
