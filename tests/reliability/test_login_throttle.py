"""F5, per account: failed sign-ins slow the next attempt for that account, and a known device skips it.

The per-address budget of ``POST /api/v1/login`` (10 a minute) lets someone with many addresses guess
one account's password ten times a minute per address. The account's own budget
(``login_throttle.py``): five failures cost nothing, then each failure makes the next attempt wait
(1 s, doubling, at most 60 s), answered 429 with ``Retry-After`` before any password is checked, for
a username that exists or not alike. A client holding a valid device cookie for the account (from a
successful login) skips the wait; a forged, expired or other account's cookie does not.

The real app in-process with real SQLite (or PostgreSQL); the limiter in process memory and in a
real ``redis-server`` (two apps on one Redis stand for two server processes); a test clock on the
throttle, so waits are passed by moving the clock, never by sleeping. Many addresses are forged
peers of the in-process client. Rocket.Chat passwords are checked against the stand-in Rocket.Chat.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.login_throttle import (
    ACCOUNT_FREE_FAILURES,
    DEVICE_COOKIE_MAX_AGE_SECONDS,
    DEVICE_COOKIE_NAME,
    LoginThrottle,
    SlowDown,
)
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.settings import Settings
from ai_search_server.store import open_store
from ai_search_server.store.base import Store
from tests.server._fake_rocketchat import FakeRocketChat
from tests.server._live import running_redis
from tests.server._oauth_flow import OAuthClient, pkce
from tests.server.conftest import Workspace
from tests.server.test_rocketchat_sync import sync
from tests.server.test_rocketchat_sync import workspace as rocketchat_workspace

from ._apps import asgi
from .conftest import Figure, reliability_settings

LOGIN = "/api/v1/login"
WRONG = "not-the-password"
# The waits the docs promise after the 5th, 6th ... failure (seconds): doubling from 1, capped at 60.
PROMISED_WAITS = [1, 2, 4, 8, 16, 32, 60, 60]
# Simulated seconds of the many-addresses attack (one attempt per second): the failure window.
ATTACK_SECONDS = 15 * 60
# Distinct client addresses the attack comes from (each stays far below its own 10 a minute).
ATTACK_ADDRESSES = 100


class Clock:
    """The throttle's clock (seconds since the epoch), moved by the test."""

    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
def limiter_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the counts live: this process's memory, or a throwaway redis-server shared by two apps."""
    if request.param == "memory":
        yield "memory://"
        return
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup --test installs it)")
    workdir = tmp_path / "redis"
    workdir.mkdir()
    with running_redis(workdir) as url:
        yield url


@dataclass
class Servers:
    """One app per server process (two on one Redis; one with the memory limiter), one clock."""

    apps: list[Starlette]
    clock: Clock
    checks: list[str]  # usernames whose password was checked, in order

    def client(self, host: str = "203.0.113.7", process: int = 0, origin: str = "") -> httpx.AsyncClient:
        http = asgi(self.apps[process % len(self.apps)], client_host=host)
        if origin:
            http.base_url = httpx.URL(origin)
        return http


@asynccontextmanager
async def servers(
    store: Store, limiter_uri: str, settings: Settings | None = None, *, spy: Any = None
) -> AsyncIterator[Servers]:
    clock = Clock()
    checks: list[str] = []
    verify = store.verify_password

    def counted(username: str, password: str) -> Any:
        checks.append(username)
        return verify(username, password)

    store.verify_password = counted  # type: ignore[method-assign]  # counts the checks, changes nothing
    processes = 2 if limiter_uri.startswith("redis") else 1
    async with AsyncExitStack() as stack:
        apps = []
        for _ in range(processes):
            limiter = await stack.enter_async_context(RateLimiter(limiter_uri))
            app = create_app(settings or reliability_settings(), store, limiter=limiter)
            app.state.services.login_throttle.clock = clock
            stack.push_async_callback(app.state.services.outbound.aclose)
            apps.append(app)
        try:
            yield Servers(apps, clock, checks)
        finally:
            del store.verify_password


async def login(
    http: httpx.AsyncClient, user: str, password: str, cookie: str | None = None
) -> httpx.Response:
    """One login, carrying exactly ``cookie`` (a client's jar would otherwise add what it was given)."""
    http.cookies.clear()
    headers = {"Cookie": f"{DEVICE_COOKIE_NAME}={cookie}"} if cookie else {}
    return await http.post(LOGIN, json={"user": user, "password": password}, headers=headers)


def device_cookie_of(response: httpx.Response) -> str:
    value = response.cookies.get(DEVICE_COOKIE_NAME)
    assert value, f"a successful login sets the device cookie: {response.headers}"
    return value


async def into_the_wait(run: Servers, user: str) -> None:
    """The free failures for ``user``, each from another address: the account now waits."""
    for i in range(ACCOUNT_FREE_FAILURES):
        async with run.client(f"198.51.100.{i + 1}", process=i) as http:
            assert (await login(http, user, WRONG)).status_code == 401


# -- the wait grows, and is the same for every username ---------------------------------------------


async def _schedule(run: Servers, user: str) -> list[tuple[int, int | None]]:
    """(status, Retry-After) of: the free failures, then per promised wait an attempt at once (429)
    and one once the clock has passed the Retry-After it was given (checked again: 401)."""
    seen: list[tuple[int, int | None]] = []
    address = 0

    async def attempt() -> httpx.Response:
        nonlocal address
        address += 1
        async with run.client(f"198.51.100.{address}", process=address) as http:
            response = await login(http, user, WRONG)
        retry = response.headers.get("retry-after")
        seen.append((response.status_code, int(retry) if retry else None))
        return response

    for _ in range(ACCOUNT_FREE_FAILURES):
        await attempt()
    for _ in PROMISED_WAITS:
        refused = await attempt()
        run.clock.now += int(refused.headers.get("retry-after", "0"))
        await attempt()
    return seen


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_an_accounts_failures_start_a_wait_that_doubles_to_a_minute_for_any_username(
    store: Store, workspace: Workspace, limiter_uri: str, figure: Figure
) -> None:
    alice = workspace["alice"]
    async with servers(store, limiter_uri) as run:
        known = await _schedule(run, "alice")
        known_checks = len(run.checks)
        unknown = await _schedule(run, "nobody-by-this-name")
        unknown_checks = len(run.checks) - known_checks
        # Past the last wait, a stranger's client with the right password is checked, and signs in.
        run.clock.now += PROMISED_WAITS[-1]
        async with run.client("192.0.2.99") as http:
            after = await login(http, "alice", alice.password)
    expected = [(401, None)] * ACCOUNT_FREE_FAILURES + [
        pair for wait in PROMISED_WAITS for pair in ((429, wait), (401, None))
    ]
    figure(
        tried=len(known) + len(unknown) + 1,
        failed=(known != expected) + (unknown != known) + (after.status_code != 200),
        storage=limiter_uri.split(":")[0],
        retry_after_known=[r for s, r in known if s == 429],
        retry_after_unknown=[r for s, r in unknown if s == 429],
        passwords_checked_known=known_checks,
        passwords_checked_unknown=unknown_checks,
        right_password_after_the_wait=after.status_code,
    )
    assert known == expected
    assert unknown == known, "an unknown username is answered exactly as a known one"
    assert known_checks == unknown_checks == ACCOUNT_FREE_FAILURES + len(PROMISED_WAITS)
    assert after.status_code == 200


# -- inside the wait: who is checked, who is refused unchecked --------------------------------------


def _forged(cookie: str) -> str:
    """The cookie with its signature's first character changed."""
    head, _, mac = cookie.rpartition(".")
    return f"{head}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"


@dataclass(frozen=True)
class InWait:
    user: str  # the username the attempt names
    password: str  # "right" (the person's), or WRONG
    cookie: str  # which device cookie the client holds: see _cookie_for
    status: int  # the answer
    checked: bool  # whether a password was checked


IN_WAIT = [
    pytest.param(InWait("alice", "right", "none", 429, False), id="stranger-right-password"),
    pytest.param(InWait("alice", WRONG, "none", 429, False), id="stranger-wrong-password"),
    pytest.param(InWait("nobody-by-this-name", WRONG, "none", 429, False), id="unknown-username"),
    pytest.param(InWait("alice", "right", "own", 200, True), id="own-device-right-password"),
    pytest.param(InWait("@Alice", "right", "own", 200, True), id="own-device-name-typed-otherwise"),
    pytest.param(InWait("alice", WRONG, "own", 401, True), id="own-device-wrong-password-is-checked"),
    pytest.param(InWait("alice", "right", "forged", 429, False), id="forged-signature"),
    pytest.param(InWait("alice", "right", "other-key", 429, False), id="signed-by-another-server-key"),
    pytest.param(InWait("alice", "right", "expired", 429, False), id="expired-cookie"),
    pytest.param(InWait("alice", "right", "bobs", 429, False), id="other-accounts-cookie"),
    pytest.param(InWait("alice", "right", "garbage", 429, False), id="garbage-cookie"),
    pytest.param(InWait("nobody-by-this-name", WRONG, "own", 429, False), id="alices-cookie-for-another-name"),
]


async def _cookie_for(kind: str, run: Servers, workspace: Workspace) -> str | None:
    """The device cookie a client holds, got the way such a client would get it."""
    if kind == "none":
        return None
    if kind == "garbage":
        return "v1.not-a-cookie.x.y"
    if kind == "other-key":
        other = LoginThrottle(None, b"k" * 32, clock=run.clock)  # another deployment's key
        return other.device_cookie("alice")
    person = workspace["bob"] if kind == "bobs" else workspace["alice"]
    async with run.client("192.0.2.10") as http:
        own = device_cookie_of(await login(http, person.user.username, person.password))
    if kind == "expired":
        run.clock.now += DEVICE_COOKIE_MAX_AGE_SECONDS + 1
    return _forged(own) if kind == "forged" else own


@pytest.mark.requirement("F5")
@pytest.mark.anyio
@pytest.mark.parametrize("case", IN_WAIT)
async def test_inside_the_wait_only_a_valid_device_cookie_for_the_account_is_checked(
    store: Store, workspace: Workspace, limiter_uri: str, case: InWait, figure: Figure
) -> None:
    async with servers(store, limiter_uri) as run:
        cookie = await _cookie_for(case.cookie, run, workspace)
        await into_the_wait(run, "alice")
        await into_the_wait(run, "nobody-by-this-name")
        checks_before = len(run.checks)
        password = workspace["alice"].password if case.password == "right" else case.password
        async with run.client("192.0.2.77", process=1) as http:
            answer = await login(http, case.user, password, cookie)
        checked = len(run.checks) > checks_before
    retry_after = answer.headers.get("retry-after")
    sets_cookie = DEVICE_COOKIE_NAME in answer.cookies
    wrong = (
        (answer.status_code != case.status)
        + (checked != case.checked)
        + (case.status == 429 and retry_after != "1")
        + (sets_cookie != (case.status == 200))
    )
    figure(
        tried=1,
        failed=wrong,
        storage=limiter_uri.split(":")[0],
        status=answer.status_code,
        password_checked=checked,
        retry_after=retry_after,
        error_type=answer.json().get("errorType"),
    )
    assert (answer.status_code, checked) == (case.status, case.checked), answer.text
    if case.status == 429:
        assert retry_after == "1" and answer.json()["errorType"] == "error-too-many-requests"
    if case.status == 200:
        body = answer.json()
        assert set(body) == {"status", "data", "success"}, "the JSON is the same, cookie or not"
        assert set(body["data"]) == {"userId", "authToken", "me"}


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_a_device_that_fails_too_often_loses_its_exemption(
    store: Store, workspace: Workspace, limiter_uri: str, figure: Figure
) -> None:
    """A stolen device cookie is no unlimited guessing: the device's failures get the same wait."""
    alice = workspace["alice"]
    async with (
        servers(store, limiter_uri) as run,
        run.client("192.0.2.10") as http,
        run.client("192.0.2.11") as stranger,
    ):
        cookie = device_cookie_of(await login(http, "alice", alice.password))
        own_failures = [(await login(http, "alice", WRONG, cookie)).status_code for _ in range(5)]
        # The device's failures are its own: the account does not wait for them ...
        account_free = await login(stranger, "alice", alice.password)
        # ... but while the device waits, it is a stranger to a waiting account ...
        await into_the_wait(run, "alice")
        in_its_wait = await login(http, "alice", alice.password, cookie)
        # ... and once its own wait is over, exempt again, while the account still waits.
        run.clock.now += 1
        one_more_failure = await login(stranger, "alice", WRONG)
        after_its_wait = await login(http, "alice", alice.password, cookie)
        stranger_now = await login(stranger, "alice", alice.password)
    statuses = [
        *own_failures,
        account_free.status_code,
        in_its_wait.status_code,
        one_more_failure.status_code,
        after_its_wait.status_code,
        stranger_now.status_code,
    ]
    expected = [401] * 5 + [200, 429, 401, 200, 429]
    figure(tried=len(statuses), failed=int(statuses != expected), statuses=statuses)
    assert statuses == expected


# -- many addresses, and several processes ---------------------------------------------------------


def _guesses_in(seconds: int, slow_down: SlowDown) -> int:
    """Guesses checked in ``seconds`` at one attempt a second, by the documented rule (a model)."""
    checked, next_allowed = 0, 0
    for now in range(seconds):
        if now >= next_allowed:
            checked += 1
            next_allowed = now + slow_down.wait_after(checked)
    return checked


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_many_addresses_and_processes_cannot_exceed_one_accounts_budget(
    store: Store, workspace: Workspace, limiter_uri: str, figure: Figure
) -> None:
    statuses: list[int] = []
    started = time.monotonic()
    async with servers(store, limiter_uri) as run:
        for second in range(ATTACK_SECONDS):
            host = f"10.{second % ATTACK_ADDRESSES}.0.1"
            async with run.client(host, process=second) as http:
                statuses.append((await login(http, "alice", f"guess-{second}")).status_code)
            run.clock.now += 1
        checked = len(run.checks)
    model = _guesses_in(ATTACK_SECONDS, SlowDown())
    figure(
        tried=len(statuses),
        failed=int(checked != model) + statuses.count(200),
        storage=limiter_uri.split(":")[0],
        processes=len(run.apps),
        addresses=ATTACK_ADDRESSES,
        simulated_seconds=ATTACK_SECONDS,
        guesses_checked=checked,
        guesses_checked_by_the_rule=model,
        guesses_checked_per_address_budget_alone=ATTACK_SECONDS,
        refused_429=statuses.count(429),
        wall_seconds=round(time.monotonic() - started, 1),
    )
    assert checked == model == statuses.count(401)
    assert statuses.count(429) == ATTACK_SECONDS - model


# -- Rocket.Chat passwords and the OAuth sign-in page spend the same budget -------------------------


@pytest.fixture
def rocketchat() -> Iterator[FakeRocketChat]:
    fake = rocketchat_workspace(FakeRocketChat()).serve()
    yield fake
    fake.stop()


@pytest.fixture
def mirrored(database_url: str, tmp_path: Path, rocketchat: FakeRocketChat) -> Iterator[Store]:
    """A workspace synced from the stand-in Rocket.Chat: alice exists here without a local password,
    so her password is Rocket.Chat's to check."""
    store = open_store(tmp_path / "rc-data", database_url=database_url)
    sync(store, rocketchat)
    yield store
    store.close()


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_rocket_chat_passwords_and_the_oauth_page_spend_the_same_accounts_budget(
    mirrored: Store, rocketchat: FakeRocketChat, figure: Figure
) -> None:
    origin = "http://127.0.0.1:8000"  # OAuth needs https or loopback
    settings = reliability_settings(site_url=origin, rocketchat_url=rocketchat.url, rocketchat_sign_in=True)
    async with servers(mirrored, "memory://", settings) as run, run.client(origin=origin) as http:
        asked = len(rocketchat.calls("/api/v1/login"))
        failures = [(await login(http, "alice", WRONG)).status_code for _ in range(ACCOUNT_FREE_FAILURES)]
        asked_for_failures = len(rocketchat.calls("/api/v1/login")) - asked
        refused = await login(http, "alice", "pw-alice-123")
        oauth = OAuthClient(http, origin)
        await oauth.register()
        page = await oauth.sign_in(oauth.authorization_query(pkce()[1]), "alice", "pw-alice-123")
        asked_in_wait = len(rocketchat.calls("/api/v1/login")) - asked - asked_for_failures
        run.clock.now += 1
        signed_in = await login(http, "alice", "pw-alice-123")
        cookie = device_cookie_of(signed_in)
        async with run.client("192.0.2.11", origin=origin) as stranger:
            one_more_failure = await login(stranger, "alice", WRONG)
            own_device = await login(http, "alice", "pw-alice-123", cookie)
            stranger_in_wait = await login(stranger, "alice", "pw-alice-123")
    statuses = [
        *failures,
        refused.status_code,
        page.status_code,
        signed_in.status_code,
        one_more_failure.status_code,
        own_device.status_code,
        stranger_in_wait.status_code,
    ]
    expected = [401] * ACCOUNT_FREE_FAILURES + [429, 429, 200, 401, 200, 429]
    figure(
        tried=len(statuses),
        failed=int(statuses != expected) + int(asked_in_wait != 0),
        statuses=statuses,
        rocketchat_asked_for_failures=asked_for_failures,
        rocketchat_asked_inside_the_wait=asked_in_wait,
        oauth_page_retry_after=page.headers.get("retry-after"),
    )
    assert asked_for_failures == ACCOUNT_FREE_FAILURES, "each failure was Rocket.Chat's to check"
    assert statuses == expected
    assert asked_in_wait == 0, "inside the wait neither the route nor the OAuth page asks Rocket.Chat"
    assert page.headers.get("retry-after") == "1"


# -- no enumeration by timing: a figure, not a bound ------------------------------------------------


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_known_and_unknown_usernames_take_the_same_paths(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    """Same statuses and bodies, same password checks; the medians are reported for comparison."""
    timings: dict[str, dict[str, list[float]]] = {"alice": {}, "nobody-by-this-name": {}}
    bodies: dict[str, list[bytes]] = {}
    async with servers(store, "memory://") as run:
        for user, kinds in timings.items():
            bodies[user] = []
            for i in range(ACCOUNT_FREE_FAILURES + 10):
                async with run.client(f"198.51.100.{i + 1}") as http:
                    started = time.perf_counter()
                    answer = await login(http, user, WRONG)
                    kinds.setdefault(str(answer.status_code), []).append((time.perf_counter() - started) * 1000)
                bodies[user].append(answer.content)
    medians = {
        f"{user}_{status}_ms": round(statistics.median(values), 2)
        for user, kinds in timings.items()
        for status, values in kinds.items()
    }
    same = bodies["alice"] == bodies["nobody-by-this-name"]
    figure(tried=2 * (ACCOUNT_FREE_FAILURES + 10), failed=int(not same), **medians)
    assert same
    assert {u: {s: len(v) for s, v in k.items()} for u, k in timings.items()} == {
        u: {"401": ACCOUNT_FREE_FAILURES, "429": 10} for u in timings
    }
