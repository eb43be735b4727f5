"""OAuth 2.1 for MCP clients, in-process: metadata, the flow, and every bad request refused clearly.

The app is the real one (``create_app``) on a real store, reached as ``http://127.0.0.1:8000`` (OAuth
needs https or loopback); the client is ``_oauth_flow.OAuthClient``, the steps an MCP client takes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from authlib.oauth2 import rfc8414, rfc9207
from psycopg import sql
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.oauth import grants as oauth_grants
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.settings import Settings, load_settings
from ai_search_server.store.base import Store
from ai_search_server.store.passwords import hash_token
from ai_search_server.store.postgres import PostgresStore
from ai_search_server.store.sqlite import SQLiteStore

from ._live import free_port
from ._oauth_flow import REDIRECT_URI, OAuthClient, pkce, query_of, ticket_of
from .conftest import Workspace

pytestmark = pytest.mark.anyio

ORIGIN = "http://127.0.0.1:8000"
MCP = f"{ORIGIN}/api/v1/mcp"
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _stored_text(store: Store) -> str:
    """Every row the workspace database holds, as text, whichever store keeps it."""
    if isinstance(store, SQLiteStore):
        return "\n".join(store._connection().iterdump())
    assert isinstance(store, PostgresStore)
    with store._connection() as conn:
        tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        select = sql.SQL("SELECT t::text FROM {} t")
        return "\n".join(
            row[0] for table in tables for row in conn.execute(select.format(sql.Identifier(table))).fetchall()
        )


def _settings(**overrides: Any) -> Settings:
    base = {"site_url": ORIGIN, "mcp_enabled": True, "embedder": "none"}
    return load_settings(environ={}, overrides={**base, **overrides})


@pytest.fixture
def settings() -> Settings:
    return _settings()


@pytest.fixture
async def http(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client:
        yield client


@pytest.fixture
async def oauth(http: httpx.AsyncClient) -> OAuthClient:
    client = OAuthClient(http, ORIGIN)
    assert (await client.register()).status_code == 201
    return client


async def call_tool(
    http: httpx.AsyncClient, access: str, name: str = "get_channels_list_joined"
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
    return await http.post(MCP, json=body, headers={"Authorization": f"Bearer {access}", **ACCEPT})


def channel_names(response: httpx.Response) -> set[str]:
    result = response.json()["result"]
    assert result["isError"] is False, result
    return {c["name"] for c in json.loads(result["content"][0]["text"])["channels"]}


# -- metadata and the challenge ------------------------------------------------------------------


async def test_the_metadata_documents_describe_the_resource_and_the_server(http: httpx.AsyncClient) -> None:
    for path in ("/.well-known/oauth-protected-resource/api/v1/mcp", "/.well-known/oauth-protected-resource"):
        prm = await http.get(path)
        assert prm.status_code == 200 and prm.headers["access-control-allow-origin"] == "*"
        assert prm.json()["resource"] == MCP
        assert prm.json()["authorization_servers"] == [ORIGIN]
        assert prm.json()["scopes_supported"] == ["mcp"]
    asm = (await http.get("/.well-known/oauth-authorization-server")).json()
    # authlib's own RFC 8414 and RFC 9207 checks of a metadata document.
    rfc8414.AuthorizationServerMetadata(asm).validate(metadata_classes=[rfc9207.AuthorizationServerMetadata])
    assert asm["issuer"] == ORIGIN
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["authorization_response_iss_parameter_supported"] is True
    assert {"registration_endpoint", "revocation_endpoint"} <= asm.keys()


async def test_a_401_from_the_endpoint_says_where_the_metadata_is(http: httpx.AsyncClient) -> None:
    bare = await http.post(MCP, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=ACCEPT)
    assert bare.status_code == 401
    assert bare.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{ORIGIN}/.well-known/oauth-protected-resource/api/v1/mcp", scope="mcp"'
    )
    wrong = await http.post(MCP, json={}, headers={"Authorization": "Bearer not-a-token", **ACCEPT})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"].startswith('Bearer error="invalid_token", resource_metadata=')


async def test_with_oauth_off_there_is_no_challenge_and_no_authorization_server(store: Store) -> None:
    app = create_app(_settings(mcp_oauth_enabled=False), store, limiter=RateLimiter("memory://"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        bare = await http.post(MCP, json={}, headers=ACCEPT)
        assert bare.status_code == 401 and "www-authenticate" not in bare.headers
        assert (await http.get("/.well-known/oauth-authorization-server")).status_code == 404
        assert (await http.post("/register", json={"redirect_uris": [REDIRECT_URI]})).status_code == 404


# -- the flow ------------------------------------------------------------------------------------


async def test_a_client_registers_signs_a_person_in_calls_refreshes_and_is_revoked(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace, store: Store
) -> None:
    alice = workspace.people["alice"]
    tokens = await oauth.tokens("alice", alice.password)
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "mcp" and tokens["expires_in"] == 3600
    # The token is Alice's: her rooms, never Bob's private one.
    assert channel_names(await call_tool(http, tokens["access_token"])) == {"general", "ops"}
    # Listed like a personal access token, and stored as digests only.
    listed = (await http.get("/api/v1/users.getOAuthTokens", headers=_pat(workspace, "alice"))).json()[
        "tokens"
    ]
    assert [(t["clientName"], t["resource"]) for t in listed] == [("Test MCP client", MCP)]
    dump = _stored_text(store)
    assert hash_token(tokens["access_token"]) in dump  # the dump holds the token rows: their digests
    assert tokens["access_token"] not in dump and tokens["refresh_token"] not in dump

    refreshed = (await oauth.refresh(tokens["refresh_token"])).json()
    assert refreshed["refresh_token"] != tokens["refresh_token"]
    assert (await call_tool(http, tokens["access_token"])).status_code == 401  # the old pair ended
    assert channel_names(await call_tool(http, refreshed["access_token"])) == {"general", "ops"}

    assert (await oauth.revoke(refreshed["refresh_token"])).status_code == 200
    refused = await call_tool(http, refreshed["access_token"])
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert (await oauth.refresh(refreshed["refresh_token"])).json()["error"] == "invalid_grant"


async def test_a_person_removes_the_access_from_the_rest_api(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    tokens = await oauth.tokens("alice", workspace.people["alice"].password)
    headers = _pat(workspace, "alice")
    (entry,) = (await http.get("/api/v1/users.getOAuthTokens", headers=headers)).json()["tokens"]
    # Bob cannot remove Alice's, and does not see it.
    bob = _pat(workspace, "bob")
    assert (await http.get("/api/v1/users.getOAuthTokens", headers=bob)).json()["tokens"] == []
    gone = await http.post("/api/v1/users.removeOAuthToken", json={"tokenId": entry["id"]}, headers=bob)
    assert gone.status_code == 404
    assert (await call_tool(http, tokens["access_token"])).status_code == 200
    removed = await http.post(
        "/api/v1/users.removeOAuthToken", json={"tokenId": entry["id"]}, headers=headers
    )
    assert removed.status_code == 200
    assert (await call_tool(http, tokens["access_token"])).status_code == 401
    assert (await oauth.refresh(tokens["refresh_token"])).json()["error"] == "invalid_grant"


async def test_personal_access_tokens_keep_working_and_oauth_tokens_stay_on_mcp(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    alice = workspace.people["alice"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with_pat = await http.post(MCP, json=body, headers={**_pat(workspace, "alice"), **ACCEPT})
    assert with_pat.status_code == 200
    tokens = await oauth.tokens("alice", alice.password)
    # An OAuth token is for the MCP endpoint (its audience), not for the REST API.
    rest = await http.get(
        "/api/v1/me", headers={"X-User-Id": alice.user.id, "X-Auth-Token": tokens["access_token"]}
    )
    assert rest.status_code == 401
    bearer_rest = await http.get("/api/v1/me", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert bearer_rest.status_code == 401


async def test_a_deactivated_person_s_token_stops_at_once(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace, store: Store
) -> None:
    alice = workspace.people["alice"]
    tokens = await oauth.tokens("alice", alice.password)
    store.set_active(alice.user.id, False)
    assert (await call_tool(http, tokens["access_token"])).status_code == 401
    assert (await oauth.refresh(tokens["refresh_token"])).json()["error"] == "invalid_grant"


async def test_a_token_is_bound_to_the_resource_it_was_issued_for(store: Store, workspace: Workspace) -> None:
    """Reached as 127.0.0.1 and as localhost, the server is two resources: a token of one is refused
    at the other (RFC 8707 audience), though both are the same process."""
    app = create_app(_settings(), store, limiter=RateLimiter("memory://"))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport) as http:
        oauth = OAuthClient(http, "http://127.0.0.1:8000")
        await oauth.register()
        tokens = await oauth.tokens("alice", workspace.people["alice"].password)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Authorization": f"Bearer {tokens['access_token']}", **ACCEPT}
        assert (
            await http.post("http://127.0.0.1:8000/api/v1/mcp", json=body, headers=headers)
        ).status_code == 200
        elsewhere = await http.post("http://localhost:8000/api/v1/mcp", json=body, headers=headers)
        assert elsewhere.status_code == 401
        assert 'resource_metadata="http://localhost:8000/' in elsewhere.headers["www-authenticate"]


# -- refused token requests ----------------------------------------------------------------------


TOKEN_CASES = [
    pytest.param({"code_verifier": "x" * 43}, 400, "invalid_grant", id="wrong-verifier"),
    pytest.param({"code_verifier": None}, 400, "invalid_request", id="no-verifier"),
    pytest.param({"redirect_uri": "http://127.0.0.1:9/other"}, 400, "invalid_grant", id="wrong-redirect-uri"),
    pytest.param({"resource": "https://elsewhere.example/mcp"}, 400, "invalid_target", id="wrong-resource"),
    pytest.param({"code": "not-a-code"}, 400, "invalid_grant", id="unknown-code"),
    pytest.param({"grant_type": "password"}, 400, "unsupported_grant_type", id="unsupported-grant"),
    pytest.param({"client_id": "nobody"}, 400, "invalid_client", id="unknown-client"),
]


@pytest.mark.parametrize(("overrides", "status", "error"), TOKEN_CASES)
async def test_a_bad_token_request_is_refused_and_spends_the_code(
    oauth: OAuthClient, workspace: Workspace, overrides: dict[str, str | None], status: int, error: str
) -> None:
    verifier, challenge = pkce()
    code = await oauth.code("alice", workspace.people["alice"].password, challenge)
    refused = await oauth.exchange(code, verifier, **overrides)
    assert (refused.status_code, refused.json()["error"]) == (status, error), refused.text
    assert refused.json()["error_description"]
    assert refused.headers["cache-control"] == "no-store"
    # A code that reached a check and failed it is spent: the right request cannot use it after.
    if overrides.get("code") is None and "client_id" not in overrides and "grant_type" not in overrides:
        assert (await oauth.exchange(code, verifier)).json()["error"] == "invalid_grant"


async def test_a_reused_code_is_refused_and_ends_the_tokens_it_gave(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    verifier, challenge = pkce()
    code = await oauth.code("alice", workspace.people["alice"].password, challenge)
    first = (await oauth.exchange(code, verifier)).json()
    assert (await call_tool(http, first["access_token"])).status_code == 200
    again = await oauth.exchange(code, verifier)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert (await call_tool(http, first["access_token"])).status_code == 401


async def test_an_expired_code_is_refused(
    oauth: OAuthClient, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oauth_grants, "AUTHORIZATION_CODE_LIFETIME_SECONDS", 0)
    verifier, challenge = pkce()
    code = await oauth.code("alice", workspace.people["alice"].password, challenge)
    refused = await oauth.exchange(code, verifier)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")


async def test_a_refresh_token_used_twice_ends_the_grant(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    tokens = await oauth.tokens("alice", workspace.people["alice"].password)
    newer = (await oauth.refresh(tokens["refresh_token"])).json()
    replay = await oauth.refresh(tokens["refresh_token"])
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    # The replay may be the thief or the client: either way, the pair issued since is dead too.
    assert (await call_tool(http, newer["access_token"])).status_code == 401
    assert (await oauth.refresh(newer["refresh_token"])).json()["error"] == "invalid_grant"


async def test_another_client_cannot_refresh_or_revoke_a_token(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    tokens = await oauth.tokens("alice", workspace.people["alice"].password)
    other = OAuthClient(http, ORIGIN)
    await other.register(client_name="Other")
    assert (await other.refresh(tokens["refresh_token"])).json()["error"] == "invalid_grant"
    assert (await other.revoke(tokens["access_token"])).status_code == 200  # RFC 7009: no oracle
    assert (await call_tool(http, tokens["access_token"])).status_code == 200


# -- refused authorization requests --------------------------------------------------------------


AUTHORIZE_REDIRECTED = [
    pytest.param({"code_challenge": None, "code_challenge_method": None}, "invalid_request", id="no-pkce"),
    pytest.param({"code_challenge_method": "plain"}, "invalid_request", id="plain-pkce"),
    pytest.param({"code_challenge_method": None}, "invalid_request", id="pkce-without-method"),
    pytest.param({"resource": "https://elsewhere.example/mcp"}, "invalid_target", id="wrong-resource"),
    pytest.param({"resource": f"{ORIGIN}/api/v1/other"}, "invalid_target", id="another-path"),
    pytest.param({"scope": "admin"}, "invalid_scope", id="unknown-scope"),
    pytest.param({"response_type": "token"}, "unsupported_response_type", id="implicit-grant"),
]


@pytest.mark.parametrize(("overrides", "error"), AUTHORIZE_REDIRECTED)
async def test_a_bad_authorization_request_goes_back_to_the_client_with_the_error(
    http: httpx.AsyncClient, oauth: OAuthClient, overrides: dict[str, str | None], error: str
) -> None:
    _verifier, challenge = pkce()
    answer = await http.get(f"/authorize?{oauth.authorization_query(challenge, **overrides)}")
    assert answer.status_code == 302, answer.text
    assert answer.headers["location"].startswith(REDIRECT_URI)
    back = query_of(answer.headers["location"])
    assert back["error"] == error and back["state"] == "state-123" and back["iss"] == ORIGIN


AUTHORIZE_REFUSED_HERE = [
    pytest.param({"client_id": "no-such-client"}, "does not exist", id="unknown-client"),
    pytest.param({"client_id": None}, "client_id", id="no-client"),
    pytest.param({"redirect_uri": "https://attacker.example/cb"}, "redirect", id="unregistered-redirect"),
    pytest.param({"redirect_uri": "http://127.0.0.2:9/callback"}, "redirect", id="other-loopback-address"),
]


@pytest.mark.parametrize(("overrides", "said"), AUTHORIZE_REFUSED_HERE)
async def test_a_request_naming_no_registered_client_or_redirect_never_redirects(
    http: httpx.AsyncClient, oauth: OAuthClient, overrides: dict[str, str | None], said: str
) -> None:
    _verifier, challenge = pkce()
    answer = await http.get(f"/authorize?{oauth.authorization_query(challenge, **overrides)}")
    assert answer.status_code == 400 and "location" not in answer.headers
    assert answer.headers["content-type"].startswith("text/html")
    assert said in answer.text.lower() or said in answer.text


async def test_a_loopback_redirect_may_use_any_port(http: httpx.AsyncClient, oauth: OAuthClient) -> None:
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge, redirect_uri="http://127.0.0.1:53682/callback")
    assert (await http.get(f"/authorize?{query}")).status_code == 200


# -- the sign-in and consent forms ---------------------------------------------------------------


async def test_signing_in_checks_the_password_and_the_page_escapes_the_client_name(
    http: httpx.AsyncClient, workspace: Workspace
) -> None:
    oauth = OAuthClient(http, ORIGIN)
    await oauth.register(client_name='<img src=x onerror="alert(1)"> Evil & Co')
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge)
    page = await http.get(f"/authorize?{query}")
    assert (
        "<img" not in page.text
        and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; Evil &amp; Co" in page.text
    )
    assert page.headers["cache-control"] == "no-store" and page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    wrong = await oauth.sign_in(query, "alice", "not her password")
    assert wrong.status_code == 200 and "Incorrect username or password" in wrong.text
    assert 'name="ticket"' not in wrong.text
    right = await oauth.sign_in(query, "alice", workspace.people["alice"].password)
    assert right.status_code == 200 and "127.0.0.1:9" in right.text
    # The consent form's redirect is allowed by its own page's form-action, and nothing more.
    assert "form-action 'self' http://127.0.0.1:9;" in right.headers["content-security-policy"]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}, id="cross-site"),
        pytest.param({"Origin": "https://attacker.example"}, id="foreign-origin"),
        pytest.param({"Sec-Fetch-Site": "same-site"}, id="same-site-subdomain"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
        pytest.param({}, id="no-browser-headers"),
    ],
)
async def test_a_form_posted_from_elsewhere_is_refused(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace, headers: dict[str, str]
) -> None:
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge)
    form = {"step": "sign-in", "username": "alice", "password": workspace.people["alice"].password}
    refused = await http.post(f"/authorize?{query}", data=form, headers=headers)
    assert refused.status_code == 403 and "not sent from this site" in refused.text


async def test_a_consent_ticket_works_once_for_its_own_request(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge)
    ticket = ticket_of((await oauth.sign_in(query, "alice", workspace.people["alice"].password)).text)
    other_query = oauth.authorization_query(challenge, state="another")
    moved = await oauth.consent(other_query, ticket)
    assert moved.status_code == 400 and "Sign in again" in moved.text
    assert (await oauth.consent(query, ticket + "x")).status_code == 400
    assert (await oauth.consent(query, ticket)).status_code == 302
    assert (await oauth.consent(query, ticket)).status_code == 400


async def test_a_ticket_store_that_does_not_answer_shows_a_page_to_try_again(
    store: Store, workspace: Workspace
) -> None:
    """Tickets in a Redis that is down: the sign-in answers a page saying to try again, never a consent."""
    app = create_app(_settings(rate_limit_storage=f"redis://127.0.0.1:{free_port()}/0"), store)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as http:
        oauth = OAuthClient(http, ORIGIN)
        assert (await oauth.register()).status_code == 201
        _verifier, challenge = pkce()
        query = oauth.authorization_query(challenge)
        page = await oauth.sign_in(query, "alice", workspace.people["alice"].password)
        consent = await oauth.consent(query, "a-ticket-nobody-issued")
    assert page.status_code == 503 and "Try again shortly" in page.text
    assert page.headers["retry-after"] == "5" and 'name="ticket"' not in page.text
    assert consent.status_code == 503


async def test_denying_goes_back_to_the_client_with_access_denied(
    http: httpx.AsyncClient, oauth: OAuthClient, workspace: Workspace
) -> None:
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge)
    ticket = ticket_of((await oauth.sign_in(query, "alice", workspace.people["alice"].password)).text)
    denied = await oauth.consent(query, ticket, decision="deny")
    assert denied.status_code == 302
    assert query_of(denied.headers["location"])["error"] == "access_denied"
    assert (await http.get("/api/v1/users.getOAuthTokens", headers=_pat(workspace, "alice"))).json()[
        "tokens"
    ] == []


async def test_sign_in_attempts_share_the_login_budget(http: httpx.AsyncClient, oauth: OAuthClient) -> None:
    _verifier, challenge = pkce()
    query = oauth.authorization_query(challenge)
    # A name per attempt: the address's budget is the subject here, not one account's wait
    # (tests/server/test_login_throttle.py has that, on this page too).
    statuses = [(await oauth.sign_in(query, f"guess-{i}", "guess")).status_code for i in range(11)]
    assert statuses == [200] * 10 + [429]
    login = await http.post("/api/v1/login", json={"user": "alice", "password": "guess"})
    assert login.status_code == 429


# -- registration ----------------------------------------------------------------------------------


REGISTRATION_CASES = [
    pytest.param({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", id="javascript"),
    pytest.param(
        {"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri", id="http-not-loopback"
    ),
    pytest.param({"redirect_uris": ["https://app.example/cb#frag"]}, "invalid_redirect_uri", id="fragment"),
    pytest.param(
        {"redirect_uris": ["https://user:pw@app.example/cb"]}, "invalid_redirect_uri", id="userinfo"
    ),
    pytest.param({"redirect_uris": ["myapp:/cb"]}, "invalid_redirect_uri", id="scheme-without-domain"),
    pytest.param({"redirect_uris": []}, "invalid_redirect_uri", id="no-redirect"),
    pytest.param(
        {"redirect_uris": [f"https://a.example/{i}" for i in range(11)]},
        "invalid_redirect_uri",
        id="too-many",
    ),
    pytest.param({"grant_types": ["client_credentials"]}, "invalid_client_metadata", id="client-credentials"),
    pytest.param({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata", id="jwt-auth"),
    pytest.param({"client_name": "x" * 101}, "invalid_client_metadata", id="long-name"),
    pytest.param({"client_name": "bad\u0000name"}, "invalid_client_metadata", id="control-in-name"),
    pytest.param({"scope": "admin"}, "invalid_client_metadata", id="unknown-scope"),
]


@pytest.mark.parametrize(("metadata", "error"), REGISTRATION_CASES)
async def test_bad_client_metadata_is_refused(
    http: httpx.AsyncClient, metadata: dict[str, Any], error: str
) -> None:
    refused = await OAuthClient(http, ORIGIN).register(**metadata)
    assert (refused.status_code, refused.json()["error"]) == (400, error), refused.text


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[]", id="array"),
        pytest.param(b"x" * 20_000, id="huge"),
    ],
)
async def test_a_registration_body_that_is_no_metadata_is_refused(
    http: httpx.AsyncClient, body: bytes
) -> None:
    refused = await http.post("/register", content=body, headers={"Content-Type": "application/json"})
    assert refused.status_code in (400, 413) and refused.json()["error"] == "invalid_client_metadata"


async def test_native_redirects_register_and_public_clients_get_no_secret(http: httpx.AsyncClient) -> None:
    uris = ["http://localhost:33418/callback", "http://[::1]/cb", "com.example.app:/oauth2redirect"]
    public = await OAuthClient(http, ORIGIN).register(redirect_uris=uris)
    assert public.status_code == 201 and "client_secret" not in public.json()
    confidential = await OAuthClient(http, ORIGIN).register(token_endpoint_auth_method="client_secret_post")
    assert confidential.status_code == 201 and len(confidential.json()["client_secret"]) >= 32


async def test_a_confidential_client_must_prove_its_secret(
    http: httpx.AsyncClient, workspace: Workspace
) -> None:
    oauth = OAuthClient(http, ORIGIN)
    await oauth.register(token_endpoint_auth_method="client_secret_post")
    verifier, challenge = pkce()
    code = await oauth.code("alice", workspace.people["alice"].password, challenge)
    without = await oauth.exchange(code, verifier)
    assert (without.status_code, without.json()["error"]) == (401, "invalid_client")
    code = await oauth.code("alice", workspace.people["alice"].password, challenge)
    assert oauth.client_secret is not None
    good = await oauth.exchange(code, verifier, client_secret=oauth.client_secret)
    assert good.status_code == 200, good.text


async def test_registration_stops_at_the_client_limit(store: Store) -> None:
    app = create_app(_settings(oauth_max_clients=2), store, limiter=RateLimiter("memory://"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN) as http:
        statuses = [(await OAuthClient(http, ORIGIN).register()).status_code for _ in range(3)]
        assert statuses == [201, 201, 503]
        full = await OAuthClient(http, ORIGIN).register()
        assert full.json()["error"] == "temporarily_unavailable"


async def test_an_insecure_site_url_is_refused_with_a_reason(store: Store) -> None:
    app = create_app(_settings(site_url="http://search.example.com"), store, limiter=RateLimiter("memory://"))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://search.example.com"
    ) as http:
        page = await http.get("/authorize?client_id=x")
        assert page.status_code == 400 and "https" in page.text
        token = await http.post("/token", data={"grant_type": "authorization_code"})
        assert token.json()["error"] == "insecure_transport"


def _pat(workspace: Workspace, username: str) -> dict[str, str]:
    person = workspace.people[username]
    return {"X-User-Id": person.user.id, "X-Auth-Token": person.pat}


async def test_a_site_url_in_capitals_names_one_resource(store: Store, workspace: Workspace) -> None:
    """Scheme and host compare case-insensitively (RFC 8707's canonical form): a site configured in
    capitals issues tokens for the lowercase resource, which its endpoint accepts."""
    app = create_app(
        _settings(site_url="https://Search.Example.com"), store, limiter=RateLimiter("memory://")
    )
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport) as http:
        origin = "https://search.example.com"
        prm = await http.get(f"{origin}/.well-known/oauth-protected-resource/api/v1/mcp")
        assert prm.json()["resource"] == f"{origin}/api/v1/mcp"
        oauth = OAuthClient(http, origin)
        await oauth.register()
        tokens = await oauth.tokens("alice", workspace.people["alice"].password)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Authorization": f"Bearer {tokens['access_token']}", **ACCEPT}
        assert (await http.post(f"{origin}/api/v1/mcp", json=body, headers=headers)).status_code == 200
