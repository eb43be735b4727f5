"""OAuth clients, authorization codes and tokens as rows (schema migration 8), in either store.

Codes, access tokens, refresh tokens and client secrets are kept as their SHA-256 digests only
(``passwords.hash_token``, as the tokens table): a copy of the database lets nobody call as anyone.
Every function takes the connection of a transaction the store opened and the store's statements
(``OAuthSql``: SQLite's here, ``pg_rows.OAUTH_SQL`` for PostgreSQL), so the rules below are one
code for both; the store's methods are the interface (``base.Store``).

Two replays are recognised and end the grant they belong to, because each means a value leaked:

- an authorization code presented a second time, by its client or any other (RFC 6749 §4.1.2: the
  server SHOULD revoke the tokens issued from it); a code another client presents first is spent
  all the same, so its own client cannot use it after (RFC 6749 §10.5);
- a refresh token that a refresh already replaced (OAuth 2.1 §4.3.1, refresh token rotation).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from . import passwords
from .records import OAuthClient, OAuthCode, OAuthGrant
from .rules import from_ms, new_id, to_ms

__all__ = [
    "GRANT_COLUMNS",
    "GRANT_FROM",
    "SQLITE_SQL",
    "OAuthSql",
    "TokenPair",
    "delete_grant",
    "delete_grant_of_token",
    "grant_by_refresh",
    "insert_client",
    "insert_code",
    "insert_tokens",
    "list_grants",
    "mark_rotated",
    "read_client",
    "resolve_access",
    "take_code",
    "touch",
]

Row = tuple[Any, ...]

# How often a token's last use is written (milliseconds): the list shows a day, not a request, and a
# busy MCP client must not turn every call into a write.
LAST_USED_RESOLUTION_MS = 60_000

GRANT_COLUMNS = (
    "t.grant_id, t.id, t.user_id, t.client_id, c.name, t.scope, t.resource, t.created_at,"
    " t.access_expires_at, t.refresh_expires_at, t.last_used_at"
)
GRANT_FROM = (
    " FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id"
)


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> Any: ...


class Conn(Protocol):
    """What both stores' connections offer: sqlite3's and psycopg's ``execute``."""

    def execute(self, sql: Any, params: Sequence[Any], /) -> _Cursor: ...


class OAuthSql(NamedTuple):
    """One store's statements for the functions below, each named after what it does."""

    delete_stale_clients: str
    count_clients: str
    insert_client: str
    read_client: str
    delete_expired_codes: str
    insert_code: str
    read_code: str  # PostgreSQL's locks the row: two redemptions in two processes take turns
    mark_code_used: str
    delete_tokens_of_grant: str
    delete_dead_tokens: str
    grant_exists: str
    delete_oldest_grants: str
    insert_tokens: str
    resolve_access: str
    touch: str
    grant_by_refresh: str
    mark_rotated: str
    delete_grant_of_user: str
    grant_of_token: str
    list_grants: str


SQLITE_SQL = OAuthSql(
    delete_stale_clients=(
        "DELETE FROM oauth_clients WHERE created_at < ?"
        " AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)"
        " AND NOT EXISTS (SELECT 1 FROM oauth_codes k WHERE k.client_id = oauth_clients.id)"
    ),
    count_clients="SELECT count(*) FROM oauth_clients",
    insert_client="INSERT INTO oauth_clients (id, secret_hash, name, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
    read_client="SELECT id, name, metadata, secret_hash, created_at FROM oauth_clients WHERE id = ?",
    delete_expired_codes="DELETE FROM oauth_codes WHERE expires_at < ?",
    insert_code=(
        "INSERT INTO oauth_codes (hash, grant_id, client_id, user_id, redirect_uri, scope, resource,"
        " code_challenge, code_challenge_method, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ),
    read_code=(
        "SELECT grant_id, client_id, user_id, redirect_uri, scope, resource, code_challenge,"
        " code_challenge_method, expires_at, used_at FROM oauth_codes WHERE hash = ?"
    ),
    mark_code_used="UPDATE oauth_codes SET used_at = ? WHERE hash = ?",
    delete_tokens_of_grant="DELETE FROM oauth_tokens WHERE grant_id = ?",
    delete_dead_tokens=(
        "DELETE FROM oauth_tokens WHERE user_id = ? AND access_expires_at <= ?"
        " AND coalesce(refresh_expires_at, 0) <= ?"
    ),
    grant_exists="SELECT 1 FROM oauth_tokens WHERE grant_id = ? LIMIT 1",
    delete_oldest_grants=(
        "DELETE FROM oauth_tokens WHERE grant_id IN (SELECT grant_id FROM oauth_tokens"
        " WHERE user_id = ? AND rotated_at IS NULL ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)"
    ),
    insert_tokens=(
        "INSERT INTO oauth_tokens (id, grant_id, user_id, client_id, scope, resource, access_hash,"
        " refresh_hash, created_at, access_expires_at, refresh_expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ),
    resolve_access=(
        f"SELECT {GRANT_COLUMNS}{GRANT_FROM} WHERE t.access_hash = ? AND t.rotated_at IS NULL"
        " AND t.access_expires_at > ? AND u.active = 1"
    ),
    touch="UPDATE oauth_tokens SET last_used_at = ? WHERE id = ?",
    grant_by_refresh=f"SELECT {GRANT_COLUMNS}, t.rotated_at{GRANT_FROM} WHERE t.refresh_hash = ? AND u.active = 1",
    mark_rotated="UPDATE oauth_tokens SET rotated_at = ? WHERE id = ? AND rotated_at IS NULL",
    delete_grant_of_user="DELETE FROM oauth_tokens WHERE grant_id = ? AND user_id = ?",
    grant_of_token=(
        "SELECT grant_id FROM oauth_tokens WHERE (access_hash = ? OR refresh_hash = ?) AND client_id = ?"
    ),
    list_grants=(
        f"SELECT {GRANT_COLUMNS}{GRANT_FROM} WHERE t.user_id = ? AND t.rotated_at IS NULL"
        " AND (t.access_expires_at > ? OR coalesce(t.refresh_expires_at, 0) > ?) ORDER BY t.created_at, t.id"
    ),
)


class TokenPair:
    """What ``insert_tokens`` stores: plain values (hashed here) and their lifetimes."""

    __slots__ = ("access", "access_expires_ms", "refresh", "refresh_expires_ms")

    def __init__(
        self, access: str, access_expires_ms: int, refresh: str | None, refresh_expires_ms: int | None
    ):
        self.access = access
        self.access_expires_ms = access_expires_ms
        self.refresh = refresh
        self.refresh_expires_ms = refresh_expires_ms


def _grant(row: Row) -> OAuthGrant:
    return OAuthGrant(
        id=row[0],
        token_id=row[1],
        user_id=row[2],
        client_id=row[3],
        client_name=row[4],
        scope=row[5],
        resource=row[6],
        created_at=from_ms(row[7]),
        access_expires_at=from_ms(row[8]),
        refresh_expires_at=None if row[9] is None else from_ms(row[9]),
        last_used_at=None if row[10] is None else from_ms(row[10]),
    )


# -- clients -------------------------------------------------------------------------------------


def insert_client(
    conn: Conn,
    sql: OAuthSql,
    client: OAuthClient,
    secret: str | None,
    *,
    max_clients: int,
    stale_before: datetime,
) -> bool:
    """Store ``client`` (its secret hashed); False when ``max_clients`` are registered.

    Before counting, clients registered before ``stale_before`` that never got a code or a token are
    removed: registration is open to anyone, and a client nobody signed in to is only a row.
    """
    conn.execute(sql.delete_stale_clients, (to_ms(stale_before),))
    (count,) = conn.execute(sql.count_clients, ()).fetchone()
    if count >= max_clients:
        return False
    conn.execute(
        sql.insert_client,
        (
            client.id,
            None if secret is None else passwords.hash_token(secret),
            client.name,
            client.metadata,
            to_ms(client.created_at),
        ),
    )
    return True


def read_client(conn: Conn, sql: OAuthSql, client_id: str) -> tuple[OAuthClient, str | None] | None:
    """The client and its secret's digest (None: a public client)."""
    row = conn.execute(sql.read_client, (client_id,)).fetchone()
    if row is None:
        return None
    return OAuthClient(row[0], row[1], row[2], row[3] is not None, from_ms(row[4])), row[3]


# -- authorization codes -------------------------------------------------------------------------


def insert_code(conn: Conn, sql: OAuthSql, plain: str, code: OAuthCode, now_ms: int) -> None:
    """Store a code (hashed); codes expired before ``now_ms`` go at the same time."""
    conn.execute(sql.delete_expired_codes, (now_ms,))
    conn.execute(
        sql.insert_code,
        (
            passwords.hash_token(plain),
            code.grant_id,
            code.client_id,
            code.user_id,
            code.redirect_uri,
            code.scope,
            code.resource,
            code.code_challenge,
            code.code_challenge_method,
            to_ms(code.expires_at),
        ),
    )


def take_code(conn: Conn, sql: OAuthSql, plain: str, client_id: str, now_ms: int) -> OAuthCode | None:
    """The code, marked used, when it is ``client_id``'s, unused and unexpired; else None.

    Any code presented is spent, whoever presents it: one another client shows has leaked, so its
    own client cannot use it after (RFC 6749 §10.5; OAuth 2.1 §4.1.3), and one shown again ends the
    grant its first use opened (module docstring), whichever client shows it. Taking it is atomic (one
    transaction, the row locked where the database allows writers beside each other), so two
    redemptions racing each other cannot both succeed.
    """
    digest = passwords.hash_token(plain)
    row = conn.execute(sql.read_code, (digest,)).fetchone()
    if row is None:
        return None
    if row[9] is not None:
        conn.execute(sql.delete_tokens_of_grant, (row[0],))
        return None
    conn.execute(sql.mark_code_used, (now_ms, digest))
    if row[1] != client_id or row[8] <= now_ms:
        return None
    return OAuthCode(
        grant_id=row[0],
        client_id=row[1],
        user_id=row[2],
        redirect_uri=row[3],
        scope=row[4],
        resource=row[5],
        code_challenge=row[6],
        code_challenge_method=row[7],
        expires_at=from_ms(row[8]),
    )


# -- tokens --------------------------------------------------------------------------------------


def insert_tokens(
    conn: Conn,
    sql: OAuthSql,
    *,
    grant_id: str,
    user_id: str,
    client_id: str,
    scope: str,
    resource: str,
    pair: TokenPair,
    now_ms: int,
    max_grants_per_user: int,
) -> str:
    """Store a token pair of ``grant_id`` (hashed) and answer its row id.

    The user's rows past every expiry go first; then, for a new grant, the user's oldest grants
    beyond ``max_grants_per_user - 1``, so one person's list stays readable.
    """
    conn.execute(sql.delete_dead_tokens, (user_id, now_ms, now_ms))
    if conn.execute(sql.grant_exists, (grant_id,)).fetchone() is None:
        conn.execute(sql.delete_oldest_grants, (user_id, max(0, max_grants_per_user - 1)))
    token_id = new_id()
    conn.execute(
        sql.insert_tokens,
        (
            token_id,
            grant_id,
            user_id,
            client_id,
            scope,
            resource,
            passwords.hash_token(pair.access),
            None if pair.refresh is None else passwords.hash_token(pair.refresh),
            now_ms,
            pair.access_expires_ms,
            pair.refresh_expires_ms,
        ),
    )
    return token_id


def resolve_access(conn: Conn, sql: OAuthSql, plain: str, now_ms: int) -> tuple[OAuthGrant, bool] | None:
    """The live grant of an access token (not expired, not rotated, its user active), and whether its
    last use is due to be written (``touch``): a read, so that a call costs no write lock."""
    row = conn.execute(sql.resolve_access, (passwords.hash_token(plain), now_ms)).fetchone()
    if row is None:
        return None
    due = row[10] is None or now_ms - row[10] >= LAST_USED_RESOLUTION_MS
    return _grant((*row[:10], now_ms) if due else row), due


def touch(conn: Conn, sql: OAuthSql, token_id: str, now_ms: int) -> None:
    conn.execute(sql.touch, (now_ms, token_id))


def grant_by_refresh(conn: Conn, sql: OAuthSql, plain: str, now_ms: int) -> OAuthGrant | None:
    """The grant of a live refresh token; a rotated one shown again ends its grant (module docstring)."""
    row = conn.execute(sql.grant_by_refresh, (passwords.hash_token(plain),)).fetchone()
    if row is None:
        return None
    if row[11] is not None:
        conn.execute(sql.delete_tokens_of_grant, (row[0],))
        return None
    if row[9] is None or row[9] <= now_ms:
        return None
    return _grant(row[:11])


def mark_rotated(conn: Conn, sql: OAuthSql, token_id: str, now_ms: int) -> bool:
    """Mark a replaced pair; False when it was replaced already (a racing refresh: a replay)."""
    return bool(conn.execute(sql.mark_rotated, (now_ms, token_id)).rowcount)


def delete_grant(conn: Conn, sql: OAuthSql, grant_id: str, user_id: str | None = None) -> bool:
    """End a grant: every token of it (of ``user_id`` only, when given)."""
    if user_id is None:
        return bool(conn.execute(sql.delete_tokens_of_grant, (grant_id,)).rowcount)
    return bool(conn.execute(sql.delete_grant_of_user, (grant_id, user_id)).rowcount)


def delete_grant_of_token(conn: Conn, sql: OAuthSql, plain: str, client_id: str) -> bool:
    """End the grant an access or refresh token of ``client_id`` belongs to (RFC 7009: revoking either
    ends both); False when no token of that client has this value."""
    digest = passwords.hash_token(plain)
    row = conn.execute(sql.grant_of_token, (digest, digest, client_id)).fetchone()
    return row is not None and delete_grant(conn, sql, row[0])


def list_grants(conn: Conn, sql: OAuthSql, user_id: str, now_ms: int) -> list[OAuthGrant]:
    """The user's live grants, oldest first: one row each (the current pair)."""
    rows = conn.execute(sql.list_grants, (user_id, now_ms, now_ms)).fetchall()
    return [_grant(row) for row in rows]
