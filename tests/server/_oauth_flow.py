"""An OAuth client of our authorization server, written out step by step for the tests (httpx).

Each step is what an MCP client does: register (RFC 7591), send the person to the authorization
endpoint with a PKCE S256 challenge and the MCP resource, and exchange the code. The person's part
(sign in, consent) is posted as the pages' forms would post it, with the headers a browser sends for a
same-origin form; the browser test does it in Chromium instead.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

REDIRECT_URI = "http://127.0.0.1:9/callback"
_TICKET = re.compile(r'name="ticket" value="([^"]+)"')


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


def same_site(origin: str) -> dict[str, str]:
    """The headers Chromium sends with a form posted from a page of ``origin`` to itself."""
    return {"Origin": origin, "Sec-Fetch-Site": "same-origin"}


def query_of(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


@dataclass
class OAuthClient:
    http: httpx.AsyncClient
    origin: str
    client_id: str = ""
    client_secret: str | None = None

    @property
    def resource(self) -> str:
        return f"{self.origin}/api/v1/mcp"

    async def register(self, **metadata: Any) -> httpx.Response:
        body = {
            "client_name": "Test MCP client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = await self.http.post(f"{self.origin}/register", json=body)
        if response.status_code == 201:
            self.client_id = response.json()["client_id"]
            self.client_secret = response.json().get("client_secret")
        return response

    def authorization_query(self, challenge: str, **overrides: str | None) -> str:
        params: dict[str, str | None] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": "mcp",
            "state": "state-123",
            "resource": self.resource,
            **overrides,
        }
        return urlencode({k: v for k, v in params.items() if v is not None})

    async def sign_in(self, query: str, username: str, password: str) -> httpx.Response:
        return await self.http.post(
            f"{self.origin}/authorize?{query}",
            data={"step": "sign-in", "username": username, "password": password},
            headers=same_site(self.origin),
        )

    async def consent(self, query: str, ticket: str, decision: str = "allow") -> httpx.Response:
        return await self.http.post(
            f"{self.origin}/authorize?{query}",
            data={"step": "consent", "ticket": ticket, "decision": decision},
            headers=same_site(self.origin),
        )

    async def code(self, username: str, password: str, challenge: str, **overrides: str | None) -> str:
        """Signs in, allows, and answers the code the redirect carries."""
        query = self.authorization_query(challenge, **overrides)
        page = await self.http.get(f"{self.origin}/authorize?{query}")
        assert page.status_code == 200, page.text
        consent = await self.sign_in(query, username, password)
        assert consent.status_code == 200, consent.text
        redirect = await self.consent(query, ticket_of(consent.text))
        assert redirect.status_code == 302, redirect.text
        answer = query_of(redirect.headers["location"])
        assert answer["state"] == "state-123" and answer["iss"] == self.origin
        return answer["code"]

    async def exchange(
        self, authorization_code: str, verifier: str, **overrides: str | None
    ) -> httpx.Response:
        form: dict[str, str | None] = {
            "grant_type": "authorization_code",
            "code": authorization_code,
            "code_verifier": verifier,
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "resource": self.resource,
            **overrides,
        }
        return await self.http.post(
            f"{self.origin}/token", data={k: v for k, v in form.items() if v is not None}
        )

    async def refresh(self, refresh_token: str, **overrides: str) -> httpx.Response:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.client_id,
            **overrides,
        }
        return await self.http.post(f"{self.origin}/token", data=form)

    async def revoke(self, token: str) -> httpx.Response:
        return await self.http.post(
            f"{self.origin}/revoke", data={"token": token, "client_id": self.client_id}
        )

    async def tokens(self, username: str, password: str) -> dict[str, Any]:
        verifier, challenge = pkce()
        response = await self.exchange(await self.code(username, password, challenge), verifier)
        assert response.status_code == 200, response.text
        tokens: dict[str, Any] = response.json()
        return tokens


def ticket_of(page: str) -> str:
    match = _TICKET.search(page)
    assert match, page
    return html.unescape(match.group(1))
