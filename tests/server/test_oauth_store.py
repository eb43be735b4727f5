"""The store's OAuth grants on SQLite and PostgreSQL alike (``each_store``): the rules of
``store/oauth_rows.py`` that the HTTP tests (test_oauth.py) do not reach one by one: the per-person
grant cap, the pruning of clients nobody signed in to, and the replays that end a grant.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from ai_search_server.store.base import Store
from ai_search_server.store.records import OAuthClient, OAuthCode
from ai_search_server.store.rules import new_id

HOUR = timedelta(hours=1)


def _client(store: Store, *, created_at: datetime | None = None, max_clients: int = 10) -> OAuthClient | None:
    client = OAuthClient(new_id(), "Editor", "{}", False, created_at or datetime.now(UTC))
    stale_before = datetime.now(UTC) - timedelta(days=1)
    registered = store.register_oauth_client(client, None, max_clients=max_clients, stale_before=stale_before)
    return client if registered else None


def _grant(
    store: Store, user_id: str, client_id: str, n: int, *, max_grants: int = 50, grant_id: str | None = None
) -> str:
    """Saves the pair ``access-<n>-<grant id>``, ``refresh-<n>-<grant id>`` (of a new grant unless given)."""
    grant_id = grant_id or new_id()
    now = datetime.now(UTC)
    store.save_oauth_tokens(
        grant_id=grant_id,
        user_id=user_id,
        client_id=client_id,
        scope="mcp",
        resource="http://127.0.0.1/api/v1/mcp",
        access=(f"access-{n}-{grant_id}", now + HOUR),
        refresh=(f"refresh-{n}-{grant_id}", now + 24 * HOUR),
        max_grants_per_user=max_grants,
    )
    return grant_id


def _code(grant_id: str, client_id: str, user_id: str, expires_at: datetime) -> OAuthCode:
    return OAuthCode(grant_id, client_id, user_id, "http://127.0.0.1/cb", "mcp", "r", "x" * 43, "S256", expires_at)


def test_a_person_keeps_at_most_the_grant_cap_and_the_oldest_goes(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    client = _client(each_store)
    assert client is not None
    grants = []
    for n in range(5):
        grants.append(_grant(each_store, alice.id, client.id, n, max_grants=3))
        time.sleep(0.002)  # one millisecond apart at least: "oldest" is by the stored time
    assert [g.id for g in each_store.list_oauth_grants(alice.id)] == grants[2:]
    assert each_store.resolve_oauth_access(f"access-0-{grants[0]}") is None
    live = each_store.resolve_oauth_access(f"access-4-{grants[4]}")
    assert live is not None and live.id == grants[4] and live.client_name == "Editor"


def test_the_client_cap_counts_after_clients_nobody_used_are_pruned(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    old = datetime.now(UTC) - timedelta(days=3)
    unused = _client(each_store, created_at=old, max_clients=2)
    used = _client(each_store, created_at=old, max_clients=2)
    assert unused is not None and used is not None
    _grant(each_store, alice.id, used.id, 0)
    fresh = _client(each_store, max_clients=2)  # the unused old client made room
    assert fresh is not None
    assert each_store.oauth_client(unused.id) is None
    assert each_store.oauth_client(used.id) is not None
    assert _client(each_store, max_clients=2) is None  # two clients, both in use or new


def test_a_code_works_once_and_its_reuse_ends_the_grant(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    client = _client(each_store)
    assert client is not None
    grant_id = new_id()
    soon = datetime.now(UTC) + timedelta(minutes=5)
    each_store.save_oauth_code("the-code", _code(grant_id, client.id, alice.id, soon))
    taken = each_store.take_oauth_code("the-code", client.id)
    assert taken is not None and (taken.grant_id, taken.user_id) == (grant_id, alice.id)
    _grant(each_store, alice.id, client.id, 0, grant_id=grant_id)
    assert each_store.resolve_oauth_access(f"access-0-{grant_id}") is not None
    assert each_store.take_oauth_code("the-code", client.id) is None
    assert each_store.resolve_oauth_access(f"access-0-{grant_id}") is None  # the reuse revoked them


@pytest.mark.parametrize("after_its_own_exchange", [False, True], ids=["before-its-client", "after-its-client"])
def test_a_code_another_client_presents_is_spent(each_store: Store, after_its_own_exchange: bool) -> None:
    """RFC 6749 §10.5: a code shown by another client has leaked. Shown first, it is spent, so its own
    client cannot exchange it after; shown after the exchange, it revokes what the exchange gave."""
    alice = each_store.create_user("alice")
    client, other = _client(each_store), _client(each_store)
    assert client is not None and other is not None
    grant_id = new_id()
    soon = datetime.now(UTC) + timedelta(minutes=5)
    each_store.save_oauth_code("the-code", _code(grant_id, client.id, alice.id, soon))
    if after_its_own_exchange:
        assert each_store.take_oauth_code("the-code", client.id) is not None
        _grant(each_store, alice.id, client.id, 0, grant_id=grant_id)
    assert each_store.take_oauth_code("the-code", other.id) is None
    assert each_store.resolve_oauth_access(f"access-0-{grant_id}") is None  # (none yet before)
    assert each_store.take_oauth_code("the-code", client.id) is None


def test_an_expired_code_is_refused(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    client = _client(each_store)
    assert client is not None
    past = datetime.now(UTC) - timedelta(seconds=1)
    each_store.save_oauth_code("old-code", _code(new_id(), client.id, alice.id, past))
    assert each_store.take_oauth_code("old-code", client.id) is None


def test_a_rotated_refresh_token_shown_again_ends_the_grant(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    client = _client(each_store)
    assert client is not None
    grant_id = _grant(each_store, alice.id, client.id, 0)
    first = each_store.oauth_grant_by_refresh(f"refresh-0-{grant_id}")
    assert first is not None and first.id == grant_id
    assert each_store.rotate_oauth_tokens(first.token_id)
    assert not each_store.rotate_oauth_tokens(first.token_id)  # a racing second refresh loses
    _grant(each_store, alice.id, client.id, 1, grant_id=grant_id)
    assert each_store.resolve_oauth_access(f"access-0-{grant_id}") is None  # the old pair ended
    assert each_store.resolve_oauth_access(f"access-1-{grant_id}") is not None
    assert [g.id for g in each_store.list_oauth_grants(alice.id)] == [grant_id]  # one row: the current pair
    assert each_store.oauth_grant_by_refresh(f"refresh-0-{grant_id}") is None  # a replay
    assert each_store.resolve_oauth_access(f"access-1-{grant_id}") is None
    assert each_store.list_oauth_grants(alice.id) == []


def test_revoking_either_token_ends_both_and_a_grant_is_revoked_by_its_owner_only(each_store: Store) -> None:
    alice, bob = each_store.create_user("alice"), each_store.create_user("bob")
    client = _client(each_store)
    assert client is not None
    first, second = _grant(each_store, alice.id, client.id, 0), _grant(each_store, alice.id, client.id, 1)
    assert not each_store.revoke_oauth_token(f"refresh-0-{first}", "another-client")
    assert each_store.revoke_oauth_token(f"refresh-0-{first}", client.id)
    assert each_store.resolve_oauth_access(f"access-0-{first}") is None
    assert not each_store.revoke_oauth_grant(second, bob.id)
    assert each_store.revoke_oauth_grant(second, alice.id)
    assert each_store.list_oauth_grants(alice.id) == []


def test_a_deactivated_person_s_token_stops_resolving(each_store: Store) -> None:
    alice = each_store.create_user("alice")
    client = _client(each_store)
    assert client is not None
    grant_id = _grant(each_store, alice.id, client.id, 0)
    each_store.set_active(alice.id, False)
    assert each_store.resolve_oauth_access(f"access-0-{grant_id}") is None
    assert each_store.oauth_grant_by_refresh(f"refresh-0-{grant_id}") is None
