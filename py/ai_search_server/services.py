"""The services one running server shares: settings, store, rate limiter, retrieval, answers.

Built once by ``app.create_app`` from the settings and handed to every route, so tests can build a
server around a temporary store and settings without touching the environment.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from . import errors
from .api import Caller, RateLimitRule
from .ratelimit import RateLimit, RateLimiter, caller_key, client_address, rate_limit_headers
from .settings import Settings
from .store.base import Store
from .store.records import SessionLifetime

__all__ = ["Services"]

_MS_PER_DAY = 24 * 60 * 60 * 1000

# The caller the MCP endpoint has just resolved, while the in-process REST call it makes on that
# caller's behalf runs (mcp/dispatch.py). That call carries the same X-User-Id and X-Auth-Token, so
# resolving them again would repeat the user, token and permission lookups for nothing. Task-local and
# set only around that one call: it never outlives the request, so a token revoked (or a user
# deactivated) afterwards fails on the very next request, with no cache to invalidate.
_RESOLVED_CALLER: ContextVar[tuple[str, bytes, Caller] | None] = ContextVar(
    "ai_search_resolved_caller", default=None
)


@dataclass
class Services:
    settings: Settings
    store: Store
    limiter: RateLimiter | None = None  # None disables rate limits (unit tests of single routes)
    extras: dict[str, Any] = field(default_factory=dict)

    # -- callers ---------------------------------------------------------------------------------
    def resolve_caller(self, user_id: str, plain_token: str) -> Caller:
        """Raises errors.Unauthorized for an unknown user, a deactivated one, or a foreign token."""
        resolved = _RESOLVED_CALLER.get()
        if (
            resolved is not None
            and resolved[0] == user_id
            and hmac.compare_digest(resolved[1], plain_token.encode("utf-8", "surrogateescape"))
        ):
            return resolved[2]
        user = self.store.get_user(user_id)
        token = (
            self.store.resolve_token(user_id, plain_token, session_lifetime=self.session_lifetime)
            if user is not None
            else None
        )
        if user is None or token is None or not user.active:
            raise errors.Unauthorized()
        return Caller(user=user, token=token, permissions=self.store.permissions_of(user))

    @property
    def session_lifetime(self) -> SessionLifetime:
        """The idle and absolute lifetimes of login sessions, from the settings."""
        return SessionLifetime(
            idle_ms=self.settings.session_idle_days * _MS_PER_DAY,
            max_age_ms=self.settings.session_max_age_days * _MS_PER_DAY,
        )

    @staticmethod
    @contextmanager
    def acting_as(caller: Caller, plain_token: str) -> Iterator[None]:
        """Within the block (in this task), ``resolve_caller`` answers ``caller`` for exactly the user
        id and token it was resolved from, without the store; see ``_RESOLVED_CALLER``."""
        token = _RESOLVED_CALLER.set((caller.user.id, plain_token.encode("utf-8", "surrogateescape"), caller))
        try:
            yield
        finally:
            _RESOLVED_CALLER.reset(token)

    def client_address(self, request: Request) -> str:
        """The client's address for rate limits, honouring only the configured trusted proxy hops."""
        peer = request.client.host if request.client else "unknown"
        return client_address(
            peer, request.headers.getlist("x-forwarded-for"), self.settings.trusted_proxy_hops
        )

    def rate_limit_key(self, caller: Caller | None, client_host: str) -> str:
        """Whose budget a request spends: the user's when authenticated, else the client address's."""
        return caller_key(caller.user.id if caller else None, client_host, None, 0)

    async def check_rate_limit(
        self, route_key: str, caller_key: str, rule: RateLimitRule
    ) -> Mapping[str, str]:
        """Counts one request; returns the X-RateLimit-* headers, or raises errors.TooManyRequests."""
        if self.limiter is None:
            return {}
        result = await self.limiter.hit(route_key, caller_key, RateLimit(rule.count, rule.period_seconds))
        headers = rate_limit_headers(result)
        if not result.allowed:
            raise errors.TooManyRequests(headers=dict(headers))
        return headers
