"""Headless Chromium (Debian's `chromium` package) for tests of pages: the DOM it renders, a screenshot,
and a proxy on loopback that records every request a page sends out."""

from __future__ import annotations

import socketserver
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Requests Chromium sends for itself (its updater, clock and account services), with these flags too,
# on any page, an empty one included: not the page's.
OWN_HOSTS = ("google.com", "googleapis.com", "gstatic.com", "gvt1.com")


def chromium(page: Path, profile: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    """Chromium run once on `page` with a fresh profile folder `profile` and `args` (--dump-dom,
    --screenshot=...); scripts get 3 s of virtual time to run before the DOM is taken."""
    profile.mkdir(parents=True, exist_ok=False)
    return subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=3000",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class _Recorder(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline().decode("latin-1").strip()
        self.server.requests.append(line)  # type: ignore[attr-defined]
        self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def host_of(request_line: str) -> str:
    """The host a proxied request line names: `GET http://HOST/x HTTP/1.1` or `CONNECT HOST:443 HTTP/1.1`."""
    target = request_line.split(" ")[1] if " " in request_line else ""
    return target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]


def pages_requests(requests: list[str]) -> list[str]:
    """The requests that are not Chromium's own (OWN_HOSTS)."""
    return [
        line
        for line in requests
        if not any(host_of(line) == own or host_of(line).endswith("." + own) for own in OWN_HOSTS)
    ]


@contextmanager
def recording_proxy() -> Iterator[tuple[list[str], list[str]]]:
    """A proxy on 127.0.0.1 that answers every request 502 and records its request line; yields (the
    requests, the Chromium flags that send every request through it, loopback included)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield server.requests, [f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>"]  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
