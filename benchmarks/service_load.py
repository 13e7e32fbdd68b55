"""Load test of `docket serve` on loopback: throughput and latency of /v1/assemble (200 candidates)
and /v1/ask at several concurrencies, against a large SQLite store and PostgreSQL, while a second
process keeps indexing into the same store. Bounded: a fixed number of requests per cell and a
time limit per cell; it stops by itself and stops every process it started.

    .venv/bin/python benchmarks/service_load.py --chunks 100000 --backends sqlite,postgres
    .venv/bin/python benchmarks/service_load.py --chunks 10000 --requests 100 --concurrency 1,8
    .venv/bin/python benchmarks/service_load.py --chunks 10000 --backends sqlite --concurrency 1 --first-sight 60
    .venv/bin/python benchmarks/service_load.py --chunks 10000 --backends sqlite --concurrency 2,4 --first-sight 40 --workers 2
    .venv/bin/python benchmarks/service_load.py --chunks 100000 --backends sqlite --concurrency 1 --first-sight-ask 150

The store is built once per size (cached under benchmarks/out/) from the paragraphs of
../shared/data, as benchmarks/store_speed.py builds it; `--embedder hash` (the default) keeps the
100k build to a minute; with it the question embedding costs ~0, so the MiniLM cost per
question is measured separately and printed beside the figures. Only 127.0.0.1 is contacted.
`--workers N` starts `docket serve --workers N`; `--serve-args` passes more options (an A/B of
one tree: `--serve-args=--no-gc-freeze`). `--first-sight-ask N` adds N /v1/ask requests whose
questions were never asked. The server's GC policy passes (/metrics) are printed after the cells;
p99 and the server's peak RSS are in the table. The first-sight cells run at each concurrency
(fresh bodies per cell); the load average before and after each cell is printed (figures are only
comparable on a machine nobody else is loading).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus import OUT  # noqa: E402
from store_speed import corpus, versions  # noqa: E402

from docket.embed import HashEmbedder, default_embedder  # noqa: E402
from docket.ingest import IndexOptions, index_versions  # noqa: E402
from docket.store.factory import open_store  # noqa: E402
from docket.tokens import default_counter  # noqa: E402

QUESTIONS = ["Which river flows through the capital of the country?", "When was the band formed and by whom?",
             "What is the population of the town in the census?", "Who directed the film released that year?",
             "Which company acquired the startup and for how much?", "Where was the author of the novel born?"]


def build(location: str, n: int) -> None:
    items = corpus(n)
    emb = HashEmbedder(256)
    texts = [t for _, t in items]
    vecs = emb.embed(texts)
    counter = default_counter()
    tokens = [counter.count(t) for t in texts]
    store = open_store(location)
    try:
        index_versions(store, versions(items, vecs, tokens), IndexOptions(embedder=emb))
    finally:
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(db: str, log: Path, workers: int = 1, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    fh = open(log, "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "docket", "serve", "--db", db, "--port", str(port), "--host",
                             "127.0.0.1", "--embedder", "hash", "--log-level", "warning", "--workers", str(workers),
                             *extra],
                            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()[-1500:]}")
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop(proc)
    raise SystemExit("server did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


INDEXER = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (print(i, "documents indexed while serving", flush=True), sys.exit(0)))
from docket.embed import HashEmbedder
from docket.ingest import IndexOptions, index_versions
from docket.ingest.readers import read_jsonl
from docket.store.factory import open_store
from collections import Counter
store = open_store(sys.argv[1]); opts = IndexOptions(embedder=HashEmbedder(256)); end = time.time() + float(sys.argv[2])
i = 0
while time.time() < end:  # i is read by the SIGTERM handler above
    recs = "\n".join('{"id": "live-%d-%d", "doc": "live-%d", "text": "Live document %d paragraph %d about rivers and bands."}'
                     % (i, j, i, i, j) for j in range(4))
    index_versions(store, read_jsonl(recs, "live", Counter(), []), opts)
    i += 1
    time.sleep(0.05)
print(i, "documents indexed while serving")
"""


def assemble_payload(store_loc: str, n: int) -> dict[str, Any]:
    items = corpus(min(n, 5000))
    cands = [{"id": f"q{i}", "doc": f"doc{i // 4}", "text": t, "title": title, "position": i % 4,
              "score": round(0.9 - i * 0.002, 4)} for i, (title, t) in enumerate(items[:200])]
    return {"question": QUESTIONS[0], "candidates": cands, "budget": 1500}


def first_sight_payloads(count: int, start: int = 0) -> list[dict[str, Any]]:
    """`count` /v1/assemble bodies of 200 candidates that no earlier body held: every text is a new
    sentence rotation of a real paragraph (so its features, claims and counts are computed on
    arrival, as for the records of a retriever docket never saw), ids unique across bodies. Bodies
    `start` to `start + count - 1` of one endless sequence: cells with disjoint ranges share none."""
    from _corpus import variant

    items = corpus(5000)
    out = []
    for r in range(start, start + count):
        cands = []
        for i in range(200):
            title, t = items[(r * 200 + i) % len(items)]
            cands.append({"id": f"fs{r}-{i}", "doc": f"fsdoc{r}-{i // 4}", "text": variant(t, 1 + (r * 200 + i) // len(items)),
                          "title": title, "position": i % 4, "score": round(0.9 - i * 0.002, 4)})
        out.append({"question": QUESTIONS[r % len(QUESTIONS)], "candidates": cands, "budget": 1500})
    return out


def first_sight_questions(count: int, start: int = 0) -> list[dict[str, Any]]:
    """`count` /v1/ask bodies with questions never asked before, each on a different paragraph
    (its title and opening words), so retrieval reaches chunks the server has not assembled yet."""
    items = corpus(5000)
    out = []
    for r in range(start, start + count):
        title, text = items[(r * 7919) % len(items)]
        opening = " ".join(text.split()[:8])
        out.append({"question": f"What does the record about {title} say of {opening}? ({r})", "budget": 1500})
    return out


def run_cell(url: str, path: str, payloads: list[dict[str, Any]], requests: int, conc: int,
             limit: float, server: list[int] | None = None) -> dict[str, Any]:
    """One cell; `server`: the server's pids, whose CPU time per request is reported (a figure the
    other loads of a shared machine disturb far less than latency)."""
    import httpx

    lat: list[float] = []
    errors = 0
    deadline = time.monotonic() + limit
    clients = [httpx.Client(base_url=url, timeout=60) for _ in range(conc)]

    def worker(w: int) -> None:
        nonlocal errors
        c = clients[w]
        for i in range(w, requests, conc):
            if time.monotonic() > deadline:
                return
            t0 = time.perf_counter()
            try:
                r = c.post(path, json=payloads[i % len(payloads)])
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            lat.append(time.perf_counter() - t0)
            if not ok:
                errors += 1

    cpu0 = cpu_seconds(server or [])
    t0 = time.perf_counter()
    with ThreadPoolExecutor(conc) as ex:
        list(ex.map(worker, range(conc)))
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(server or []) - cpu0
    for c in clients:
        c.close()
    lat.sort()

    def q(p: float) -> float:
        return round(1000 * lat[min(len(lat) - 1, int(p * len(lat)))], 2) if lat else float("nan")

    return {"endpoint": path, "concurrency": conc, "requests": len(lat), "errors": errors,
            "rps": round(len(lat) / wall, 1), "p50_ms": q(0.50), "p95_ms": q(0.95), "p99_ms": q(0.99),
            "server_cpu_ms": round(1000 * cpu / max(len(lat), 1), 1) if server else None}


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def server_pids(proc: subprocess.Popen[bytes]) -> list[int]:
    """The serving process and its children (`--workers N`: uvicorn's supervisor and its workers)."""
    pids, todo = [], [proc.pid]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo += [int(x) for x in task.read_text().split()]
            except OSError:
                pass
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (/proc/PID/stat)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the line)
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def gc_pauses(url: str) -> str:
    """The serving process's GC policy passes from /metrics (docket.service.collector): count,
    total and mean ms per kind; a tree without the policy says so."""
    import httpx

    text = httpx.get(url + "/metrics", timeout=10).text
    found: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        for metric, part in (("docket_gc_pause_seconds_count", "count"), ("docket_gc_pause_seconds_sum", "sum"),
                             ("docket_gc_collected_objects_total", "freed")):
            head = metric + '{kind="'
            if line.startswith(head):
                kind = line[len(head):].split('"', 1)[0]
                found.setdefault(kind, {})[part] = float(line.rsplit(" ", 1)[1])
    if not found:
        return "none (this tree has no docket_gc_pause_seconds)"
    return ", ".join(f"{k} {v.get('count', 0):.0f} passes, {1000 * v.get('sum', 0):.0f} ms in all "
                     f"({1000 * v.get('sum', 0) / max(v.get('count', 1), 1):.1f} ms each, "
                     f"{v.get('freed', 0):.0f} objects freed)" for k, v in found.items())


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def bench_backend(name: str, loc: str, args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    proc, url = start_server(loc, tmp / f"{name}.log", args.workers, tuple(args.serve_args.split()))
    indexer = None
    rows: list[dict[str, Any]] = []
    try:
        ask = [{"question": q, "budget": 1500} for q in QUESTIONS]
        asm = [assemble_payload(loc, args.chunks)]
        run_cell(url, "/v1/ask", ask, 12, 1, 30)  # warm: vector matrix, caches
        run_cell(url, "/v1/assemble", asm, 6, 1, 30)
        budget = args.time_limit * len(args.concurrency) * 2 + 60
        indexer = subprocess.Popen([sys.executable, "-c", INDEXER, loc, str(budget)], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        # each body seen once: what a never-seen pool costs (fresh bodies for each concurrency)
        for k, conc in enumerate(args.concurrency if args.first_sight else []):
            before = load_average()
            bodies = first_sight_payloads(args.first_sight, start=k * args.first_sight)
            row = run_cell(url, "/v1/assemble", bodies, args.first_sight, conc, args.time_limit, server_pids(proc))
            row.update(backend=name, endpoint="/v1/assemble (first sight)", load=f"{before} -> {load_average()}")
            rows.append(row)
            print(json.dumps(row), flush=True)
        for k, conc in enumerate(args.concurrency if args.first_sight_ask else []):
            before = load_average()
            bodies = first_sight_questions(args.first_sight_ask, start=k * args.first_sight_ask)
            row = run_cell(url, "/v1/ask", bodies, args.first_sight_ask, conc, args.time_limit, server_pids(proc))
            row.update(backend=name, endpoint="/v1/ask (first sight)", load=f"{before} -> {load_average()}")
            rows.append(row)
            print(json.dumps(row), flush=True)
        for conc in args.concurrency:
            for path, payloads in (("/v1/assemble", asm), ("/v1/ask", ask)):
                before = load_average()
                row = run_cell(url, path, payloads, args.requests, conc, args.time_limit, server_pids(proc))
                row.update(backend=name, load=f"{before} -> {load_average()}")
                rows.append(row)
                print(json.dumps(row), flush=True)
        peak = round(sum(peak_rss_mb(pid) for pid in server_pids(proc)), 1)
        for row in rows:
            row.update(server_peak_mb=peak, workers=args.workers)
        print(f"[{name}] server GC policy: {gc_pauses(url)}", flush=True)
    finally:
        if indexer is not None:
            stop(indexer)
            out = indexer.stdout.read().decode() if indexer.stdout else ""
            print(f"[{name}] second process: {out.strip() or 'stopped'}", flush=True)
        stop(proc)
    return rows


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up the processes it started
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--pg-chunks", type=int, default=None, help="PostgreSQL size (default: --chunks)")
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--requests", type=int, default=200, help="requests per cell (endpoint x concurrency)")
    ap.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 32])
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per cell at most")
    ap.add_argument("--first-sight", type=int, default=0, metavar="N",
                    help="also N /v1/assemble requests whose 200 records were never seen, at each concurrency")
    ap.add_argument("--first-sight-ask", type=int, default=0, metavar="N",
                    help="also N /v1/ask requests with questions never asked before, at each concurrency")
    ap.add_argument("--workers", type=int, default=1, help="docket serve --workers (worker processes)")
    ap.add_argument("--serve-args", default="", help="more options for docket serve, e.g. '--no-gc-freeze'")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="docket-load-"))
    rows: list[dict[str, Any]] = []
    pg = None
    try:
        if "sqlite" in args.backends:
            cached = OUT / f"service-{args.chunks}.db"
            if not cached.exists():
                t0 = time.perf_counter()
                build(str(tmp / "build.db"), args.chunks)
                shutil.move(str(tmp / "build.db"), cached)
                print(f"built {cached} in {time.perf_counter() - t0:.0f} s", flush=True)
            db = tmp / "sqlite.db"
            shutil.copy(cached, db)  # the second process writes to the copy
            rows += bench_backend("sqlite", str(db), args, tmp)
        if "postgres" in args.backends:
            import pgserver

            pg = pgserver.get_server(str(tmp / "pg"), cleanup_mode="stop")
            uri = pg.get_uri()
            n = args.pg_chunks or args.chunks
            t0 = time.perf_counter()
            build(uri, n)
            print(f"built PostgreSQL store of {n} chunks in {time.perf_counter() - t0:.0f} s", flush=True)
            rows += bench_backend(f"postgres-{n // 1000}k", uri, args, tmp)
    finally:
        if pg is not None:
            pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    emb = default_embedder()
    emb.embed(["warm"])
    t0 = time.perf_counter()
    for q in QUESTIONS * 5:
        emb.embed([q + " " + str(time.perf_counter())])
    minilm_ms = (time.perf_counter() - t0) / (len(QUESTIONS) * 5) * 1000
    print("\n| backend | workers | endpoint | conc | requests | errors | req/s | p50 ms | p95 ms | p99 ms | "
          "server CPU ms/request | server peak MB | load average before -> after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['backend']} | {r['workers']} | {r['endpoint']} | {r['concurrency']} | {r['requests']} | {r['errors']} | "
              f"{r['rps']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['server_cpu_ms']} | {r['server_peak_mb']} | "
              f"{r['load']} |")
    print(f"\nMiniLM question embedding (not in the figures above, hash embedder): {minilm_ms:.1f} ms per question")
    (OUT / "service_load.json").write_text(json.dumps({"rows": rows, "minilm_question_ms": round(minilm_ms, 2),
                                                       "chunks": args.chunks, "workers": args.workers}, indent=2))


if __name__ == "__main__":
    main()
