"""C8. Token minting and lifetimes: revoking a leaked token is enough, and sessions end on their own.

A personal access token could mint more tokens, so whoever leaked one kept access after it was revoked;
logout with a PAT said "logged out" while the PAT still worked; login sessions never expired. Now
minting needs a login session (which needs the password), logout refuses a PAT and says so, and a
session ends after ``session_idle_days`` without use or ``session_max_age_days`` after the login.
Time is moved by rewriting the token rows' timestamps in the database file, as if days had passed.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import httpx
import pytest

from ai_search_server.settings import Settings
from ai_search_server.store.base import Store
from tests.server.conftest import Workspace

from .conftest import Figure

DAY_MS = 24 * 60 * 60 * 1000


def _age_tokens(store: Store, plain_owner: str, *, created_days: float, used_days: float | None) -> None:
    """Make every token of ``plain_owner`` (sessions and PATs) look created and last used that long ago."""
    now = int(datetime.now(UTC).timestamp() * 1000)
    used = None if used_days is None else now - int(used_days * DAY_MS)
    with sqlite3.connect(store.path) as db:  # type: ignore[attr-defined]
        db.execute(
            "UPDATE tokens SET created_at = ?, last_used_at = ? WHERE user_id = ?",
            (now - int(created_days * DAY_MS), used, plain_owner),
        )


async def _me(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    return (await client.get("/api/v1/me", headers=headers)).status_code


@pytest.mark.requirement("C8")
@pytest.mark.anyio
async def test_only_a_login_session_mints_tokens_and_logout_says_what_it_ended(
    client: httpx.AsyncClient, workspace: Workspace, figure: Figure
) -> None:
    alice = workspace["alice"]
    mint = "/api/v1/users.generatePersonalAccessToken"
    by_session = await client.post(mint, json={"tokenName": "laptop"}, headers=alice.headers)
    by_pat = await client.post(mint, json={"tokenName": "from-a-leak"}, headers=alice.pat_headers)
    logout_pat = await client.post("/api/v1/logout", headers=alice.pat_headers)
    pat_after = await _me(client, alice.pat_headers)
    removed = await client.post(
        "/api/v1/users.removePersonalAccessToken", json={"tokenName": "tests"}, headers=alice.headers
    )
    pat_after_removal = await _me(client, alice.pat_headers)
    logout_session = await client.post("/api/v1/logout", headers=alice.headers)
    session_after = await _me(client, alice.headers)
    outcomes = {
        "mint with a session": (by_session.status_code, 200),
        "mint with a PAT": (by_pat.status_code, 403),
        "logout with a PAT": (logout_pat.status_code, 400),
        "the PAT after that logout": (pat_after, 200),
        "remove the PAT": (removed.status_code, 200),
        "the PAT after its removal": (pat_after_removal, 401),
        "logout with the session": (logout_session.status_code, 200),
        "the session after logout": (session_after, 401),
    }
    wrong = {what: got for what, (got, want) in outcomes.items() if got != want}
    figure(tried=len(outcomes), failed=len(wrong), statuses={k: v[0] for k, v in outcomes.items()})
    assert wrong == {}
    assert "personal access token" in logout_pat.json()["error"]
    assert by_pat.json()["errorType"] == "error-login-session-required"


LIFETIMES = [
    # (case, days since login, days since last use or None for never used, still valid)
    pytest.param(1, 1, True, id="fresh"),
    pytest.param(30, 13, True, id="idle-13-days"),
    pytest.param(30, 14, False, id="idle-14-days"),
    pytest.param(20, None, False, id="never-used-for-20-days"),
    pytest.param(89, 0, True, id="used-daily-89-days"),
    pytest.param(90, 0, False, id="used-daily-90-days"),
]


@pytest.mark.requirement("C8")
@pytest.mark.anyio
@pytest.mark.parametrize(("created_days", "used_days", "valid"), LIFETIMES)
async def test_login_sessions_end_after_their_idle_and_absolute_lifetimes(
    client: httpx.AsyncClient,
    store: Store,
    settings: Settings,
    workspace: Workspace,
    created_days: float,
    used_days: float | None,
    valid: bool,
    figure: Figure,
) -> None:
    alice = workspace["alice"]
    assert (settings.session_idle_days, settings.session_max_age_days) == (14, 90)
    _age_tokens(store, alice.user.id, created_days=created_days, used_days=used_days)
    status = await _me(client, alice.headers)
    again = await _me(client, alice.headers)  # an expired session is deleted, not revived by a retry
    pat = await _me(client, alice.pat_headers)  # PATs have no lifetime (created long ago too)
    expected = 200 if valid else 401
    failed = int(status != expected) + int(again != expected) + int(pat != 200)
    figure(tried=3, failed=failed, session=status, session_again=again, pat=pat)
    assert (status, again, pat) == (expected, expected, 200)
