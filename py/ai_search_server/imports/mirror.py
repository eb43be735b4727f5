"""A workspace of another system mirrored into the store: people, rooms, memberships and messages.

Every importer of an export (and the live Rocket.Chat sync) reads its source and tells a ``Mirror``
what it found, in the source's own ids; the mirror makes the store say the same, again and again:

1. ``people``: each person becomes a user, found by the source's id when an earlier run linked it
   (``store.link_external``), else by an admin's mapping (``mapping.py``), else created without a
   password, as ``bot`` when the source says so, under a username of its own when theirs is taken
   here (``alice-2``). Never by username alone: whoever names people in the source would otherwise
   own the account here of that name. Only an account the source created follows it (display
   name, deactivation); a mapped one is linked and left as it is.
2. ``conversations``: each channel, group or direct conversation becomes a room the same way: found
   by the source's id, else by an admin's mapping, else created, under a name of its own when a
   room here has its name (``leadership-Xq3F9a1c``, and the report says so). A room the source
   created follows it (a renamed channel renames its room, so links and ids stay); a mapped one
   keeps its name and topic, and must be of the conversation's type.
3. ``message``: rows go through the shared ``Batcher``. A row whose message exists is reconciled:
   a source edit newer than the stored one is applied (``store.edit_message``), reactions and pins
   follow the source, a link back is filled in. A reply whose thread's first message is neither in
   the export nor stored is kept as a message of its room.
4. ``finish``: memberships are set to the source's in the rooms it created (a person who left a
   channel is unsubscribed: the room stops being searchable for them); a mapped room only gains
   members, as nobody here is taken out of a room by a source that did not make it. Then deletions:
   for every conversation the export holds in full, a message from this origin between the
   export's first and last message that the export no longer has is deleted, as are messages the
   source marks deleted (tombstones). A conversation with a bad record deletes nothing: what cannot
   be read is never taken for gone.

How a link came to be is kept with it (``records.LinkHow``): "created", "mapped", or "adopted" for
the links an earlier version made by name, which are treated as mapped ones.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..store import names
from ..store.base import AlreadyTaken, InvalidValue, RecordNotFound, Store
from ..store.records import (
    Attachment,
    ExternalKind,
    ExternalLink,
    ImportRow,
    Message,
    Reaction,
    Room,
    RoomType,
    User,
)
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
from .mapping import NO_MAPPING, SourceMapping

__all__ = ["Conversation", "Mirror", "Person", "direct_name", "room_name", "username_of"]

_NOT_USERNAME = re.compile(r"[^\w.-]+")
_DIRECT_SEPARATOR = "__"
_ELLIPSIS = "…"
# Rooms named in the note on deletions an unreadable record spared (rooms), and people in the note on
# usernames taken here (people): the first few say where.
_NAMED_ROOMS = 3
_NAMED_PEOPLE = 3
# Usernames tried for one person (alice, alice-2, ... alice-999) before the run gives up.
_MAX_USERNAME_TRIES = 1000
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
    owned: bool  # the source created it: its members are the source's (else it only gains members)


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
        mapping: SourceMapping = NO_MAPPING,
    ) -> None:
        self.store = store
        self.origin = origin
        self.report = report
        self.mapping = mapping
        self.batcher = Batcher(store, report, batch_size, reconcile=self._reconcile)
        self.user_links = store.external_links(origin, "user")  # person key -> user id, and how
        self.users = {key: link.local_id for key, link in self.user_links.items()}  # person key -> user id
        self._linked = set(self.users.values())  # users some person of this origin already is
        self.usernames: dict[str, str] = {}  # person key -> username
        self.room_links = store.external_links(origin, "room")  # conversation key -> room id, and how
        self.room_ids = {
            key: link.local_id for key, link in self.room_links.items()
        }  # conversation -> room id
        self._linked_rooms = set(self.room_ids.values())  # rooms some conversation of this origin already is
        self.rooms: dict[str, _Room] = {}  # conversation key -> room, for the conversations of this run
        self.deletions = _Deletions()
        self._parents: dict[str, bool] = {}  # thread parents looked up in the store
        self._orphans = 0
        self._cut = 0
        self._taken_here: list[tuple[str, str]] = []  # (wished, given): usernames an account here holds
        self._adopted: set[str] = set()  # person and conversation keys linked by name by an earlier version

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
        link = self._user_link(person)
        user = self.store.get_user(link.local_id) if link is not None else None
        if link is None or user is None:
            user = self._new_user(person, taken)
            link = self._link("user", person.key, ExternalLink(user.id, "created"))
        if link.how == "created":  # the source's own account follows it; another is never changed
            name = person.name.strip()[:MAX_DISPLAY_NAME_LENGTH]
            if name and name != user.name:
                self.store.set_display_name(user.id, name)
            if user.active != person.active:
                self.store.set_active(user.id, person.active)
        elif link.how == "adopted":
            self._adopted.add(f"user:{person.key}")
        self.usernames[person.key] = user.username
        taken.add(fold(user.username))

    def _user_link(self, person: Person) -> ExternalLink | None:
        """How ``person`` is linked: as an earlier run linked them, unless the admin maps them to
        an account (then linked so; a mapping to an account another person of this source is, or
        to no account, is reported and left out)."""
        link = self.user_links.get(person.key)
        wished = self.mapping.user_for(person.key, person.username)
        if wished is None:
            return link
        account = self.store.get_user_by_username(wished)
        if account is None:
            self.report.notes.append(
                f"person {person.username!r} is mapped to {wished!r}, which is no account here"
            )
            return link
        mapped = ExternalLink(account.id, "mapped")
        if link is not None and link.local_id == account.id:
            return link if link.how == "mapped" else self._link("user", person.key, mapped)
        if account.id in self._linked:
            self.report.notes.append(
                f"person {person.username!r} is mapped to {account.username!r}, which another person of "
                "this source is already: the mapping is left out"
            )
            return link
        if link is not None:
            self.report.notes.append(
                f"person {person.username!r} is mapped to {account.username!r} now; what was imported "
                "before stays with the account they had"
            )
        return self._link("user", person.key, mapped)

    def _new_user(self, person: Person, taken: set[str]) -> User:
        """A new account for ``person``: their username, else the first free ``-2``, ``-3``...; an
        account here that has the name is never taken for them (the module docstring says why)."""
        base = username_of(person.username, person.key)
        held_here = False
        for attempt in range(1, _MAX_USERNAME_TRIES):
            candidate = base if attempt == 1 else f"{base[: MAX_USERNAME_LENGTH - 4]}-{attempt}"
            if fold(candidate) in taken:
                continue
            if self.store.get_user_by_username(candidate) is not None:
                held_here = held_here or attempt == 1
                continue
            name = person.name.strip()[:MAX_DISPLAY_NAME_LENGTH] or None
            try:
                roles = ("bot",) if person.bot else ("user",)
                user = self.store.create_user(candidate, name=name, roles=roles)
            except AlreadyTaken:
                continue
            self.report.users_created += 1
            if held_here:
                self._taken_here.append((base, user.username))
            return user
        raise InvalidValue(f"no free username for {base!r} after {_MAX_USERNAME_TRIES:,} tries")

    def _link(self, kind: ExternalKind, key: str, link: ExternalLink) -> ExternalLink:
        """Remember ``link`` for the source's ``key`` (a person or a conversation), in the store and here."""
        self.store.link_external(self.origin, kind, key, link.local_id, how=link.how)
        if kind == "user":
            self.user_links[key] = link
            self.users[key] = link.local_id
            self._linked.add(link.local_id)
        else:
            self.room_links[key] = link
            self.room_ids[key] = link.local_id
            self._linked_rooms.add(link.local_id)
        return link

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
        try:
            link = self._room_link(conversation)
            room = self.store.get_room(link.local_id) if link is not None else None
            if link is None or room is None:
                room = self._create(conversation, name)
                link = ExternalLink(room.id, "created")
            elif room.type != conversation.type:
                raise InvalidValue(f"it is {room.type} here, the source says {conversation.type}")
            elif link.how == "created":
                room = self._update(room, conversation, name)
        except (AlreadyTaken, InvalidValue, RecordNotFound) as error:
            self.report.skip(conversation.where, f"room {name!r} cannot be mirrored: {error}")
            return None
        if self.room_links.get(conversation.key) != link:
            self._link("room", conversation.key, link)
        if link.how == "adopted":
            self._adopted.add(f"room:{conversation.key}")
        mirrored = _Room(room.id, room.name, room.type, conversation, owned=link.how == "created")
        self.rooms[conversation.key] = mirrored
        return mirrored

    def _room_link(self, conversation: Conversation) -> ExternalLink | None:
        """How ``conversation`` is linked: as an earlier run linked it, unless the admin maps it to a
        room here (a mapping to a room another conversation of this source is, or to no room, is
        reported and left out). Written by the caller, once the types agree."""
        link = self.room_links.get(conversation.key)
        wished = self.mapping.room_for(conversation.key, conversation.name)
        if wished is None:
            return link
        room = self.store.get_room_by_name(wished)
        if room is None or fold(room.name) != fold(wished):
            self.report.notes.append(
                f"room {conversation.name!r} is mapped to {wished!r}, which is no room here"
            )
            return link
        if link is not None and link.local_id == room.id:
            return link if link.how == "mapped" else ExternalLink(room.id, "mapped")
        if room.id in self._linked_rooms:
            self.report.notes.append(
                f"room {conversation.name!r} is mapped to {room.name!r}, which another conversation of "
                "this source is already: the mapping is left out"
            )
            return link
        if link is not None:
            self.report.notes.append(
                f"room {conversation.name!r} is mapped to {room.name!r} now; what was imported before "
                "stays in the room it had"
            )
        return ExternalLink(room.id, "mapped")

    def _update(self, room: Room, conversation: Conversation, name: str) -> Room:
        """A room the source created follows it: its topic, display name and name (a renamed
        channel); a name another room has here stays that room's."""
        topic = conversation.topic[:MAX_TOPIC_LENGTH]
        fname = conversation.fname.strip()[:MAX_DISPLAY_NAME_LENGTH]
        if (topic and room.topic != topic) or (fname and room.fname != fname):
            room = self.store.update_room(room.id, fname=fname or None, topic=topic or None)
        wished = [name, *([room_name(conversation.alt_name, name)] if conversation.alt_name else [])]
        if fold(room.name) in {fold(w) for w in wished}:
            return room
        for candidate in wished:
            if self._held(candidate):
                continue  # direct rooms may share a name, but messages find their room by it
            try:
                room = self.store.update_room(room.id, name=candidate, fname=None if fname else candidate)
            except AlreadyTaken:
                continue  # taken: the room keeps the name it has
            self.report.rooms_renamed += 1
            break
        return room

    def _held(self, name: str) -> Room | None:
        """The room here whose name is ``name`` (case-insensitively), if any."""
        existing = self.store.get_room_by_name(name)
        return existing if existing is not None and fold(existing.name) == fold(name) else None

    def _create(self, conversation: Conversation, name: str) -> Room:
        """A new room for ``conversation``: its name, else its alternative name (a second team's
        channel), else its name with a suffix of its id. A room here that has the name is never
        taken for it (the module docstring says why), and the report says which name it got."""
        unique = f"{name[: MAX_ROOM_NAME_LENGTH - 9]}-{hashed_id(conversation.key)[:8]}"
        alternative = [room_name(conversation.alt_name, unique)] if conversation.alt_name else []
        candidates = [name, *alternative, unique]
        held = self._held(name)
        wished = next((c for c in candidates if c == unique or not self._held(c)), unique)
        if held is not None and held.id not in self._linked_rooms:
            self.report.notes.append(
                f"room {name!r} is named {wished!r} here: a room of that name exists here "
                "(--map-rooms maps a conversation to a room)"
            )
        fname = conversation.fname.strip()[:MAX_DISPLAY_NAME_LENGTH] or (name if wished != name else None)
        topic = conversation.topic[:MAX_TOPIC_LENGTH]
        try:
            created = self.store.create_room(conversation.type, wished, fname=fname, topic=topic)
        except AlreadyTaken as clash:
            # Another room has a name that looks like it (``incidents`` and ``іncidents`` with a
            # Cyrillic і): the conversation comes in under a name of its own, not skipped.
            created = self.store.create_room(conversation.type, unique, fname=fname or name, topic=topic)
            self.report.notes.append(f"room {wished!r} is named {unique!r} here: {clash}")
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
            if room.owned:
                added, removed = self.store.set_members(room.id, user_ids)
                self.report.unsubscribed += removed
            else:  # a room this source did not create: nobody here is taken out of it
                added = self.store.add_members(room.id, user_ids)
            self.report.subscribed += added
        self._delete()
        if self._cut:
            self.report.notes.append(
                f"{self._cut:,} messages longer than {MAX_MESSAGE_TEXT_LENGTH:,} characters were cut to fit"
            )
        if self._taken_here:
            self.report.notes.append(self._taken_note())
        if self._adopted:
            people = sum(key.startswith("user:") for key in self._adopted)
            self.report.notes.append(
                f"{people:,} people and {len(self._adopted) - people:,} rooms were matched by name by an "
                "earlier version: this source changes none of them (names, deactivation, members taken out); "
                "--map-users and --map-rooms confirm them"
            )
        if self._orphans:
            self.report.notes.append(
                f"{self._orphans:,} replies whose thread's first message is not in the export were imported "
                "as messages of their room"
            )
        return self.report

    def _taken_note(self) -> str:
        taken = self._taken_here
        named = ", ".join(f"{wished} → {given}" for wished, given in taken[:_NAMED_PEOPLE])
        return (
            f"{len(taken):,} {'person comes' if len(taken) == 1 else 'people come'} in under usernames of "
            f"their own, theirs being an account's here ({named}{', ...' if len(taken) > _NAMED_PEOPLE else ''}): "
            "--map-users maps a person to an account here"
        )

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
            self.rooms[key].name
            for key in d.dirty
            if key in self.rooms and self.rooms[key].conversation.complete
        ]
        if "*" in d.dirty or spared:
            named = ", ".join(spared[:_NAMED_ROOMS]) + (", ..." if len(spared) > _NAMED_ROOMS else "")
            where = (
                "any room" if "*" in d.dirty else f"{len(spared):,} room{'s' * (len(spared) != 1)} ({named})"
            )
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
