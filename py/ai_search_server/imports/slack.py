"""``ai-search import export.zip``: a Slack workspace export (the zip, or its folder).

What the export holds (Slack's "How to read Slack data exports")::

    users.json         people: id, name (the handle), real_name, profile, deleted, is_bot
    channels.json      public channels: id, name, members, topic, purpose   -> rooms of type c
    groups.json        private channels, the same fields                     -> rooms of type p
    dms.json           direct messages: id, members                          -> rooms of type d
    mpims.json         group direct messages: id, name, members              -> rooms of type d
    general/2026-11-02.json   one folder per conversation (a DM's folder is its id), one file a day:
                       a list of messages with type, subtype, user, text, ts, thread_ts, edited,
                       files, reactions, pinned_to, bot_id, user_profile

Each message's id is derived from the workspace, the conversation and its ``ts`` (Slack's own key),
so a second import finds every message again. A reply (``thread_ts`` not its own ``ts``) joins the
thread of its first message. Joins, leaves, topic and name changes and other system subtypes are
counted, not indexed; ``bot_message`` is chatter by a bot user; a ``tombstone`` (a deleted first
message whose replies remain) deletes the stored copy. Text goes through ``markup.slack_text``.

The link back: Slack's permalink ``https://acme.slack.com/archives/C024BE91L/p1355517523000005``
needs the workspace's address, which the export does not hold; ``--source-url https://acme.slack.com``
gives it. Without it messages link to their channel in Slack's web client (by team and channel id).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from ..store.base import Store
from ..store.records import Attachment, Reaction, RoomType
from ..store.rules import MAX_ATTACHMENT_TEXT_LENGTH, MAX_ATTACHMENTS
from .batches import DEFAULT_OPTIONS, ImportOptions, ImportReport, hashed_id, progress_bar
from .bundle import Bundle, BundleError
from .fields import first_text, obj, seq, text
from .mapping import SourceMapping
from .markup import slack_text
from .mirror import Conversation, Mirror, Person

__all__ = ["CHATTER_SUBTYPES", "import_slack"]

# Subtypes that are somebody saying something; every other subtype (channel_join, channel_leave,
# channel_topic, channel_name, pinned_item, bot_add...) is an event, counted and not indexed.
CHATTER_SUBTYPES = frozenset(
    {
        None,
        "bot_message",
        "me_message",
        "file_share",
        "thread_broadcast",
        "reply_broadcast",
        "slackbot_response",
    }
)
_LISTS: tuple[tuple[str, RoomType], ...] = (
    ("channels.json", "c"),
    ("groups.json", "p"),
    ("dms.json", "d"),
    ("mpims.json", "d"),
)
_DAY_FILE = re.compile(r"(?P<folder>.+)/(?P<day>\d{4}-\d{2}-\d{2})\.json")
# Users read before the workspace's id is taken from the first with a team_id (every user of a Slack
# export has one), so that users.json is streamed rather than held to find it.
_TEAM_FROM_USERS = 1000
_SKIN_TONE = re.compile(r"::skin-tone-\d+$")


class _Skip(ValueError):
    """Why one record cannot be imported."""


def _ts(value: object, what: str = "ts") -> datetime:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise _Skip(f"{what} must be Slack's seconds.micros string, not {value!r:.40}")
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (ValueError, OverflowError, OSError):
        raise _Skip(f"{what} is not a time: {value!r:.40}") from None


def _entries(bundle: Bundle, name: str, report: ImportReport) -> Iterator[Any]:
    """The entries of one of the export's lists, read one at a time; one that cannot be read is
    reported (after the entries before the fault)."""
    if name not in bundle:
        return
    try:
        yield from bundle.items(name, shape="must hold a JSON list")
    except BundleError as error:
        report.lines_read += 1
        report.skip(name, error.reason)


def _users(bundle: Bundle, report: ImportReport) -> Iterator[Any]:
    """users.json's entries, or org_users.json's when it has none (an Enterprise Grid export)."""
    found = False
    for entry in _entries(bundle, "users.json", report):
        found = True
        yield entry
    if not found:
        yield from _entries(bundle, "org_users.json", report)


class _SlackExport:
    """One import run over one export (the module docstring says what it reads)."""

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
        users = _users(bundle, report)
        first = list(itertools.islice(users, _TEAM_FROM_USERS))
        self.team = next(
            (u["team_id"] for u in first if isinstance(u, dict) and isinstance(u.get("team_id"), str)), ""
        )
        self.mirror = Mirror(
            store,
            f"slack:{self.team}" if self.team else "slack",
            report,
            batch_size=batch_size,
            mapping=mapping,
        )
        self.base_url = base_url.rstrip("/") if base_url else None
        self.bots: dict[str, str] = {}  # bot id -> the user id of its bot user
        self.people(itertools.chain(first, users))
        self.channel_names: dict[str, str] = {}
        self.folders: dict[str, str] = {}  # folder name -> conversation key
        self.conversations()

    # -- people and conversations ----------------------------------------------------------------

    def people(self, users: Iterable[Any]) -> None:
        self.mirror.people(self._persons(users))

    def _persons(self, users: Iterable[Any]) -> Iterator[Person]:
        for n, user in enumerate(users, start=1):
            if not isinstance(user, dict) or not isinstance(user.get("id"), str) or not user["id"]:
                self.report.lines_read += 1
                self.report.skip(f"users.json entry {n}", "a user needs an id")
                continue
            profile = obj(user.get("profile"))
            name = first_text(user.get("real_name"), profile.get("real_name"), profile.get("display_name"))
            handle = text(user.get("name")) or user["id"]
            if isinstance(profile.get("bot_id"), str):
                self.bots[profile["bot_id"]] = user["id"]
            yield Person(
                user["id"],
                handle,
                name,
                bot=bool(user.get("is_bot")) or user["id"] == "USLACKBOT",
                active=not user.get("deleted"),
            )

    def conversations(self) -> None:
        for list_name, room_type in _LISTS:
            for n, entry in enumerate(_entries(self.bundle, list_name, self.report), start=1):
                where = f"{list_name} entry {n}"
                if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
                    self.mirror.reject(where, "a conversation needs an id", "conversations")
                    continue
                key = entry["id"]
                members = entry.get("members")
                member_keys = (
                    tuple(m for m in members if isinstance(m, str)) if isinstance(members, list) else None
                )
                name = text(entry.get("name"))
                topic = next(
                    (
                        t["value"]
                        for t in (entry.get("topic"), entry.get("purpose"))
                        if isinstance(t, dict) and isinstance(t.get("value"), str) and t["value"]
                    ),
                    "",
                )
                for person in member_keys or ():
                    if self.mirror.username(person) is None:
                        self.mirror.person(Person(person, person))
                room = self.mirror.conversation(
                    Conversation(
                        key,
                        room_type,
                        "" if room_type == "d" else name,
                        where,
                        topic=topic,
                        members=member_keys,
                    )
                )
                if room is not None:
                    self.channel_names[key] = room.name
                folder = name if name and list_name != "dms.json" else key
                self.folders[folder] = key
                self.folders.setdefault(key, key)

    # -- messages --------------------------------------------------------------------------------

    def day_files(self) -> Iterator[tuple[str, str, str]]:
        """(file, conversation key, day) of every day file, by conversation then day; a folder no
        list names is reported once."""
        unknown: set[str] = set()
        found: list[tuple[str, str, str]] = []
        for name in self.bundle.names():
            match = _DAY_FILE.fullmatch(name)
            if match is None:
                continue
            key = self.folders.get(match["folder"])
            if key is None:
                if match["folder"] not in unknown:
                    unknown.add(match["folder"])
                    self.mirror.reject(
                        match["folder"] + "/",
                        "no channels.json, groups.json, dms.json or mpims.json entry names this folder",
                        f"folder:{match['folder']}",  # no conversation's key: the others still delete
                    )
                continue
            found.append((name, key, match["day"]))
        yield from sorted(found, key=lambda f: (f[1], f[2]))

    def run(self, progress: bool) -> ImportReport:
        files = list(self.day_files())
        with progress_bar(
            self.bundle.label.rsplit("/", 1)[-1],
            sum(self.bundle.size(f) for f, _, _ in files),
            enabled=progress,
        ) as advance:
            for name, key, _day in files:
                if self.bundle.stopped:
                    break  # the archive went past a limit: nothing more is read (its damage says so)
                self.day(name, key)
                advance(self.bundle.size(name))
        if self.base_url is None:
            self.report.notes.append(
                "messages link to their channel in Slack; give --source-url https://YOUR-WORKSPACE.slack.com "
                "to link each message"
            )
        if self.bundle.damage:
            self.mirror.reject(self.bundle.label, self.bundle.damage)
        return self.mirror.finish()

    def day(self, name: str, key: str) -> None:
        """One day file's messages, read one at a time: those before a fault in the file are imported,
        and the fault is reported (the conversation then deletes nothing)."""
        messages = self.bundle.items(name, shape="a day file must hold a JSON list of messages")
        try:
            for n, message in enumerate(messages, start=1):
                where = f"{name} message {n}"
                try:
                    self.message(where, key, message)
                except _Skip as error:
                    ts = message.get("ts") if isinstance(message, dict) else None
                    self.mirror.reject(
                        where, str(error), key, message_id=self._id(key, ts) if isinstance(ts, str) else None
                    )
        except BundleError as error:
            self.mirror.reject(name, error.reason, key)

    def message(self, where: str, key: str, message: object) -> None:
        if not isinstance(message, dict):
            raise _Skip("a message must be a JSON object")
        ts_text = message.get("ts")
        ts = _ts(ts_text)
        subtype = message.get("subtype")
        if subtype == "tombstone":
            self.mirror.tombstone(self._id(key, str(ts_text)), ts)
            return
        if message.get("type", "message") != "message" or subtype not in CHATTER_SUBTYPES:
            self.mirror.ignore(ts)
            return
        author = self._author(message)
        text = self._text(message)
        thread = message.get("thread_ts")
        tmid = self._id(key, thread) if isinstance(thread, str) and thread != ts_text else None
        edited = message.get("edited")
        pinned = message.get("pinned_to")
        self.mirror.message(
            where,
            key,
            username=author,
            ts=ts,
            text=text,
            message_id=self._id(key, str(ts_text)),
            tmid=tmid,
            attachments=self._files(message.get("files")),
            reactions=self._reactions(message.get("reactions")),
            edited_at=_ts(edited.get("ts"), "edited.ts")
            if isinstance(edited, dict) and edited.get("ts")
            else None,
            pinned=isinstance(pinned, list) and key in pinned,
            source_url=self._link(key, str(ts_text), thread if tmid else None),
        )

    def _id(self, key: str, ts: str) -> str:
        return hashed_id("slack", self.team, key, ts)

    def _author(self, message: Mapping[str, Any]) -> str:
        user = message.get("user")
        if isinstance(user, str) and user:
            known = self.mirror.username(user)
            if known is not None:
                return known
            profile = obj(message.get("user_profile"))
            return self.mirror.person(
                Person(user, text(profile.get("name")) or user, text(profile.get("real_name")))
            )
        bot = message.get("bot_id") or message.get("username")
        if isinstance(bot, str) and (known := self.mirror.username(self.bots.get(bot, ""))):
            return known
        if isinstance(bot, str) and bot:
            handle = first_text(message.get("username"), obj(message.get("bot_profile")).get("name")) or bot
            return self.mirror.person(Person(f"bot:{bot}", handle, handle, bot=True))
        raise _Skip("a message needs a user or a bot_id")

    def _text(self, message: Mapping[str, Any]) -> str:
        """The message's text; a bot's attachments add theirs; blocks or file names stand in for none."""
        users, channels = self.mirror.usernames, self.channel_names
        parts = [text(message.get("text"))]
        if not parts[0].strip():
            parts += _block_texts(message.get("blocks"))
        for attachment in seq(message.get("attachments")):
            attachment = obj(attachment)
            pieces = [text(attachment.get(k)) for k in ("pretext", "title", "text")]
            parts += [p for p in pieces if p.strip()] or [text(attachment.get("fallback"))]
        body = "\n".join(slack_text(p, users, channels) for p in parts if p.strip()).strip()
        if not body:
            body = "\n".join(
                first_text(obj(f).get("title"), obj(f).get("name")) for f in seq(message.get("files"))
            ).strip()
        if not body:
            raise _Skip("a message without text, blocks, attachments or files")
        return body

    def _files(self, files: object) -> tuple[Attachment, ...]:
        found = []
        for file in files if isinstance(files, list) else ():
            if (
                not isinstance(file, dict)
                or not isinstance(file.get("name"), str)
                or not file["name"].strip()
            ):
                continue  # a file Slack hid (hidden_by_limit) or deleted: nothing to name
            size = file.get("size")
            found.append(
                Attachment(
                    file["name"][:MAX_ATTACHMENT_TEXT_LENGTH],
                    str(file.get("title") or "")[:MAX_ATTACHMENT_TEXT_LENGTH],
                    "",
                    str(file.get("mimetype") or "")[:MAX_ATTACHMENT_TEXT_LENGTH],
                    size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else 0,
                )
            )
        return tuple(found[:MAX_ATTACHMENTS])

    def _reactions(self, reactions: object) -> tuple[Reaction, ...]:
        found: dict[str, list[str]] = {}
        for reaction in reactions if isinstance(reactions, list) else ():
            if not isinstance(reaction, dict) or not isinstance(reaction.get("name"), str):
                continue
            emoji = f":{_SKIN_TONE.sub('', reaction['name'])}:"
            users = [self.mirror.username(u) for u in reaction.get("users") or () if isinstance(u, str)]
            found.setdefault(emoji, []).extend(u for u in users if u)
        return tuple(Reaction(emoji, tuple(dict.fromkeys(users))) for emoji, users in found.items() if users)

    def _link(self, key: str, ts: str, thread: str | None) -> str | None:
        if self.base_url is None:
            return f"https://app.slack.com/client/{self.team}/{key}" if self.team else None
        link = f"{self.base_url}/archives/{key}/p{ts.replace('.', '')}"
        return f"{link}?thread_ts={thread}&cid={key}" if thread else link


def _block_texts(blocks: object) -> Iterator[str]:
    """The ``text`` strings of Slack's rich-text blocks, for messages that carry no plain text."""
    stack = [blocks]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("text", "link") and isinstance(node.get("text"), str):
                yield node["text"]
            stack.extend(reversed([v for v in node.values() if isinstance(v, dict | list)]))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def import_slack(store: Store, bundle: Bundle, options: ImportOptions = DEFAULT_OPTIONS) -> ImportReport:
    """Imports the Slack export in ``bundle`` (the module docstring says how).

    Raises:
        StorageFailure: the database failed; what was imported stays, and importing again completes it.
    """
    report = ImportReport(bundle.label, unit="records")
    export = _SlackExport(store, bundle, report, options.source_url, options.batch_size, options.mapping)
    return export.run(options.progress)
