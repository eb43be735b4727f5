"""Credential hashing: passwords with a memory-hard KDF, tokens with SHA-256.

Passwords are chosen by people and guessable, so each is stretched with scrypt (about 16 MiB and 40 ms
per hash on our 2-core machines), salted per user. The stored string carries its own parameters,
``scrypt$n$r$p$salt$key`` (salt and key in unpadded urlsafe base64), so the cost can be raised later:
old hashes still verify, and ``needs_rehash`` tells the store to upgrade one at the next good login.

Tokens are different: we mint them from 256 random bits, so nobody can guess one and a slow KDF would
buy nothing but latency on every request. A plain SHA-256 of the token is enough to make a stolen
database useless for logging in, and it lets the store find a token by an indexed equality lookup.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from .base import InvalidValue

__all__ = [
    "MAX_PASSWORD_LENGTH",
    "SCRYPT_KEY_BYTES",
    "SCRYPT_N",
    "SCRYPT_P",
    "SCRYPT_R",
    "SCRYPT_SALT_BYTES",
    "TOKEN_BYTES",
    "burn_password_check",
    "check_password",
    "hash_password",
    "hash_token",
    "needs_rehash",
    "new_token",
    "verify_password_hash",
]

# scrypt cost: CPU/memory cost n (power of two), block size r, parallelism p. Memory = 128 * n * r bytes.
SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_SALT_BYTES = 16
SCRYPT_KEY_BYTES = 32
# Characters of a password: generous for passphrases, yet bounds the work one login attempt can cause.
MAX_PASSWORD_LENGTH = 1024
# Random bytes of a token; token_urlsafe(32) gives 43 characters.
TOKEN_BYTES = 32

# Parameters read back from a stored hash are bounded, so a tampered row cannot make one login
# allocate gigabytes (128 * 2**20 * 32 bytes = 4 GiB would be the product of the maxima unchecked).
_MAX_STORED_N = 2**20
_MAX_STORED_R = 16
_MAX_STORED_P = 16
_MAX_STORED_MEMORY_BYTES = 1024 * 1024 * 1024
_SCHEME = "scrypt"


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    # OpenSSL refuses to allocate more than maxmem; its 32 MiB default is too tight above n=2**14.
    maxmem = 2 * 128 * n * r * p + 1024 * 1024
    return hashlib.scrypt(
        password.encode("utf-8", "surrogatepass"), salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=maxmem
    )


def check_password(password: str) -> str:
    if not password:
        raise InvalidValue("a password cannot be empty")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise InvalidValue(f"a password has at most {MAX_PASSWORD_LENGTH} characters")
    return password


def hash_password(password: str) -> str:
    """The string to store for ``password``, with the current parameters and a fresh salt.

    Raises:
        InvalidValue: the password is empty or longer than MAX_PASSWORD_LENGTH.
    """
    check_password(password)
    salt = secrets.token_bytes(SCRYPT_SALT_BYTES)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_KEY_BYTES)
    return f"{_SCHEME}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64encode(salt)}${_b64encode(key)}"


def _parse(stored: str) -> tuple[int, int, int, bytes, bytes] | None:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != _SCHEME:
        return None
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = _b64decode(parts[4]), _b64decode(parts[5])
    except ValueError:
        return None
    valid = (
        1 < n <= _MAX_STORED_N
        and n & (n - 1) == 0
        and 0 < r <= _MAX_STORED_R
        and 0 < p <= _MAX_STORED_P
        and 128 * n * r * p <= _MAX_STORED_MEMORY_BYTES
        and salt
        and key
    )
    return (n, r, p, salt, key) if valid else None


def verify_password_hash(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored``, compared in constant time. A malformed stored value or
    an over-long password never matches (the latter is refused before any hashing)."""
    parsed = _parse(stored)
    if parsed is None or not password or len(password) > MAX_PASSWORD_LENGTH:
        return False
    n, r, p, salt, key = parsed
    return hmac.compare_digest(_scrypt(password, salt, n, r, p, len(key)), key)


def needs_rehash(stored: str) -> bool:
    """Whether ``stored`` was made with weaker parameters than today's (or cannot be read)."""
    parsed = _parse(stored)
    if parsed is None:
        return True
    n, r, p, salt, key = parsed
    return (
        (n, r, p) < (SCRYPT_N, SCRYPT_R, SCRYPT_P)
        or len(salt) < SCRYPT_SALT_BYTES
        or len(key) < SCRYPT_KEY_BYTES
    )


_DUMMY_SALT = secrets.token_bytes(SCRYPT_SALT_BYTES)


def burn_password_check(password: str) -> None:
    """Spends the time of one verification, for unknown users and users without a password, so the
    answer time does not tell an attacker which usernames exist."""
    _scrypt(password[:MAX_PASSWORD_LENGTH], _DUMMY_SALT, SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_KEY_BYTES)


def new_token() -> str:
    """A fresh token in plain text (43 urlsafe characters, 256 bits): shown once, never stored."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(plain: str) -> str:
    """The stored form of a token: SHA-256, hex. See the module docstring for why no slow KDF."""
    return hashlib.sha256(plain.encode("utf-8", "surrogatepass")).hexdigest()
