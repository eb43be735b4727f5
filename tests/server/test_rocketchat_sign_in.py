"""Signing in with a Rocket.Chat account, checked against the stand-in server: passwords, tokens,
the brief cache, refusals (wrong, two-factor, not mirrored, deactivated), and nothing kept there."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.rocketchat_sign_in import REFUSED_CACHE_SECONDS, RocketChatSignIn, SignInRefused
from ai_search_server.settings import SettingsError, load_settings
from ai_search_server.store.base import Store

from ._fake_rocketchat import FakeRocketChat
from ._oauth_flow import OAuthClient, pkce
from .conftest import BASE_URL
from .test_rocketchat_sync import sync, workspace

ALICE = "uAlice00000000001"


@pytest.fixture
def server() -> Iterator[FakeRocketChat]:
    fake = workspace(FakeRocketChat()).serve()
    fake.ws.tokens["alice-pat-123"] = ALICE
    yield fake
    fake.stop()


@pytest.fixture
def store(tmp_path: Path, server: FakeRocketChat, open_workspace: Callable[[Path], Store]) -> Iterator[Store]:
    opened = open_workspace(tmp_path / "data")
    sync(opened, server)
    yield opened
    opened.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(store: Store, server: FakeRocketChat, action, clock: Clock | None = None):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            sign_in = RocketChatSignIn(server.url, store, client, clock=clock or Clock())
            return await action(sign_in)

    return anyio.run(go)


def test_a_rocket_chat_password_signs_in_as_the_mirrored_person(
    store: Store, server: FakeRocketChat
) -> None:
    user = run(store, server, lambda s: s.password("alice", "pw-alice-123"))
    assert user.username == "alice" and user.id != ALICE  # our user, linked by the sync
    assert not [t for t, owner in server.ws.tokens.items() if owner == ALICE and t.startswith("login-")], (
        "the Rocket.Chat session made to check the password was logged out again"
    )


@pytest.mark.parametrize(
    ("username", "password", "prepare", "fragment"),
    [
        pytest.param("alice", "wrong", None, "refused the sign-in", id="wrong-password"),
        pytest.param("alice", "pw-alice-123", "two-factor", "two-factor code", id="two-factor"),
        pytest.param("zoe", "pw-zoe-123", "not-mirrored", "not mirrored here yet", id="not-mirrored"),
    ],
)
def test_refusals_say_why_for_the_log(
    store: Store,
    server: FakeRocketChat,
    username: str,
    password: str,
    prepare: str | None,
    fragment: str,
) -> None:
    if prepare == "two-factor":
        server.two_factor.add("alice")
    if prepare == "not-mirrored":
        server.add_user("uZoe000000000009", "zoe", "Zoe New", password="pw-zoe-123")
    with pytest.raises(SignInRefused, match=fragment):
        run(store, server, lambda s: s.password(username, password))


def test_a_personal_access_token_is_checked_then_believed_briefly(
    store: Store, server: FakeRocketChat
) -> None:
    clock = Clock()

    async def three_calls(sign_in: RocketChatSignIn) -> tuple[str, int, int]:
        user, token = await sign_in.token(ALICE, "alice-pat-123")
        await sign_in.token(ALICE, "alice-pat-123")
        asked_within = sign_in.asked
        clock.now += sign_in.cache_seconds + 1
        await sign_in.token(ALICE, "alice-pat-123")
        assert token.kind == "pat" and token.user_id == user.id
        return user.username, asked_within, sign_in.asked

    assert run(store, server, three_calls, clock) == ("alice", 1, 2)
    assert len(server.calls("/api/v1/me")) == 2


def test_a_refused_token_is_refused_without_asking_again_for_a_while(
    store: Store, server: FakeRocketChat
) -> None:
    clock = Clock()

    async def tries(sign_in: RocketChatSignIn) -> int:
        for _ in range(5):
            with pytest.raises(SignInRefused):
                await sign_in.token(ALICE, "not-a-token")
        clock.now += REFUSED_CACHE_SECONDS + 1
        with pytest.raises(SignInRefused):
            await sign_in.token(ALICE, "not-a-token")
        return sign_in.asked

    assert run(store, server, tries, clock) == 2


def test_a_person_deactivated_here_is_refused_even_with_a_good_token(
    store: Store, server: FakeRocketChat
) -> None:
    alice = store.get_user_by_username("alice")
    assert alice is not None
    store.set_active(alice.id, False)
    with pytest.raises(SignInRefused):
        run(store, server, lambda s: s.token(ALICE, "alice-pat-123"))


# -- through the real app ------------------------------------------------------------------------


@asynccontextmanager
async def signed_in_app(
    store: Store, server: FakeRocketChat, **overrides: object
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app with Rocket.Chat sign-in on; its outbound client closed after (no lifespan here)."""
    settings = load_settings(
        environ={},
        overrides={
            "site_url": BASE_URL,
            "embedder": "none",
            "mcp_enabled": True,
            "rocketchat_url": server.url,
            "rocketchat_sign_in": True,
            **overrides,
        },
    )
    app = create_app(settings, store, limiter=RateLimiter("memory://"))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield client
    finally:
        await app.state.services.outbound.aclose()


@pytest.mark.anyio
async def test_the_login_route_takes_a_rocket_chat_password(
    store: Store, server: FakeRocketChat
) -> None:
    async with signed_in_app(store, server) as client:
        answer = await client.post("/api/v1/login", json={"user": "alice", "password": "pw-alice-123"})
        assert answer.status_code == 200, answer.text
        data = answer.json()["data"]
        me = await client.get(
            "/api/v1/me", headers={"X-User-Id": data["userId"], "X-Auth-Token": data["authToken"]}
        )
        assert me.json()["username"] == "alice"
        wrong = await client.post("/api/v1/login", json={"user": "alice", "password": "nope"})
        assert wrong.status_code == 401 and wrong.json()["error"] == "Incorrect username or password"


@pytest.mark.anyio
async def test_a_rocket_chat_token_works_on_rest_and_mcp_and_is_scoped_by_the_sync(
    store: Store, server: FakeRocketChat
) -> None:
    headers = {"X-User-Id": ALICE, "X-Auth-Token": "alice-pat-123"}
    async with signed_in_app(store, server) as client:
        me = await client.get("/api/v1/me", headers=headers)
        assert me.status_code == 200 and me.json()["username"] == "alice"
        joined = await client.get("/api/v1/channels.list.joined", headers=headers)
        names = sorted(c["name"] for c in joined.json()["channels"])
        assert names == ["general", "ops"]  # alice's rooms in Rocket.Chat, as last synced: not #secret
        mcp = await client.post(
            "/api/v1/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                **headers,
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
        )
        assert mcp.status_code == 200 and mcp.json()["result"]["tools"]
        refused = await client.get("/api/v1/me", headers={"X-User-Id": ALICE, "X-Auth-Token": "forged"})
        assert refused.status_code == 401
        minted = await client.post(
            "/api/v1/users.generatePersonalAccessToken", json={"tokenName": "x"}, headers=headers
        )
        assert (minted.status_code, minted.json()["errorType"]) == (403, "error-login-session-required")
    assert len(server.calls("/api/v1/me")) == 2  # the good token once (then believed), the forged once


def test_sign_in_without_the_servers_url_stops_start_up() -> None:
    with pytest.raises(SettingsError, match=r"Rocket\.Chat sign-in needs rocketchat_url"):
        load_settings(environ={}, overrides={"rocketchat_sign_in": True})


@pytest.mark.anyio
async def test_the_oauth_sign_in_page_takes_a_rocket_chat_password(
    store: Store, server: FakeRocketChat
) -> None:
    """An MCP client's OAuth sign-in goes through the same check as the login route."""
    origin = "http://127.0.0.1:8000"  # OAuth needs https or loopback
    async with signed_in_app(store, server, site_url=origin) as client:
        oauth = OAuthClient(client, origin)
        assert (await oauth.register()).status_code == 201
        page = await client.get(f"{origin}/authorize?{oauth.authorization_query(pkce()[1])}")
        assert "your Rocket.Chat username and password" in page.text
        tokens = await oauth.tokens("alice", "pw-alice-123")
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_channels_list_joined"}}
        headers = {"Authorization": f"Bearer {tokens['access_token']}", "Accept": "application/json"}
        called = await client.post(f"{origin}/api/v1/mcp", json=body, headers=headers)
        channels = json.loads(called.json()["result"]["content"][0]["text"])["channels"]
        assert sorted(c["name"] for c in channels) == ["general", "ops"]  # as last synced: not #secret
