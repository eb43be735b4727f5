"""The per-account sign-in budget's parts (``login_throttle.py``): the wait's schedule, the device key
and where it lives, the device cookie's attributes, and what happens when the shared storage fails.

The promise itself (waits, device cookies, many addresses, Redis, Rocket.Chat) is proved in
``tests/reliability/test_login_throttle.py`` (F5).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ai_search_server import errors
from ai_search_server.app import create_app
from ai_search_server.login_throttle import (
    ACCOUNT_FREE_FAILURES,
    DEVICE_COOKIE_MAX_AGE_SECONDS,
    DEVICE_COOKIE_NAME,
    DEVICE_KEY_BYTES,
    DEVICE_KEY_FILE,
    MIN_DEVICE_SECRET_CHARS,
    DeviceKeyError,
    LoginThrottle,
    SlowDown,
    account_of,
    load_device_key,
)
from ai_search_server.ratelimit import OnStorageError, RateLimiter
from ai_search_server.settings import SettingsError, load_settings
from ai_search_server.store.base import Store

from .conftest import BASE_URL, Workspace
from .test_ratelimit import free_port

KEY = b"k" * DEVICE_KEY_BYTES


@pytest.mark.parametrize(
    ("failures", "wait"),
    [
        pytest.param(0, 0, id="none"),
        pytest.param(ACCOUNT_FREE_FAILURES - 1, 0, id="the-free-ones"),
        pytest.param(ACCOUNT_FREE_FAILURES, 1, id="the-fifth-starts-a-second"),
        pytest.param(ACCOUNT_FREE_FAILURES + 1, 2, id="then-doubles"),
        pytest.param(ACCOUNT_FREE_FAILURES + 5, 32, id="to-32"),
        pytest.param(ACCOUNT_FREE_FAILURES + 6, 60, id="capped-at-a-minute"),
        pytest.param(10**9, 60, id="never-past-the-cap"),
    ],
)
def test_the_wait_doubles_from_one_second_after_five_failures_to_a_minute(failures: int, wait: int) -> None:
    assert SlowDown().wait_after(failures) == wait


@pytest.mark.parametrize(
    ("typed", "account"),
    [("alice", "alice"), ("@Alice", "alice"), ("  ALICE ", "alice"), ("Straße", "strasse")],
)
def test_an_account_is_the_name_trimmed_without_its_at_and_case_folded(typed: str, account: str) -> None:
    assert account_of(typed) == account


# -- the device key ---------------------------------------------------------------------------------


def test_the_device_key_is_made_once_in_the_data_dir_for_its_owner_only(tmp_path: Path) -> None:
    first = load_device_key("", tmp_path)
    path = tmp_path / DEVICE_KEY_FILE
    assert len(first) == DEVICE_KEY_BYTES
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_device_key("", tmp_path) == first, "the next start (or another worker) reads the same key"
    assert [p.name for p in tmp_path.iterdir()] == [DEVICE_KEY_FILE], "no partial file is left behind"


def test_workers_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    keys: list[bytes] = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        keys.append(load_device_key("", tmp_path))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1


def test_the_setting_is_the_key_of_every_machine_whatever_its_data_dir(tmp_path: Path) -> None:
    secret = "s" * MIN_DEVICE_SECRET_CHARS
    one, other = tmp_path / "one", tmp_path / "other"
    one.mkdir()
    other.mkdir()
    assert load_device_key(secret, one) == load_device_key(secret, other)
    assert not (one / DEVICE_KEY_FILE).exists(), "with the setting, no file is made"
    assert load_device_key("", None) != load_device_key("", None), "no data dir: a key of this process"


def test_a_damaged_key_file_stops_start_up_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / DEVICE_KEY_FILE).write_bytes(b"short")
    with pytest.raises(DeviceKeyError, match="delete it"):
        load_device_key("", tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_data_dir_names_the_file_and_the_setting(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(DeviceKeyError, match="login_device_secret"):
            load_device_key("", locked)
    finally:
        locked.chmod(0o700)


def test_serve_with_a_damaged_key_file_exits_with_the_fix_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / DEVICE_KEY_FILE).write_bytes(b"short")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "py"), str(root)]), "AI_SEARCH_EMBEDDER": "none"}
    command = [sys.executable, "-m", "ai_search_server", "serve", "--data", str(tmp_path), "--port", "1"]
    done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert DEVICE_KEY_FILE in done.stderr and "delete it" in done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stderr


def test_a_short_device_secret_is_refused_at_start_up() -> None:
    with pytest.raises(SettingsError, match="login_device_secret"):
        load_settings(environ={}, overrides={"login_device_secret": "too-short"})
    load_settings(environ={}, overrides={"login_device_secret": "x" * MIN_DEVICE_SECRET_CHARS})


def test_the_app_makes_the_key_in_the_stores_data_dir(store: Store, data_dir: Path) -> None:
    settings = load_settings(environ={}, overrides={"site_url": BASE_URL, "embedder": "none"})
    create_app(settings, store)
    if store.data_dir is not None:
        assert (data_dir / DEVICE_KEY_FILE).is_file()


# -- the device cookie ------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("site_url", "secure"),
    [pytest.param("http://testserver", False, id="http"), pytest.param("https://search.example", True, id="https")],
)
async def test_a_login_sets_an_httponly_strict_cookie_for_the_login_path_only(
    store: Store, workspace: Workspace, site_url: str, secure: bool
) -> None:
    settings = load_settings(
        environ={}, overrides={"site_url": site_url, "embedder": "none", "allowed_hosts": ["testserver"]}
    )
    app = create_app(settings, store, limiter=RateLimiter("memory://"))
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        answer = await http.post("/api/v1/login", json={"user": "alice", "password": "pw-alice-123"})
    await app.state.services.limiter.aclose()
    assert answer.status_code == 200
    header = answer.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower() for part in header.split(";")[1:]}
    assert header.startswith(f"{DEVICE_COOKIE_NAME}=")
    assert {"httponly", "path", "max-age", "samesite"} <= attributes
    assert "path=/api/v1/login" in header.lower() and "samesite=strict" in header.lower()
    assert f"max-age={DEVICE_COOKIE_MAX_AGE_SECONDS}" in header.lower()
    assert ("secure" in attributes) == secure


def test_a_cookie_names_one_account_and_is_good_until_it_is_too_old() -> None:
    now = [1_900_000_000.0]
    throttle = LoginThrottle(None, KEY, clock=lambda: now[0])
    cookie = throttle.device_cookie("Alice")
    assert throttle.device_nonce(cookie, "alice") is not None
    assert throttle.device_nonce(cookie, "bob") is None
    assert throttle.device_nonce(cookie + "x", "alice") is None
    assert throttle.device_nonce("v1." + "x" * 300, "alice") is None
    now[0] += DEVICE_COOKIE_MAX_AGE_SECONDS
    assert throttle.device_nonce(cookie, "alice") is not None
    now[0] += 1
    assert throttle.device_nonce(cookie, "alice") is None


# -- the shared storage fails -----------------------------------------------------------------------


async def _waiting_after_failures(policy: OnStorageError) -> int | None:
    """The Retry-After an attempt gets after the free failures with Redis down; None: it passes."""
    async with RateLimiter(
        f"redis://127.0.0.1:{free_port()}/0", on_storage_error=policy, redis_retry_interval_seconds=0
    ) as limiter:
        throttle = LoginThrottle(limiter, KEY, clock=lambda: 1_900_000_000.0)  # a stopped clock
        try:
            for _ in range(ACCOUNT_FREE_FAILURES):
                await throttle.failed(await throttle.admit("alice"))
            await throttle.admit("alice")
        except errors.SignInsSlowed as slowed:
            return int(slowed.headers["Retry-After"])
    return None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "retry_after"),
    [
        pytest.param("local", 1, id="local-counts-in-this-process"),
        pytest.param("allow", None, id="allow-fails-open"),
        pytest.param("deny", 1, id="deny-fails-closed"),
    ],
)
async def test_with_redis_down_the_storage_error_policy_decides(
    policy: OnStorageError, retry_after: int | None
) -> None:
    assert await _waiting_after_failures(policy) == retry_after
