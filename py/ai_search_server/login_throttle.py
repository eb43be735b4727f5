"""Failed sign-ins per account: a wait that grows with each failure, which the person's own devices skip.

The login route's budget is per client address (10 a minute), so someone with many addresses could
guess one account's password ten times a minute per address. Failed sign-ins are therefore also
counted per account, in the rate limiter's storage (with Redis, every server process agrees):

- The first :data:`ACCOUNT_FREE_FAILURES` failures of an account within
  :data:`ACCOUNT_FAILURE_WINDOW_SECONDS` (counted from the first) cost nothing: people mistype.
- After that, every failure makes the next attempt for that account wait: :data:`FIRST_WAIT_SECONDS`
  after the fifth failure, twice as long after each further one, at most :data:`MAX_WAIT_SECONDS`
  (1, 2, 4 ... 32, then 60 s). An attempt inside the wait is answered 429 with ``Retry-After``
  before any password is checked, so a right guess made there tells its sender nothing; nothing
  sleeps and no connection is held.
- The account is the name as typed, trimmed, without a leading ``@``, case-folded, and hashed: an
  unknown username is counted, delayed and answered exactly like a known one, so neither the answer
  nor its timing tells them apart. Local passwords and Rocket.Chat ones (``Services.sign_in``) spend
  the same budget, by ``POST /api/v1/login`` and by the OAuth sign-in page alike.

A stranger who knows a username can thus slow its sign-ins down, so the person's own devices skip
the wait (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"). A successful
``POST /api/v1/login`` gives the client a *device cookie* (:data:`DEVICE_COOKIE_NAME`: HttpOnly,
SameSite=Strict, Path=/api/v1/login, Secure over https), a random nonce and its issue time signed
with HMAC-SHA256 for that account under the server's device key. An attempt that carries a valid
device cookie for the account it names skips the account's wait (the address's budget still
applies); its failures count against that device instead, by the same rule, and a device in its
own wait is treated as a new one. A cookie that is forged, older than
:data:`DEVICE_COOKIE_MAX_AGE_SECONDS`, or signed for another account is ignored. The OAuth sign-in
page is not on the cookie's path: sign-ins there are always a new device's.

The device key (:func:`load_device_key`): the setting ``login_device_secret`` when set (one value for
every process and machine of a deployment), else the file :data:`DEVICE_KEY_FILE` in the data dir,
made on first start and read by every process that shares the data dir. PostgreSQL deployments on
several machines set the setting (or give every machine the same file); otherwise a cookie from one
machine is a new device's on another: never an exemption it should not give.

Every process compares times on its own clock (the wait's end is written as epoch milliseconds), so
the machines of a deployment keep their clocks in step (NTP) to agree on the second.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import math
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import errors
from .ratelimit import RateLimiter

__all__ = [
    "ACCOUNT_FAILURE_WINDOW_SECONDS",
    "ACCOUNT_FREE_FAILURES",
    "DEVICE_COOKIE_MAX_AGE_SECONDS",
    "DEVICE_COOKIE_NAME",
    "DEVICE_COOKIE_PATH",
    "DEVICE_KEY_BYTES",
    "DEVICE_KEY_FILE",
    "FIRST_WAIT_SECONDS",
    "MAX_WAIT_SECONDS",
    "MIN_DEVICE_SECRET_CHARS",
    "Attempt",
    "DeviceKeyError",
    "LoginThrottle",
    "SlowDown",
    "account_of",
    "load_device_key",
]

_log = logging.getLogger(__name__)

# Failed sign-ins of one account (or one device) that cost no wait, per window: a person mistypes a
# few times; a guesser needs thousands.
ACCOUNT_FREE_FAILURES = 5
# Seconds over which those failures are counted, from the first one (then the count starts over).
ACCOUNT_FAILURE_WINDOW_SECONDS = 15 * 60
# Seconds the next attempt waits after the last free failure; each further failure doubles it.
FIRST_WAIT_SECONDS = 1
# The longest wait between two attempts for one account (seconds): a person who forgot their
# password waits at most a minute, a guesser gets about one guess a minute once past the free ones.
MAX_WAIT_SECONDS = 60

# The device cookie: its name, and the one path it is sent to (the login route only).
DEVICE_COOKIE_NAME = "ai_search_device"
DEVICE_COOKIE_PATH = "/api/v1/login"
# How long a device cookie exempts its device (seconds): 90 days, as a login session's longest life;
# every successful sign-in issues a fresh one.
DEVICE_COOKIE_MAX_AGE_SECONDS = 90 * 24 * 60 * 60
# Seconds a cookie's issue time may lie in this process's future (another machine's clock ahead).
DEVICE_COOKIE_CLOCK_SKEW_SECONDS = 300
# Characters of a device cookie worth reading (ours are about 80); a longer value is no cookie of ours.
MAX_DEVICE_COOKIE_CHARS = 200
# Random bytes of a device cookie's nonce.
DEVICE_NONCE_BYTES = 16

# The data dir's file of the generated device key, and the key's size (bytes).
DEVICE_KEY_FILE = "login-device.key"
DEVICE_KEY_BYTES = 32
# Characters the setting login_device_secret must have at least: a short secret could be guessed,
# and with it cookies forged for any account.
MIN_DEVICE_SECRET_CHARS = 32

_COOKIE_VERSION = "v1"
_MAC_CONTEXT = b"ai-search login device cookie v1"

BudgetKind = Literal["account", "device"]


class DeviceKeyError(Exception):
    """The data dir's device key cannot be read or written; the message names the file and the fix."""


def account_of(username: str) -> str:
    """The account a sign-in attempt names, as its budget and device cookies key it: trimmed, without
    a leading ``@``, case-folded (``@Alice`` and ``alice`` are one account, as the store's usernames)."""
    return username.strip().removeprefix("@").casefold()


@dataclass(frozen=True)
class SlowDown:
    """How failed sign-ins slow the next attempt down (the module's constants by default)."""

    free_failures: int = ACCOUNT_FREE_FAILURES
    window_seconds: int = ACCOUNT_FAILURE_WINDOW_SECONDS
    first_wait_seconds: int = FIRST_WAIT_SECONDS
    max_wait_seconds: int = MAX_WAIT_SECONDS

    def wait_after(self, failures: int) -> int:
        """Seconds the next attempt waits after ``failures`` failures in the window."""
        if failures < self.free_failures:
            return 0
        doublings = failures - self.free_failures
        if doublings >= self.max_wait_seconds.bit_length():  # already past the cap; no huge powers
            return self.max_wait_seconds
        return min(self.max_wait_seconds, self.first_wait_seconds << doublings)


@dataclass(frozen=True)
class Attempt:
    """One admitted sign-in attempt: whose budget its failure spends (the account's, or the device's
    when a valid device cookie exempted it)."""

    kind: BudgetKind
    key: str  # the account (account_of) or the device cookie's nonce


class LoginThrottle:
    """Per-account waits after failed sign-ins, and the device cookies that skip them (module docstring).

    ``limiter`` None: nothing is counted or refused (an app built without rate limits); device cookies
    are still issued and read. ``clock``: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        limiter: RateLimiter | None,
        device_key: bytes,
        *,
        slow_down: SlowDown | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if len(device_key) < DEVICE_KEY_BYTES:
            raise ValueError(f"a device key needs at least {DEVICE_KEY_BYTES} bytes")
        self.limiter = limiter
        self.slow_down = slow_down or SlowDown()
        self.clock = clock
        self._device_key = device_key

    # -- attempts --------------------------------------------------------------------------------
    async def admit(self, username: str, device_cookie: str | None = None) -> Attempt:
        """Whether an attempt to sign in as ``username`` may be checked now, and whose budget it spends.

        Raises:
            errors.SignInsSlowed: the account is in its wait (and no valid device cookie of a device
                outside its own wait exempts the attempt); ``Retry-After`` says for how long.
        """
        account = account_of(username)
        nonce = self.device_nonce(device_cookie, account)
        if nonce is not None and await self._wait("device", nonce) == 0:
            return Attempt("device", nonce)
        wait = await self._wait("account", account)
        if wait:
            raise errors.SignInsSlowed(headers={"Retry-After": str(wait)})
        return Attempt("account", account)

    async def failed(self, attempt: Attempt) -> None:
        """Count a failed attempt against its budget; past the free ones, start the next wait."""
        if self.limiter is None:
            return
        base = _budget_key(attempt.kind, attempt.key)
        policy = self.slow_down
        failures = await self.limiter.add(f"{base}/failures", 1, policy.window_seconds)
        if failures is None or failures < policy.free_failures:
            return
        until_ms = math.ceil((self.clock() + policy.wait_after(failures)) * 1000)
        # One key per failure count, written once (only the caller whose add returned this count
        # writes it), so concurrent failures never overwrite each other's ends.
        await self.limiter.add(f"{base}/until/{failures}", until_ms, policy.max_wait_seconds + 1)

    async def _wait(self, kind: BudgetKind, key: str) -> int:
        """Whole seconds (at least 1) until the budget's next attempt may be checked; 0: now."""
        if self.limiter is None:
            return 0
        base = _budget_key(kind, key)
        failures = await self.limiter.value(f"{base}/failures")
        if failures is not None and failures < self.slow_down.free_failures:
            return 0
        until_ms = await self.limiter.value(f"{base}/until/{failures}") if failures is not None else None
        if until_ms is None:  # the shared storage failed and the policy is "allow" or "deny"
            if self.limiter.on_storage_error == "deny":
                return max(1, math.ceil(self.limiter.redis_retry_interval_seconds))
            return 0
        remaining = until_ms / 1000 - self.clock()
        if remaining <= 0:
            return 0
        # Capped: a process whose clock runs ahead cannot make a wait longer than the longest one.
        return min(self.slow_down.max_wait_seconds, max(1, math.ceil(remaining)))

    # -- device cookies --------------------------------------------------------------------------
    def device_cookie(self, username: str) -> str:
        """A new device cookie's value for the account ``username`` names, issued now."""
        nonce = _b64(secrets.token_bytes(DEVICE_NONCE_BYTES))
        issued = str(int(self.clock()))
        return f"{_COOKIE_VERSION}.{nonce}.{issued}.{self._mac(account_of(username), nonce, issued)}"

    def device_nonce(self, cookie: str | None, account: str) -> str | None:
        """The nonce of ``cookie`` when it is a device cookie of ours for ``account`` and not expired;
        None for anything else (absent, malformed, forged, another account's, too old)."""
        if not cookie or len(cookie) > MAX_DEVICE_COOKIE_CHARS:
            return None
        parts = cookie.split(".")
        if len(parts) != 4 or parts[0] != _COOKIE_VERSION:
            return None
        _version, nonce, issued, mac = parts
        if not issued.isascii() or not issued.isdigit() or len(issued) > 12:
            return None
        if not hmac.compare_digest(
            mac.encode("ascii", "replace"), self._mac(account, nonce, issued).encode()
        ):
            return None
        age = self.clock() - int(issued)
        if not -DEVICE_COOKIE_CLOCK_SKEW_SECONDS <= age <= DEVICE_COOKIE_MAX_AGE_SECONDS:
            return None
        return nonce

    def _mac(self, account: str, nonce: str, issued: str) -> str:
        message = b"\x1f".join(part.encode("utf-8", "surrogateescape") for part in (account, nonce, issued))
        return _b64(hmac.new(self._device_key, _MAC_CONTEXT + b"\x1f" + message, hashlib.sha256).digest())


def _budget_key(kind: BudgetKind, key: str) -> str:
    """The limiter's counter key of a budget: hashed, so no username is stored in Redis."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return f"sign-in/{kind}/{digest}"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def load_device_key(secret: str, data_dir: Path | None) -> bytes:
    """The key device cookies are signed with (module docstring): the ``login_device_secret`` setting
    when set, else the data dir's :data:`DEVICE_KEY_FILE` (made on first start), else a key for this
    process only.

    Raises:
        DeviceKeyError: the file cannot be read or written, or holds too few bytes.
    """
    if secret:
        return hashlib.sha256(
            b"ai-search login_device_secret\x1f" + secret.encode("utf-8", "surrogateescape")
        ).digest()
    if data_dir is None:
        _log.info("no data dir: device cookies are signed with a key of this process only")
        return secrets.token_bytes(DEVICE_KEY_BYTES)
    path = data_dir / DEVICE_KEY_FILE
    try:
        if not path.exists():
            _write_new_key(path)
        key = path.read_bytes()
    except OSError as exc:
        raise DeviceKeyError(
            f"cannot read or write the device key {path}: {exc.strerror}; fix its permissions, or set "
            "login_device_secret"
        ) from None
    if len(key) < DEVICE_KEY_BYTES:
        raise DeviceKeyError(
            f"the device key {path} holds {len(key)} bytes, not {DEVICE_KEY_BYTES}: delete it (a new one "
            "is made at the next start; devices then sign in once to be known again)"
        )
    return key


def _write_new_key(path: Path) -> None:
    """Write a new random key to ``path``, readable by the owner only, unless a concurrent start
    (another worker of ``serve --workers``) wrote one first: the first one written is everyone's."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(DEVICE_KEY_BYTES))
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(partial, path)  # atomic and never replaces: a key another process wrote stays
        except FileExistsError:
            pass
        else:
            _log.info("made the login device key %s", path)
    finally:
        partial.unlink(missing_ok=True)
