"""Consent tickets: what the consent form carries from a person's sign-in to their decision.

Signing in on the authorization page shows the consent page; its form carries a ticket, and the
decision posted with it is believed only if the ticket is one this deployment issued, to this person,
for this exact authorization request, less than ``CONSENT_LIFETIME_SECONDS`` ago, and not used before.

A ticket is a random value (:data:`TICKET_BYTES`), not a signature: the person and the request's
digest it stands for are kept, under the value's SHA-256 digest, where every server process reads
them, and redeeming one removes it, so it is used once whichever process answers the consent form.

- :class:`RedisTickets` keeps them in the Redis of ``rate_limit_storage`` (``SET ... NX EX`` to
  issue; ``GET``, then ``DEL``, whose count of 1 goes to one redeemer only). Several server
  processes (``serve --workers N``, or proxies behind a load balancer) therefore need that setting,
  as their rate limits do; the sign-in on one process and the consent on another then work without
  sticky sessions. When Redis does
  not answer, :class:`TicketsUnavailable` stops the sign-in or consent (the page asks the person to
  try again, 503): there is no local fallback, since a ticket only this process knows is exactly
  what another process could not redeem.
- :class:`MemoryTickets` keeps them in this process (``memory://``): right for one process only,
  which is what ``memory://`` means for the rate limits as well.

Earlier tickets were HMACs under a key made when the process started, with a per-process list of
used ones: a consent answered by another process than the sign-in's was refused (another key), and
a restart forgot every ticket. Neither holds with the tickets in Redis.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from typing import Protocol

from redis.asyncio import ConnectionPool, Redis
from redis.exceptions import RedisError

from ..ratelimit import REDIS_SOCKET_TIMEOUT_SECONDS, redis_url
from .limits import CONSENT_LIFETIME_SECONDS

__all__ = [
    "MAX_TICKETS_IN_MEMORY",
    "TICKET_BYTES",
    "ConsentTickets",
    "MemoryTickets",
    "RedisTickets",
    "TicketsUnavailable",
    "consent_tickets",
]

# Random bytes of one ticket (bytes): as the OAuth codes and tokens, beyond guessing.
TICKET_BYTES = 32
# Tickets one process keeps waiting for their consent (entries) under memory://: a person answers one
# consent page per sign-in within ten minutes, so this is far above what that time can fill; past it
# the oldest is dropped (its consent must sign in again).
MAX_TICKETS_IN_MEMORY = 10_000
# Redis keys of the tickets: the prefix, then the ticket's SHA-256 digest (hex).
REDIS_KEY_PREFIX = "ai-search:consent-ticket:"
_SEPARATOR = "\x1f"


class TicketsUnavailable(Exception):
    """The shared ticket store (Redis) did not answer: the sign-in or consent cannot go on now."""


class ConsentTickets(Protocol):
    async def issue(self, user_id: str, request_digest: str) -> str:
        """A new ticket for ``user_id`` consenting to the request of ``request_digest``."""
        ...

    async def redeem(self, ticket: str, request_digest: str) -> str | None:
        """The user id of a live, unused ticket issued for this request, which uses it up; None for
        any other ticket (one shown with another request stays valid for its own)."""
        ...

    async def aclose(self) -> None: ...


def _new_ticket() -> tuple[str, str]:
    ticket = secrets.token_urlsafe(TICKET_BYTES)
    return ticket, _digest(ticket)


def _digest(ticket: str) -> str:
    return hashlib.sha256(ticket.encode("utf-8", "surrogateescape")).hexdigest()


def _user_of(stored: str | None, request_digest: str) -> str | None:
    if stored is None:
        return None
    user_id, _, digest = stored.partition(_SEPARATOR)
    return user_id if hmac.compare_digest(digest.encode(), request_digest.encode()) else None


class MemoryTickets:
    """Tickets in this process's memory: one server process only (``rate_limit_storage = memory://``)."""

    def __init__(self, *, lifetime_seconds: int = CONSENT_LIFETIME_SECONDS) -> None:
        self.lifetime_seconds = lifetime_seconds
        self._waiting: OrderedDict[str, tuple[str, float]] = OrderedDict()  # digest -> (stored, expiry)

    async def issue(self, user_id: str, request_digest: str) -> str:
        now = time.monotonic()
        while self._waiting and (
            next(iter(self._waiting.values()))[1] <= now or len(self._waiting) >= MAX_TICKETS_IN_MEMORY
        ):
            self._waiting.popitem(last=False)
        ticket, digest = _new_ticket()
        self._waiting[digest] = (f"{user_id}{_SEPARATOR}{request_digest}", now + self.lifetime_seconds)
        return ticket

    async def redeem(self, ticket: str, request_digest: str) -> str | None:
        digest = _digest(ticket)
        entry = self._waiting.get(digest)
        if entry is None or entry[1] <= time.monotonic():
            return None
        user_id = _user_of(entry[0], request_digest)
        if user_id is not None:
            del self._waiting[digest]
        return user_id

    async def aclose(self) -> None:
        self._waiting.clear()


class RedisTickets:
    """Tickets in Redis, shared by every server process on it; each expires there by itself."""

    def __init__(self, url: str, *, lifetime_seconds: int = CONSENT_LIFETIME_SECONDS) -> None:
        """``url``: redis-py's URL (``ratelimit.redis_url`` of the storage setting)."""
        self.lifetime_seconds = lifetime_seconds
        self._pool = ConnectionPool.from_url(
            url,
            socket_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
            socket_connect_timeout=REDIS_SOCKET_TIMEOUT_SECONDS,
            decode_responses=True,
        )
        self._redis = Redis(connection_pool=self._pool)

    async def issue(self, user_id: str, request_digest: str) -> str:
        ticket, digest = _new_ticket()
        try:
            await self._redis.set(
                REDIS_KEY_PREFIX + digest,
                f"{user_id}{_SEPARATOR}{request_digest}",
                ex=self.lifetime_seconds,
                nx=True,
            )
        except (RedisError, OSError) as exc:
            raise TicketsUnavailable(f"the consent ticket store did not answer: {exc}") from None
        return ticket

    async def redeem(self, ticket: str, request_digest: str) -> str | None:
        key = REDIS_KEY_PREFIX + _digest(ticket)
        try:
            stored = await self._redis.get(key)
            user_id = _user_of(
                stored if isinstance(stored, str) or stored is None else stored.decode(), request_digest
            )
            # DEL answers 1 to one caller only: of two consents racing through two processes, one wins.
            if user_id is None or await self._redis.delete(key) != 1:
                return None
        except (RedisError, OSError) as exc:
            raise TicketsUnavailable(f"the consent ticket store did not answer: {exc}") from None
        return user_id

    async def aclose(self) -> None:
        await self._redis.aclose()
        await self._pool.aclose()


def consent_tickets(storage_uri: str) -> ConsentTickets:
    """Where the tickets live for the ``rate_limit_storage`` setting: its Redis, or this process."""
    url = redis_url(storage_uri)
    return MemoryTickets() if url is None else RedisTickets(url)
