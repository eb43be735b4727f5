"""The official MCP Python SDK's OAuth client (``mcp.client.auth.OAuthClientProvider``) against the real
server on loopback, offline: it gets the 401, reads the protected resource metadata and the
authorization server metadata, registers itself, runs the authorization code flow with PKCE and the
resource indicator, checks ``iss``, calls tools with the bearer token, and refreshes it when it expires.

The person's part (sign in, consent) is posted by the redirect handler as the pages' forms post it;
``tests/browser/test_oauth_pages.py`` does it in Chromium.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ai_search_server.store.base import Store

from ._mcp_fixtures import live_server
from ._oauth_flow import REDIRECT_URI, query_of, same_site, ticket_of
from .conftest import Workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# Seconds the SDK waits for one answer; far above what a loopback call takes, so never the cause.
SDK_TIMEOUT_SECONDS = 20.0


class MemoryStorage:
    """The SDK's TokenStorage, kept in memory: what a client would write to its own disk."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Person:
    """Signs in and allows, as the forms of the authorization page are posted; counts the visits."""

    def __init__(self, origin: str, username: str, password: str) -> None:
        self.origin, self.username, self.password = origin, username, password
        self.location = ""
        self.visits = 0
        self.authorization_urls: list[str] = []

    async def visit(self, url: str) -> None:
        self.visits += 1
        self.authorization_urls.append(url)
        async with httpx.AsyncClient(timeout=SDK_TIMEOUT_SECONDS) as http:
            assert (await http.get(url)).status_code == 200
            form = {"step": "sign-in", "username": self.username, "password": self.password}
            consent = await http.post(url, data=form, headers=same_site(self.origin))
            assert consent.status_code == 200, consent.text
            form = {"step": "consent", "ticket": ticket_of(consent.text), "decision": "allow"}
            redirect = await http.post(url, data=form, headers=same_site(self.origin))
            assert redirect.status_code == 302, redirect.text
            self.location = redirect.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        answer = query_of(self.location)
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))


def provider(mcp_url: str, storage: MemoryStorage, person: Person) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="MCP SDK test client",
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.visit,
        callback_handler=person.callback,
    )


async def joined(auth: OAuthClientProvider, mcp_url: str, sent: list[str]) -> set[str]:
    async def record(request: httpx2.Request) -> None:
        sent.append(f"{request.method} {request.url.path}")

    timeout = httpx2.Timeout(SDK_TIMEOUT_SECONDS, read=SDK_TIMEOUT_SECONDS)
    http = httpx2.AsyncClient(auth=auth, timeout=timeout, event_hooks={"request": [record]})
    transport = streamable_http_client(mcp_url, http_client=http)
    async with http, Client(transport, mode="auto", cache=None) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "get_channels_list_joined" in names
        result = await client.call_tool("get_channels_list_joined", {})
        assert result.is_error is False
        structured: Any = result.structured_content
        return {channel["name"] for channel in structured["channels"]}


async def test_the_sdk_client_authorizes_calls_and_refreshes(store: Store, workspace: Workspace) -> None:
    alice = workspace.people["alice"]
    with live_server(store) as live:
        person = Person(live.base_url, "alice", alice.password)
        storage = MemoryStorage()
        sent: list[str] = []
        assert await joined(provider(live.mcp_url, storage, person), live.mcp_url, sent) == {"general", "ops"}
        assert person.visits == 1
        # The discovery the MCP specification prescribes, in order, and a registration.
        paths = [entry.split(" ", 1)[1] for entry in sent]
        assert (
            paths.index("/.well-known/oauth-protected-resource/api/v1/mcp")
            < paths.index("/.well-known/oauth-authorization-server")
            < paths.index("/register")
            < paths.index("/token")
        )
        assert (
            f"resource={live.base_url.replace(':', '%3A').replace('/', '%2F')}%2Fapi%2Fv1%2Fmcp"
            in (person.authorization_urls[0])
        )
        assert storage.tokens is not None and storage.tokens.refresh_token
        first = storage.tokens

        # A new session with the stored tokens, once they have expired: the SDK refreshes them.
        again = provider(live.mcp_url, storage, person)
        await again._initialize()
        again.context.token_expiry_time = time.time() - 1
        sent.clear()
        assert await joined(again, live.mcp_url, sent) == {"general", "ops"}
        assert person.visits == 1, "a refresh needs no new consent"
        assert "POST /token" in sent
        assert storage.tokens.access_token != first.access_token
        assert storage.tokens.refresh_token != first.refresh_token

        # Removed by the person: the refresh fails, and the SDK asks for consent again.
        headers = {"X-User-Id": alice.user.id, "X-Auth-Token": alice.pat}
        async with httpx.AsyncClient(base_url=live.base_url) as http:
            (grant,) = (await http.get("/api/v1/users.getOAuthTokens", headers=headers)).json()["tokens"]
            await http.post("/api/v1/users.removeOAuthToken", json={"tokenId": grant["id"]}, headers=headers)
        third = provider(live.mcp_url, storage, person)
        await third._initialize()
        third.context.token_expiry_time = time.time() - 1
        assert await joined(third, live.mcp_url, []) == {"general", "ops"}
        assert person.visits == 2
