"""authlib's request objects over a Starlette request whose body was read already, and the redirect
response authlib's issuer extension rewrites: the framework integration authlib has for Flask and
Django only (server.py says why this glue is ours)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from authlib.oauth2 import rfc6749
from starlette.responses import Response

__all__ = ["JsonOAuthRequest", "OAuthRequest", "Redirect"]


class _Payload(rfc6749.OAuth2Payload):  # type: ignore[misc]
    def __init__(self, items: Sequence[tuple[str, str]]) -> None:
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for key, value in items:
            self._datalist[key].append(value)
        self._data = {key: values[0] for key, values in self._datalist.items()}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class OAuthRequest(rfc6749.OAuth2Request):  # type: ignore[misc]
    """An authorization or token request, its body already read: the payload is the query (the
    authorization endpoint) or the form (token and revocation endpoints)."""

    def __init__(
        self,
        method: str,
        uri: str,
        headers: Any,
        *,
        query: Sequence[tuple[str, str]],
        form: Sequence[tuple[str, str]] = (),
        payload_from_form: bool = False,
    ) -> None:
        super().__init__(method, uri, headers=headers)
        self._args = _Payload(query).data
        self._form = _Payload(form).data
        self.payload = _Payload(form if payload_from_form else query)
        self.resource: str | None = None  # RFC 8707, set once checked

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(rfc6749.JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class JsonOAuthRequest(rfc6749.JsonRequest):  # type: ignore[misc]
    """A registration request, its JSON body already parsed."""

    def __init__(self, method: str, uri: str, headers: Any, data: dict[str, Any]) -> None:
        super().__init__(method, uri, headers)
        self.payload = _JsonPayload(data)


class Redirect(Response):
    """A 302 whose ``location`` authlib's issuer extension may rewrite."""

    @property
    def location(self) -> str:
        return self.headers["location"]

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value
