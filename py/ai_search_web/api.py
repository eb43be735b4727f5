"""The REST client of the page: ``fetch`` from Python, awaited, so the main thread never blocks.

Every call is asynchronous (``js.fetch`` awaited through Pyodide's event loop), carries the
session's ``X-User-Id``/``X-Auth-Token`` and a total deadline, and either returns the decoded JSON body
or raises :class:`ApiError` with a stable ``error_type`` (the server's, or ``error-network`` /
``error-bad-response`` from the client itself)::

    api = ApiClient(session.credentials, on_unauthorized=session.expired)
    data = await api.get("ai.search", {"q": "in:ops deploy", "intelligentCount": "6"})
    async for event in api.events("ai.search.answer", {"query": "...", "messages": [...]}):
        ...  # ServerEvent("delta", '{"text": "..."}') ... ServerEvent("done", ...)

A 401 calls ``on_unauthorized`` first (the session is over), then raises like any other error. A
refusal that says how long to wait (``Retry-After``, in seconds) keeps it in :attr:`ApiError.retry_after`.

Portable (the page on MicroPython as on Pyodide): MicroPython has no ``urllib`` (:func:`encode_query`
writes ``urlencode``'s query strings) and no async generators (:class:`EventStream` is the
``async for`` of a streamed answer); the bridge is :mod:`.ffi`'s.
"""

import json

import js

from ai_search import strip_text

from .ffi import RUNTIME, JsException, create_proxy, settled, to_bytes, to_js
from .messages import BAD_RESPONSE_ERROR_TYPE, NETWORK_ERROR_TYPE, error_message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from ai_search import EventStreamParser, ServerEvent

    from .ffi import JsProxy

    Credentials = Callable[[], "tuple[str, str] | None"]
    # What a query string is made of: a mapping, or (name, value) pairs when their order matters.
    QueryParams = Mapping[str, Any] | Iterable[tuple[str, Any]]

__all__ = [
    "API_PREFIX",
    "LOGIN_ROUTE",
    "REQUEST_DEADLINE_MS",
    "STREAM_DEADLINE_MS",
    "ApiClient",
    "ApiError",
    "EventStream",
    "encode_query",
    "retry_after_seconds",
]

API_PREFIX = "/api/v1/"
# The one route whose calls carry cookies (its device cookie, set with the path /api/v1/login).
LOGIN_ROUTE = "login"
# Milliseconds one plain request may take, end to end, before the page gives up on it. The server's
# own deadline for an outside call is 20 s; a little more lets its error arrive first.
REQUEST_DEADLINE_MS = 25_000
# Milliseconds a streamed answer may take in all (the provider deadline plus the stream itself).
STREAM_DEADLINE_MS = 90_000

# What a query string keeps as it is (RFC 3986's unreserved characters), every other UTF-8 byte
# escaped as ``%XX`` and the space as ``+``: the rule of ``urllib.parse.urlencode`` (``quote_plus``),
# which MicroPython does not have.
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"
_QUERY_BYTES = [chr(byte) if chr(byte) in _UNRESERVED else f"%{byte:02X}" for byte in range(256)]
_QUERY_BYTES[ord(" ")] = "+"
# A Retry-After of whole seconds is these only (str.isdigit takes other scripts' digits too).
_DIGITS = "0123456789"


def _query_part(value: "Any") -> str:
    text = value if isinstance(value, str) else str(value)
    return "".join([_QUERY_BYTES[byte] for byte in text.encode()])


def encode_query(params: "QueryParams") -> str:
    """``params`` as a query string, exactly as ``urllib.parse.urlencode(params)`` writes it (for
    text, numbers and booleans: what the page sends). A mapping's order is its own (none on
    MicroPython): pairs keep theirs."""
    items = params.items() if hasattr(params, "items") else params  # portable: the server reads them by name
    return "&".join([_query_part(name) + "=" + _query_part(value) for name, value in items])


class ApiError(Exception):
    """A call that did not give the expected answer; :attr:`message` is ready to show."""

    def __init__(
        self, error_type: str, status: "int | None" = None, retry_after: "int | None" = None
    ) -> None:
        self.error_type = error_type
        self.status = status
        self.retry_after = retry_after
        super().__init__(error_message(error_type, status, retry_after=retry_after))

    @property
    def message(self) -> str:
        return str(self)


def retry_after_seconds(value: "Any") -> "int | None":
    """A ``Retry-After`` header's whole seconds (the server sends seconds, never a date), or None."""
    text = strip_text(value) if isinstance(value, str) else ""
    return int(text) if text and all(char in _DIGITS for char in text) else None


def _read_whole(response: "JsProxy") -> "JsProxy":
    """``[status, body text, Retry-After]`` of a response, as one promise (called by JS, in its
    promise chain)."""
    return js.Promise.all(to_js([response.status, response.text(), response.headers.get("retry-after")]))


# Kept for the page's lifetime: every call's promise chain uses it.
_READ_WHOLE = create_proxy(_read_whole)


class ApiClient:
    def __init__(self, credentials: "Credentials", *, on_unauthorized: "Callable[[], None]") -> None:
        self._credentials = credentials
        self._on_unauthorized = on_unauthorized

    def _headers(self, accept: str, with_body: bool) -> "dict[str, str]":
        headers = {"Accept": accept}
        if with_body:
            headers["Content-Type"] = "application/json"
        credentials = self._credentials()
        if credentials is not None:
            headers["X-User-Id"], headers["X-Auth-Token"] = credentials
        return headers

    def _init(
        self, body: "Any", accept: str, deadline_ms: int, signal: "JsProxy | None", route: str = ""
    ) -> "JsProxy":
        signals = [js.AbortSignal.timeout(deadline_ms)]
        if signal is not None:
            signals.append(signal)
        init: dict[str, Any] = {
            "method": "GET" if body is None else "POST",
            "headers": to_js(self._headers(accept, body is not None)),
            "signal": js.AbortSignal.any(to_js(signals)),
            # Cookies only for the login: its device cookie (HttpOnly, path /api/v1/login) lets this
            # browser skip the wait that others' failed sign-ins start for an account. Every other
            # call sends none: the API's credentials are headers.
            "credentials": "same-origin" if route == LOGIN_ROUTE else "omit",
            "cache": "no-store",
        }
        if body is not None:
            init["body"] = json.dumps(body)
        return to_js(init)

    async def _call(
        self, route: str, params: "QueryParams | None", body: "Any", signal: "JsProxy | None"
    ) -> "Any":
        url = API_PREFIX + route + ("?" + encode_query(params) if params else "")
        init = self._init(body, "application/json", REQUEST_DEADLINE_MS, signal, route)
        try:
            if RUNTIME == "micropython":
                # Two awaits: a Python function in the promise chain is called back from JavaScript,
                # which MicroPython 1.28 answered with `undefined` in long sessions.
                response = await settled(js.fetch(url, init))
                answer = [
                    response.status,
                    await settled(response.text()),
                    response.headers.get("retry-after"),
                ]
            else:
                # One await for status and body: the body is read inside the JS promise chain, which
                # saves a trip through the event loop per call (measurable on a busy main thread).
                answer = await settled(js.fetch(url, init).then(_READ_WHOLE))
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        status, text = int(answer[0]), str(answer[1])
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not 200 <= status < 300:
            raise self._failure(status, data, retry_after_seconds(answer[2]))
        if not isinstance(data, dict):
            raise ApiError(BAD_RESPONSE_ERROR_TYPE, status)
        return data

    def _failure(self, status: int, data: "Any", retry_after: "int | None" = None) -> ApiError:
        if status == 401:
            self._on_unauthorized()
        error_type = data.get("errorType") if isinstance(data, dict) else None
        return ApiError(error_type if isinstance(error_type, str) else "", status, retry_after)

    async def get(
        self, route: str, params: "QueryParams | None" = None, *, signal: "JsProxy | None" = None
    ) -> "dict[str, Any]":
        """GET ``/api/v1/<route>?params``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        result: dict[str, Any] = await self._call(route, params, None, signal)
        return result

    async def post(self, route: str, body: "Mapping[str, Any]") -> "dict[str, Any]":
        """POST JSON to ``/api/v1/<route>``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        result: dict[str, Any] = await self._call(route, None, body, None)
        return result

    def events(
        self, route: str, body: "Mapping[str, Any]", *, signal: "JsProxy | None" = None
    ) -> "EventStream":
        """POST JSON asking for ``text/event-stream``; the events as they arrive (``async for``).

        A server that answers plain JSON instead (it may) gives one ``done`` event holding it.

        Raises (while iterating):
            ApiError: no answer, an error status, a broken stream or a malformed event stream.
        """
        return EventStream(self, route, body, signal)


class EventStream:
    """The events of one streamed call, read as its body arrives: ``async for event in stream``.

    A class rather than an async generator: MicroPython has none. The request starts with the first
    event asked for; a reader that stops early (``break``) closes the connection when it lets the
    stream go (as an abandoned generator's ``finally`` would), or at once with :meth:`aclose`.
    """

    def __init__(
        self, client: ApiClient, route: str, body: "Mapping[str, Any]", signal: "JsProxy | None"
    ) -> None:
        self._client = client
        self._route = route
        self._body = body
        self._signal = signal
        self._reader: JsProxy | None = None  # the body's reader, once the stream is open
        self._parser: EventStreamParser | None = None
        self._events: list[ServerEvent] = []  # parsed, not yet taken
        self._started = False
        self._over = False  # ended, failed or closed: nothing more comes

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> "ServerEvent":
        while not self._events:
            if self._over:
                raise StopAsyncIteration
            try:
                if self._started:
                    await self._read()
                else:
                    self._started = True
                    await self._open()
            except BaseException:
                self._end()
                raise
        return self._events.pop(0)

    async def aclose(self) -> None:
        """Stop reading: the connection closes when the stream did not end by itself."""
        self._end()

    def __del__(self) -> None:
        self._end()

    def _end(self) -> None:
        reader, self._reader = self._reader, None
        self._over = True
        if reader is not None:
            reader.cancel()  # the caller stopped early, or the stream broke: close the connection

    async def _open(self) -> None:
        # The answer's part of the core, looked up only now: MicroPython's ai_search may not hold it.
        import ai_search

        client = self._client
        try:
            response = await settled(
                js.fetch(
                    API_PREFIX + self._route,
                    client._init(self._body, "text/event-stream", STREAM_DEADLINE_MS, self._signal),
                )
            )
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        if response.ok and "text/event-stream" in str(response.headers.get("content-type") or ""):
            self._reader = response.body.getReader()
            self._parser = ai_search.EventStreamParser()
            return
        try:
            text = str(await settled(response.text()))
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not response.ok:
            raise client._failure(
                int(response.status), data, retry_after_seconds(response.headers.get("retry-after"))
            )
        if not isinstance(data, dict):
            raise ApiError(BAD_RESPONSE_ERROR_TYPE, int(response.status))
        self._events.append(ai_search.ServerEvent("done", json.dumps(data)))
        self._over = True

    async def _read(self) -> None:
        reader, parser = self._reader, self._parser
        if reader is None or parser is None:
            self._over = True
            return
        try:
            chunk = await settled(reader.read())
            if chunk.done:
                self._reader = None  # ended by itself: nothing to cancel
                self._over = True
                self._events.extend(parser.close())
            else:
                self._events.extend(parser.feed(to_bytes(chunk.value)))
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        except ValueError:
            raise ApiError(BAD_RESPONSE_ERROR_TYPE) from None
