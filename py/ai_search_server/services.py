"""The services one running server shares, one typed field each, built once by ``app.create_app``.

``create_app(settings, store)`` fills every field; routes read them as ``req.services.search`` and so
on, so the type checker knows every wire. Tests build a server around a temporary store and
settings, and swap one service by setting its field (``app.state.services.search = handle``).

Also here: who is calling (``Caller``, resolved from ``X-User-Id`` + ``X-Auth-Token``), and whose rate
limit a request spends; ``rest.py`` (the dispatcher) and ``mcp/`` (the MCP endpoint) both ask this.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from . import errors
from .answers.answer_service import AnswerService
from .login_throttle import LoginThrottle, load_device_key
from .outbound import GuardedClient, OutboundPolicy
from .ratelimit import (
    RateLimit,
    RateLimiter,
    caller_key,
    client_address,
    rate_limit_headers,
    too_many_requests,
)
from .retrieval.wiring import SearchHandle
from .rocketchat_sign_in import RocketChatSignIn, SignInRefused
from .settings import Settings
from .store.base import Store
from .store.records import OAuthGrant, SessionLifetime, Token, User

__all__ = ["Caller", "Services", "outbound_policy"]

_MS_PER_DAY = 24 * 60 * 60 * 1000
_log = logging.getLogger(__name__)


def outbound_policy(settings: Settings) -> OutboundPolicy:
    """What outbound calls may reach and how many may run at once, from the settings.

    The configured Rocket.Chat's host (``rocketchat_url``) joins the allow-list: that URL is
    configuration, trusted as an allow-list entry is (a Rocket.Chat is usually on the same private
    network), and sign-in and the mirror call it through this one policy.

    Raises:
        ValueError: an ``outbound_allow_hosts`` entry does not parse.
    """
    rocketchat = urlsplit(settings.rocketchat_url).hostname if settings.rocketchat_url else None
    return OutboundPolicy(
        allow_hosts=(*settings.outbound_allow_hosts, *([rocketchat] if rocketchat else [])),
        max_concurrent_calls=settings.outbound_max_concurrent_calls,
    )


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one request: the user, the token they sent, their permissions."""

    user: User
    token: Token
    permissions: frozenset[str]

    @property
    def is_pat(self) -> bool:
        return self.token.kind == "pat"

    @property
    def is_session(self) -> bool:
        """A login session: the only credential that may mint more (PATs) or be logged out."""
        return self.token.kind == "session"


@dataclass
class Services:
    """Everything a route or the MCP endpoint may use; one of each per app."""

    settings: Settings
    store: Store
    #: The one outbound HTTP client (remote pipeline, LLM, embeddings); closed by the app's lifespan.
    outbound: GuardedClient
    #: The search service (embedded index or remote pipeline), built at start-up or on first use.
    search: SearchHandle
    answers: AnswerService
    #: Failed sign-ins per account and the device cookies that skip their wait (login_throttle.py).
    login_throttle: LoginThrottle
    #: None disables rate limits (tests of single routes), the per-account sign-in waits among them.
    limiter: RateLimiter | None = None
    #: Signing in with Rocket.Chat credentials (setting ``rocketchat_sign_in``); None when it is off.
    rocketchat_sign_in: RocketChatSignIn | None = None

    @classmethod
    def build(
        cls,
        settings: Settings,
        store: Store,
        *,
        policy: OutboundPolicy | None = None,
        limiter: RateLimiter | None = None,
    ) -> Services:
        """Every service for these settings around an open store; the caller owns closing them.

        ``policy``: the app's outbound policy (default: ``outbound_policy(settings)``); its one
        client is handed to everything that calls out: the answers' provider, the remote pipeline
        and an OpenAI-compatible embedder.

        Raises:
            ValueError: the outbound allow-list does not parse.
            login_throttle.DeviceKeyError: the data dir's device key cannot be read or made.
        """
        device_key = load_device_key(settings.login_device_secret, store.data_dir)
        outbound = GuardedClient(outbound_policy(settings) if policy is None else policy)
        return cls(
            settings=settings,
            store=store,
            outbound=outbound,
            search=SearchHandle(settings, store, outbound=outbound, data_dir=store.data_dir),
            answers=AnswerService.from_settings(settings, store, outbound),
            login_throttle=LoginThrottle(limiter, device_key),
            limiter=limiter,
            rocketchat_sign_in=(
                RocketChatSignIn(
                    settings.rocketchat_url,
                    store,
                    outbound,
                    cache_seconds=settings.rocketchat_sign_in_cache_seconds,
                )
                if settings.rocketchat_sign_in
                else None
            ),
        )

    # -- callers ---------------------------------------------------------------------------------
    def resolve_caller(self, user_id: str, plain_token: str) -> Caller:
        """Raises errors.Unauthorized for an unknown user, a deactivated one, or a foreign token."""
        user = self.store.get_user(user_id)
        token = (
            self.store.resolve_token(user_id, plain_token, session_lifetime=self.session_lifetime)
            if user is not None
            else None
        )
        if user is None or token is None or not user.active:
            raise errors.Unauthorized()
        return Caller(user=user, token=token, permissions=self.store.permissions_of(user))

    async def authenticate(self, user_id: str, plain_token: str) -> Caller:
        """``resolve_caller``; and, when Rocket.Chat sign-in is on and the token is not one of ours,
        Rocket.Chat's word for it (a Rocket.Chat user id and personal access token; checked there,
        believed briefly: rocketchat_sign_in.py).

        Raises:
            errors.Unauthorized: neither ai-search nor Rocket.Chat knows these credentials.
        """
        try:
            return self.resolve_caller(user_id, plain_token)
        except errors.Unauthorized:
            if self.rocketchat_sign_in is None:
                raise
        try:
            user, token = await self.rocketchat_sign_in.token(user_id, plain_token)
        except SignInRefused as refused:
            _log.info("Rocket.Chat credentials refused: %s", refused)
            raise errors.Unauthorized() from None
        return Caller(user=user, token=token, permissions=self.store.permissions_of(user))

    async def sign_in(self, username: str, password: str, *, device_cookie: str | None = None) -> User | None:
        """The active user these credentials name: a local password, else (with Rocket.Chat sign-in
        on) the person's Rocket.Chat password. The login route and the OAuth sign-in page both ask here.

        Both kinds of password spend the account's budget of failed sign-ins (login_throttle.py):
        while the account waits, the attempt is refused before any password is checked, unless
        ``device_cookie`` is a valid device cookie for it.

        Raises:
            errors.SignInsSlowed: the account's wait is not over (``Retry-After``).
        """
        attempt = await self.login_throttle.admit(username, device_cookie)
        user = await self._check_password(username, password)
        if user is None:
            await self.login_throttle.failed(attempt)
        return user

    async def _check_password(self, username: str, password: str) -> User | None:
        user = self.store.verify_password(username, password)
        if user is None and self.rocketchat_sign_in is not None:
            try:
                user = await self.rocketchat_sign_in.password(username, password)
            except SignInRefused as refused:
                _log.info("Rocket.Chat sign-in refused: %s", refused)
        return user if user is not None and user.active else None

    def resolve_bearer(self, plain: str) -> tuple[Caller, OAuthGrant]:
        """The caller of an OAuth access token and its grant (whose ``resource`` the caller of this
        checks against the resource it serves).

        Raises:
            errors.Unauthorized: not a live access token of an active user.
        """
        grant = self.store.resolve_oauth_access(plain)
        user = self.store.get_user(grant.user_id) if grant is not None else None
        if grant is None or user is None or not user.active:
            raise errors.Unauthorized()
        token = Token(
            f"oauth-{grant.id}", user.id, "oauth", grant.client_name, grant.created_at, grant.last_used_at
        )
        return Caller(user=user, token=token, permissions=self.store.permissions_of(user)), grant

    @property
    def session_lifetime(self) -> SessionLifetime:
        """The idle and absolute lifetimes of login sessions, from the settings."""
        return SessionLifetime(
            idle_ms=self.settings.session_idle_days * _MS_PER_DAY,
            max_age_ms=self.settings.session_max_age_days * _MS_PER_DAY,
        )

    # -- rate limits -----------------------------------------------------------------------------
    def client_address(self, request: Request) -> str:
        """The client's address for rate limits, honouring only the configured trusted proxy hops."""
        peer = request.client.host if request.client else "unknown"
        return client_address(
            peer, request.headers.getlist("x-forwarded-for"), self.settings.trusted_proxy_hops
        )

    def rate_limit_key(self, caller: Caller | None, client_host: str) -> str:
        """Whose budget a request spends: the user's when authenticated, else the client address's."""
        return caller_key(caller.user.id if caller else None, client_host, None, 0)

    async def check_rate_limit(self, route_key: str, caller_key: str, limit: RateLimit) -> Mapping[str, str]:
        """Counts one request; returns the X-RateLimit-* headers, or raises errors.TooManyRequests."""
        if self.limiter is None:
            return {}
        result = await self.limiter.hit(route_key, caller_key, limit)
        if not result.allowed:
            raise too_many_requests(result)
        return rate_limit_headers(result)
