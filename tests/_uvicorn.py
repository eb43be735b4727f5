"""An ASGI app under uvicorn in a daemon thread on a free loopback port: the tests' one real server.

    with UvicornThread(app) as server:        # test defaults: no lifespan, quiet
        httpx.get(server.url + "/...")
    UvicornThread(app, lifespan="on")         # as `ai-search serve` runs it

Parser, head cap and headers are `ai-search serve`'s own (``serving.server_options``): a test server
refuses what the product refuses.

The socket is bound before the thread starts, so the port is known and nothing races for it.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn

from ai_search_server.serving import server_options

__all__ = ["SERVER_WAIT_SECONDS", "UvicornThread"]

# How long the server may take to start or stop (seconds); generous for a loaded 2-core machine.
SERVER_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.01
_TEST_DEFAULTS: dict[str, Any] = {
    **server_options(),
    "log_level": "warning",
    "access_log": False,
    "lifespan": "off",
    "ws": "none",
    "timeout_graceful_shutdown": 1,
}


class UvicornThread:
    def __init__(self, app: Any, host: str = "127.0.0.1", *, port: int = 0, **config: Any) -> None:
        """``port`` 0 takes a free one; a given port lets a test restart a server where it was."""
        self.host = host
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port: int = self._sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, **{**_TEST_DEFAULTS, **config}))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + SERVER_WAIT_SECONDS
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the loopback test server did not start")
            time.sleep(_POLL_SECONDS)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(SERVER_WAIT_SECONDS)
        self._sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
