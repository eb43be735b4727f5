"""``ai-search import zulip-export.tar.gz`` (or its folder): a Zulip realm export.

What the export holds (Zulip's "Export and import" and its ``zerver/lib/export.py``)::

    realm.json          tables as lists of rows: zerver_realm, zerver_userprofile (id, email,
                        delivery_email, full_name, is_bot, is_active), zerver_userprofile_crossrealm
                        (the system bots), zerver_stream (id, name, description, invite_only),
                        zerver_recipient (id, type 1 person | 2 stream | 3 group DM, type_id),
                        zerver_subscription (user_profile, recipient, active), zerver_huddle (or
                        zerver_directmessagegroup), zerver_reaction (user_profile, message, emoji_name)
    messages-000001.json  {"zerver_message": [id, sender, recipient, subject (the topic), content,
                        date_sent, last_edit_time, ...]}, in id order, a thousand or so a file
    attachment.json     {"zerver_attachment": [file_name, size, messages]}

Streams become rooms of type c (``invite_only``: p), group DMs and one-to-one DMs rooms of type d,
with the stream's active subscribers as members. A topic becomes a thread: its first message in the
export is the thread's first message (its text starts with the topic's name, so the thread has its
title), and the later ones are replies. Users have no usernames in Zulip; each gets the local part
of their email (made unique). Markdown goes through ``markup.zulip_text``.

The link back: ``--source-url https://chat.example.com`` (the organisation's URL, which the export
does not hold) links each message to ``/#narrow/channel/<id>-<name>/topic/<topic>/near/<id>``.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from ..store.base import Store
from ..store.records import Attachment, Reaction
from ..store.rules import MAX_ATTACHMENT_TEXT_LENGTH, MAX_ATTACHMENTS
from .batches import DEFAULT_OPTIONS, ImportOptions, ImportReport, hashed_id, progress_bar
from .bundle import Bundle, BundleError
from .fields import first_text, obj, seq, text
from .mapping import SourceMapping
from .markup import zulip_text
from .mirror import Conversation, Mirror, Person

__all__ = ["import_zulip"]

_MESSAGES_FILE = re.compile(r"messages-(\d+)\.json")
_PERSONAL, _STREAM, _GROUP = 1, 2, 3
# Zulip's "general chat": messages without a topic, which form no thread.
_NO_TOPICS = frozenset({"", "(no topic)"})


class _Skip(ValueError):
    """Why one record cannot be imported."""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(value: object, name: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Skip(f"field {name!r} must be seconds since 1970")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise _Skip(f"field {name!r} is out of range") from None


def _rows(realm: dict[str, Any], *tables: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for table in tables:
        for n, row in enumerate(seq(realm.get(table)), start=1):
            if isinstance(row, dict):
                yield n, row


class _ZulipExport:
    def __init__(
        self,
        store: Store,
        bundle: Bundle,
        report: ImportReport,
        base_url: str | None,
        batch_size: int,
        mapping: SourceMapping,
    ):
        self.bundle = bundle
        self.report = report
        self.base_url = base_url.rstrip("/") if base_url else None
        realm = self._realm()
        realm_row = next((row for _, row in _rows(realm, "zerver_realm")), {})
        self.realm_key = first_text(realm_row.get("string_id"), str(realm_row.get("id", ""))) or "realm"
        self.mirror = Mirror(store, f"zulip:{self.realm_key}", report, batch_size=batch_size, mapping=mapping)
        self.recipients = {
            row["id"]: (row.get("type"), row.get("type_id"))
            for _, row in _rows(realm, "zerver_recipient")
            if _int(row.get("id")) is not None
        }
        self.people(realm)
        self.streams: dict[int, dict[str, Any]] = {}
        self.conversations(realm)
        self.reactions: dict[int, dict[str, list[str]]] = defaultdict(dict)
        for _, row in _rows(realm, "zerver_reaction"):
            username = self.mirror.username(str(row.get("user_profile")))
            message = _int(row.get("message"))
            if username and message is not None and text(row.get("emoji_name")):
                self.reactions[message].setdefault(f":{row['emoji_name']}:", []).append(username)
        self.attachments = self._attachments()
        self.topics: dict[
            tuple[int, str], str
        ] = {}  # (stream, topic folded) -> the thread's first message id

    def _realm(self) -> dict[str, Any]:
        try:
            realm = self.bundle.read_json("realm.json")
        except BundleError as error:
            raise _Unreadable(error.reason) from None
        if not isinstance(realm, dict):
            raise _Unreadable("must hold a JSON object of tables")
        return realm

    # -- people and conversations ----------------------------------------------------------------

    def people(self, realm: dict[str, Any]) -> None:
        persons: list[Person] = []
        self.by_id: dict[int, str] = {}
        for n, user in _rows(
            realm, "zerver_userprofile", "zerver_userprofile_mirrordummy", "zerver_userprofile_crossrealm"
        ):
            user_id = _int(user.get("id"))
            if user_id is None:
                self.mirror.reject(f"realm.json user {n}", "a user needs a numeric id", "people")
                continue
            email = first_text(user.get("delivery_email"), user.get("email"))
            name = text(user.get("full_name"))
            crossrealm = "realm" not in user  # the system bots carry no realm
            persons.append(
                Person(
                    str(user_id),
                    email.split("@", 1)[0] or name or f"user{user_id}",
                    name or email,
                    bot=bool(user.get("is_bot")) or crossrealm,
                    active=user.get("is_active", True) is not False,
                )
            )
        self.mirror.people(persons)
        self.by_id = {
            int(p.key): self.mirror.usernames[p.key] for p in persons if p.key in self.mirror.usernames
        }
        self.by_name = {
            p.name: self.mirror.usernames[p.key] for p in persons if p.name and p.key in self.mirror.usernames
        }

    def conversations(self, realm: dict[str, Any]) -> None:
        members: dict[int, list[str]] = defaultdict(list)  # recipient id -> person keys
        for _, row in _rows(realm, "zerver_subscription"):
            recipient = _int(row.get("recipient"))
            if recipient is not None and row.get("active", True) is not False:
                members[recipient].append(str(row.get("user_profile")))
        self.stream_recipient: dict[int, int] = {}  # stream id -> recipient id
        for recipient_id, (kind, type_id) in self.recipients.items():
            stream_key = _int(type_id)
            if kind == _STREAM and stream_key is not None:
                self.stream_recipient[stream_key] = recipient_id
        self.members = members
        for n, stream in _rows(realm, "zerver_stream"):
            stream_id = _int(stream.get("id"))
            if stream_id is None or not text(stream.get("name")).strip():
                self.mirror.reject(f"realm.json stream {n}", "a stream needs an id and a name", "streams")
                continue
            self.streams[stream_id] = stream
            recipient = self.stream_recipient.get(stream_id)
            self.mirror.conversation(
                Conversation(
                    f"stream:{stream_id}",
                    "p" if stream.get("invite_only") else "c",
                    stream["name"],
                    f"realm.json stream {n}",
                    topic=text(stream.get("description")),
                    members=tuple(members.get(recipient, ())) if recipient is not None else None,
                    complete=False,  # until a message of it is read
                )
            )

    def conversation_of(self, where: str, sender: int, recipient: int) -> str:
        kind, type_id = self.recipients.get(recipient, (None, None))
        if kind == _STREAM:
            key = f"stream:{type_id}"
        elif kind == _GROUP:
            key = f"group:{type_id}"
            if self.mirror.room(key) is None:
                people = tuple(self.members.get(recipient, ())) or None
                self.mirror.conversation(Conversation(key, "d", "", where, members=people))
        elif kind == _PERSONAL:
            pair = tuple(sorted({str(sender), str(type_id)}))
            key = "dm:" + ",".join(pair)
            if self.mirror.room(key) is None:
                self.mirror.conversation(Conversation(key, "d", "", where, members=pair))
        else:
            raise _Skip(f"recipient {recipient} is not in realm.json")
        room = self.mirror.room(key)
        if room is not None and not room.conversation.complete:
            room.conversation = _complete(room.conversation)
        return key

    # -- messages --------------------------------------------------------------------------------

    def _attachments(self) -> dict[int, list[Attachment]]:
        found: dict[int, list[Attachment]] = defaultdict(list)
        if "attachment.json" not in self.bundle:
            return found
        try:
            for row in self.bundle.items("attachment.json", key="zerver_attachment", shape=None):
                row = obj(row)
                name = text(row.get("file_name")).strip()[:MAX_ATTACHMENT_TEXT_LENGTH]
                size = _int(row.get("size")) or 0
                for message in seq(row.get("messages")):
                    if name and _int(message) is not None:
                        found[message].append(Attachment(name, size=max(0, size)))
        except BundleError as error:
            self.mirror.reject("attachment.json", error.reason, "attachments")
        return found

    def files(self) -> list[str]:
        found = [(int(m[1]), name) for name in self.bundle.names() if (m := _MESSAGES_FILE.fullmatch(name))]
        return [name for _, name in sorted(found)]

    def run(self, progress: bool) -> ImportReport:
        files = self.files()
        with progress_bar(
            self.bundle.label.rsplit("/", 1)[-1], self.bundle.total_size(files), enabled=progress
        ) as advance:
            for name in files:
                if self.bundle.stopped:
                    break  # the archive went past a limit: nothing more is read (its damage says so)
                self.messages_file(name)
                advance(self.bundle.size(name))
        if self.base_url is None:
            self.report.notes.append("give --source-url https://YOUR-ZULIP to link messages back to Zulip")
        if self.bundle.damage:
            self.mirror.reject(self.bundle.label, self.bundle.damage)
        return self.mirror.finish()

    def messages_file(self, name: str) -> None:
        """One messages file, read a message at a time (the file is never held whole): those before a
        fault in it are imported, and the fault is reported."""
        messages = self.bundle.items(name, key="zerver_message", shape='must hold {"zerver_message": [...]}')
        try:
            for n, message in enumerate(messages, start=1):
                self.one(f"{name} message {n}", message)
        except BundleError as error:
            self.mirror.reject(name, error.reason)

    def one(self, where: str, message: object) -> None:
        key = None
        try:
            if not isinstance(message, dict):
                raise _Skip("a message must be a JSON object")
            sender, recipient, message_id = (_int(message.get(k)) for k in ("sender", "recipient", "id"))
            if sender is None or recipient is None or message_id is None:
                raise _Skip("a message needs numeric id, sender and recipient")
            key = self.conversation_of(where, sender, recipient)
            self.message(where, key, message, message_id, sender)
        except _Skip as error:
            known = _int(message.get("id")) if isinstance(message, dict) else None
            self.mirror.reject(where, str(error), key, message_id=None if known is None else self._id(known))

    def message(self, where: str, key: str, message: dict[str, Any], message_id: int, sender: int) -> None:
        sent = _time(message.get("date_sent", message.get("pub_date")), "date_sent")
        our_id = self._id(message_id)
        topic = first_text(message.get("subject"), message.get("topic")).strip()
        stream_id = int(key.removeprefix("stream:")) if key.startswith("stream:") else None
        tmid = None
        body = zulip_text(text(message.get("content")), self.by_id, self.by_name)
        if stream_id is not None and topic.lower() not in _NO_TOPICS:
            root = self.topics.setdefault((stream_id, topic.casefold()), our_id)
            if root == our_id:
                body = f"{topic}\n{body}".strip()
            else:
                tmid = root
        attachments = tuple(self.attachments.get(message_id, ())[:MAX_ATTACHMENTS])
        if not body.strip():
            body = "\n".join(a.name for a in attachments)
        if not body.strip():
            raise _Skip("a message without content or files")
        edited = message.get("last_edit_time")
        author = self.by_id.get(sender) or self.mirror.person(Person(str(sender), f"user{sender}"))
        self.mirror.message(
            where,
            key,
            username=author,
            ts=sent,
            text=body,
            message_id=our_id,
            tmid=tmid,
            attachments=attachments,
            reactions=tuple(
                Reaction(e, tuple(dict.fromkeys(u))) for e, u in self.reactions.get(message_id, {}).items()
            ),
            edited_at=_time(edited, "last_edit_time") if edited else None,
            source_url=self._link(stream_id, topic, message_id),
        )

    def _id(self, message_id: int) -> str:
        return hashed_id("zulip", self.realm_key, str(message_id))

    def _link(self, stream_id: int | None, topic: str, message_id: int) -> str | None:
        if self.base_url is None:
            return None
        if stream_id is None:
            return f"{self.base_url}/#narrow/near/{message_id}"
        slug = _encode(f"{stream_id}-{text(self.streams.get(stream_id, {}).get('name'))}")
        if not topic:
            return f"{self.base_url}/#narrow/channel/{slug}/near/{message_id}"
        return f"{self.base_url}/#narrow/channel/{slug}/topic/{_encode(topic)}/near/{message_id}"


def _encode(part: str) -> str:
    """Zulip's hash encoding of a narrow's operand: percent-encoding with '.' for '%'."""
    return quote(part, safe="").replace(".", "%2E").replace("%", ".")


def _complete(conversation: Conversation) -> Conversation:
    return dataclasses.replace(conversation, complete=True)


class _Unreadable(Exception):
    """realm.json cannot be read: nothing can be imported."""


def import_zulip(store: Store, bundle: Bundle, options: ImportOptions = DEFAULT_OPTIONS) -> ImportReport:
    """Imports the Zulip realm export in ``bundle`` (the module docstring says how).

    Raises:
        BundleError: realm.json is missing or unreadable, so nothing can be imported.
        StorageFailure: the database failed; what was imported stays, and importing again completes it.
    """
    report = ImportReport(bundle.label, unit="records")
    try:
        export = _ZulipExport(store, bundle, report, options.source_url, options.batch_size, options.mapping)
    except _Unreadable as error:
        raise BundleError("realm.json", str(error)) from None
    return export.run(options.progress)
