"""Where a first-sight `POST /v1/assemble` spends its CPU, stage by stage, in process (issue 21).

    .venv/bin/python benchmarks/service_stages.py [--requests 30] [--db benchmarks/out/service-10000.db]
    PYTHONPATH=/path/to/other/src .venv/bin/python benchmarks/service_stages.py   # another tree, same bodies

The app is `docket serve`'s (FastAPI, hash embedder, the SQLite store benchmarks/service_load.py
builds) driven by FastAPI's TestClient, with BLAS on one thread as `docket serve` holds it. Each
body holds 200 candidate records never sent before (service_load.first_sight_payloads). Stages
are timed with the CPU clock of the thread that runs them (the machine is shared: CPU time moves
far less with the load than wall time), median over the requests: the whole route's work,
parsing the records, the assembly, the embedding of texts, re-scoring, the trace's deferred
counts, the schema check of the response, its JSON, and the garbage collector (its CPU time and
collections a request). The wall-clock p50 of the whole request and of the same body re-sent are
printed too, the first-sight p95 / p99, every full collection's pause, the peak RSS and the load
average. The process's collector is handed over as `docket serve` hands it (the tree's
`freeze_startup_objects`), so the GC figures are the server's policy's.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import OUT  # noqa: E402
from service_load import build, first_sight_payloads  # noqa: E402

ACC: dict[str, float] = {}
FULL: list[float] = []  # wall seconds of each full (generation-2) collection, the policy's own included
CLOCK = time.thread_time


def timed(owner: Any, name: str, label: str) -> None:
    """Wrap `owner.name` to add its CPU time to ACC[label]."""
    inner: Callable[..., Any] = getattr(owner, name)

    def run(*args: Any, **kwargs: Any) -> Any:
        t = CLOCK()
        try:
            return inner(*args, **kwargs)
        finally:
            ACC[label] = ACC.get(label, 0.0) + CLOCK() - t

    setattr(owner, name, run)


def instrument() -> None:
    from fastapi.responses import JSONResponse

    import docket.rescore as rescore
    import docket.service.briefs as briefs
    import docket.service.responses as responses
    from docket.api import Session
    from docket.embed import HashEmbedder
    from docket.features import ChunkFeatures
    from docket.model import Trace
    from docket.moves import dedup, pack, versions
    from docket.service.state import ServiceState

    timed(briefs, "assemble_work", "route work (all below)")
    timed(briefs, "_candidates", "records -> candidates")
    timed(Session, "assemble", "assembly")
    timed(HashEmbedder, "embed", "  hash embedding")
    timed(rescore, "rescore_order", "  re-scoring")
    timed(versions, "resolve", "  versions (Move 1)")
    timed(versions, "_find_conflicts", "    of which conflicts")
    timed(ChunkFeatures, "statements", "    claims of the texts in a similar pair (Moves 1-2)")
    try:  # a tree with sketches (issue 21 decision 3): claims are split by PassageRead.read, not statements
        import docket.claims.compare as compare

        timed(compare, "sketch", "    sketches of the texts in a similar pair (Moves 1-2)")
        timed(compare.PassageRead, "read", "    claims split for a pair the sketches left open (Moves 1-2)")
    except AttributeError:
        pass
    timed(versions._Titles, "different_subjects", "    title tests of the similar pairs")
    if hasattr(versions._Titles, "different_mask"):  # a tree that tests the pairs as arrays (versions._to_compare)
        timed(versions._Titles, "different_mask", "    title tests of the similar pairs")
    timed(dedup, "collapse", "  duplicates (Move 2)")
    timed(pack, "pack", "  pack (Move 4)")
    timed(ServiceState, "brief_json", "brief JSON (trace read)")
    timed(Trace, "_settle", "  trace settle (deferred counts)")
    timed(responses, "check_body", "response schema check")
    timed(JSONResponse, "render", "response json.dumps")

    start: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            start["t"] = CLOCK()
            start["wall"] = time.perf_counter()
        else:
            ACC["garbage collector"] = ACC.get("garbage collector", 0.0) + CLOCK() - start.get("t", CLOCK())
            ACC["collections"] = ACC.get("collections", 0.0) + 1e-3  # printed as a count
            if info["generation"] == 2:
                FULL.append(time.perf_counter() - start.get("wall", time.perf_counter()))

    gc.callbacks.append(on_gc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--db", type=Path, default=OUT / "service-10000.db")
    ap.add_argument("--chunks", type=int, default=10_000, help="store size when --db must be built")
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, "blas")  # as `docket serve` holds BLAS (docket.blas.limit_process)
    if not args.db.exists():
        args.db.parent.mkdir(parents=True, exist_ok=True)
        build(str(args.db), args.chunks)
    from fastapi.testclient import TestClient

    import docket
    from docket.schemas import AssembleRequest
    from docket.server import create_app
    from docket.service.config import ServerConfig

    instrument()
    app = create_app(ServerConfig(db=str(args.db), embedder="hash", log_level="warning", create=False))
    take_over_gc(app)
    bodies = [json.dumps(b).encode() for b in first_sight_payloads(args.requests + 1)]
    head = {"content-type": "application/json"}
    rows: list[dict[str, float]] = []
    walls: list[float] = []
    resent: list[float] = []
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    with TestClient(app) as client:
        assert client.post("/v1/assemble", content=bodies[0], headers=head).status_code == 200  # warm
        for body in bodies[1:]:
            ACC.clear()
            t = time.perf_counter()
            r = client.post("/v1/assemble", content=body, headers=head)
            walls.append(time.perf_counter() - t)
            if r.status_code != 200:
                raise SystemExit(f"/v1/assemble answered {r.status_code}: {r.text[:300]}")
            rows.append(dict(ACC))
        for _ in range(10):
            t = time.perf_counter()
            client.post("/v1/assemble", content=bodies[1], headers=head)
            resent.append(time.perf_counter() - t)
    t = time.thread_time()
    for body in bodies[1:]:
        AssembleRequest.model_validate_json(body)
    parse = (time.thread_time() - t) / args.requests
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"docket from {Path(docket.__file__).parent}; {args.requests} first-sight requests of 200 records; "
          f"load average {' '.join(load0)} -> {' '.join(load1)}\n")
    print("| stage | CPU ms, median |")
    print("|---|---|")
    labels = [k for k in ACC_ORDER if any(k in r for r in rows)]
    for k in labels:
        v = statistics.median(r.get(k, 0.0) for r in rows)
        print(f"| {k} | {v * 1000:.0f} |" if k == "collections" else f"| {k} | {v * 1000:.2f} |")
    print(f"| request body -> AssembleRequest (pydantic, outside the route) | {parse * 1000:.2f} |")
    print(f"\nwall p50: first sight {statistics.median(walls) * 1000:.1f} ms, the same body re-sent "
          f"{statistics.median(resent) * 1000:.1f} ms")
    gc_total = sum(r.get("garbage collector", 0.0) for r in rows)
    print(f"garbage collector CPU over the {len(rows)} first-sight requests: {gc_total * 1000:.0f} ms "
          f"({gc_total * 1000 / max(len(rows), 1):.1f} ms a request, the full passes included)")
    walls.sort()
    print("first sight wall p95 / p99 / max: " + " / ".join(f"{walls[min(len(walls) - 1, int(q * len(walls)))] * 1000:.1f}"
                                                            for q in (0.95, 0.99, 1.0)) + " ms")
    print(f"full collections: {len(FULL)}, wall ms each: {', '.join(f'{x * 1000:.0f}' for x in FULL) or '-'}; "
          f"peak RSS {peak_rss_mb():.0f} MB; process CPU {time.process_time():.1f} s")


def take_over_gc(app: Any) -> None:
    """What `docket serve` does to the process's collector after warm-up, in either tree (before
    the policy the call took no app: it only froze the start-up objects)."""
    import inspect

    from docket.server import freeze_startup_objects

    if inspect.signature(freeze_startup_objects).parameters:
        freeze_startup_objects(app)
    else:
        freeze_startup_objects()  # type: ignore[call-arg]


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


ACC_ORDER = ["route work (all below)", "records -> candidates", "assembly", "  hash embedding", "  re-scoring",
             "  versions (Move 1)", "    of which conflicts", "    claims of the texts in a similar pair (Moves 1-2)",
             "    sketches of the texts in a similar pair (Moves 1-2)",
             "    claims split for a pair the sketches left open (Moves 1-2)", "    title tests of the similar pairs",
             "  duplicates (Move 2)", "  pack (Move 4)",
             "brief JSON (trace read)", "  trace settle (deferred counts)", "response schema check",
             "response json.dumps", "garbage collector", "collections"]


if __name__ == "__main__":
    main()
