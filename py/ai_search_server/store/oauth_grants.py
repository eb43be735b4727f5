"""The OAuth part of a SQL store, written once for SQLite's and PostgreSQL's.

Both stores keep OAuth clients, codes and grants with the same rules (``oauth_rows``) and differ only
in their statements (``oauth_rows.OAuthSql``) and in how they hand out a connection. A store mixes
this class in and says those two things: ``_oauth_sql`` (its statements) and ``_oauth_reading()``
(a connection to read on, inside its error translation); writes go through the store's own
``_transaction``, which keeps listeners' events in commit order. So a fix to how a grant is
redeemed, touched or revoked is made here once, and both stores carry it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from . import oauth_rows
from .records import OAuthClient, OAuthCode, OAuthGrant
from .row_records import MAX_TOKEN_LENGTH
from .rules import now_ms, to_ms

__all__ = ["OAuthGrants"]


class OAuthGrants:
    """Mixin: the store protocol's OAuth methods over ``oauth_rows``' rules."""

    _oauth_sql: ClassVar[oauth_rows.OAuthSql]

    def _transaction(self, action: str) -> AbstractContextManager[Any]:  # the store's own
        raise NotImplementedError

    def _oauth_reading(self) -> AbstractContextManager[oauth_rows.Conn]:
        """A connection to read on, with the store's errors translated (each store says how)."""
        raise NotImplementedError

    def register_oauth_client(
        self, client: OAuthClient, secret: str | None, *, max_clients: int, stale_before: datetime
    ) -> bool:
        with self._transaction("register an OAuth client") as write:
            return oauth_rows.insert_client(
                write.conn,
                self._oauth_sql,
                client,
                secret,
                max_clients=max_clients,
                stale_before=stale_before,
            )

    def oauth_client(self, client_id: str) -> tuple[OAuthClient, str | None] | None:
        with self._oauth_reading() as conn:
            return oauth_rows.read_client(conn, self._oauth_sql, client_id)

    def save_oauth_code(self, plain: str, code: OAuthCode) -> None:
        with self._transaction("save an authorization code") as write:
            oauth_rows.insert_code(write.conn, self._oauth_sql, plain, code, now_ms())

    def take_oauth_code(self, plain: str, client_id: str) -> OAuthCode | None:
        with self._transaction("redeem an authorization code") as write:
            return oauth_rows.take_code(write.conn, self._oauth_sql, plain, client_id, now_ms())

    def save_oauth_tokens(
        self,
        *,
        grant_id: str,
        user_id: str,
        client_id: str,
        scope: str,
        resource: str,
        access: tuple[str, datetime],
        refresh: tuple[str, datetime] | None,
        max_grants_per_user: int,
    ) -> str:
        pair = oauth_rows.TokenPair(
            access[0], to_ms(access[1]), *((refresh[0], to_ms(refresh[1])) if refresh else (None, None))
        )
        with self._transaction("save OAuth tokens") as write:
            return oauth_rows.insert_tokens(
                write.conn,
                self._oauth_sql,
                grant_id=grant_id,
                user_id=user_id,
                client_id=client_id,
                scope=scope,
                resource=resource,
                pair=pair,
                now_ms=now_ms(),
                max_grants_per_user=max_grants_per_user,
            )

    def resolve_oauth_access(self, plain: str) -> OAuthGrant | None:
        if not plain or len(plain) > MAX_TOKEN_LENGTH:
            return None
        now = now_ms()
        with self._oauth_reading() as conn:
            found = oauth_rows.resolve_access(conn, self._oauth_sql, plain, now)
        if found is None:
            return None
        grant, due = found
        if due:
            with self._transaction("record an OAuth token's use") as write:
                oauth_rows.touch(write.conn, self._oauth_sql, grant.token_id, now)
        return grant

    def oauth_grant_by_refresh(self, plain: str) -> OAuthGrant | None:
        if not plain or len(plain) > MAX_TOKEN_LENGTH:
            return None
        with self._transaction("check a refresh token") as write:
            return oauth_rows.grant_by_refresh(write.conn, self._oauth_sql, plain, now_ms())

    def rotate_oauth_tokens(self, token_id: str) -> bool:
        with self._transaction("rotate OAuth tokens") as write:
            return oauth_rows.mark_rotated(write.conn, self._oauth_sql, token_id, now_ms())

    def revoke_oauth_grant(self, grant_id: str, user_id: str | None = None) -> bool:
        with self._transaction("revoke an OAuth grant") as write:
            return oauth_rows.delete_grant(write.conn, self._oauth_sql, grant_id, user_id)

    def revoke_oauth_token(self, plain: str, client_id: str) -> bool:
        if not plain or len(plain) > MAX_TOKEN_LENGTH:
            return False
        with self._transaction("revoke an OAuth token") as write:
            return oauth_rows.delete_grant_of_token(write.conn, self._oauth_sql, plain, client_id)

    def list_oauth_grants(self, user_id: str) -> list[OAuthGrant]:
        with self._oauth_reading() as conn:
            return oauth_rows.list_grants(conn, self._oauth_sql, user_id, now_ms())
