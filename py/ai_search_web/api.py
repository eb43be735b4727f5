"""The REST client of the page: ``fetch`` from Python, awaited, so the main thread never blocks.

Every call is asynchronous (``js.fetch`` awaited through Pyodide's event loop), carries the
session's ``X-User-Id``/``X-Auth-Token`` and a total deadline, and either returns the decoded JSON body
or raises :class:`ApiError` with a stable ``error_type`` (the server's, or ``error-network`` /
``error-bad-response`` from the client itself)::

    api = ApiClient(session.credentials, on_unauthorized=session.expired)
    data = await api.get("ai.search", {"q": "in:ops deploy", "intelligentCount": "6"})
    async for event in api.events("ai.search.answer", {"query": "...", "messages": [...]}):
        ...  # ServerEvent("delta", '{"text": "..."}') ... ServerEvent("done", ...)

A 401 calls ``on_unauthorized`` first (the session is over), then raises like any other error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import js
from pyodide.ffi import JsException, JsProxy, to_js

from .messages import BAD_RESPONSE_ERROR_TYPE, NETWORK_ERROR_TYPE, error_message
from .sse import EventStreamParser, ServerEvent

__all__ = ["API_PREFIX", "REQUEST_DEADLINE_MS", "STREAM_DEADLINE_MS", "ApiClient", "ApiError"]

API_PREFIX = "/api/v1/"
# Milliseconds one plain request may take, end to end, before the page gives up on it. The server's
# own deadline for an outside call is 20 s; a little more lets its error arrive first.
REQUEST_DEADLINE_MS = 25_000
# Milliseconds a streamed answer may take in all (the provider deadline plus the stream itself).
STREAM_DEADLINE_MS = 90_000

Credentials = Callable[[], "tuple[str, str] | None"]


class ApiError(Exception):
    """A call that did not give the expected answer; :attr:`message` is ready to show."""

    def __init__(self, error_type: str, status: int | None = None) -> None:
        self.error_type = error_type
        self.status = status
        super().__init__(error_message(error_type, status))

    @property
    def message(self) -> str:
        return str(self)


def _js_object(value: Mapping[str, Any]) -> JsProxy:
    return to_js(value, dict_converter=js.Object.fromEntries)


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

    async def _fetch(
        self,
        route: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        accept: str = "application/json",
        deadline_ms: int = REQUEST_DEADLINE_MS,
        signal: JsProxy | None = None,
    ) -> JsProxy:
        url = API_PREFIX + route + ("?" + urlencode(params) if params else "")
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
        try:
            response = await js.fetch(url, _js_object(init))
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        if not response.ok:
            raise await self._failure(response)
        return response

    async def _failure(self, response: JsProxy) -> ApiError:
        status = int(response.status)
        if status == 401:
            self._on_unauthorized()
        try:
            error_type = json.loads(await response.text()).get("errorType")
        except (JsException, ValueError, AttributeError):
            error_type = None
        return ApiError(error_type if isinstance(error_type, str) else "", status)

    async def _json(self, response: JsProxy) -> dict[str, Any]:
        try:
            data = json.loads(await response.text())
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        except ValueError:
            raise ApiError(BAD_RESPONSE_ERROR_TYPE, int(response.status)) from None
        if not isinstance(data, dict):
            raise ApiError(BAD_RESPONSE_ERROR_TYPE, int(response.status))
        return data

    async def get(
        self, route: str, params: Mapping[str, str] | None = None, *, signal: JsProxy | None = None
    ) -> dict[str, Any]:
        """GET ``/api/v1/<route>?params``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        return await self._json(await self._fetch(route, params=params, signal=signal))

    async def post(self, route: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST JSON to ``/api/v1/<route>``: the JSON body.

        Raises:
            ApiError: no answer, an error status, or a body that is not a JSON object.
        """
        return await self._json(await self._fetch(route, body=body))

    async def events(
        self, route: str, body: Mapping[str, Any], *, signal: JsProxy | None = None
    ) -> AsyncIterator[ServerEvent]:
        """POST JSON asking for ``text/event-stream``; the events as they arrive.

        A server that answers plain JSON instead (it may) yields one ``done`` event holding it.

        Raises:
            ApiError: no answer, an error status, a broken stream or a malformed event stream.
        """
        response = await self._fetch(
            route, body=body, accept="text/event-stream", deadline_ms=STREAM_DEADLINE_MS, signal=signal
        )
        if "text/event-stream" not in str(response.headers.get("content-type") or ""):
            yield ServerEvent("done", json.dumps(await self._json(response)))
            return
        reader = response.body.getReader()
        parser = EventStreamParser()
        finished = False
        try:
            while not finished:
                chunk = await reader.read()
                finished = bool(chunk.done)
                if not finished:
                    for event in parser.feed(chunk.value.to_bytes()):
                        yield event
        except JsException:
            raise ApiError(NETWORK_ERROR_TYPE) from None
        except ValueError:
            raise ApiError(BAD_RESPONSE_ERROR_TYPE) from None
        finally:
            if not finished:
                reader.cancel()  # the caller stopped early: close the connection
