"""Signing in with a Rocket.Chat account, when ai-search mirrors that Rocket.Chat (``sync rocketchat``).

Two ways, both checked against the server in the setting ``rocketchat_url``, never stored here:

- **Password.** ``POST /api/v1/login`` on ai-search with the person's Rocket.Chat username (or
  email) and password: ai-search asks Rocket.Chat's own ``/api/v1/login``, and on success logs that
  Rocket.Chat session out again at once (ai-search needs to know who it is, not to hold a session
  there) and gives the person an ai-search login session, as a local password would.
- **Personal access token.** Any call with ``X-User-Id`` (the Rocket.Chat user id) and
  ``X-Auth-Token`` (their Rocket.Chat personal access token, or a Rocket.Chat login token): ai-search
  asks Rocket.Chat's ``/api/v1/me`` who that is. The answer is kept ``cache_seconds`` (60 by
  default) by a digest of the token, so a busy MCP client costs Rocket.Chat one call a minute; a
  refused token is remembered a shorter while, so a wrong one cannot make us hammer the server.

Either way the person must already be mirrored: the sync linked their Rocket.Chat id to an account
it created for that id, or an admin mapped that id to an account here (``--map-users``). A link an
earlier version made by username alone is not trusted (usernames in Rocket.Chat can be changed by
their owners, so ``alice`` there may be anyone): that person is refused until an admin maps them.
Who they are here, and what they may read, is what the last sync found: Rocket.Chat's
subscriptions. Someone Rocket.Chat deactivated is refused by Rocket.Chat itself.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from .imports.fields import obj
from .imports.rocketchat import origin_of
from .imports.rocketchat_api import Credentials, RocketChatAPI, RocketChatError, RocketChatRefused
from .outbound import GuardedClient
from .store.base import Store
from .store.records import LinkHow, Token, User

__all__ = [
    "DEFAULT_SIGN_IN_CACHE_SECONDS",
    "MAX_CACHED_TOKENS",
    "REFUSED_CACHE_SECONDS",
    "TRUSTED_LINKS",
    "RocketChatSignIn",
    "SignInRefused",
]

# How long a token Rocket.Chat vouched for is believed without asking again (seconds).
DEFAULT_SIGN_IN_CACHE_SECONDS = 60
# How long a token Rocket.Chat refused is refused without asking again (seconds): short, so a token
# made a moment ago works almost at once, long enough that a bad one costs one call per window.
REFUSED_CACHE_SECONDS = 10
# Tokens remembered at once (entries): far more than the people of one workspace use in a minute.
MAX_CACHED_TOKENS = 10_000
# How long one check may wait for Rocket.Chat (seconds): a sign-in is a person waiting.
SIGN_IN_OUTAGE_SECONDS = 5.0
# The links a person may sign in through: to an account the sync created for that Rocket.Chat id,
# or one an admin mapped it to; never one matched by username (records.LinkHow).
TRUSTED_LINKS: frozenset[LinkHow] = frozenset({"created", "mapped"})

_log = logging.getLogger(__name__)


class SignInRefused(Exception):
    """Rocket.Chat did not vouch for these credentials; the message says why, for the log only
    (people are answered the usual "Incorrect username or password")."""


@dataclass(frozen=True)
class _Entry:
    user_id: str | None  # our user id; None: refused
    until: float


class RocketChatSignIn:
    """Checks Rocket.Chat credentials against one server (module docstring)."""

    def __init__(
        self,
        base_url: str,
        store: Store,
        client: GuardedClient,
        *,
        cache_seconds: int = DEFAULT_SIGN_IN_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.origin = origin_of(base_url)
        self.store = store
        self.client = client
        self.cache_seconds = cache_seconds
        self.clock = clock
        self.asked = 0  # calls made to Rocket.Chat, for tests and logs
        self._cache: OrderedDict[bytes, _Entry] = OrderedDict()

    def _api(self, credentials: Credentials | None) -> RocketChatAPI:
        return RocketChatAPI(
            self.base_url, credentials, self.client, max_outage_seconds=SIGN_IN_OUTAGE_SECONDS
        )

    def _local(self, remote_id: object) -> User:
        """Our user for a Rocket.Chat user id, as the sync created or an admin mapped them."""
        if not isinstance(remote_id, str) or not remote_id:
            raise SignInRefused("Rocket.Chat answered without a user id")
        link = self.store.external_links(self.origin, "user").get(remote_id)
        user = self.store.get_user(link.local_id) if link is not None else None
        if link is None or user is None:
            raise SignInRefused(
                f"Rocket.Chat user {remote_id} is not mirrored here yet (run ai-search sync rocketchat)"
            )
        if link.how not in TRUSTED_LINKS:
            raise SignInRefused(
                f"Rocket.Chat user {remote_id} was matched to {user.username} by username only: an admin "
                "maps them with ai-search sync rocketchat --map-users"
            )
        if not user.active:
            raise SignInRefused(f"user {user.username} is deactivated")
        return user

    async def password(self, username: str, password: str) -> User:
        """The person whose Rocket.Chat username (or email) and password these are.

        Raises:
            SignInRefused: Rocket.Chat refused them, asks for a second factor, or the person is not mirrored.
        """
        self.asked += 1
        api = self._api(None)
        try:
            answer = await api.post("login", {"user": username, "password": password})
        except RocketChatError as error:
            if "totp" in (error.error_type or str(error)).lower():
                raise SignInRefused(
                    "Rocket.Chat asks this account for a two-factor code: sign in with a personal access token"
                ) from None
            raise SignInRefused(f"Rocket.Chat refused the sign-in ({error})") from None
        data = obj(answer.get("data"))
        remote_id, session = data.get("userId"), data.get("authToken")
        if isinstance(remote_id, str) and isinstance(session, str):
            try:  # we needed to know who it is, not to keep a session there
                await self._api(Credentials(remote_id, session)).post("logout", {})
            except RocketChatError as error:
                _log.info("logging the Rocket.Chat session out again failed: %s", error)
        return self._local(remote_id)

    async def token(self, remote_id: str, token: str) -> tuple[User, Token]:
        """The person whose Rocket.Chat user id and token these are, with a token record for the
        caller (kind ``pat``: a Rocket.Chat token is a personal one, not an ai-search session).

        Raises:
            SignInRefused: Rocket.Chat does not vouch for them now, or the person is not mirrored.
        """
        key = hashlib.sha256(f"{remote_id}\x1f{token}".encode("utf-8", "surrogateescape")).digest()
        now = self.clock()
        entry = self._cache.get(key)
        if entry is None or entry.until <= now:
            entry = await self._ask(remote_id, token, now)
            self._cache[key] = entry
            self._cache.move_to_end(key)
            while len(self._cache) > MAX_CACHED_TOKENS:
                self._cache.popitem(last=False)
        if entry.user_id is None:
            raise SignInRefused("Rocket.Chat refused this token")
        user = self.store.get_user(entry.user_id)
        if user is None or not user.active:
            raise SignInRefused("the mirrored user is gone or deactivated")
        record = Token(f"rocketchat-{key.hex()[:17]}", user.id, "pat", "rocketchat", datetime.now(UTC))
        return user, record

    async def _ask(self, remote_id: str, token: str, now: float) -> _Entry:
        self.asked += 1
        try:
            me = await self._api(Credentials(remote_id, token)).get("me")
        except RocketChatRefused:
            return _Entry(None, now + REFUSED_CACHE_SECONDS)
        except RocketChatError as error:
            raise SignInRefused(f"Rocket.Chat could not be asked ({error})") from None
        if me.get("_id") != remote_id:
            return _Entry(None, now + REFUSED_CACHE_SECONDS)
        try:
            user = self._local(remote_id)
        except SignInRefused:
            return _Entry(None, now + REFUSED_CACHE_SECONDS)
        return _Entry(user.id, now + self.cache_seconds)
