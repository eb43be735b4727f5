"""Tool calls through the REST stack, in-process: the app itself called as ASGI, as the caller.

A tool call is the HTTP request a real client would send (DESIGN decision 6, upstream-mcp.md §8.8),
handed to the Starlette app without a socket, so routing, validation, authentication, permissions
and rate limits all run as for any client, and the MCP layer holds no business logic:

* GET/DELETE: each argument a query parameter in key order, strings as they are, anything else
  JSON (``{"msgId": "m1", "fields": {"msg": 1}}`` → ``?msgId=m1&fields=%7B%22msg%22%3A1%7D``);
  POST/PUT: the arguments as the JSON body;
* headers ``X-User-Id``, ``X-Auth-Token`` (the caller's PAT), ``Content-Type: application/json``, and
  the MCP request's ``Host`` (which the Host check already accepted); no ``Origin``;
* ``client`` is the MCP caller's address, so address-keyed limits count the right client;
* a 20 s deadline, and 5 MiB caps on one answer (declared length, then the streamed count) and on
  all answers of one batch together (a shared :class:`ByteBudget`).

    response = await call_route(app, tool.route, {"msgId": "m1"}, auth)
    response.ok, response.status, response.text
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio
from starlette.types import ASGIApp, Message

from ..rest import RESOLVED_CALLER_SCOPE_KEY, ApiRoute
from ..services import Caller
from . import rpc_errors
from .limits import MAX_RESPONSE_BYTES, TOOL_CALL_TIMEOUT_SECONDS, byte_limit_text
from .protocol import ToolResponse

__all__ = ["ByteBudget", "CallerAuth", "build_query_string", "call_route"]

log = logging.getLogger(__name__)

_JSON_CONTENT_TYPE = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class CallerAuth:
    """Who a tool call runs as, and where the MCP request came from."""

    user_id: str
    token: str
    client_host: str
    host_header: bytes  # the MCP request's Host, so the inner request passes the same Host check
    # The caller the endpoint resolved from user_id and token: the inner request carries it in its scope
    # (rest.RESOLVED_CALLER_SCOPE_KEY) rather than resolving the same credentials again, for that one
    # request only. None: the inner request resolves them.
    caller: Caller | None = None


class ByteBudget:
    """Bytes the REST answers of one batch may still use together; entries charge it as they read."""

    def __init__(self, limit_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.limit_bytes = limit_bytes
        self.remaining = limit_bytes

    def charge(self, size: int) -> None:
        """Raises rpc_errors.BatchBudgetExceeded once the batch has read more than its limit."""
        self.remaining -= size
        if self.remaining < 0:
            raise rpc_errors.BatchBudgetExceeded(
                f"MCP batch response exceeds the {byte_limit_text(self.limit_bytes)} limit"
            )


def _query_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def build_query_string(arguments: Mapping[str, Any]) -> str:
    """The query string of a GET/DELETE tool call (URLSearchParams encoding, arguments in key order).

    A lone surrogate (an argument sent as ``"\\ud800"``) has no UTF-8 form; it is passed on as the
    bytes ``surrogatepass`` gives, which the route's strict decoding refuses as a 400 naming the
    parameter, so the tool result says what a REST caller would be told.
    """
    pairs = [(key, _query_value(value)) for key, value in arguments.items()]
    return urlencode(pairs, encoding="utf-8", errors="surrogatepass")


def _json_body(arguments: Mapping[str, Any]) -> bytes:
    """The JSON body of a POST/PUT tool call; a lone surrogate travels escaped (``\\ud800``), as the
    client sent it, so the route refuses it with a 400 naming the parameter."""
    text = json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(dict(arguments), separators=(",", ":")).encode()


class _Exchange:
    """The ASGI receive/send pair of one in-process request, counting the answer's bytes."""

    def __init__(self, body: bytes, max_bytes: int, budget: ByteBudget | None) -> None:
        self._request: Message | None = {"type": "http.request", "body": body, "more_body": False}
        self._max_bytes = max_bytes
        self._budget = budget
        self._done = anyio.Event()
        self.status = 500
        self.chunks: list[bytes] = []
        self.size = 0
        self.failure: rpc_errors.ToolFailure | None = None

    async def receive(self) -> Message:
        if self._request is not None:
            message, self._request = self._request, None
            return message
        # Like a real connection: the client "disconnects" only once the answer is complete.
        await self._done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            for name, value in message.get("headers", ()):
                if name.lower() == b"content-length" and value.isdigit() and int(value) > self._max_bytes:
                    self._fail(rpc_errors.ToolResponseTooLarge())
            return
        if message["type"] != "http.response.body":
            return
        chunk: bytes = message.get("body", b"")
        if chunk:
            self.size += len(chunk)
            if self.size > self._max_bytes:
                self._fail(rpc_errors.ToolResponseTooLarge())
            if self._budget is not None:
                try:
                    self._budget.charge(len(chunk))
                except rpc_errors.BatchBudgetExceeded as exc:
                    self._fail(exc)
            self.chunks.append(chunk)
        if not message.get("more_body", False):
            self._done.set()

    def _fail(self, failure: rpc_errors.ToolFailure) -> None:
        # Raised into the app, which stops writing; remembered, because middleware may wrap it.
        self.failure = failure
        raise failure


def _text_of(raw: bytes) -> tuple[str, Any]:
    """The body as JSON text (a JSON body as sent, anything else as a JSON string literal), and the
    parsed JSON (None when the body is not JSON)."""
    text = raw.decode("utf-8", errors="replace")
    if not text:
        return '""', None
    try:
        data = json.loads(text)
    except ValueError:
        return json.dumps(text, ensure_ascii=False), None
    # Our routes write compact JSON, which is what JSON.stringify(JSON.parse(body)) gives upstream.
    return text, data


async def call_route(
    app: ASGIApp,
    route: ApiRoute,
    arguments: Mapping[str, Any],
    auth: CallerAuth,
    *,
    budget: ByteBudget | None = None,
    timeout_seconds: float = TOOL_CALL_TIMEOUT_SECONDS,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> ToolResponse:
    """Call ``route`` with ``arguments`` as the caller, through the whole app.

    Raises:
        rpc_errors.ToolTimeout: no complete answer within ``timeout_seconds``.
        rpc_errors.ToolResponseTooLarge: the answer declared or streamed more than ``max_bytes``.
        rpc_errors.BatchBudgetExceeded: the batch's shared ``budget`` ran out while reading.
    """
    if route.reads_body:
        body = _json_body(arguments)
        query = b""
    else:
        body = b""
        query = build_query_string(arguments).encode("ascii")
    path = route.path
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": route.method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [
            (b"host", auth.host_header),
            (b"x-user-id", auth.user_id.encode("latin-1")),
            (b"x-auth-token", auth.token.encode("latin-1")),
            _JSON_CONTENT_TYPE,
            (b"content-length", str(len(body)).encode()),
        ],
        "client": (auth.client_host, 0),
        "server": ("mcp.internal", 0),
        "state": {},
    }
    if auth.caller is not None:
        scope[RESOLVED_CALLER_SCOPE_KEY] = (auth.user_id, auth.token, auth.caller)
    exchange = _Exchange(body, max_bytes, budget)
    try:
        with anyio.fail_after(timeout_seconds):
            await app(scope, exchange.receive, exchange.send)
    except TimeoutError:
        raise rpc_errors.ToolTimeout(
            f"MCP tool call timed out after {round(timeout_seconds * 1000)} ms"
        ) from None
    except Exception as exc:
        if exchange.failure is not None:
            raise exchange.failure from None
        log.exception("MCP tool call to %s %s failed", route.method, path)
        raise rpc_errors.ToolFailure("internal server error") from exc
    text, data = _text_of(b"".join(exchange.chunks))
    return ToolResponse(ok=200 <= exchange.status < 300, status=exchange.status, text=text, data=data)
