"""Headless Chromium as the oracle for the HTML checks: which hosts a page makes it request
(through a loopback proxy that records each request's host and answers 502), and how it paints.
Nothing leaves the machine: every request goes to the proxy, which never forwards."""

from __future__ import annotations

import html as _html
import shutil
import socket
import subprocess
import threading
from pathlib import Path


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Recorder:
    """A proxy on 127.0.0.1 that records the host of every request (CONNECT host:443 or GET
    http://host/...) and refuses it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.hosts: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
            parts = first.split()
            if len(parts) >= 2:
                target = parts[1]
                host = target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0] if parts[0] != "CONNECT" \
                    else target.rsplit(":", 1)[0]
                with self._lock:
                    self.hosts.append(host.strip("[]").lower())
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def take(self) -> list[str]:
        with self._lock:
            out, self.hosts = self.hosts, []
        return out

    def close(self) -> None:
        self.sock.close()


#: Chromium's own background traffic (updates, sign-in, safe browsing), not the page's
_OWN = ("google.com", "googleapis.com", "gvt1.com", "gvt2.com", "gstatic.com", "googleusercontent.com",
        "chromium.org", "doubleclick.net", "google-analytics.com")
_QUIET = ["--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
          "--no-default-browser-check", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
          "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication"]


def requested_hosts(pages: list[str], tmp: Path, rec: Recorder, budget_ms: int = 3000) -> list[str]:
    """Hosts Chromium requests while it loads `pages` (each in an iframe of one sheet), less
    Chromium's own background hosts."""
    browser = chromium()
    assert browser
    frames = "".join(f'<iframe width="400" height="300" srcdoc="{_html.escape(p, quote=True)}"></iframe>'
                     for p in pages)
    sheet = tmp / "sheet.html"
    sheet.write_text(f"<!doctype html><html><body>{frames}</body></html>", encoding="utf-8")
    rec.take()
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--no-first-run", f"--proxy-server=http://127.0.0.1:{rec.port}", "--proxy-bypass-list=<-loopback>",
                    f"--virtual-time-budget={budget_ms}", *_QUIET, "--dump-dom", sheet.as_uri()],
                   capture_output=True, timeout=120, check=False)
    return [h for h in rec.take() if not any(h == o or h.endswith("." + o) for o in _OWN)]


def dump_dom(page: Path, rec: Recorder, budget_ms: int = 3000, window: str = "1280,2000") -> tuple[str, list[str]]:
    """Chromium's DOM of `page` after `budget_ms` of virtual time, and the hosts it requested
    meanwhile (through the recording proxy, loopback included), less Chromium's own."""
    browser = chromium()
    assert browser
    rec.take()
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", f"--user-data-dir={page.parent / 'chromium-profile'}",
                           f"--proxy-server=http://127.0.0.1:{rec.port}", "--proxy-bypass-list=<-loopback>",
                           f"--virtual-time-budget={budget_ms}", f"--window-size={window}", *_QUIET, "--dump-dom",
                           page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False,
                          env={"HOME": str(page.parent), "PATH": "/usr/bin:/bin"})
    return proc.stdout, [h for h in rec.take() if not any(h == o or h.endswith("." + o) for o in _OWN)]
