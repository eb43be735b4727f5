"""The workspace store: users, passwords, permissions, tokens, rooms, bans, messages, listeners and
threads, each on SQLite and on PostgreSQL (the ``each_store`` fixture); and the SQLite file itself
(WAL, migrations, full disk, locks), on SQLite alone."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from ai_search_server.store import (
    AlreadyTaken,
    Attachment,
    ImportRow,
    InvalidValue,
    MessageEvent,
    Reaction,
    RecordNotFound,
    SQLiteStore,
    StorageFailure,
    open_store,
    passwords,
    rules,
)
from ai_search_server.store.base import Store
from ai_search_server.store.records import MessageChanges
from ai_search_server.store.rules import MAX_MESSAGE_TEXT_LENGTH
from ai_search_server.store.schema import (
    ALL_PERMISSIONS,
    MIGRATIONS,
    SCHEMA_VERSION,
    message_change_log_sql,
    migrate,
)
from ai_search_server.store.sqlite import BUSY_TIMEOUT_MS, TOKEN_LAST_USED_RESOLUTION_MS

from ._legacy import write_legacy_room

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
MEMBER_PERMISSIONS = frozenset(
    {"access-mcp", "create-c", "create-d", "create-p", "create-personal-access-tokens", "delete-own-message", "pin-message"}
)
BASE62_ID = re.compile(r"[0-9A-Za-z]{17}")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(each_store: Store) -> Store:
    """Each test of the store's behaviour runs on SQLite and on PostgreSQL."""
    return each_store


@pytest.fixture
def sqlite_store(data_dir: Path) -> Iterator[SQLiteStore]:
    """The SQLite store alone, for the tests that read its file (pragmas, raw rows, migrations)."""
    store = open_store(data_dir)
    assert isinstance(store, SQLiteStore)
    with store:
        yield store


@contextmanager
def raw(data_dir: Path) -> Iterator[sqlite3.Connection]:
    """A second, independent connection to the file: it sees committed data only."""
    conn = sqlite3.connect(data_dir / "workspace.db", isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


# -- users ----------------------------------------------------------------------------------------


def test_a_created_user_reads_back_by_id_and_username(store: Store) -> None:
    alice = store.create_user("alice", name="Alice Okafor", roles=("user", "bot"))
    assert alice.username == "alice" and alice.name == "Alice Okafor"
    assert alice.roles == ("user", "bot") and alice.active and not alice.has_password
    assert store.get_user(alice.id) == alice
    assert store.get_user_by_username("alice") == alice
    assert store.get_users([alice.id, "nobody"]) == {alice.id: alice}


def test_a_user_without_a_name_is_named_after_the_username(store: Store) -> None:
    assert store.create_user("bob").name == "bob"
    assert store.create_user("carol", name="   ").name == "carol"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("alice", "alice", id="same-spelling"),
        pytest.param("alice", "ALICE", id="upper-case"),
        pytest.param("Alice", "aLiCe", id="mixed-case"),
    ],
)
def test_usernames_are_unique_case_insensitively(store: Store, first: str, second: str) -> None:
    store.create_user(first)
    with pytest.raises(AlreadyTaken, match="already taken"):
        store.create_user(second)


@pytest.mark.parametrize(
    ("lookup", "found"),
    [
        pytest.param("alice", True, id="exact"),
        pytest.param("ALICE", True, id="other-case"),
        pytest.param("@alice", True, id="one-leading-at-ignored"),
        pytest.param("@Alice", True, id="at-and-other-case"),
        pytest.param("@@alice", False, id="only-one-at-ignored"),
        pytest.param("alic", False, id="prefix-is-not-a-match"),
        pytest.param("", False, id="empty"),
    ],
)
def test_lookup_by_username(store: Store, lookup: str, found: bool) -> None:
    alice = store.create_user("alice")
    assert store.get_user_by_username(lookup) == (alice if found else None)


@pytest.mark.parametrize(
    "username",
    [
        pytest.param("", id="empty"),
        pytest.param("a b", id="space"),
        pytest.param("a,b", id="comma-splits-filters"),
        pytest.param("@alice", id="leading-at"),
        pytest.param('al"ice', id="quote"),
        pytest.param("x" * (rules.MAX_USERNAME_LENGTH + 1), id="too-long"),
    ],
)
def test_malformed_usernames_are_refused(store: Store, username: str) -> None:
    with pytest.raises(InvalidValue):
        store.create_user(username)


@pytest.mark.parametrize(
    "roles",
    [
        pytest.param(("",), id="empty-role"),
        pytest.param(("ad min",), id="space-in-role"),
        pytest.param("admin", id="a-bare-string-is-not-a-list"),
    ],
)
def test_malformed_roles_are_refused(store: Store, roles: Sequence[str]) -> None:
    with pytest.raises(InvalidValue):
        store.create_user("alice", roles=roles)


def test_find_users_matches_literally_prefix_first_and_skips_excluded_and_inactive(
    store: Store,
) -> None:
    for username, name in [
        ("bob", "Bob"),
        ("anna", "Anna Bobek"),
        ("bobby", "B"),
        ("zed", "Z"),
        ("b_b", "x"),
    ]:
        store.create_user(username, name=name)
    store.set_active(store.create_user("bobo").id, False)
    assert [u.username for u in store.find_users("bob", limit=10)] == ["bob", "bobby", "anna"]
    assert [u.username for u in store.find_users("BOB", limit=2)] == ["bob", "bobby"]
    assert [u.username for u in store.find_users("bob", limit=10, exclude=["BOB", "@anna"])] == ["bobby"]
    assert [u.username for u in store.find_users("_", limit=10)] == ["b_b"]
    assert store.find_users("bob", limit=0) == []


# -- passwords ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("username", "password", "matches"),
    [
        pytest.param("alice", "correct horse", True, id="right-password"),
        pytest.param("ALICE", "correct horse", True, id="username-case-insensitive"),
        pytest.param("@alice", "correct horse", True, id="leading-at-ignored"),
        pytest.param("alice", "Correct horse", False, id="password-case-sensitive"),
        pytest.param("alice", "", False, id="empty-password"),
        pytest.param("alice", "x" * (passwords.MAX_PASSWORD_LENGTH + 1), False, id="over-long-password"),
        pytest.param("mallory", "correct horse", False, id="unknown-user"),
        pytest.param("nopass", "correct horse", False, id="user-without-password"),
    ],
)
def test_verify_password(store: Store, username: str, password: str, matches: bool) -> None:
    alice = store.create_user("alice", password="correct horse")
    store.create_user("nopass")
    assert store.verify_password(username, password) == (alice if matches else None)


@pytest.mark.parametrize(
    ("username", "burns"),
    [
        pytest.param("mallory", 1, id="unknown-user-hashes-a-dummy"),
        pytest.param("nopass", 1, id="user-without-password-hashes-a-dummy"),
        pytest.param("alice", 0, id="known-user-hashes-for-real"),
    ],
)
def test_verify_password_costs_one_hash_whether_or_not_the_user_exists(
    store: Store, monkeypatch: pytest.MonkeyPatch, username: str, burns: int
) -> None:
    store.create_user("alice", password="secret-1")
    store.create_user("nopass")
    calls: list[str] = []
    real_burn, real_verify = passwords.burn_password_check, passwords.verify_password_hash
    monkeypatch.setattr(passwords, "burn_password_check", lambda p: (calls.append("burn"), real_burn(p))[1])
    monkeypatch.setattr(
        passwords, "verify_password_hash", lambda p, s: (calls.append("verify"), real_verify(p, s))[1]
    )
    assert store.verify_password(username, "wrong") is None
    assert len(calls) == 1 and calls.count("burn") == burns


def test_passwords_are_stored_as_salted_scrypt_with_their_parameters(
    sqlite_store: Store, data_dir: Path
) -> None:
    store = sqlite_store
    first = store.create_user("alice", password="same password")
    second = store.create_user("bob", password="same password")
    with raw(data_dir) as conn:
        stored = dict(conn.execute("SELECT id, password_hash FROM users").fetchall())
    assert stored[first.id].startswith(f"scrypt${2**14}$8$1$")
    assert stored[first.id] != stored[second.id]  # salted
    assert "same password" not in stored[first.id]


def test_a_weaker_hash_still_verifies_and_is_upgraded_at_login(sqlite_store: Store, data_dir: Path) -> None:
    store = sqlite_store
    alice = store.create_user("alice")
    salt = b"0123456789abcdef"
    key = hashlib.scrypt(b"old password", salt=salt, n=2**10, r=8, p=1, dklen=32)
    weak = f"scrypt$1024$8$1${passwords._b64encode(salt)}${passwords._b64encode(key)}"
    with raw(data_dir) as conn:
        conn.execute("UPDATE users SET password_hash = ? WHERE id = ?", (weak, alice.id))
    assert store.verify_password("alice", "old password") is not None
    with raw(data_dir) as conn:
        (upgraded,) = conn.execute("SELECT password_hash FROM users WHERE id = ?", (alice.id,)).fetchone()
    assert upgraded.startswith(f"scrypt${2**14}$") and not passwords.needs_rehash(upgraded)
    assert store.verify_password("alice", "old password") is not None


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param("", id="empty"),
        pytest.param("bcrypt$x", id="other-scheme"),
        pytest.param("scrypt$16384$8$1$c2FsdA", id="missing-key"),
        pytest.param("scrypt$1000$8$1$c2FsdA$a2V5", id="n-not-a-power-of-two"),
        pytest.param(f"scrypt${2**30}$8$1$c2FsdA$a2V5", id="n-beyond-the-memory-bound"),
        pytest.param("scrypt$x$8$1$c2FsdA$a2V5", id="n-not-a-number"),
    ],
)
def test_malformed_stored_hashes_never_match(stored: str) -> None:
    assert passwords.verify_password_hash("anything", stored) is False
    assert passwords.needs_rehash(stored) is True


# -- roles and permissions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        pytest.param(("admin",), ALL_PERMISSIONS, id="admin-has-every-permission"),
        pytest.param(("user",), MEMBER_PERMISSIONS, id="user-defaults"),
        pytest.param(("bot",), MEMBER_PERMISSIONS, id="bot-like-user"),
        pytest.param(("user", "admin"), ALL_PERMISSIONS, id="admin-among-others"),
        pytest.param((), frozenset(), id="no-role-no-permission"),
        pytest.param(("auditor",), frozenset(), id="role-without-rows-grants-nothing"),
    ],
)
def test_permissions_come_from_roles(
    store: Store, roles: tuple[str, ...], expected: frozenset[str]
) -> None:
    assert store.permissions_of(store.create_user("alice", roles=roles)) == expected


def test_the_user_role_cannot_administer(store: Store) -> None:
    permissions = store.permissions_of(store.create_user("alice"))
    assert "access-mcp" in permissions
    assert (
        not {"view-privileged-setting", "edit-privileged-setting", "view-room-administration"} & permissions
    )


def test_revoking_and_granting_changes_a_role_but_never_admin(store: Store) -> None:
    alice = store.create_user("alice")
    root = store.create_user("root", roles=("admin",))
    store.revoke_permission("user", "access-mcp")
    store.revoke_permission("admin", "access-mcp")
    assert "access-mcp" not in store.permissions_of(alice)
    assert "access-mcp" in store.permissions_of(root)
    store.grant_permission("user", "view-room-administration")
    assert "view-room-administration" in store.permissions_of(alice)
    with pytest.raises(InvalidValue, match="unknown permission"):
        store.grant_permission("user", "fly")


def test_an_inactive_user_cannot_log_in_use_tokens_or_hold_permissions(store: Store) -> None:
    alice = store.create_user("alice", password="pw-alice", roles=("admin",))
    _token, plain = store.create_token(alice.id, "pat", label="cli")
    store.set_active(alice.id, False)
    inactive = store.get_user(alice.id)
    assert inactive is not None and not inactive.active
    assert store.verify_password("alice", "pw-alice") is None
    assert store.resolve_token(alice.id, plain) is None
    assert store.permissions_of(inactive) == frozenset()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s: s.set_password("nobody", "pw"), id="set_password"),
        pytest.param(lambda s: s.set_roles("nobody", ["user"]), id="set_roles"),
        pytest.param(lambda s: s.set_active("nobody", False), id="set_active"),
        pytest.param(lambda s: s.create_token("nobody", "pat", label="x"), id="create_token"),
    ],
)
def test_changing_an_unknown_user_raises_not_found(store: Store, change: object) -> None:
    with pytest.raises(RecordNotFound):
        change(store)  # type: ignore[operator]


def test_set_roles_and_set_password_take_effect(store: Store) -> None:
    alice = store.create_user("alice")
    store.set_roles(alice.id, ["admin"])
    store.set_password(alice.id, "new-pw")
    assert store.verify_password("alice", "new-pw") == store.get_user(alice.id)
    assert store.get_user(alice.id).roles == ("admin",)  # type: ignore[union-attr]


# -- tokens ---------------------------------------------------------------------------------------


def test_a_token_resolves_only_for_its_user_and_only_until_deleted(store: Store) -> None:
    alice, bob = store.create_user("alice"), store.create_user("bob")
    token, plain = store.create_token(alice.id, "pat", label="laptop")
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", plain)
    assert BASE62_ID.fullmatch(token.id) and token.kind == "pat" and token.label == "laptop"
    resolved = store.resolve_token(alice.id, plain)
    assert resolved is not None and resolved.id == token.id
    assert store.resolve_token(bob.id, plain) is None
    assert store.resolve_token(alice.id, plain[:-1] + ("A" if plain[-1] != "A" else "B")) is None
    assert store.resolve_token(alice.id, "") is None
    assert store.delete_token(bob.id, token.id) is False  # not bob's
    assert store.delete_token(alice.id, token.id) is True
    assert store.resolve_token(alice.id, plain) is None


def test_only_a_sha256_of_the_token_is_stored(sqlite_store: Store, data_dir: Path) -> None:
    store = sqlite_store
    alice = store.create_user("alice")
    _token, plain = store.create_token(alice.id, "session")
    with raw(data_dir) as conn:
        (stored,) = conn.execute("SELECT hash FROM tokens").fetchone()
    assert stored == hashlib.sha256(plain.encode()).hexdigest()
    on_disk = b"".join(path.read_bytes() for path in data_dir.iterdir())
    assert plain.encode() not in on_disk


def test_pat_labels_are_unique_per_user_and_required(store: Store) -> None:
    alice, bob = store.create_user("alice"), store.create_user("bob")
    store.create_token(alice.id, "pat", label="ci")
    with pytest.raises(AlreadyTaken, match="ci"):
        store.create_token(alice.id, "pat", label="ci")
    store.create_token(bob.id, "pat", label="ci")  # another user may reuse it
    store.create_token(alice.id, "session")
    store.create_token(alice.id, "session")  # sessions carry no label
    with pytest.raises(InvalidValue, match="label"):
        store.create_token(alice.id, "pat")
    assert [t.label for t in store.list_tokens(alice.id, "pat")] == ["ci"]
    assert len(store.list_tokens(alice.id, "session")) == 2
    assert store.delete_token_by_label(alice.id, "ci") is True
    assert store.delete_token_by_label(alice.id, "ci") is False
    assert store.list_tokens(alice.id, "pat") == []
    assert len(store.list_tokens(bob.id, "pat")) == 1


@pytest.mark.parametrize(
    ("second_use_after_ms", "recorded_again"),
    [
        pytest.param(1, False, id="soon-after-not-rewritten"),
        pytest.param(TOKEN_LAST_USED_RESOLUTION_MS - 1, False, id="just-under-the-resolution"),
        pytest.param(TOKEN_LAST_USED_RESOLUTION_MS, True, id="at-the-resolution-rewritten"),
    ],
)
def test_last_used_at_is_written_at_most_once_per_resolution(
    store: Store, monkeypatch: pytest.MonkeyPatch, second_use_after_ms: int, recorded_again: bool
) -> None:
    alice = store.create_user("alice")
    token, plain = store.create_token(alice.id, "session")
    assert token.last_used_at is None
    clock = [rules.to_ms(T0)]
    monkeypatch.setattr(sys.modules[type(store).__module__], "now_ms", lambda: clock[0])
    first = store.resolve_token(alice.id, plain)
    assert first is not None and first.last_used_at == T0
    clock[0] += second_use_after_ms
    second = store.resolve_token(alice.id, plain)
    expected = T0 + timedelta(milliseconds=second_use_after_ms) if recorded_again else T0
    assert second is not None and second.last_used_at == expected
    assert store.list_tokens(alice.id, "session")[0].last_used_at == expected


# -- rooms ----------------------------------------------------------------------------------------


def test_a_created_room_subscribes_its_creator_and_members(store: Store) -> None:
    alice, bob, carol = (store.create_user(n) for n in ("alice", "bob", "carol"))
    room = store.create_room(
        "p", "secret", fname="Secret Plans", creator_id=alice.id, members=[bob.id, alice.id]
    )
    assert (room.type, room.name, room.fname, room.creator_id) == ("p", "secret", "Secret Plans", alice.id)
    assert BASE62_ID.fullmatch(room.id)
    assert store.get_room(room.id) == room
    assert sorted(store.members_of(room.id)) == sorted([alice.id, bob.id])
    assert store.readable_room_ids(carol.id) == frozenset()
    assert store.create_room("c", "general").fname == "general"


@pytest.mark.parametrize(
    ("first", "second", "conflict"),
    [
        pytest.param(("c", "ops"), ("c", "ops"), True, id="same-channel-twice"),
        pytest.param(("c", "ops"), ("c", "OPS"), True, id="names-case-insensitive"),
        pytest.param(("c", "ops"), ("p", "Ops"), True, id="channels-and-groups-share-names"),
        pytest.param(("d", "alice__bob"), ("c", "alice__bob"), True, id="a-channel-cannot-take-a-dm-name"),
        pytest.param(("d", "alice__bob"), ("p", "ALICE__BOB"), True, id="nor-a-group-in-another-case"),
        pytest.param(("c", "alice__bob"), ("d", "alice__bob"), True, id="a-dm-cannot-take-a-channel-name"),
        pytest.param(("d", "alice__bob"), ("d", "alice__bob"), False, id="direct-names-may-repeat"),
        pytest.param(("c", "incidents"), ("c", "ıncidents"), "looks like", id="dotless-i"),
        pytest.param(("c", "incidents"), ("c", "ІNCIDENTS"), "looks like", id="cyrillic-capital-i"),
        pytest.param(("d", "alice__grace"), ("c", "aIice__grace"), "looks like", id="capital-i-for-l-in-a-dm-name"),
        pytest.param(("c", "paypal"), ("p", "pаypal"), "looks like", id="cyrillic-a"),
        pytest.param(("c", "ops"), ("c", "ｏｐｓ"), True, id="fullwidth-is-the-same-name-after-nfkc"),
        pytest.param(("c", "ops"), ("c", "0ps"), False, id="digits-stay-apart"),
        pytest.param(("c", "café"), ("c", "cafe"), False, id="accents-stay-apart"),
        pytest.param(("d", "ana__bo"), ("d", "аna__bo"), False, id="direct-rooms-among-themselves"),
    ],
)
def test_room_names_are_unique_and_unconfusable_across_all_rooms(
    store: Store, first: tuple[str, str], second: tuple[str, str], conflict: bool | str
) -> None:
    store.create_room(first[0], first[1])  # type: ignore[arg-type]
    if conflict:
        match = conflict if isinstance(conflict, str) else "already exists"
        with pytest.raises(AlreadyTaken, match=match) as refused:
            store.create_room(second[0], second[1])  # type: ignore[arg-type]
        if match == "looks like":
            assert first[1] not in str(refused.value), "the look-alike, maybe a private room, is not named"
    else:
        assert store.create_room(second[0], second[1]).name == second[1]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("incidents\u200b", id="zero-width-space"),
        pytest.param("\u202estnedicni", id="right-to-left-override"),
        pytest.param("in\u2066cidents", id="left-to-right-isolate"),
        pytest.param("ops\u200d", id="zero-width-joiner"),
        pytest.param("\ufeffops", id="byte-order-mark"),
        pytest.param("o\u00adps", id="soft-hyphen"),
        pytest.param("ops\u3164", id="hangul-filler"),
        pytest.param("ops\ufe0f", id="variation-selector"),
        pytest.param("ops\u2028x", id="line-separator"),
        pytest.param("ops\u00a0team", id="no-break-space"),
    ],
)
def test_room_names_with_invisible_or_reordering_characters_are_refused(store: Store, name: str) -> None:
    with pytest.raises(InvalidValue, match="invisible or text-reordering"):
        store.create_room("c", name)


def test_room_names_are_stored_in_nfkc_form(store: Store) -> None:
    assert store.create_room("c", "ｄｅｐｌｏｙ ﬁxes").name == "deploy fixes"


def test_a_name_resolves_only_among_the_callers_rooms_and_a_dm_first(store: Store) -> None:
    alice, bob, grace = (store.create_user(n) for n in ("alice", "bob", "grace"))
    dm = store.create_room("d", "alice__grace", members=[alice.id, grace.id])
    # A channel of the same name from before the rule (written as an older ai-search would have).
    write_legacy_room(store, "legacy", "c", "alice__grace", [bob.id, alice.id])
    assert store.readable_room_by_name(alice.id, "#alice__grace") == dm
    assert store.readable_room_by_name(grace.id, "alice__grace") == dm
    assert store.readable_room_by_name(bob.id, "alice__grace").id == "legacy"  # type: ignore[union-attr]
    store.set_banned(grace.id, dm.id, True)
    assert store.readable_room_by_name(grace.id, "alice__grace") is None


@pytest.mark.parametrize(
    ("room_type", "name"),
    [
        pytest.param("x", "ops", id="unknown-type"),
        pytest.param("c", "", id="empty-name"),
        pytest.param("c", "  ", id="blank-name"),
        pytest.param("c", "#ops", id="leading-hash"),
        pytest.param("c", " ops", id="surrounding-space"),
        pytest.param("c", "a\nb", id="control-character"),
        pytest.param("c", 'the "ops" room', id="quote-the-search-line-cannot-name"),
        pytest.param("c", "x" * (rules.MAX_ROOM_NAME_LENGTH + 1), id="too-long"),
    ],
)
def test_malformed_rooms_are_refused(store: Store, room_type: str, name: str) -> None:
    with pytest.raises(InvalidValue):
        store.create_room(room_type, name)  # type: ignore[arg-type]


def test_a_room_with_unknown_members_is_not_created(store: Store) -> None:
    with pytest.raises(RecordNotFound, match="nobody"):
        store.create_room("c", "ops", members=["nobody"])
    assert store.get_room_by_name("ops") is None


@pytest.mark.parametrize(
    ("lookup", "expected"),
    [
        pytest.param("ops", "ops", id="by-name"),
        pytest.param("#OPS", "ops", id="hash-and-case-ignored"),
        pytest.param("Operations Team", "ops", id="by-fname"),
        pytest.param("alice__bob", "direct", id="a-direct-room-by-name"),
        pytest.param("##ops", None, id="only-one-hash-ignored"),
        pytest.param("op", None, id="no-prefix-match"),
    ],
)
def test_get_room_by_name(store: Store, lookup: str, expected: str | None) -> None:
    rooms = {
        "direct": store.create_room("d", "alice__bob"),
        "ops": store.create_room("c", "ops", fname="Operations Team"),
    }
    assert store.get_room_by_name(lookup) == (None if expected is None else rooms[expected])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("%", ["100% done"], id="percent-is-literal"),
        pytest.param("_", ["a_b"], id="underscore-is-literal"),
        pytest.param("a_b", ["a_b"], id="underscore-does-not-match-any-character"),
        pytest.param("\\", ["back\\slash"], id="backslash-is-literal"),
        pytest.param(
            "A", ["a_b", "axb", "100% done", "back\\slash", "Launch"], id="case-insensitive-prefix-first"
        ),
        pytest.param("#axb", ["axb"], id="leading-hash-ignored"),
        pytest.param("team", ["100% done"], id="matches-fname"),
        pytest.param("", ["100% done", "a_b", "axb", "back\\slash", "Launch"], id="empty-lists-all"),
    ],
)
def test_find_rooms_matches_text_literally(store: Store, text: str, expected: list[str]) -> None:
    store.create_room("c", "100% done", fname="Team 100%")
    for name in ("a_b", "axb", "back\\slash", "Launch"):
        store.create_room("c", name)
    assert [room.name for room in store.find_rooms(text, limit=10)] == expected


def test_find_rooms_respects_room_ids_types_and_limit(store: Store) -> None:
    ops = store.create_room("c", "ops")
    ops_private = store.create_room("p", "ops-private")
    store.create_room("d", "ops__direct")
    assert [r.name for r in store.find_rooms("ops", limit=10)] == ["ops", "ops-private", "ops__direct"]
    assert [r.name for r in store.find_rooms("ops", types=("c", "p"), limit=10)] == ["ops", "ops-private"]
    assert [r.name for r in store.find_rooms("ops", room_ids={ops_private.id}, limit=10)] == ["ops-private"]
    assert store.find_rooms("ops", room_ids=[], limit=10) == []  # no rooms, never all rooms
    assert store.find_rooms("ops", limit=1) == [ops]
    assert store.get_rooms([ops.id, "nope"]) == {ops.id: ops}


# -- subscriptions and bans -----------------------------------------------------------------------


def test_banned_rooms_are_not_readable(store: Store) -> None:
    alice = store.create_user("alice")
    general, secret = store.create_room("c", "general"), store.create_room("p", "secret")
    store.subscribe(alice.id, general.id)
    store.subscribe(alice.id, secret.id)
    store.set_banned(alice.id, secret.id, True)
    assert store.readable_room_ids(alice.id) == {general.id}
    assert [s.room_id for s in store.subscriptions_of(alice.id)] == [general.id]
    assert {s.room_id for s in store.subscriptions_of(alice.id, include_banned=True)} == {
        general.id,
        secret.id,
    }
    assert store.members_of(secret.id) == []
    assert store.get_subscription(alice.id, secret.id).banned  # type: ignore[union-attr]
    store.set_banned(alice.id, secret.id, False)
    assert store.readable_room_ids(alice.id) == {general.id, secret.id}


def test_a_ban_survives_leaving_and_rejoining(store: Store) -> None:
    alice, room = store.create_user("alice"), store.create_room("c", "ops")
    store.set_banned(alice.id, room.id, True)  # banned before ever joining
    store.unsubscribe(alice.id, room.id)
    assert store.subscribe(alice.id, room.id).banned
    assert store.readable_room_ids(alice.id) == frozenset()


def test_subscribe_is_idempotent_and_unsubscribe_removes(store: Store) -> None:
    alice, room = store.create_user("alice"), store.create_room("c", "ops")
    first = store.subscribe(alice.id, room.id)
    assert store.subscribe(alice.id, room.id) == first
    store.unsubscribe(alice.id, room.id)
    store.unsubscribe(alice.id, room.id)
    assert store.get_subscription(alice.id, room.id) is None
    with pytest.raises(RecordNotFound):
        store.subscribe(alice.id, "no-room")
    with pytest.raises(RecordNotFound):
        store.set_banned("nobody", room.id, True)


# -- messages -------------------------------------------------------------------------------------


@pytest.fixture
def room_and_author(store: Store) -> tuple[str, str]:
    alice = store.create_user("alice", name="Alice")
    return store.create_room("c", "ops", creator_id=alice.id).id, alice.id


@pytest.fixture
def sqlite_room_and_author(sqlite_store: SQLiteStore) -> tuple[str, str]:
    alice = sqlite_store.create_user("alice", name="Alice")
    return sqlite_store.create_room("c", "ops", creator_id=alice.id).id, alice.id


def test_post_get_edit_delete(store: Store, room_and_author: tuple[str, str]) -> None:
    room_id, user_id = room_and_author
    ts = datetime(2026, 11, 1, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    posted = store.post_message(room_id, user_id, "deploy failed", ts=ts)
    assert BASE62_ID.fullmatch(posted.id)
    assert posted.ts == datetime(2026, 11, 1, 8, 0, 0, 123000, tzinfo=UTC)  # UTC, kept to the ms
    assert (posted.username, posted.user_name, posted.edited_at) == ("alice", "Alice", None)
    assert store.get_message(posted.id) == posted
    edited = store.edit_message(posted.id, "deploy fixed", edited_at=T0)
    assert (edited.text, edited.edited_at, edited.ts) == ("deploy fixed", T0, posted.ts)
    assert store.get_messages([posted.id, "nope"]) == {posted.id: edited}
    store.delete_message(posted.id)
    assert store.get_message(posted.id) is None
    with pytest.raises(RecordNotFound):
        store.delete_message(posted.id)
    with pytest.raises(RecordNotFound):
        store.edit_message(posted.id, "again")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"text": ""}, InvalidValue, id="empty-text"),
        pytest.param({"text": " \n "}, InvalidValue, id="blank-text"),
        pytest.param({"text": "x" * (MAX_MESSAGE_TEXT_LENGTH + 1)}, InvalidValue, id="text-too-long"),
        pytest.param({"text": "a\x00b"}, InvalidValue, id="nul-in-text"),
        pytest.param({"text": "\ud800"}, InvalidValue, id="lone-surrogate"),
        pytest.param({"ts": datetime(2026, 11, 1)}, InvalidValue, id="naive-time"),
        pytest.param({"message_id": "has space"}, InvalidValue, id="malformed-id"),
        pytest.param({"message_id": "taken"}, AlreadyTaken, id="id-taken"),
        pytest.param({"room_id": "no-room"}, RecordNotFound, id="unknown-room"),
        pytest.param({"user_id": "no-user"}, RecordNotFound, id="unknown-user"),
    ],
)
def test_refused_posts(
    store: Store, room_and_author: tuple[str, str], kwargs: dict[str, object], error: type[Exception]
) -> None:
    room_id, user_id = room_and_author
    store.post_message(room_id, user_id, "first", message_id="taken")
    call: dict[str, object] = {"room_id": room_id, "user_id": user_id, "text": "hello", **kwargs}
    with pytest.raises(error):
        store.post_message(**call)  # type: ignore[arg-type]
    assert store.count_messages() == 1


def test_a_text_of_exactly_the_limit_is_accepted(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    text = "x" * MAX_MESSAGE_TEXT_LENGTH
    assert store.post_message(*room_and_author, text).text == text


def test_room_messages_are_newest_first_before_a_time(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    room_id, user_id = room_and_author
    posted = [store.post_message(room_id, user_id, f"m{n}", ts=T0 + timedelta(minutes=n)) for n in range(5)]
    assert [m.text for m in store.room_messages(room_id, limit=3)] == ["m4", "m3", "m2"]
    assert [m.text for m in store.room_messages(room_id, before=posted[2].ts, limit=10)] == ["m1", "m0"]
    assert store.room_messages(room_id, limit=0) == []


def test_iter_messages_yields_everything_oldest_first_in_batches(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    room_id, user_id = room_and_author
    for n in (3, 1, 4, 0, 2):  # posted out of order, same-ts ties broken by id
        store.post_message(room_id, user_id, f"m{n}", ts=T0 + timedelta(minutes=n // 2))
    batches = list(store.iter_messages(batch_size=2))
    assert [len(b) for b in batches] == [2, 2, 1]
    flat = [m for b in batches for m in b]
    assert [(m.ts, m.id) for m in flat] == sorted((m.ts, m.id) for m in flat)
    assert store.count_messages() == 5


# -- listeners ------------------------------------------------------------------------------------


def test_listeners_see_committed_writes_in_order(
    sqlite_store: Store, data_dir: Path, sqlite_room_and_author: tuple[str, str]
) -> None:
    store = sqlite_store
    room_id, user_id = sqlite_room_and_author
    seen: list[tuple[str, str, bool]] = []

    def listener(events: Sequence[MessageEvent]) -> None:
        with raw(data_dir) as conn:  # another connection: sees only what is committed
            for event in events:
                visible = conn.execute("SELECT 1 FROM messages WHERE id = ?", (event.message.id,)).fetchone()
                seen.append((event.kind, event.message.text, visible is not None))

    store.add_message_listener(listener)
    message = store.post_message(room_id, user_id, "one")
    store.edit_message(message.id, "two")
    with pytest.raises(AlreadyTaken):
        store.post_message(room_id, user_id, "dup", message_id=message.id)  # failed writes tell no one
    store.delete_message(message.id)
    assert seen == [("posted", "one", True), ("edited", "two", True), ("deleted", "two", False)]


def test_a_failing_listener_neither_undoes_the_write_nor_silences_the_others(
    store: Store, room_and_author: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    received: list[int] = []

    def broken(events: Sequence[MessageEvent]) -> None:
        raise RuntimeError("index down")

    store.add_message_listener(broken)
    store.add_message_listener(lambda events: received.append(len(events)))
    message = store.post_message(*room_and_author, "still stored")
    assert store.get_message(message.id) == message
    assert received == [1]
    assert "index down" in caplog.text


def test_concurrent_writers_from_threads_lose_nothing(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    room_id, user_id = room_and_author
    events: list[str] = []
    store.add_message_listener(lambda batch: events.extend(e.message.text for e in batch))
    threads_count, per_thread = 4, 25

    def write(worker: int) -> None:
        for n in range(per_thread):
            store.post_message(room_id, user_id, f"w{worker}-{n}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count_messages() == threads_count * per_thread
    for worker in range(threads_count):  # each writer's events arrive in its own order
        mine = [text for text in events if text.startswith(f"w{worker}-")]
        assert mine == [f"w{worker}-{n}" for n in range(per_thread)]


def test_a_listener_may_write_to_the_store_while_other_threads_write(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    room_id, user_id = room_and_author
    heard: list[str] = []

    def answer_pings(events: Sequence[MessageEvent]) -> None:
        for event in events:
            heard.append(event.message.text)
            if event.message.text.startswith("ping"):
                store.post_message(room_id, user_id, event.message.text.replace("ping", "pong"))

    store.add_message_listener(answer_pings)

    def ping(worker: int) -> None:
        for n in range(20):
            store.post_message(room_id, user_id, f"ping-{worker}-{n}")

    # Daemon threads: were a deadlock back, the run would fail instead of hanging at exit.
    threads = [threading.Thread(target=ping, args=(w,), daemon=True) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)  # a bound, not a timing assertion: a deadlock would hang forever
    assert not any(thread.is_alive() for thread in threads)
    assert store.count_messages() == 3 * 20 * 2
    for text in [t for t in heard if t.startswith("ping")]:
        assert heard.index(text.replace("ping", "pong")) > heard.index(text)


# -- the message change log -----------------------------------------------------------------------


def test_every_write_of_a_message_is_logged_in_commit_order(
    store: Store, room_and_author: tuple[str, str]
) -> None:
    room, author = room_and_author
    assert store.latest_message_change() == 0
    first = store.post_message(room, author, "one")
    second = store.post_message(room, author, "two")
    store.edit_message(first.id, "one, edited")
    store.delete_message(second.id)
    imported = store.import_messages(
        [ImportRow("ops", "c", "alice", datetime(2026, 11, 5, tzinfo=UTC), "three", "imp-1")]
    )
    assert imported.imported == 1
    changes = store.message_changes_since(0, limit=100)
    # Each message once, at its last change: first (edited after second was posted), second, imp-1.
    assert changes.message_ids == (first.id, second.id, "imp-1")
    assert changes.last == store.latest_message_change() == 5
    assert changes.complete
    assert store.message_changes_since(changes.last, limit=100) == MessageChanges((), 5, True)


def test_change_log_pages_by_limit(store: Store, room_and_author: tuple[str, str]) -> None:
    room, author = room_and_author
    posted = [store.post_message(room, author, f"message {n}").id for n in range(5)]
    page = store.message_changes_since(0, limit=2)
    assert page.message_ids == tuple(posted[:2]) and page.last == 2
    rest = store.message_changes_since(page.last, limit=10)
    assert rest.message_ids == tuple(posted[2:]) and rest.last == 5


def test_a_deleted_room_logs_its_messages(sqlite_store: Store, sqlite_room_and_author: tuple[str, str], data_dir: Path) -> None:
    store = sqlite_store
    room, author = sqlite_room_and_author
    posted = store.post_message(room, author, "gone with the room")
    before = store.latest_message_change()
    with raw(data_dir) as conn:  # a cascade (no store method deletes rooms yet)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM rooms WHERE id = ?", (room,))
    assert store.message_changes_since(before, limit=10).message_ids == (posted.id,)


def test_a_reader_behind_pruned_changes_is_told_so(
    sqlite_store: Store, sqlite_room_and_author: tuple[str, str], data_dir: Path
) -> None:
    store = sqlite_store
    room, author = sqlite_room_and_author
    for n in range(4):
        store.post_message(room, author, f"message {n}")
    with raw(data_dir) as conn:
        conn.execute("DELETE FROM message_changes WHERE change <= 2")
    assert not store.message_changes_since(0, limit=10).complete
    assert not store.message_changes_since(1, limit=10).complete
    assert store.message_changes_since(2, limit=10).complete  # change 3 is still there


def test_the_change_log_prunes_itself_keeping_the_newest() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (id TEXT PRIMARY KEY)")
    for statement in message_change_log_sql(kept=10, every=5):
        conn.execute(statement)
    for n in range(23):
        conn.execute("INSERT INTO messages (id) VALUES (?)", (f"m{n}",))
    kept = [row[0] for row in conn.execute("SELECT change FROM message_changes ORDER BY change")]
    # Pruned at change 20 down to changes after 10; numbers are never reused.
    assert kept == list(range(11, 24))


# -- the file -------------------------------------------------------------------------------------


def test_the_file_is_in_wal_mode_with_the_pragmas_set(sqlite_store: Store, data_dir: Path) -> None:
    store = sqlite_store
    with raw(data_dir) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn = store._connection()
    assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert conn.execute("PRAGMA busy_timeout").fetchone() == (BUSY_TIMEOUT_MS,)


def test_an_empty_version_0_file_is_migrated_to_the_latest_schema(data_dir: Path) -> None:
    data_dir.mkdir()
    sqlite3.connect(data_dir / "workspace.db").close()
    with open_store(data_dir) as store:
        assert store.permissions_of(store.create_user("alice")) == MEMBER_PERMISSIONS
    with raw(data_dir) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_version_1_file_keeps_its_data_when_migrated_forward(data_dir: Path) -> None:
    data_dir.mkdir()
    with raw(data_dir) as conn:
        assert migrate(conn, migrations=MIGRATIONS[:1]) == 1
        conn.execute(
            "INSERT INTO users (id, username, name, roles, created_at) VALUES (?, ?, ?, ?, ?)",
            ("u1", "old", "Old", '["user"]', 0),
        )
        assert conn.execute("SELECT count(*) FROM role_permissions").fetchone() == (0,)
    with open_store(data_dir) as store:
        old = store.get_user_by_username("old")
        assert old is not None and old.created_at == datetime(1970, 1, 1, tzinfo=UTC)
        assert store.permissions_of(old) == MEMBER_PERMISSIONS
    with raw(data_dir) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_file_from_a_newer_version_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    with raw(data_dir) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageFailure, match="newer"):
        open_store(data_dir)


def test_a_full_database_fails_clearly_and_recovers(
    sqlite_store: Store, sqlite_room_and_author: tuple[str, str]
) -> None:
    store = sqlite_store
    conn = store._connection()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")

    def fill() -> None:
        for n in range(200):
            store.post_message(*sqlite_room_and_author, f"{n} " + "x" * 4000)

    with pytest.raises(StorageFailure, match="full"):
        fill()
    count = store.count_messages()
    conn.execute("PRAGMA max_page_count = 1073741823")
    store.post_message(*sqlite_room_and_author, "space again")
    assert store.count_messages() == count + 1
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_lock_held_past_the_busy_timeout_fails_clearly(data_dir: Path) -> None:
    open_store(data_dir).close()
    with SQLiteStore(data_dir / "workspace.db", busy_timeout_ms=50) as store, raw(data_dir) as other:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StorageFailure, match="locked"):
            store.create_user("alice")
        other.execute("ROLLBACK")
        assert store.create_user("alice").username == "alice"


def test_a_closed_store_refuses_work(data_dir: Path) -> None:
    store = open_store(data_dir)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StorageFailure, match="closed"):
        store.get_user("x")


# -- threads, files, reactions, mentions, pins ----------------------------------------------------


@pytest.fixture
def thread_room(store: Store) -> tuple[str, str, str]:
    alice = store.create_user("alice", name="Alice")
    bob = store.create_user("bob", name="Bob")
    room = store.create_room("c", "ops", creator_id=alice.id, members=[bob.id])
    return room.id, alice.id, bob.id


def test_replies_join_the_thread_of_their_first_message(
    store: Store, thread_room: tuple[str, str, str]
) -> None:
    room, alice, bob = thread_room
    parent = store.post_message(room, alice, "deploy of 2.14 failed", ts=T0)
    first = store.post_message(room, bob, "looking", ts=T0 + timedelta(minutes=1), tmid=parent.id)
    # A reply to a reply joins the first message's thread, as in Rocket.Chat.
    second = store.post_message(room, alice, "thanks", ts=T0 + timedelta(minutes=2), tmid=first.id)
    assert (first.tmid, second.tmid, parent.tmid) == (parent.id, parent.id, None)
    replies, total = store.thread_messages(parent.id, limit=10)
    assert [m.id for m in replies] == [first.id, second.id] and total == 2
    page, _ = store.thread_messages(parent.id, offset=1, limit=10)
    assert [m.id for m in page] == [second.id]
    summary = store.thread_summaries([parent.id, first.id])
    assert list(summary) == [parent.id]
    assert summary[parent.id].count == 2
    assert summary[parent.id].last_reply_at == T0 + timedelta(minutes=2)
    assert summary[parent.id].participants == (bob, alice)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("missing", id="no-such-message"),
        pytest.param("other-room", id="a-message-of-another-room"),
    ],
)
def test_a_reply_needs_a_first_message_in_its_own_room(
    store: Store, thread_room: tuple[str, str, str], where: str
) -> None:
    room, alice, _ = thread_room
    other = store.create_room("p", "secret", creator_id=alice)
    elsewhere = store.post_message(other.id, alice, "private plans")
    tmid = "nope" if where == "missing" else elsewhere.id
    with pytest.raises(RecordNotFound, match="no message"):
        store.post_message(room, alice, "reply", tmid=tmid)


def test_room_threads_are_listed_latest_reply_first(store: Store, thread_room: tuple[str, str, str]) -> None:
    room, alice, bob = thread_room
    old = store.post_message(room, alice, "old thread", ts=T0)
    new = store.post_message(room, alice, "new thread", ts=T0 + timedelta(hours=1))
    store.post_message(room, bob, "reply to new", ts=T0 + timedelta(hours=2), tmid=new.id)
    store.post_message(room, bob, "late reply to old", ts=T0 + timedelta(hours=3), tmid=old.id)
    store.post_message(room, bob, "not a thread", ts=T0 + timedelta(hours=4))
    threads, total = store.room_threads(room, limit=10)
    assert [m.id for m in threads] == [old.id, new.id] and total == 2


def test_attachments_are_kept_and_searchable_with_the_text(
    store: Store, thread_room: tuple[str, str, str]
) -> None:
    room, alice, _ = thread_room
    files = (
        Attachment("pgbouncer.ini", title="pool config", description="max_client_conn raised", type="text/plain", size=812),
        Attachment("graph.png", type="image/png", size=20480),
    )
    posted = store.post_message(room, alice, "the config we run now", attachments=files)
    assert store.get_message(posted.id) == posted
    assert posted.attachments == files
    assert posted.searchable_text.splitlines() == [
        "the config we run now",
        "pgbouncer.ini",
        "pool config",
        "max_client_conn raised",
        "graph.png",
    ]


@pytest.mark.parametrize(
    ("attachments", "fragment"),
    [
        pytest.param((Attachment(" "),), "needs a name", id="no-name"),
        pytest.param((Attachment("a", title="x" * 1001),), "at most 1000", id="title-too-long"),
        pytest.param((Attachment("a", size=-1),), "not negative", id="negative-size"),
        pytest.param(tuple(Attachment(f"f{n}") for n in range(21)), "at most 20 attachments", id="too-many"),
    ],
)
def test_malformed_attachments_are_refused(
    store: Store, thread_room: tuple[str, str, str], attachments: tuple[Attachment, ...], fragment: str
) -> None:
    room, alice, _ = thread_room
    with pytest.raises(InvalidValue, match=fragment):
        store.post_message(room, alice, "files", attachments=attachments)
    assert store.count_messages() == 0


def test_reactions_toggle_per_person_and_emoji(store: Store, thread_room: tuple[str, str, str]) -> None:
    room, alice, bob = thread_room
    posted = store.post_message(room, alice, "shipped")
    store.set_reaction(posted.id, bob, ":tada:", True)
    store.set_reaction(posted.id, bob, ":tada:", True)  # idempotent
    reacted = store.set_reaction(posted.id, alice, "tada", True)  # colons added
    # In the order they reacted; within one millisecond, by username.
    assert [(r.emoji, sorted(r.usernames)) for r in reacted.reactions] == [(":tada:", ["alice", "bob"])]
    taken_back = store.set_reaction(posted.id, bob, ":tada:", False)
    assert taken_back.reactions == (Reaction(":tada:", ("alice",)),)
    with pytest.raises(InvalidValue, match="emoji"):
        store.set_reaction(posted.id, bob, ":no spaces:", True)


def test_mentions_name_people_who_exist_and_follow_edits(
    store: Store, thread_room: tuple[str, str, str]
) -> None:
    room, alice, _ = thread_room
    posted = store.post_message(room, alice, "@bob can you look? cc @nobody, mail ops@example.com")
    assert posted.mentions == ("bob",)
    edited = store.edit_message(posted.id, "@alice never mind")
    assert edited.mentions == ("alice",)


def test_pins_are_listed_latest_first_and_unpinned(store: Store, thread_room: tuple[str, str, str]) -> None:
    room, alice, bob = thread_room
    first = store.post_message(room, alice, "runbook link")
    second = store.post_message(room, alice, "on-call rota")
    pinned = store.set_pinned(first.id, bob)
    store.set_pinned(second.id, alice)
    assert pinned.pinned_by == bob and pinned.pinned_at is not None
    listed, total = store.pinned_messages(room, limit=10)
    assert {m.id for m in listed} == {first.id, second.id} and total == 2
    assert store.set_pinned(first.id, None).pinned_at is None
    assert [m.id for m in store.pinned_messages(room, limit=10)[0]] == [second.id]


def test_history_between_two_times_newest_first(store: Store, thread_room: tuple[str, str, str]) -> None:
    room, alice, _ = thread_room
    posted = [store.post_message(room, alice, f"m{n}", ts=T0 + timedelta(minutes=n)) for n in range(5)]
    between = store.room_messages(room, after=posted[1].ts, before=posted[4].ts, limit=10)
    assert [m.text for m in between] == ["m3", "m2"]
    inclusive = store.room_messages(room, after=posted[1].ts, before=posted[4].ts, inclusive=True, limit=10)
    assert [m.text for m in inclusive] == ["m4", "m3", "m2", "m1"]
    around = store.messages_around(posted[2], before=1, after=2)
    assert [m.text for m in around] == ["m1", "m2", "m3", "m4"]


def test_find_room_messages_matches_literally_newest_first(
    store: Store, thread_room: tuple[str, str, str]
) -> None:
    room, alice, _ = thread_room
    store.post_message(room, alice, "Deploy 100% done", ts=T0)
    store.post_message(room, alice, "deploy failed", ts=T0 + timedelta(minutes=1))
    store.post_message(room, alice, "unrelated", ts=T0 + timedelta(minutes=2))
    assert [m.text for m in store.find_room_messages(room, "DEPLOY", limit=10)] == ["deploy failed", "Deploy 100% done"]
    assert [m.text for m in store.find_room_messages(room, "100%", limit=10)] == ["Deploy 100% done"]
    assert store.find_room_messages(room, "_", limit=10) == []


def test_imported_threads_files_reactions_edits_and_pins(store: Store) -> None:
    row = ImportRow("ops", "c", "alice", T0, "deploy failed @bob", "p1", members=("bob",))
    reply = ImportRow(
        "ops",
        "c",
        "bob",
        T0 + timedelta(minutes=1),
        "the config",
        "r1",
        tmid="p1",
        attachments=(Attachment("pgbouncer.ini"),),
        reactions=(Reaction(":+1:", ("alice", "carol")),),
        edited_at=T0 + timedelta(minutes=5),
        pinned=True,
    )
    orphan = ImportRow("ops", "c", "bob", T0, "reply to nothing", "r2", tmid="missing")
    result = store.import_messages([row, reply, orphan])
    assert result.imported == 2
    assert result.rejected == ((2, "the thread's first message 'missing' is not in room 'ops' (import it first)"),)
    got = store.get_messages(["p1", "r1"])
    assert got["p1"].mentions == ("bob",)
    assert got["r1"].tmid == "p1" and got["r1"].attachments == (Attachment("pgbouncer.ini"),)
    assert got["r1"].reactions == (Reaction(":+1:", ("alice", "carol")),)
    assert got["r1"].edited_at == T0 + timedelta(minutes=5) and got["r1"].pinned_at is not None
    assert store.import_messages([row, reply]).unchanged == 2  # idempotent


def test_what_a_message_follows_in_its_conversation(store: Store, thread_room: tuple[str, str, str]) -> None:
    room, alice, bob = thread_room
    old = store.post_message(room, alice, "long ago", ts=T0)
    near = [store.post_message(room, alice, f"room {n}", ts=T0 + timedelta(hours=2, minutes=n)) for n in range(3)]
    parent = near[0]
    replies = [
        store.post_message(room, bob, f"reply {n}", ts=T0 + timedelta(hours=2, minutes=10 + n), tmid=parent.id)
        for n in range(3)
    ]
    last = store.post_message(room, alice, "room after", ts=T0 + timedelta(hours=2, minutes=20))
    window = timedelta(minutes=30)
    # A reply: its thread's first message, then the replies before it.
    assert [m.text for m in store.earlier_in_conversation(replies[2], limit=2, within=window)] == ["room 0", "reply 1"]
    assert [m.text for m in store.earlier_in_conversation(replies[2], limit=3, within=window)] == [
        "room 0",
        "reply 0",
        "reply 1",
    ]
    assert [m.text for m in store.earlier_in_conversation(replies[0], limit=2, within=window)] == ["room 0"]
    # In the room: the messages just before, thread replies left out, none older than the window.
    assert [m.text for m in store.earlier_in_conversation(last, limit=2, within=window)] == ["room 1", "room 2"]
    # The first of the run: "long ago" is two hours earlier, outside the window.
    assert [m.text for m in store.earlier_in_conversation(near[0], limit=2, within=window)] == []
    assert store.earlier_in_conversation(old, limit=2, within=window) == []
