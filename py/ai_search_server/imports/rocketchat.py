"""``ai-search sync rocketchat --url URL [--watch]``: a live Rocket.Chat workspace, mirrored.

Through Rocket.Chat's REST API (``rocketchat_api``), with an admin's personal access token:

1. people: ``users.list``, every run (bots are ``type: bot``; deactivated people are deactivated here);
2. rooms: ``rooms.adminRooms`` (channels, private groups, DMs and group DMs; omnichannel rooms are
   not chat and are left out), and each room's members (``channels.members``, ``groups.members``; a
   DM's are on the room). Scoping is Rocket.Chat's subscriptions as this run found them: a person
   who left a room stops finding it here, and a room gone from Rocket.Chat is searchable by nobody
   (in the rooms the sync created; a room an admin mapped only ever gains members, ``mirror.py``);
3. messages: ``chat.syncMessages`` by cursor (``type=UPDATED|DELETED&next=<ms>``), a page at a time,
   per room: the first run reads every message, later runs what changed since (new, edited,
   reacted to, pinned) and what was deleted (Rocket.Chat's trash). Servers before the cursor API
   (older than 7.1) are read with ``lastUpdate`` instead, the same in one answer per room. Message
   ids are Rocket.Chat's own, so a thread's ``tmid`` is the same here and there; a reply read before
   its thread's first message (which sorts later: every reply updates it) has that message fetched
   first (``chat.getMessage``). System messages (joins, leaves, topic changes) are not indexed.

After each page the rows are written and the room's cursor saved in the store
(``store.set_sync_state``), so a sync stopped anywhere (a crash, Ctrl-C, the server going away)
resumes at the page it was on. ``--watch`` runs again every interval.

Nobody and nothing here is taken for a Rocket.Chat person or room by name (usernames there can be
changed by their owners): each becomes an account or room of its own unless the admin maps it
(``mapping.py``), and signing in with Rocket.Chat (``rocketchat_sign_in.py``) trusts only those links.

A server that pages without end cannot hold a run: listings are bounded by ``RocketChatAPI.pages``
(its docstring), and a room's cursor pages stop at one that does not move the cursor and after
``MAX_CURSOR_PAGES_PER_RUN`` (the next run reads on). Each stop is a skipped record of the report,
and a cut listing is never taken for the whole one: a room whose members were cut keeps its members,
and a cut room listing takes no room for gone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

from ..store.base import Store
from ..store.records import Attachment, Reaction, RoomType
from ..store.rules import MAX_ATTACHMENT_TEXT_LENGTH, MAX_ATTACHMENTS, MAX_MESSAGE_ID_LENGTH
from .batches import DEFAULT_IMPORT_BATCH_SIZE, ImportReport, progress_bar
from .fields import first_text, obj, seq, text
from .mapping import NO_MAPPING, SourceMapping
from .markup import rocketchat_text
from .mirror import Conversation, Mirror, Person
from .rocketchat_api import RocketChatAPI, RocketChatListingCut, RocketChatRefused

__all__ = ["MAX_CURSOR_PAGES_PER_RUN", "ROOM_TYPES", "RocketChatSync", "origin_of"]

# Rocket.Chat room types mirrored: channels, private groups, direct messages. Omnichannel (l) and
# voice (v) rooms are customer conversations, not the team's chat.
ROOM_TYPES: tuple[RoomType, ...] = ("c", "p", "d")
_MEMBERS_ROUTE = {"c": "channels.members", "p": "groups.members"}
_LINK_PATH = {"c": "channel", "p": "group", "d": "direct"}
_EPOCH = "1970-01-01T00:00:00.000Z"
# Rocket.Chat's "message removed" marker, kept in the room when "show deleted status" is on.
_REMOVED = "rm"
# Pages of chat.syncMessages one run reads for one room and one kind (UPDATED, DELETED), at most
# (pages of DEFAULT_PAGE_SIZE): a million changes. The cursor is saved after each page, so a room with
# more (a first sync of a huge room, or a server inventing messages without end) goes on next run.
MAX_CURSOR_PAGES_PER_RUN = 10_000


def origin_of(url: str) -> str:
    """The store's origin for a server: ``rocketchat:https://chat.example.com``."""
    parts = urlsplit(url.strip())
    return f"rocketchat:{parts.scheme}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def _when(value: object) -> datetime | None:
    """A Rocket.Chat time: ISO 8601 (REST) or ``{"$date": ms}`` (DDP-shaped exports)."""
    if isinstance(value, dict) and isinstance(value.get("$date"), int | float):
        return datetime.fromtimestamp(value["$date"] / 1000, UTC)
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def _ms(value: object) -> str | None:
    moment = _when(value)
    return None if moment is None else str(int(moment.timestamp() * 1000))


def _cut(report: ImportReport, where: str, cut: RocketChatListingCut, consequence: str) -> None:
    """A listing that stopped early, as a skipped record: what stopped it, and what follows from it."""
    report.lines_read += 1
    report.skip(where, f"{cut}; {consequence}")


class RocketChatSync:
    """One mirror run (``run``) of one server into one store; see the module docstring."""

    def __init__(
        self,
        store: Store,
        api: RocketChatAPI,
        *,
        progress: bool = False,
        batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
        mapping: SourceMapping = NO_MAPPING,
        max_cursor_pages: int = MAX_CURSOR_PAGES_PER_RUN,
    ) -> None:
        self.store = store
        self.api = api
        self.mapping = mapping  # the admin's mapping to accounts and rooms here, checked by the caller
        self.origin = origin_of(api.base_url)
        self.progress = progress
        self.batch_size = batch_size
        self.max_cursor_pages = max_cursor_pages
        self.cursor_api: bool | None = None  # None until a server told which chat.syncMessages it has
        self.keys_by_username: dict[str, str] = {}  # Rocket.Chat username -> user _id, for reactions

    async def run(self) -> ImportReport:
        """Mirror everything that changed since the last run (everything, the first time).

        Raises:
            RocketChatRefused: the token is refused or lacks admin rights (nothing else was written).
            RocketChatUnreachable: the server went away for too long; what was read is kept.
            StorageFailure: the database failed; likewise.
        """
        report = ImportReport(self.api.base_url, unit="records")
        mirror = Mirror(self.store, self.origin, report, batch_size=self.batch_size, mapping=self.mapping)
        await self._people(mirror)
        rooms, listed = await self._rooms(mirror, report)
        with progress_bar("rooms", len(rooms), enabled=self.progress, unit="items") as advance:
            for room in rooms:
                await self._messages(mirror, room)
                advance(1)
        if listed:  # a room missing from a cut listing is not gone
            self._gone(mirror, report, {room["_id"] for room in rooms})
        return mirror.finish()

    # -- people and rooms ------------------------------------------------------------------------

    async def _people(self, mirror: Mirror) -> None:
        try:
            await self._people_pages(mirror)
        except RocketChatListingCut as cut:
            _cut(mirror.report, "users.list", cut, "people it did not list come in with their first message")

    async def _people_pages(self, mirror: Mirror) -> None:
        async for page in self.api.pages("users.list", "users"):
            for user in page:
                if isinstance(user.get("_id"), str) and isinstance(user.get("username"), str):
                    self.keys_by_username[user["username"]] = user["_id"]
            mirror.people(
                Person(
                    user["_id"],
                    text(user.get("username")) or user["_id"],
                    text(user.get("name")),
                    bot=user.get("type") == "bot" or "bot" in seq(user.get("roles")),
                    active=user.get("active", True) is not False,
                )
                for user in page
                if isinstance(user.get("_id"), str) and user["_id"]
            )

    async def _rooms(self, mirror: Mirror, report: ImportReport) -> tuple[list[dict[str, Any]], bool]:
        """The rooms mirrored this run, and whether the listing was whole (a cut one gone nowhere)."""
        found: list[dict[str, Any]] = []
        try:
            await self._room_pages(mirror, report, found)
        except RocketChatListingCut as cut:
            _cut(report, "rooms.adminRooms", cut, "no room it did not list is taken for gone")
            return found, False
        return found, True

    async def _room_pages(self, mirror: Mirror, report: ImportReport, found: list[dict[str, Any]]) -> None:
        async for page in self.api.pages("rooms.adminRooms", "rooms", {"types[]": list(ROOM_TYPES)}):
            for room in page:
                rid, kind = room.get("_id"), room.get("t")
                if not isinstance(rid, str) or kind not in ROOM_TYPES:
                    continue
                where = f"room {first_text(room.get('fname'), room.get('name'), rid)}"
                members: list[str] | None
                try:
                    members = await self._members(room)
                except RocketChatRefused as error:
                    report.lines_read += 1
                    report.skip(where, f"its members cannot be read with this token ({error})")
                    continue
                except RocketChatListingCut as cut:
                    _cut(report, where, cut, "its members here are left as they were")
                    members = None
                for user_id in members or ():
                    if mirror.username(user_id) is None:
                        mirror.person(Person(user_id, user_id))
                conversation = Conversation(
                    rid,
                    kind,
                    "" if kind == "d" else first_text(room.get("name"), room.get("fname"), rid),
                    where,
                    fname=text(room.get("fname")),
                    topic=text(room.get("topic")),
                    members=None if members is None else tuple(members),
                    complete=False,  # deletions come from Rocket.Chat's trash, never from absence
                )
                if mirror.conversation(conversation) is not None:
                    found.append(room)

    async def _members(self, room: dict[str, Any]) -> list[str]:
        if room["t"] == "d":
            return [u for u in seq(room.get("uids")) if isinstance(u, str)]
        members: list[str] = []
        async for page in self.api.pages(_MEMBERS_ROUTE[room["t"]], "members", {"roomId": room["_id"]}):
            members += [m["_id"] for m in page if isinstance(m.get("_id"), str)]
        return members

    def _gone(self, mirror: Mirror, report: ImportReport, present: set[str]) -> None:
        """Rooms an earlier run created that Rocket.Chat no longer has: nobody searches them here (a
        room an admin mapped keeps its members: it is this workspace's, not Rocket.Chat's)."""
        gone = [
            link.local_id
            for key, link in mirror.room_links.items()
            if key not in present and link.how == "created"
        ]
        emptied = 0
        for room_id in gone:
            if self.store.members_of(room_id):
                report.unsubscribed += self.store.set_members(room_id, [])[1]
                emptied += 1
        if emptied:
            report.notes.append(
                f"{emptied:,} rooms are gone from Rocket.Chat: nobody can search them here now"
            )

    # -- messages --------------------------------------------------------------------------------

    async def _messages(self, mirror: Mirror, room: dict[str, Any]) -> None:
        key = f"{self.origin}#room:{room['_id']}"
        state = dict(self.store.get_sync_state(key) or {})
        if self.cursor_api is not False:
            try:
                await self._by_cursor(mirror, room, key, state)
                self.cursor_api = True
                return
            except RocketChatRefused as error:
                if self.cursor_api is True or "lastUpdate" not in str(error):
                    raise
                self.cursor_api = False  # a server from before the cursor API
        await self._by_last_update(mirror, room, key, state)

    async def _by_cursor(self, mirror: Mirror, room: dict[str, Any], key: str, state: dict[str, Any]) -> None:
        for kind, field, stamp in (
            ("UPDATED", "updated", "_updatedAt"),
            ("DELETED", "deleted", "_deletedAt"),
        ):
            # The first run needs no tombstones older than what it read: a message deleted since was
            # deleted after its last update, by the server's own clock.
            cursor = str(state.get(field) or state.get("updated") or "0")
            for page in itertools.count(1):
                answer = await self.api.get(
                    "chat.syncMessages",
                    {"roomId": room["_id"], "type": kind, "next": cursor, "count": self.api.page_size},
                )
                result = obj(answer.get("result"))
                if "cursor" not in result:
                    raise RocketChatRefused(
                        "chat.syncMessages answered without a cursor: lastUpdate is needed"
                    )
                items = [m for m in seq(result.get(field)) if isinstance(m, dict)]
                if kind == "UPDATED":
                    await self._apply(mirror, room, items)
                else:
                    for item in items:
                        if isinstance(item.get("_id"), str):
                            mirror.tombstone(item["_id"], _when(item.get("_deletedAt")))
                stamps = [s for s in (_ms(item.get(stamp)) for item in items) if s is not None]
                before, cursor = cursor, max([cursor, *stamps], key=int)
                mirror.checkpoint()
                if state.get(field) != cursor or not self.store.get_sync_state(key):
                    self.store.set_sync_state(key, {**state, field: cursor})
                    state[field] = cursor
                following = obj(result.get("cursor")).get("next")
                if not items or not following:
                    break
                stuck = cursor == before  # the same page again: asking again would get it again
                if stuck or page >= self.max_cursor_pages:
                    why = (
                        f"sent a page of {len(items):,} items that does not move its cursor past {cursor}"
                        if stuck
                        else f"has more than {self.max_cursor_pages:,} pages of changes; the next run reads on from here"
                    )
                    mirror.report.lines_read += 1
                    where = f"room {first_text(room.get('fname'), room.get('name'), room['_id'])}"
                    mirror.report.skip(f"{where} chat.syncMessages {kind}", f"Rocket.Chat {why}")
                    break

    async def _by_last_update(
        self, mirror: Mirror, room: dict[str, Any], key: str, state: dict[str, Any]
    ) -> None:
        since = text(state.get("last_update")) or _EPOCH
        answer = await self.api.get("chat.syncMessages", {"roomId": room["_id"], "lastUpdate": since})
        result = obj(answer.get("result"))
        updated = [m for m in seq(result.get("updated")) if isinstance(m, dict)]
        deleted = [m for m in seq(result.get("deleted")) if isinstance(m, dict)]
        await self._apply(mirror, room, updated)
        for item in deleted:
            if isinstance(item.get("_id"), str):
                mirror.tombstone(item["_id"], _when(item.get("_deletedAt")))
        moments = [m for m in (_when(i.get("_updatedAt")) for i in updated) if m] + [
            m for m in (_when(i.get("_deletedAt")) for i in deleted) if m
        ]
        mirror.checkpoint()
        if moments:
            latest = max(moments).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            if latest != state.get("last_update"):
                self.store.set_sync_state(key, {**state, "last_update": latest})

    async def _apply(self, mirror: Mirror, room: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        """One page of messages into the mirror, oldest first, each thread's first message before its
        replies (fetched when it is neither in the page nor stored)."""
        here = {m.get("_id") for m in messages}
        wanted = {
            m["tmid"]
            for m in messages
            if isinstance(m.get("tmid"), str)
            and m["tmid"] not in here
            and m["tmid"] not in mirror.deletions.seen
        }
        stored = self.store.get_messages(wanted) if wanted else {}
        for tmid in sorted(wanted - set(stored)):
            try:
                parent = obj((await self.api.get("chat.getMessage", {"msgId": tmid})).get("message"))
            except RocketChatRefused:
                continue  # deleted, or not readable: the reply stays a message of its room
            if parent.get("rid") == room["_id"]:
                messages.append(parent)
        for message in sorted(
            messages,
            key=lambda m: (_when(m.get("ts")) or datetime.min.replace(tzinfo=UTC), text(m.get("_id"))),
        ):
            self._message(mirror, room, message)

    def _message(self, mirror: Mirror, room: dict[str, Any], message: dict[str, Any]) -> None:
        message_id, ts = text(message.get("_id")), _when(message.get("ts"))
        where = (
            f"room {first_text(room.get('fname'), room.get('name'), room['_id'])} message {message_id or '?'}"
        )
        if not message_id or len(message_id) > MAX_MESSAGE_ID_LENGTH or ts is None:
            mirror.reject(where, "a message needs an _id and a ts", room["_id"])
            return
        kind = text(message.get("t"))
        if kind == _REMOVED:
            mirror.tombstone(message_id, ts)
            return
        if kind:
            mirror.ignore(ts)  # uj, ul, au, ru, room_changed_topic ...: events, not chatter
            return
        author = obj(message.get("u"))
        if not isinstance(author.get("_id"), str):
            mirror.reject(where, "a message needs its author (u._id)", room["_id"], message_id=message_id)
            return
        username = mirror.username(author["_id"]) or mirror.person(
            Person(author["_id"], text(author.get("username")) or author["_id"], text(author.get("name")))
        )
        attachments = _attachments(message)
        body = rocketchat_text(text(message.get("msg")))
        if not body:
            parts = [
                first_text(a.get("description"), a.get("text"), a.get("title"))
                for a in map(obj, seq(message.get("attachments")))
            ]
            body = "\n".join(p for p in parts if p) or "\n".join(a.name for a in attachments)
        if not body.strip():
            mirror.ignore(ts)  # a message of nothing but a link preview or an emoji reaction
            return
        tmid = text(message.get("tmid")) or None
        mirror.message(
            where,
            room["_id"],
            username=username,
            ts=ts,
            text=body,
            message_id=message_id,
            tmid=tmid,
            attachments=attachments,
            reactions=self._reactions(mirror, message.get("reactions")),
            edited_at=_when(message.get("editedAt")),
            pinned=message.get("pinned") is True,
            source_url=self._link(room, message_id),
        )

    def _reactions(self, mirror: Mirror, reactions: object) -> tuple[Reaction, ...]:
        """Rocket.Chat's ``{":+1:": {"usernames": [...]}}`` with each username as it is here; a
        username ``users.list`` did not give is left out (it may be anyone's here)."""
        found = []
        for emoji, who in obj(reactions).items():
            usernames: Iterable[object] = seq(obj(who).get("usernames"))
            local = (
                mirror.username(self.keys_by_username.get(u, ""))
                for u in usernames
                if isinstance(u, str) and u
            )
            names = tuple(dict.fromkeys(name for name in local if name))
            if names and isinstance(emoji, str):
                found.append(Reaction(emoji if emoji.startswith(":") else f":{emoji}:", names))
        return tuple(found)

    def _link(self, room: dict[str, Any], message_id: str) -> str:
        target = room["_id"] if room["t"] == "d" else first_text(room.get("name"), room["_id"])
        return f"{self.api.base_url}/{_LINK_PATH[room['t']]}/{quote(target, safe='')}?msg={quote(message_id, safe='')}"


def _attachments(message: dict[str, Any]) -> tuple[Attachment, ...]:
    """Files (``files``, or the older single ``file``) with the title and description of the
    attachment Rocket.Chat shows for each."""
    files = [obj(f) for f in seq(message.get("files"))] or (
        [obj(message["file"])] if message.get("file") else []
    )
    shown = [obj(a) for a in seq(message.get("attachments"))]
    found = []
    for n, file in enumerate(files):
        name = text(file.get("name")).strip()
        if not name:
            continue
        card = shown[n] if n < len(shown) else {}
        size = file.get("size")
        found.append(
            Attachment(
                name[:MAX_ATTACHMENT_TEXT_LENGTH],
                text(card.get("title"))[:MAX_ATTACHMENT_TEXT_LENGTH],
                text(card.get("description"))[:MAX_ATTACHMENT_TEXT_LENGTH],
                text(file.get("type"))[:MAX_ATTACHMENT_TEXT_LENGTH],
                size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else 0,
            )
        )
    return tuple(found[:MAX_ATTACHMENTS])
