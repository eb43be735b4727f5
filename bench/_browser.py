"""Shared by the browser benchmarks (bench_page, bench_widget): Debian's chromium and a byte counter.

Chromium starts headless, offline-safe: the background-networking flags keep it from calling home
(this machine refuses those connections), and every host name but 127.0.0.1 fails to resolve, so a
page that tried to load anything from elsewhere would show up as an error, not as a slow figure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "WAIT_MS", "ByteCounter"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]  # fmt: skip
# Milliseconds any one wait may take before the run counts as broken.
WAIT_MS = 120_000


class ByteCounter:
    """Bytes on the wire (CDP ``encodedDataLength``) of a page's requests, its frames included;
    with ``origin``, only of requests to that origin."""

    def __init__(self, context: Any, page: Any, origin: str | None = None) -> None:
        self.origin = origin
        self.urls: dict[str, str] = {}
        self.codings: dict[str, str] = {}
        # Since the last reset: each URL's bytes on the wire and its content coding ("" for none),
        # for the per-file table of bench_page.
        self.files: dict[str, tuple[int, str]] = {}
        self.total = 0
        self.requests = 0
        session = context.new_cdp_session(page)
        self.session = session  # kept open: network emulation (bench/_page_start.py) lives with it
        session.send("Network.enable")
        session.on("Network.requestWillBeSent", self._sent)
        session.on("Network.responseReceived", self._received)
        session.on("Network.loadingFinished", self._finished)

    def _sent(self, event: dict[str, Any]) -> None:
        self.urls[event["requestId"]] = event["request"]["url"]

    def _received(self, event: dict[str, Any]) -> None:
        headers = {k.lower(): v for k, v in event["response"].get("headers", {}).items()}
        self.codings[event["requestId"]] = headers.get("content-encoding", "")

    def _finished(self, event: dict[str, Any]) -> None:
        url = self.urls.get(event["requestId"], "")
        if self.origin is None or url.startswith(self.origin + "/"):
            sent = int(event.get("encodedDataLength", 0))
            self.total += sent
            self.requests += 1
            before = self.files.get(url, (0, ""))[0]
            self.files[url] = (before + sent, self.codings.get(event["requestId"], ""))

    def reset(self) -> None:
        self.total = self.requests = 0
        self.files = {}

    def read(self) -> dict[str, int]:
        return {"bytes": self.total, "requests": self.requests}
