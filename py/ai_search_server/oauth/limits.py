"""The OAuth authorization server's limits, each with its unit and why it is what it is."""

from __future__ import annotations

from ..ratelimit import RateLimit

__all__ = [
    "AUTHORIZATION_CODE_LIFETIME_SECONDS",
    "CONSENT_LIFETIME_SECONDS",
    "MAX_AUTHORIZATION_QUERY_CHARS",
    "MAX_CLIENT_ID_CHARS",
    "MAX_CLIENT_NAME_CHARS",
    "MAX_GRANTS_PER_USER",
    "MAX_REDIRECT_URIS",
    "MAX_REDIRECT_URI_CHARS",
    "MAX_REGISTRATION_BODY_BYTES",
    "MAX_TOKEN_BODY_BYTES",
    "REGISTRATION_RATE_LIMIT",
    "SIGN_IN_RATE_LIMIT",
    "STALE_CLIENT_SECONDS",
    "TOKEN_RATE_LIMIT",
]

# How long an authorization code may wait for its exchange (seconds). The client exchanges it the
# moment the browser lands on its redirect URI; OAuth 2.1 asks for a short life (10 minutes at most).
AUTHORIZATION_CODE_LIFETIME_SECONDS = 60
# How long a person may take between signing in and answering the consent page (seconds).
CONSENT_LIFETIME_SECONDS = 600
# A registered client nobody signed in to within this long may be removed to make room (seconds).
STALE_CLIENT_SECONDS = 24 * 60 * 60
# Redirect URIs one client may register (entries): a client has one or two (loopback, web).
MAX_REDIRECT_URIS = 10
# Characters of one redirect URI: far above any real callback, short enough to show on the page.
MAX_REDIRECT_URI_CHARS = 2_000
# Characters of a client id a request may name: registration issues 24 letters and digits, so a
# longer one is no client's and is looked up nowhere.
MAX_CLIENT_ID_CHARS = 200
# Characters of a client's name as registered (NFKC form); the consent page shows it, so it stays short.
MAX_CLIENT_NAME_CHARS = 100
# Characters of an authorization request's query string (state, challenge, scope...): browsers and
# proxies cut URLs near 8 KiB, and nothing of ours needs more.
MAX_AUTHORIZATION_QUERY_CHARS = 4_000
# Bytes of a registration request: client metadata is a few hundred bytes.
MAX_REGISTRATION_BODY_BYTES = 16 * 1024
# Bytes of a token or revocation request (form-encoded): a few tokens and a verifier.
MAX_TOKEN_BODY_BYTES = 8 * 1024
# Live grants one person may hold (one per consent); past it the oldest ends, so a client that
# re-authorizes in a loop cannot grow the list without bound.
MAX_GRANTS_PER_USER = 50
# Registrations per client address and hour: an MCP client registers once per server; more is a script.
REGISTRATION_RATE_LIMIT = RateLimit(count=20, period_seconds=60 * 60)
# Token and revocation requests per client address and minute: one refresh per person and token
# lifetime is the norm, and a hosted assistant refreshes for all its users from a few addresses
# (30,000 people refreshing hourly is 500 a minute); a guess at a 256-bit code or token is hopeless,
# so this only stops a flood.
TOKEN_RATE_LIMIT = RateLimit(count=600, period_seconds=60)
# Sign-in attempts per address and minute, spent from the same budget as POST /api/v1/login (the
# route key "login"), so the sign-in page is no second door for guessing passwords.
SIGN_IN_RATE_LIMIT = RateLimit(count=10, period_seconds=60)
