"""C9 and C4. Imports and the Rocket.Chat mirror take over no room and no account of this workspace.

C9 replays the review's export (issue 42, findings 1 and 2) against the demo workspace, in each format
an import reads and through the live mirror: its people are named like the demo's (``alice``, the
demo's admin, deleted in the source and renamed ``Mallory``; ``bob``; ``grace``) and a newcomer; its
conversations like the demo's rooms (the private ``leadership``, the public ``general``) plus a DM of
"alice" and "bob". Before the fix, ``leadership``'s members became grace and the newcomer, alice was
deactivated and renamed, and the export posted as her, into her DM with bob too. Now every demo
account and room must stay as it was (name, active flag, roles, password; members, messages), the
export's messages must land in rooms of their own (``leadership-…``) as accounts of their own
(``alice-2``…), and a second run must change nothing.

C4 extends "one user's token never works for another" to Rocket.Chat sign-in: a Rocket.Chat user who
calls themself ``alice`` signs in as the account the sync made for them, never as the local admin,
by password, by token on REST and by token on MCP; a link an earlier version made by username alone
signs nobody in; an account an admin mapped does (the control).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.demo import DEMO_ROOMS, DEMO_USERS, generate_demo_messages
from ai_search_server.import_dispatch import import_path
from ai_search_server.importer import import_rows
from ai_search_server.imports.batches import ImportReport
from ai_search_server.imports.mapping import NO_MAPPING, SourceMapping, check_mapping, read_mapping
from ai_search_server.imports.rocketchat import RocketChatSync, origin_of
from ai_search_server.imports.rocketchat_api import Credentials, RocketChatAPI
from ai_search_server.outbound import GuardedClient
from ai_search_server.ratelimit import RateLimiter
from ai_search_server.store.base import Store
from tests.server._fake_rocketchat import ADMIN_ID, ADMIN_TOKEN, FakeRocketChat

from ._apps import LOOPBACK, MCP_HEADERS, asgi
from .conftest import Figure, reliability_settings

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
MARKER = "zqxtakeover"  # in every message of the hostile source, and in no demo message

# The hostile source, whatever its format. People: (key, username there, display name, active).
PEOPLE = [
    ("evil", "alice", "Mallory", False),  # named like the demo's admin, deleted there
    ("bob", "bob", "Bob Other", True),
    ("grace", "grace", "Grace Other", True),
    ("mal", "mallory", "Mal", True),  # nobody here has this name
]
# Conversations: (key, type, name, member keys); a direct one is named after its members.
ROOMS = [
    ("lead", "p", "leadership", ["grace", "mal"]),  # the reproduction
    ("gen", "c", "general", ["mal"]),  # general lost five members the same way
    ("dm", "d", "", ["evil", "bob"]),  # "alice" and "bob": the demo's alice__bob
]
# The accounts the source's people must get: a name taken here gets the first free suffix.
OWN_USERNAMES = {"evil": "alice-2", "bob": "bob-2", "grace": "grace-2", "mal": "mallory"}
MESSAGES = [(room, "evil", f"{MARKER} {room} the export speaks as alice") for room, _t, _n, _m in ROOMS]


# -- the source in each format ---------------------------------------------------------------------


def _slack(folder: Path) -> None:
    users = [
        {"id": f"U{key.upper()}", "team_id": "TEVIL", "name": name, "real_name": real, "deleted": not active}
        for key, name, real, active in PEOPLE
    ]
    (folder / "users.json").write_text(json.dumps(users))
    lists: dict[str, list[dict[str, Any]]] = {"channels.json": [], "groups.json": [], "dms.json": []}
    for key, kind, name, members in ROOMS:
        entry = {"id": f"C{key.upper()}", "members": [f"U{m.upper()}" for m in members]}
        lists[{"c": "channels.json", "p": "groups.json", "d": "dms.json"}[kind]].append(
            {**entry, **({"name": name} if name else {})}
        )
        day = folder / (name or f"C{key.upper()}")
        day.mkdir()
        texts = [m for m in MESSAGES if m[0] == key]
        messages = [
            {"type": "message", "user": f"U{author.upper()}", "text": text, "ts": f"{T0.timestamp() + n:.6f}"}
            for n, (_room, author, text) in enumerate(texts)
        ]
        (day / "2026-11-20.json").write_text(json.dumps(messages))
    for name, entries in lists.items():
        (folder / name).write_text(json.dumps(entries))


def _mattermost(folder: Path) -> None:
    names = {key: name for key, name, _real, _active in PEOPLE}
    lines: list[dict[str, Any]] = [
        {"type": "version", "version": 1},
        {"type": "team", "team": {"name": "evil", "display_name": "Evil", "type": "O"}},
    ]
    lines += [
        {"type": "channel", "channel": {"team": "evil", "name": name, "display_name": name, "type": "O" if kind == "c" else "P"}}
        for _key, kind, name, _members in ROOMS
        if kind != "d"
    ]  # fmt: skip
    for key, name, real, active in PEOPLE:
        joined = [{"name": n} for _k, kind, n, members in ROOMS if kind != "d" and key in members]
        user = {"username": name, "first_name": real, "email": f"{name}@evil.test", "teams": [{"name": "evil", "channels": joined}]}
        lines.append({"type": "user", "user": {**user, **({} if active else {"delete_at": 1})}})
    for key, kind, name, members in ROOMS:
        for n, (_room, author, text) in enumerate(m for m in MESSAGES if m[0] == key):
            post: dict[str, Any] = {"user": names[author], "message": text, "create_at": int(T0.timestamp() * 1000) + n}
            if kind == "d":
                post["channel_members"] = [names[m] for m in members]
                lines.append({"type": "direct_post", "direct_post": post})
            else:
                lines.append({"type": "post", "post": {**post, "team": "evil", "channel": name}})
    (folder / "export.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _zulip(folder: Path) -> None:
    ids = {key: 90 + n for n, (key, *_rest) in enumerate(PEOPLE)}
    users = [
        {"id": ids[key], "email": f"user{ids[key]}@evil.test", "delivery_email": f"{name}@evil.test",
         "full_name": real, "is_bot": False, "is_active": active, "realm": 9}
        for key, name, real, active in PEOPLE
    ]  # fmt: skip
    streams = [(n, key, kind, name, members) for n, (key, kind, name, members) in enumerate(ROOMS) if kind != "d"]
    recipients = [{"id": 600 + n, "type": 2, "type_id": 500 + n} for n, *_rest in streams]
    recipients += [{"id": 700 + ids[key], "type": 1, "type_id": ids[key]} for key, *_rest in PEOPLE]
    realm = {
        "zerver_realm": [{"id": 9, "string_id": "evil", "name": "Evil"}],
        "zerver_userprofile": users,
        "zerver_stream": [
            {"id": 500 + n, "name": name, "description": "", "invite_only": kind == "p", "realm": 9, "recipient": 600 + n}
            for n, _key, kind, name, _members in streams
        ],
        "zerver_recipient": recipients,
        "zerver_subscription": [
            {"id": 10 * n + i, "user_profile": ids[m], "recipient": 600 + n, "active": True}
            for n, _key, _kind, _name, members in streams
            for i, m in enumerate(members)
        ],
    }  # fmt: skip
    messages = []
    for n, (room, author, text) in enumerate(MESSAGES):
        stream = next((s for s in streams if s[1] == room), None)
        other = next(m for k, kind, _n, members in ROOMS if k == room for m in members if m != author)
        recipient = 600 + stream[0] if stream is not None else 700 + ids[other]
        messages.append({"id": 9000 + n, "sender": ids[author], "recipient": recipient, "subject": "takeover",
                         "content": text, "date_sent": int(T0.timestamp()) + n})  # fmt: skip
    (folder / "realm.json").write_text(json.dumps(realm))
    (folder / "messages-000001.json").write_text(json.dumps({"zerver_message": messages}))


def _rocketchat(server: FakeRocketChat) -> None:
    ids = {key: f"u{key.title():0<16}"[:17] for key, *_rest in PEOPLE}
    for key, name, real, active in PEOPLE:
        server.add_user(ids[key], name, real, active=active, password=f"pw-{key}-123")
    for key, kind, name, members in ROOMS:
        server.add_room(f"r{key.title():0<16}"[:17], kind, name, [ids[m] for m in members])
    for room, author, text in MESSAGES:
        sent = server.post(f"r{room.title():0<16}"[:17], ids[author], text)
        server.react(sent, ":+1:", ["alice", "bob"])  # Rocket.Chat's usernames: the source's people


WRITERS: dict[str, Callable[[Path], None]] = {"slack": _slack, "mattermost": _mattermost, "zulip": _zulip}


def sync(store: Store, server: FakeRocketChat, mapping: SourceMapping = NO_MAPPING) -> ImportReport:
    async def run() -> ImportReport:
        async with GuardedClient(LOOPBACK) as client:
            api = RocketChatAPI(server.url, Credentials(ADMIN_ID, ADMIN_TOKEN), client)
            return await RocketChatSync(store, api, **({"mapping": mapping} if mapping else {})).run()

    return anyio.run(run)


@pytest.fixture
def rocketchat() -> Iterator[FakeRocketChat]:
    server = FakeRocketChat().serve()
    yield server
    server.stop()


# -- the demo workspace, and what must not change in it ----------------------------------------------


def load_demo(store: Store) -> None:
    """What ``ai-search serve --demo`` loads into an empty workspace."""
    for person in DEMO_USERS:
        store.create_user(person.username, name=person.name, password=person.password, roles=(person.role,))
    import_rows(store, generate_demo_messages())


def demo_state(store: Store) -> dict[str, Any]:
    """Every demo account (name, active, roles, whether its password still signs in) and every demo
    room (id, type, members, its messages with their authors and texts)."""
    people = {}
    for person in DEMO_USERS:
        user = store.get_user_by_username(person.username)
        assert user is not None
        people[person.username] = (user.id, user.name, user.active, user.roles,
                                   store.verify_password(person.username, person.password) is not None)  # fmt: skip
    messages: dict[str, list[tuple[str, str, str]]] = {}
    for batch in store.iter_messages():
        for m in batch:
            messages.setdefault(m.room_id, []).append((m.id, m.user_id, m.text))
    rooms = {}
    for demo_room in DEMO_ROOMS:
        room = store.get_room_by_name(demo_room.name)
        assert room is not None and room.name == demo_room.name
        rooms[demo_room.name] = (room.id, room.type, sorted(store.members_of(room.id)),
                                 sorted(messages.get(room.id, [])))  # fmt: skip
    return {"people": people, "rooms": rooms}


def everything(store: Store) -> tuple[Any, ...]:
    """Every account, room, membership and message, for "a second run changes nothing"."""
    messages = sorted((m.id, m.room_id, m.user_id, m.text, m.edited_at, tuple(m.reactions))
                      for batch in store.iter_messages() for m in batch)  # fmt: skip
    room_ids = sorted({m[1] for m in messages})
    rooms = sorted((r.id, r.name, r.type, r.topic, tuple(sorted(store.members_of(r.id))))
                   for r in store.get_rooms(room_ids).values())  # fmt: skip
    users = sorted((u.id, u.username, u.name, u.active, u.roles)
                   for u in store.get_users({m[2] for m in messages}).values())  # fmt: skip
    return messages, rooms, users


def check_nothing_taken_over(store: Store, before: dict[str, Any]) -> dict[str, list[str]]:
    """The promise, case by case: what went wrong, by check."""
    after = demo_state(store)
    failures: dict[str, list[str]] = {"accounts_changed": [], "rooms_changed": [], "export_messages_misplaced": []}
    for username, state in before["people"].items():
        if after["people"][username] != state:
            failures["accounts_changed"].append(f"{username}: {state} -> {after['people'][username]}")
    for name, state in before["rooms"].items():
        if after["rooms"][name] != state:
            failures["rooms_changed"].append(name)
    demo_ids = {state[0] for state in before["people"].values()}
    demo_rooms = {state[0] for state in before["rooms"].values()}
    landed = [m for batch in store.iter_messages() for m in batch if MARKER in m.text]
    if len(landed) != len(MESSAGES):
        failures["export_messages_misplaced"].append(f"{len(landed)} of {len(MESSAGES)} imported")
    for message in landed:
        room = store.get_room(message.room_id)
        author = store.get_user(message.user_id)
        assert room is not None and author is not None
        if message.room_id in demo_rooms or message.user_id in demo_ids:
            failures["export_messages_misplaced"].append(f"{message.text!r} in {room.name} by {author.username}")
    return failures


# -- C9 -------------------------------------------------------------------------------------------


@pytest.mark.requirement("C9")
@pytest.mark.parametrize("source", ["slack", "mattermost", "zulip", "rocketchat"])
def test_an_import_or_a_sync_takes_over_no_room_and_no_account(
    source: str, store: Store, tmp_path: Path, request: pytest.FixtureRequest, figure: Figure
) -> None:
    load_demo(store)
    before = demo_state(store)
    if source == "rocketchat":
        server: FakeRocketChat = request.getfixturevalue("rocketchat")
        _rocketchat(server)
        run: Callable[[], ImportReport] = lambda: sync(store, server)  # noqa: E731
    else:
        folder = tmp_path / source
        folder.mkdir()
        WRITERS[source](folder)
        run = lambda: import_path(store, folder, progress=False)  # noqa: E731
    report = run()
    failures = check_nothing_taken_over(store, before)
    # The source's people are accounts of their own (alice-2 ...), its conversations rooms of their own
    # (leadership-… with the source's members), and the report says which names were taken.
    accounts = {}
    for key, name, real, active in PEOPLE:
        accounts[key] = OWN_USERNAMES[key]
        own = store.get_user_by_username(OWN_USERNAMES[key])
        if own is None or (own.name, own.active) != (real, active):
            failures["people_not_their_own"] = [*failures.get("people_not_their_own", []), f"{name}: {own}"]
    for key, kind, name, members in ROOMS:
        texts = [m for batch in store.iter_messages() for m in batch if f"{MARKER} {key} " in m.text]
        room = store.get_room(texts[0].room_id) if texts else None
        wanted = sorted(accounts[m] for m in members)
        got = sorted(u.username for u in store.get_users(store.members_of(room.id)).values()) if room else []
        if room is None or room.type != kind or got != wanted or (name and not room.name.startswith(f"{name}-")):
            failures["rooms_not_their_own"] = [*failures.get("rooms_not_their_own", []), f"{key}: {got} != {wanted}"]
    suffixed = [note for note in report.notes if "a room of that name exists here" in note]
    state = everything(store)
    again = run()
    if everything(store) != state or again.imported or again.updated or again.deleted or again.unsubscribed:
        failures["second_run_changed_something"] = [again.summary()]
    checks = len(before["people"]) + len(before["rooms"]) + len(MESSAGES) + len(PEOPLE) + len(ROOMS) + 1
    figure(
        tried=checks,
        failed=sum(len(found) for found in failures.values()),
        source=source,
        demo_accounts=len(before["people"]),
        demo_rooms=len(before["rooms"]),
        export_messages=len(MESSAGES),
        accounts_changed=len(failures["accounts_changed"]),
        rooms_changed=len(failures["rooms_changed"]),
        export_messages_misplaced=len(failures["export_messages_misplaced"]),
        rooms_named_apart=len(suffixed),
    )
    assert failures == {"accounts_changed": [], "rooms_changed": [], "export_messages_misplaced": []}, failures
    assert len(suffixed) == 2, report.notes  # leadership and general; the DM is alice-2__bob-2, no clash


# -- C4 -------------------------------------------------------------------------------------------

IMPOSTOR, MAPPED, ADOPTED = "uEvil000000000001", "uErin000000000002", "uFrank00000000003"


async def _who(http: httpx.AsyncClient, route: str, remote_id: str, secret: str) -> str | frozenset[str]:
    """Who a Rocket.Chat person is here, signing in by ``route``: the username (password, REST token),
    or the rooms the MCP endpoint lists for them; "refused" when the sign-in is."""
    headers = {"X-User-Id": remote_id, "X-Auth-Token": f"{secret}-pat-123"}
    if route == "password":
        login = await http.post("/api/v1/login", json={"user": secret if secret != "evil" else "alice", "password": f"pw-{secret}-123"})
        if login.status_code != 200:
            return "refused"
        data = login.json()["data"]
        headers = {"X-User-Id": data["userId"], "X-Auth-Token": data["authToken"]}
    if route in ("password", "rest-token"):
        me = await http.get("/api/v1/me", headers=headers)
        return str(me.json()["username"]) if me.status_code == 200 else "refused"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_channels_list_joined"}}
    answer = await http.post("/api/v1/mcp", json=call, headers={**headers, **MCP_HEADERS})
    if answer.status_code == 401:
        return "refused"
    return frozenset(c["name"] for c in json.loads(answer.json()["result"]["content"][0]["text"])["channels"])


Identity = str | frozenset[str]  # a username, or the rooms MCP lists; "refused"


async def _joined(http: httpx.AsyncClient, store: Store, username: str) -> Identity:
    """The rooms ``username`` is in, as their own login session lists them (what MCP must list)."""
    user = store.get_user_by_username(username)
    if user is None:
        return f"{username} (no such account)"
    _token, session = store.create_token(user.id, "session", label=f"check-{len(store.list_tokens(user.id, 'session'))}")
    joined = await http.get("/api/v1/channels.list.joined", headers={"X-User-Id": user.id, "X-Auth-Token": session})
    return frozenset(c["name"] for c in joined.json()["channels"])


async def _sign_ins(
    store: Store, server: FakeRocketChat, cases: list[tuple[str, str, str, str | None]]
) -> list[tuple[str, Identity, Identity]]:
    """Each (Rocket.Chat id, its secrets' prefix, route, the account it must be: None = refused)
    through the real app with Rocket.Chat sign-in on: (case, who it was, who it had to be) of those
    that went wrong, and, last, the local admin's own identity by each route for comparison."""
    settings = reliability_settings(rocketchat_url=server.url, rocketchat_sign_in=True, outbound_allow_hosts=["127.0.0.1"])
    app = create_app(settings, store, limiter=RateLimiter("memory://"))
    wrong: list[tuple[str, Identity, Identity]] = []
    try:
        async with asgi(app) as http:
            for remote_id, secret, route, expected in cases:
                got = await _who(http, route, remote_id, secret)
                want: Identity = "refused" if expected is None else expected
                if expected is not None and route == "mcp-token":
                    want = await _joined(http, store, expected)
                if got != want:
                    wrong.append((f"{secret} by {route}", got, want))
            admin = await _joined(http, store, "alice")
    finally:
        await app.state.services.outbound.aclose()
    return [*wrong, ("the local admin", admin, admin)]


def _shown(wrong: list[tuple[str, Identity, Identity]]) -> list[str]:
    return [f"{case}: {sorted(got) if isinstance(got, frozenset) else got}" for case, got, _want in wrong]


@pytest.mark.requirement("C4")
@pytest.mark.anyio
async def test_a_rocket_chat_user_named_like_the_local_admin_signs_in_only_as_their_own_account(
    store: Store, rocketchat: FakeRocketChat, figure: Figure
) -> None:
    """The review's case: ``alice`` in Rocket.Chat is not alice here (usernames there are their owners' to change)."""
    load_demo(store)
    rocketchat.add_user(IMPOSTOR, "alice", "Mallory", password="pw-evil-123", token="evil-pat-123")
    rocketchat.add_room("rOps0000000000001", "c", "ops", [IMPOSTOR])
    await anyio.to_thread.run_sync(sync, store, rocketchat)
    cases: list[tuple[str, str, str, str | None]] = [
        (IMPOSTOR, "evil", route, "alice-2") for route in ("password", "rest-token", "mcp-token")
    ]
    *wrong, (_admin, admin_rooms, _same) = await _sign_ins(store, rocketchat, cases)
    admin = store.verify_password("alice", "demo-alice")  # the local admin still signs in, still herself
    figure(
        tried=len(cases) + 1,
        failed=len(wrong) + (admin is None),
        routes="password, REST token, MCP token",
        signed_in_as_the_local_admin=sum(got in ("alice", admin_rooms) for _case, got, _want in wrong),
        local_admin_password_works=admin is not None,
    )
    assert _shown(wrong) == []
    assert admin is not None and admin.active and admin.name == "Alice Okafor" and admin.roles == ("admin",)


@pytest.mark.requirement("C4")
@pytest.mark.anyio
async def test_only_a_link_the_sync_made_or_an_admin_mapped_signs_anyone_in(
    store: Store, tmp_path: Path, rocketchat: FakeRocketChat, figure: Figure
) -> None:
    """A link an earlier version made by username alone (migration 10 calls it adopted) signs nobody
    in until an admin maps it; an account the admin mapped signs in by every route."""
    load_demo(store)
    frank = store.get_user_by_username("frank")
    assert frank is not None
    rocketchat.add_user(MAPPED, "erin", "Erin Castillo", password="pw-erin-123", token="erin-pat-123")
    rocketchat.add_user(ADOPTED, "frank", "Frank Osei", password="pw-frank-123", token="frank-pat-123")
    rocketchat.add_room("rOps0000000000001", "c", "ops", [MAPPED, ADOPTED])
    store.link_external(origin_of(rocketchat.url), "user", ADOPTED, frank.id, how="adopted")
    people = tmp_path / "people.txt"
    people.write_text(f"# Rocket.Chat id = username here\n{MAPPED} = erin\n")
    mapping = read_mapping(users=people)
    check_mapping(store, mapping)
    await anyio.to_thread.run_sync(sync, store, rocketchat, mapping)
    routes = ("password", "rest-token", "mcp-token")
    cases: list[tuple[str, str, str, str | None]] = [
        *((ADOPTED, "frank", route, None) for route in routes),
        *((MAPPED, "erin", route, "erin") for route in routes),
    ]
    *wrong, _admin = await _sign_ins(store, rocketchat, cases)
    figure(
        tried=len(cases),
        failed=len(wrong),
        routes="password, REST token, MCP token",
        adopted_signed_in=sum(case.startswith("frank") for case, _got, _want in wrong),
        mapped_refused=sum(case.startswith("erin") for case, _got, _want in wrong),
    )
    assert _shown(wrong) == []
