"""A workspace of another system mirrored into the store: people, rooms, memberships and messages.

Every importer of an export (and the live Rocket.Chat sync) reads its source and tells a ``Mirror``
what it found, in the source's own ids; the mirror makes the store say the same, again and again:

1. ``people``: each person becomes a user, found by the source's id when an earlier run linked it
   (``store.link_external``), else by username (an account made here by hand is reused), else
   created without a password, as ``bot`` when the source says so. A person the source deactivated
   is deactivated; display names follow the source.
2. ``conversations``: each channel, group or direct conversation becomes a room the same way; a
   renamed channel renames its room, so links and ids stay. A name held by a room of another type
   is refused, with the record that named it, rather than mixing private messages into a channel.
3. ``message``: rows go through the shared ``Batcher``. A row whose message exists is reconciled:
   a source edit newer than the stored one is applied (``store.edit_message``), reactions and pins
   follow the source, a link back is filled in. A reply whose thread's first message is neither in
   the export nor stored is kept as a message of its room.
4. ``finish``: memberships are set to the source's (a person who left a channel is unsubscribed:
   the room stops being searchable for them); then deletions: for every conversation the export
   holds in full, a message from this origin between the export's first and last message that the
   export no longer has is deleted, as are messages the source marks deleted (tombstones). A
   conversation with a bad record deletes nothing: what cannot be read is never taken for gone.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..store import names
from ..store.base import AlreadyTaken, InvalidValue, RecordNotFound, Store
from ..store.records import Attachment, ImportRow, Message, Reaction, Room, RoomType
from ..store.rules import (
    MAX_DISPLAY_NAME_LENGTH,
    MAX_MESSAGE_TEXT_LENGTH,
    MAX_ROOM_NAME_LENGTH,
    MAX_TOPIC_LENGTH,
    MAX_USERNAME_LENGTH,
    check_room_name,
    fold,
)
from .batches import DEFAULT_IMPORT_BATCH_SIZE, Batcher, ImportReport, Where, hashed_id

__all__ = ["Conversation", "Mirror", "Person", "direct_name", "room_name", "username_of"]

_NOT_USERNAME = re.compile(r"[^\w.-]+")
_DIRECT_SEPARATOR = "__"
_ELLIPSIS = "…"
# Rooms named in the note on deletions an unreadable record spared (rooms): the first few say where.
_NAMED_ROOMS = 3
# Characters of a direct room's name made from its members' usernames (the store's room-name cap).
_MAX_DIRECT_NAME_LENGTH = MAX_ROOM_NAME_LENGTH


def username_of(wish: str, fallback: str) -> str:
    """A valid username from what the source calls a person (``Ana María`` -> ``Ana_María``)."""
    name = _NOT_USERNAME.sub("_", wish.strip().removeprefix("@")).strip("_.-")[:MAX_USERNAME_LENGTH]
    return name or _NOT_USERNAME.sub("_", fallback)[:MAX_USERNAME_LENGTH] or "user"


def _visible(ch: str) -> str:
    """``ch`` as a room name may hold it: a space of any kind (a line break, a no-break space) is a
    plain one, any other character the room-name rules refuse (``names.invisible_character``:
    zero-width, bidi and other format characters, controls, fillers) is dropped."""
    if ch == " " or names.invisible_character(ch) is None:
        return ch
    return " " if ch.isspace() else ""


def room_name(wish: str, fallback: str) -> str:
    """A valid room name from a channel's name: one line, nothing invisible or reordering (dropped),
    no leading '#', no '"'."""
    visible = "".join(_visible(ch) for ch in wish)
    name = visible.replace('"', "'").strip().lstrip("#").strip()
    name = name[:MAX_ROOM_NAME_LENGTH].strip()
    try:
        return check_room_name(name)
    except InvalidValue:
        return check_room_name(fallback[:MAX_ROOM_NAME_LENGTH])


def direct_name(usernames: Iterable[str]) -> str:
    """A direct room's name: its members' usernames, sorted, joined by ``__`` (``alice__bob``)."""
    name = _DIRECT_SEPARATOR.join(sorted(set(usernames), key=fold))
    return name[:_MAX_DIRECT_NAME_LENGTH].strip() or "direct"


@dataclass(frozen=True)
class Person:
    key: str  # the source's id (a Slack user id, a Mattermost username, a Zulip user id)
    username: str  # the username wished for; made valid and unique by the mirror
    name: str = ""
    bot: bool = False
    active: bool = True


@dataclass(frozen=True)
class Conversation:
    key: str  # the source's id
    type: RoomType
    name: str  # wished for; a direct conversation is named after its members when empty
    where: Where  # the record that listed it, for reports
    fname: str = ""
    topic: str = ""
    members: tuple[str, ...] | None = None  # person keys; None: the source does not say
    complete: bool = True  # the export holds all its messages in its range (deletions apply)
    alt_name: str = ""  # the name to take when ``name`` is another conversation's (a second team's)


@dataclass
class _Room:
    id: str
    name: str
    type: RoomType
    conversation: Conversation


@dataclass
class _Deletions:
    seen: set[str] = field(default_factory=set)
    dirty: set[str] = field(default_factory=set)  # conversation keys with a record that could not be read
    tombstones: list[str] = field(default_factory=list)
    first: datetime | None = None
    last: datetime | None = None


class Mirror:
    """Applies one source's people, conversations and messages to the store (module docstring)."""

    def __init__(
        self,
        store: Store,
        origin: str,
        report: ImportReport,
        *,
        batch_size: int = DEFAULT_IMPORT_BATCH_SIZE,
    ) -> None:
        self.store = store
        self.origin = origin
        self.report = report
        self.batcher = Batcher(store, report, batch_size, reconcile=self._reconcile)
        self.users = store.external_ids(origin, "user")  # person key -> user id
        self._linked = set(self.users.values())  # users some person of this origin already is
        self.usernames: dict[str, str] = {}  # person key -> username
        self.room_ids = store.external_ids(origin, "room")  # conversation key -> room id
        self.rooms: dict[str, _Room] = {}  # conversation key -> room, for the conversations of this run
        self.deletions = _Deletions()
        self._parents: dict[str, bool] = {}  # thread parents looked up in the store
        self._orphans = 0
        self._cut = 0

    # -- people ----------------------------------------------------------------------------------

    def people(self, persons: Iterable[Person]) -> None:
        taken = {fold(name) for name in self.usernames.values()}
        for person in persons:
            self._person(person, taken)

    def person(self, person: Person) -> str:
        """The username of ``person``, made a user first if the source's lists lacked it."""
        if person.key in self.usernames:
            return self.usernames[person.key]
        self._person(person, {fold(name) for name in self.usernames.values()})
        return self.usernames[person.key]

    def username(self, key: str) -> str | None:
        return self.usernames.get(key)

    def _person(self, person: Person, taken: set[str]) -> None:
        user = self.store.get_user(self.users[person.key]) if person.key in self.users else None
        if user is None:
            base = username_of(person.username, person.key)
            for attempt in range(1, 1000):
                candidate = base if attempt == 1 else f"{base[: MAX_USERNAME_LENGTH - 4]}-{attempt}"
                if fold(candidate) in taken:
                    continue
                found = self.store.get_user_by_username(candidate)
                if found is None:
                    name = person.name.strip()[:MAX_DISPLAY_NAME_LENGTH] or None
                    try:
                        user = self.store.create_user(
                            candidate, name=name, roles=("bot",) if person.bot else ("user",)
                        )
                    except AlreadyTaken:
                        continue
                    self.report.users_created += 1
                    break
                if found.id not in self._linked:  # an account made here, or by an import of another kind
                    user = found
                    break
            assert user is not None, "a thousand usernames taken"
            self.store.link_external(self.origin, "user", person.key, user.id)
            self.users[person.key] = user.id
            self._linked.add(user.id)
        name = person.name.strip()[:MAX_DISPLAY_NAME_LENGTH]
        if name and name != user.name:
            self.store.set_display_name(user.id, name)
        if user.active != person.active:
            self.store.set_active(user.id, person.active)
        self.usernames[person.key] = user.username
        taken.add(fold(user.username))

    # -- conversations ---------------------------------------------------------------------------

    def conversations(self, conversations: Iterable[Conversation]) -> None:
        for conversation in conversations:
            self.conversation(conversation)

    def conversation(self, conversation: Conversation) -> _Room | None:
        """The room of ``conversation``, created, linked or renamed; None when refused (reported)."""
        if conversation.key in self.rooms:
            return self.rooms[conversation.key]
        if conversation.type == "d" and not conversation.name:
            members = [self.usernames.get(key, key) for key in conversation.members or ()]
            conversation = dataclasses.replace(conversation, name=direct_name(members))
        name = room_name(conversation.name, conversation.key)
        room = (
            self.store.get_room(self.room_ids[conversation.key])
            if conversation.key in self.room_ids
            else None
        )
        try:
            if room is None:
                room = self._find_or_create(conversation, name)
            elif room.type != conversation.type:
                raise InvalidValue(f"it was {room.type}, the export says {conversation.type}")
            else:
                room = self._update(room, conversation, name)
        except (AlreadyTaken, InvalidValue, RecordNotFound) as error:
            self.report.skip(conversation.where, f"room {name!r} cannot be mirrored: {error}")
            return None
        if room is None:
            return None
        if self.room_ids.get(conversation.key) != room.id:
            self.store.link_external(self.origin, "room", conversation.key, room.id)
            self.room_ids[conversation.key] = room.id
        mirrored = _Room(room.id, room.name, room.type, conversation)
        self.rooms[conversation.key] = mirrored
        return mirrored

    def _update(self, room: Room, conversation: Conversation, name: str) -> Room:
        """A linked room follows the source: its topic, display name and name (a renamed channel)."""
        topic = conversation.topic[:MAX_TOPIC_LENGTH]
        fname = conversation.fname.strip()[:MAX_DISPLAY_NAME_LENGTH]
        if (topic and room.topic != topic) or (fname and room.fname != fname):
            room = self.store.update_room(room.id, fname=fname or None, topic=topic or None)
        wished = [name, *([room_name(conversation.alt_name, name)] if conversation.alt_name else [])]
        if fold(room.name) in {fold(w) for w in wished}:
            return room
        for candidate in wished:
            try:
                room = self.store.update_room(room.id, name=candidate, fname=None if fname else candidate)
            except AlreadyTaken:
                continue  # taken: the room keeps the name it has
            self.report.rooms_renamed += 1
            break
        return room

    def _find_or_create(self, conversation: Conversation, name: str) -> Room:
        existing = self.store.get_room_by_name(name)
        if (
            existing is not None
            and fold(existing.name) == fold(name)
            and (existing.type == "d") == (conversation.type == "d")
        ):
            if existing.type != conversation.type:
                raise AlreadyTaken(f"a room of that name is {existing.type}, not {conversation.type}")
            if existing.id not in set(self.room_ids.values()):
                return existing
            fallback = f"{name[: MAX_ROOM_NAME_LENGTH - 9]}-{hashed_id(conversation.key)[:8]}"
            name = room_name(conversation.alt_name, fallback) if conversation.alt_name else fallback
        fname = conversation.fname.strip()[:MAX_DISPLAY_NAME_LENGTH] or None
        topic = conversation.topic[:MAX_TOPIC_LENGTH]
        try:
            created = self.store.create_room(conversation.type, name, fname=fname, topic=topic)
        except AlreadyTaken as clash:
            # Another room has that name or one that looks like it (``incidents`` and ``іncidents``
            # with a Cyrillic і): the conversation comes in under a name of its own, not skipped.
            unique = f"{name[: MAX_ROOM_NAME_LENGTH - 9]}-{hashed_id(conversation.key)[:8]}"
            created = self.store.create_room(conversation.type, unique, fname=fname or name, topic=topic)
            self.report.notes.append(f"room {name!r} is named {unique!r} here: {clash}")
        self.report.rooms_created += 1
        return created

    def room(self, key: str) -> _Room | None:
        return self.rooms.get(key)

    # -- messages --------------------------------------------------------------------------------

    def message(
        self,
        where: Where,
        conversation_key: str,
        *,
        username: str,
        ts: datetime,
        text: str,
        message_id: str,
        tmid: str | None = None,
        attachments: tuple[Attachment, ...] = (),
        reactions: tuple[Reaction, ...] = (),
        edited_at: datetime | None = None,
        pinned: bool = False,
        source_url: str | None = None,
    ) -> None:
        """One message of a conversation mirrored into its room. A reply whose first message is
        neither seen in this run nor stored becomes a message of the room."""
        room = self.rooms.get(conversation_key)
        if room is None:
            self.batcher.reject(where, "its room could not be mirrored (see above)")
            return
        if tmid is not None and not self._parent_known(tmid):
            tmid = None
            self._orphans += 1
        self.deletions.seen.add(message_id)
        self._span(ts)
        self.batcher.add(
            where,
            ImportRow(
                room.name,
                room.type,
                username,
                ts,
                self.fit_text(text),
                message_id,
                tmid=tmid,
                attachments=attachments,
                reactions=reactions,
                edited_at=edited_at,
                pinned=pinned,
                origin=self.origin,
                source_url=source_url,
                # The source's member list decides who is in the room (set in ``finish``).
                author_joins=room.conversation.members is None,
            ),
        )

    def fit_text(self, text: str) -> str:
        """``text`` cut to the store's MAX_MESSAGE_TEXT_LENGTH with an ellipsis when longer (counted:
        the report says how many): a long message is kept searchable rather than refused."""
        if len(text) <= MAX_MESSAGE_TEXT_LENGTH:
            return text
        self._cut += 1
        return text[: MAX_MESSAGE_TEXT_LENGTH - len(_ELLIPSIS)] + _ELLIPSIS

    def reject(
        self, where: Where, reason: str, conversation_key: str | None = None, *, message_id: str | None = None
    ) -> None:
        """A record that cannot be imported. When its message id is known, the stored copy of that
        message is kept; otherwise its conversation (every one, when that is unknown too) deletes
        nothing this time: what cannot be read is never taken for gone."""
        self.batcher.reject(where, reason)
        if message_id is not None:
            self.deletions.seen.add(message_id)
        else:
            self.deletions.dirty.add(conversation_key or "*")

    def ignore(self, ts: datetime | None = None) -> None:
        self.batcher.ignore()
        if ts is not None:
            self._span(ts)

    def tombstone(self, message_id: str, ts: datetime | None = None) -> None:
        """The source marks this message deleted (a Slack tombstone, a Rocket.Chat trash entry)."""
        self.batcher.ignore()
        self.deletions.tombstones.append(message_id)
        if ts is not None:
            self._span(ts)

    def _span(self, ts: datetime) -> None:
        d = self.deletions
        d.first = ts if d.first is None or ts < d.first else d.first
        d.last = ts if d.last is None or ts > d.last else d.last

    def _parent_known(self, tmid: str) -> bool:
        if tmid in self.deletions.seen:
            return True
        if tmid not in self._parents:
            self._parents[tmid] = self.store.get_message(tmid) is not None
        return self._parents[tmid]

    def _reconcile(self, existing: Sequence[tuple[Where, ImportRow, Message]]) -> int:
        """Apply what the source changed since the stored copy; returns how many messages changed."""
        changed: set[str] = set()
        links: dict[str, str | None] = {}
        for _where, row, stored in existing:
            newer = row.edited_at is not None and (
                stored.edited_at is None or row.edited_at > stored.edited_at
            )
            if newer and row.text != stored.text:
                self.store.edit_message(stored.id, row.text, edited_at=row.edited_at)
                changed.add(stored.id)
            if self._reactions(row, stored):
                changed.add(stored.id)
            if row.pinned != (stored.pinned_at is not None):
                self.store.set_pinned(stored.id, stored.user_id if row.pinned else None)
                changed.add(stored.id)
            if row.source_url is not None and row.source_url != stored.source_url:
                links[stored.id] = row.source_url
        if links:
            self.store.set_source_urls(links)
            changed.update(links)
        return len(changed)

    def _reactions(self, row: ImportRow, stored: Message) -> bool:
        wanted = {(r.emoji, fold(u)) for r in row.reactions for u in r.usernames}
        have = {(r.emoji, fold(u)) for r in stored.reactions for u in r.usernames}
        if wanted == have:
            return False
        touched = False
        for emoji, name in sorted(wanted ^ have):
            user = self.store.get_user_by_username(name)
            user_id = None if user is None else user.id
            if user_id is not None:
                self.store.set_reaction(stored.id, user_id, emoji, (emoji, name) in wanted)
                touched = True
        return touched

    # -- the end ---------------------------------------------------------------------------------

    def finish(self) -> ImportReport:
        """Flush the last batch, then set memberships and apply deletions (module docstring)."""
        self.batcher.flush()
        for room in self.rooms.values():
            members = room.conversation.members
            if members is None:
                continue
            user_ids = [self.users[key] for key in members if key in self.users]
            added, removed = self.store.set_members(room.id, user_ids)
            self.report.subscribed += added
            self.report.unsubscribed += removed
        self._delete()
        if self._cut:
            self.report.notes.append(
                f"{self._cut:,} messages longer than {MAX_MESSAGE_TEXT_LENGTH:,} characters were cut to fit"
            )
        if self._orphans:
            self.report.notes.append(
                f"{self._orphans:,} replies whose thread's first message is not in the export were imported "
                "as messages of their room"
            )
        return self.report

    def checkpoint(self) -> None:
        """Everything read so far written: the pending batch and the tombstones (a live mirror saves
        its cursor right after, so a crash never skips what it had read)."""
        self.batcher.flush()
        self._delete_all(self.deletions.tombstones)
        self.deletions.tombstones = []

    def _delete(self) -> None:
        d = self.deletions
        gone: list[str] = list(d.tombstones)
        d.tombstones = []
        spared = [
            self.rooms[key].name for key in d.dirty if key in self.rooms and self.rooms[key].conversation.complete
        ]
        if "*" in d.dirty or spared:
            named = ", ".join(spared[:_NAMED_ROOMS]) + (", ..." if len(spared) > _NAMED_ROOMS else "")
            where = "any room" if "*" in d.dirty else f"{len(spared):,} room{'s' * (len(spared) != 1)} ({named})"
            self.report.notes.append(
                f"messages missing from this export were not deleted in {where}: some records could not be read"
            )
        if d.first is not None and d.last is not None and "*" not in d.dirty:
            end = d.last + timedelta(milliseconds=1)
            for key, room in self.rooms.items():
                if key in d.dirty or not room.conversation.complete:
                    continue
                stored = self.store.origin_message_ids(room.id, self.origin, start=d.first, end=end)
                gone += [message_id for message_id in stored if message_id not in d.seen]
        self._delete_all(gone)

    def _delete_all(self, message_ids: Iterable[str]) -> None:
        for message_id in dict.fromkeys(message_ids):
            try:
                self.store.delete_message(message_id)
            except RecordNotFound:
                continue
            self.report.deleted += 1
