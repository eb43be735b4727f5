"""F7. A hostile Rocket.Chat cannot make ``ai-search sync rocketchat`` page for ever.

The review pointed the sync at a stand-in whose ``users.list`` answered ``total: 10**12`` with full
pages for ever: 59,700 users were created in 100 s, and it would not have stopped. Here the stand-in
of ``tests/server/_fake_rocketchat.py`` (a real HTTP server on loopback) plays every way a listing can
lie, on each route the sync pages through, and ``chat.syncMessages`` plays a cursor that never moves
and one that never ends. Each run must end by itself within the bound (the first page's ``total``,
within the cap on items a listing reads; the cap on cursor pages a run reads), say in its report which
route stopped and why, create nothing past the bound, and change no membership from a cut listing
(nor take a room missing from one for gone).

The caps are the product's own parameters (``max_listed_items``, ``max_cursor_pages``), set small so
that a run takes a second; ``test_the_caps_in_force_are_the_documented_ones`` pins their defaults.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import anyio
import pytest

from ai_search_server.imports import rocketchat, rocketchat_api
from ai_search_server.imports.batches import ImportReport
from ai_search_server.imports.rocketchat import RocketChatSync
from ai_search_server.imports.rocketchat_api import Credentials, RocketChatAPI
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.store.base import Store
from tests.server._fake_rocketchat import ADMIN_ID, ADMIN_TOKEN, HOSTILE_PATIENCE_PAGES, FakeRocketChat

from .conftest import Figure

PAGE = 5  # items a page asks for
CAP = 40  # items a listing reads at most, in these runs
CURSOR_PAGES = 4  # pages of chat.syncMessages a run reads per room and kind, in these runs
PEOPLE = ("alice", "bob", "carol", "dave", "erin", "frank", "grace")
ROOMS = ("general", "ops", "design", "hiring", "random", "infra", "sales", "legal")
USERS_LIST, ROOMS_LIST = "/api/v1/users.list", "/api/v1/rooms.adminRooms"
MEMBERS_LIST, SYNC = "/api/v1/channels.members", "/api/v1/chat.syncMessages"


@pytest.fixture
def server() -> Iterator[FakeRocketChat]:
    """Seven people (eight with the admin: more than a page), eight channels, three messages each."""
    fake = FakeRocketChat()
    ids = {name: f"u{name.title():0<16}" for name in PEOPLE}
    for name, user_id in ids.items():
        fake.add_user(user_id, name, name.title())
    for n, room in enumerate(ROOMS):
        room_id = f"r{room.title():0<16}"
        members = [ADMIN_ID, *(ids[p] for p in PEOPLE if (n + PEOPLE.index(p)) % 3)]
        fake.add_room(room_id, "c", room, members)
        for k in range(3):
            fake.post(room_id, members[1 + k % (len(members) - 1)], f"{room} note {k}")
    fake.serve()
    yield fake
    fake.stop()


def _sync(store: Store, server: FakeRocketChat) -> ImportReport:
    async def run() -> ImportReport:
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            api = RocketChatAPI(
                server.url, Credentials(ADMIN_ID, ADMIN_TOKEN), client, page_size=PAGE, max_listed_items=CAP
            )
            return await RocketChatSync(store, api, max_cursor_pages=CURSOR_PAGES).run()

    return anyio.run(run)


def _memberships(store: Store) -> dict[str, set[str]]:
    found = {}
    for room in ROOMS:
        stored = store.get_room_by_name(room)
        if stored is not None:
            found[room] = {u.username for u in store.get_users(store.members_of(stored.id)).values()}
    return found


def _made_up_people(store: Store) -> int:
    return sum(1 for u in store.find_users("made-up-", limit=100_000) if u.username.startswith("made-up-"))


# (route, mode, what the report must say, most calls to the route in the hostile run)
LISTINGS = math.ceil(CAP / PAGE) + 1
CASES = [
    pytest.param(USERS_LIST, "endless", "said it holds 1,000,000,000,000 items, more than the 40", LISTINGS, id="users-endless"),
    pytest.param(USERS_LIST, "ignores-offset", "with no _id it had not sent before", 2, id="users-ignore-offset"),
    pytest.param(USERS_LIST, "wrong-offset", "answered offset 0 when asked for offset 5", 2, id="users-wrong-offset"),
    pytest.param(USERS_LIST, "growing", "sent more than the 8 items its first page said", 2, id="users-growing-total"),
    pytest.param(USERS_LIST, "oversized", "answered 50 items when asked for at most 5", 1, id="users-oversized-page"),
    pytest.param(ROOMS_LIST, "endless", "said it holds 1,000,000,000,000 items", LISTINGS, id="rooms-endless"),
    pytest.param(ROOMS_LIST, "ignores-offset", "no room it did not list is taken for gone", 2, id="rooms-ignore-offset"),
    pytest.param(MEMBERS_LIST, "endless", "its members here are left as they were", len(ROOMS) * LISTINGS, id="members-endless"),
    pytest.param(MEMBERS_LIST, "wrong-offset", "its members here are left as they were", len(ROOMS) * 2, id="members-wrong-offset"),
    pytest.param(SYNC, "stuck", "does not move its cursor", len(ROOMS) * 3, id="messages-stuck-cursor"),
    pytest.param(SYNC, "endless", f"more than {CURSOR_PAGES:,} pages of changes", len(ROOMS) * (CURSOR_PAGES + 1), id="messages-endless"),
]  # fmt: skip


@pytest.mark.requirement("F7")
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("route", "mode", "said", "most_calls"), CASES)
def test_a_hostile_server_cannot_make_the_sync_page_for_ever(
    store: Store,
    server: FakeRocketChat,
    figure: Figure,
    route: str,
    mode: str,
    said: str,
    most_calls: int,
) -> None:
    _sync(store, server)  # an honest first run: every room mirrored with its members
    before = _memberships(store)
    messages_before = store.count_messages()
    calls_before = len(server.calls(route))

    server.hostile[route] = mode
    started = time.monotonic()
    report = _sync(store, server)
    seconds = time.monotonic() - started

    calls = len(server.calls(route)) - calls_before
    reasons = [reason for _where, reason in report.skipped]
    made_up_messages = store.count_messages() - messages_before
    after = _memberships(store)
    changed = {
        room: sorted(before[room] ^ after.get(room, set()))
        for room in before
        if before[room] != after.get(room)
    }
    failures = {
        "paged_past_the_bound": calls > most_calls,
        "gave_up_waiting": calls > HOSTILE_PATIENCE_PAGES,
        "not_reported": not any(said in reason for reason in reasons),
        "people_past_the_cap": _made_up_people(store) > CAP,
        "messages_past_the_cap": made_up_messages > len(ROOMS) * CURSOR_PAGES * PAGE,
        "memberships_changed": bool(changed),
    }
    figure(
        tried=len(failures),
        failed=sum(failures.values()),
        route=route.rsplit("/", 1)[-1],
        hostile=mode,
        calls=calls,
        most_calls=most_calls,
        made_up_people=_made_up_people(store),
        made_up_messages=made_up_messages,
        memberships_changed=changed,
        seconds=round(seconds, 2),
        reported=next((r for r in reasons if said in r), reasons[:2]),
    )
    assert [name for name, failed in failures.items() if failed] == []


def test_the_caps_in_force_are_the_documented_ones() -> None:
    """A listing reads at most a million items; a run reads at most 10,000 cursor pages per room and kind."""
    assert rocketchat_api.MAX_LISTED_ITEMS == 1_000_000
    assert rocketchat.MAX_CURSOR_PAGES_PER_RUN == 10_000
