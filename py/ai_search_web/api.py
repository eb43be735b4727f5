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
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import js
from pyodide.ffi import JsException, JsProxy, create_proxy, to_js

from ai_search import EventStreamParser, ServerEvent

from .messages import BAD_RESPONSE_ERROR_TYPE, NETWORK_ERROR_TYPE, error_message

__all__ = [
    "API_PREFIX",
    "REQUEST_DEADLINE_MS",
    "STREAM_DEADLINE_MS",
    "ApiClient",
    "ApiError",
    "retry_after_seconds",
]

API_PREFIX = "/api/v1/"
# Milliseconds one plain request may take, end to end, before the page gives up on it. The server's
# own deadline for an outside call is 20 s; a little more lets its error arrive first.
REQUEST_DEADLINE_MS = 25_000
# Milliseconds a streamed answer may take in all (the provider deadline plus the stream itself).
STREAM_DEADLINE_MS = 90_000

Credentials = Callable[[], "tuple[str, str] | None"]


class ApiError(Exception):
    """A call that did not give the expected answer; :attr:`message` is ready to show."""

    def __init__(self, error_type: str, status: int | None = None, retry_after: int | None = None) -> None:
        self.error_type = error_type
        self.status = status
        self.retry_after = retry_after
        super().__init__(error_message(error_type, status, retry_after=retry_after))

    @property
    def message(self) -> str:
        return str(self)


def _js_object(value: Mapping[str, Any]) -> JsProxy:
    return to_js(value, dict_converter=js.Object.fromEntries)


def retry_after_seconds(value: Any) -> int | None:
    """A ``Retry-After`` header's whole seconds (the server sends seconds, never a date), or None."""
    text = value.strip() if isinstance(value, str) else ""
    return int(text) if text.isdigit() and text.isascii() else None


def _read_whole(response: JsProxy) -> JsProxy:
    """``[status, body text, Retry-After]`` of a response, as one promise (called by JS, in its
    promise chain)."""
    return js.Promise.all(to_js([response.status, response.text(), response.headers.get("retry-after")]))


# Kept for the page's lifetime: every call's promise chain uses it.
_READ_WHOLE = create_proxy(_read_whole)


class ApiClient:
    def __init__(self, credentials: Credentials, *, on_unauthorized: Callable[[], None]) -> None:
        self._credentials = credentials
        self._on_unauthorized = on_unauthorized

    def _headers(self, accept: str, with_body: bool) -> dict[str, str]:
        headers = {"Accept": accept}
        if with_body:
            headers["Content-Type"] = "application/json"
        credentials = self._credentials()
        if credentials is not None:
            headers["X-User-Id"], headers["X-Auth-Token"] = credentials
        return headers

    def _init(self, body: Any, accept: str, deadline_ms: int, signal: JsProxy | None) -> JsProxy:
        signals = [js.AbortSignal.timeout(deadline_ms)]
        if signal is not None:
            signals.append(signal)
        init: dict[str, Any] = {
            "method": "GET" if body is None else "POST",
            "headers": _js_object(self._headers(accept, body is not None)),
            "signal": js.AbortSignal.any(to_js(signals)),
            "credentials": "omit",
            "cache": "no-store",
        }
        if body is not None:
            init["body"] = json.dumps(body)
        return _js_object(init)

    async def _call(
        self, route: str, params: Mapping[str, str] | None, body: Any, signal: JsProxy | None
    ) -> Any:
        url = API_PREFIX + route + ("?" + urlencode(params) if params else "")
        try:
            # One await for status and body: the body is read inside the JS promise chain, which saves
            # a trip through the event loop per call (measurable on a busy main thread).
            answer = await js.fetch(
                url, self._init(body, "application/json", REQUEST_DEADLINE_MS, signal)
            ).then(_READ_WHOLE)
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

    def _failure(self, status: int, data: Any, retry_after: int | None = None) -> ApiError:
        if status == 401:
            self._on_unauthorized()
        error_type = data.get("errorType") if isinstance(data, dict) else None
        return ApiError(error_type if isinstance(error_type, str) else "", status, retry_after)

    async def get(
        self, route: str, params: Mapping[str, str] | None = None, *, signal: JsProxy | None = None
    ) -> dict[str, Any]:
        """GET ``/api/v1/<route>?params``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        result: dict[str, Any] = await self._call(route, params, None, signal)
        return result

    async def post(self, route: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST JSON to ``/api/v1/<route>``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        result: dict[str, Any] = await self._call(route, None, body, None)
        return result

    async def events(
        self, route: str, body: Mapping[str, Any], *, signal: JsProxy | None = None
    ) -> AsyncIterator[ServerEvent]:
        """POST JSON asking for ``text/event-stream``; the events as they arrive.

        A server that answers plain JSON instead (it may) yields one ``done`` event holding it.

        Raises:
            ApiError: no answer, an error status, a broken stream or a malformed event stream.
        """
        try:
            response = await js.fetch(
                API_PREFIX + route, self._init(body, "text/event-stream", STREAM_DEADLINE_MS, signal)
            )
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        if not response.ok or "text/event-stream" not in str(response.headers.get("content-type") or ""):
            try:
                text = str(await response.text())
            except JsException:
                raise ApiError(NETWORK_ERROR_TYPE) from None
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if not response.ok:
                raise self._failure(
                    int(response.status), data, retry_after_seconds(response.headers.get("retry-after"))
                )
            if not isinstance(data, dict):
                raise ApiError(BAD_RESPONSE_ERROR_TYPE, int(response.status))
            yield ServerEvent("done", json.dumps(data))
            return
        reader = response.body.getReader()
        parser = EventStreamParser()
        finished = False
        try:
            while not finished:
                chunk = await reader.read()
                finished = bool(chunk.done)
                events = parser.close() if finished else parser.feed(chunk.value.to_bytes())
                for event in events:
                    yield event
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        except ValueError:
            raise ApiError(BAD_RESPONSE_ERROR_TYPE) from None
        finally:
            if not finished:
                reader.cancel()  # the caller stopped early: close the connection
