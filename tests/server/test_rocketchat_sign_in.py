"""Signing in with a Rocket.Chat account, checked against the stand-in server: passwords, tokens,
the brief cache, refusals (wrong, two-factor, not mirrored, deactivated), and nothing kept there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.rocketchat_sign_in import REFUSED_CACHE_SECONDS, RocketChatSignIn, SignInRefused
from ai_search_server.store import SQLiteStore, open_store

from ._fake_rocketchat import FakeRocketChat
from .test_rocketchat_sync import sync, workspace

ALICE = "uAlice00000000001"


@pytest.fixture
def server() -> Iterator[FakeRocketChat]:
    fake = workspace(FakeRocketChat()).serve()
    fake.ws.tokens["alice-pat-123"] = ALICE
    yield fake
    fake.stop()


@pytest.fixture
def store(tmp_path: Path, server: FakeRocketChat) -> Iterator[SQLiteStore]:
    with open_store(tmp_path / "data") as opened:
        sync(opened, server)
        yield opened


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(store: SQLiteStore, server: FakeRocketChat, action, clock: Clock | None = None):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            sign_in = RocketChatSignIn(server.url, store, client, clock=clock or Clock())
            return await action(sign_in)

    return anyio.run(go)


def test_a_rocket_chat_password_signs_in_as_the_mirrored_person(
    store: SQLiteStore, server: FakeRocketChat
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
    store: SQLiteStore,
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
    store: SQLiteStore, server: FakeRocketChat
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
    store: SQLiteStore, server: FakeRocketChat
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
    store: SQLiteStore, server: FakeRocketChat
) -> None:
    alice = store.get_user_by_username("alice")
    assert alice is not None
    store.set_active(alice.id, False)
    with pytest.raises(SignInRefused):
        run(store, server, lambda s: s.token(ALICE, "alice-pat-123"))
