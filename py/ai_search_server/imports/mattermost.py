"""``ai-search import export.jsonl`` (or the zip ``mmctl export`` makes): a Mattermost bulk export.

One JSON object a line, in this order (Mattermost's "Bulk loading data format")::

    {"type": "version", "version": 1, "info": {...}}                first, once
    {"type": "team", "team": {"name", "display_name", "type"}}
    {"type": "channel", "channel": {"team", "name", "display_name", "type": "O"|"P", "header", "purpose"}}
    {"type": "user", "user": {"username", "first_name", "last_name", "nickname", "delete_at",
                              "teams": [{"name", "channels": [{"name"}]}]}}   memberships live here
    {"type": "bot", "bot": {"username", "display_name", "delete_at"}}
    {"type": "post", "post": {"team", "channel", "user", "type", "message", "create_at", "edit_at",
                              "reactions": [{"user", "emoji_name"}], "replies": [...], "attachments":
                              [{"path"}], "is_pinned", "props"}}
    {"type": "direct_channel", "direct_channel": {"members": [usernames], "header"}}
    {"type": "direct_post", "direct_post": {"channel_members", "user", "message", "create_at", ...}}

Channels (``O`` public, ``P`` private) become rooms of type c and p, direct and group messages rooms
of type d; a post's ``replies`` are its thread. The export has no post ids, so a message's id is
derived from its channel, author and ``create_at`` (the key Mattermost's own importer matches on),
and a second import finds it again; ``edit_at`` newer than the stored edit applies the edit. Posts
of a ``system_*`` type (joins, leaves, header changes) are counted, not indexed. Attachments keep
their file name (no bytes). Markdown goes through ``markup.mattermost_text``.

The link back: the export names neither the site nor post ids, so with ``--source-url
https://chat.example.com`` messages link to their channel (``/team/channels/name``); without it,
to nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import quote

from ..store.base import Store
from ..store.records import Attachment, Reaction
from ..store.rules import MAX_ATTACHMENT_TEXT_LENGTH, MAX_ATTACHMENTS
from .batches import DEFAULT_OPTIONS, ImportOptions, ImportReport, hashed_id, progress_bar
from .bundle import Bundle, BundleError
from .fields import obj, seq, text
from .lines import capped_lines
from .mapping import SourceMapping
from .markup import mattermost_text
from .mirror import Conversation, Mirror, Person

__all__ = ["MAX_LINE_BYTES", "import_mattermost", "import_mattermost_file"]

# Bytes of one line: a post with a thousand replies inlined is a few hundred kilobytes.
MAX_LINE_BYTES = 64 * 1024 * 1024
ORIGIN = "mattermost"


class _Skip(ValueError):
    """Why one record cannot be imported."""


def _string(record: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = record.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _Skip(f"field {name!r} must be a non-empty string")
    return value


def _ms(value: object, name: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Skip(f"field {name!r} must be milliseconds since 1970")
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        raise _Skip(f"field {name!r} is out of range") from None


class _MattermostExport:
    def __init__(
        self,
        store: Store,
        report: ImportReport,
        base_url: str | None,
        batch_size: int,
        mapping: SourceMapping,
    ) -> None:
        self.report = report
        self.mirror = Mirror(store, ORIGIN, report, batch_size=batch_size, mapping=mapping)
        self.base_url = base_url.rstrip("/") if base_url else None
        self.teams: list[str] = []
        self.channels: dict[str, tuple[str, dict[str, Any]]] = {}  # key -> (where, channel)
        self.members: dict[str, list[str]] = {}  # channel key -> usernames
        self.persons: list[Person] = []
        self.settled = False

    # -- the lines -------------------------------------------------------------------------------

    def line(self, where: str, record: object) -> None:
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise _Skip("a line must be an object with a 'type'")
        kind = record["type"]
        body = record.get(kind)
        if kind == "version":
            return self.mirror.ignore()
        if not isinstance(body, dict):
            raise _Skip(f"a {kind!r} line needs a {kind!r} object")
        handler = _HANDLERS.get(kind)
        if handler is None:
            return self.mirror.ignore()  # scheme, emoji, role: nothing to search
        handler(self, where, body)

    def team(self, where: str, team: dict[str, Any]) -> None:
        self.mirror.ignore()
        self.teams.append(_string(team, "name"))

    def channel(self, where: str, channel: dict[str, Any]) -> None:
        self.mirror.ignore()
        key = f"{_string(channel, 'team')}/{_string(channel, 'name')}"
        if channel.get("type") not in ("O", "P"):
            raise _Skip("a channel's type must be O (public) or P (private)")
        self.channels[key] = (where, channel)

    def user(self, where: str, user: dict[str, Any], *, bot: bool = False) -> None:
        self.mirror.ignore()
        username = _string(user, "username")
        if bot:
            name = _string(user, "display_name", required=False)
        else:
            parts = [_string(user, k, required=False) for k in ("first_name", "last_name")]
            name = " ".join(p for p in parts if p).strip() or _string(user, "nickname", required=False)
        deleted = user.get("delete_at")
        self.persons.append(Person(username, username, name, bot=bot, active=not deleted))
        for team in user.get("teams") or ():
            if isinstance(team, dict) and isinstance(team.get("name"), str):
                for channel in team.get("channels") or ():
                    if isinstance(channel, dict) and isinstance(channel.get("name"), str):
                        self.members.setdefault(f"{team['name']}/{channel['name']}", []).append(username)

    def bot(self, where: str, bot: dict[str, Any]) -> None:
        self.user(where, bot, bot=True)

    def settle(self) -> None:
        """Once the people and channels are read (they come before any post): mirror them."""
        if self.settled:
            return
        self.settled = True
        self.mirror.people(self.persons)
        names = [channel["name"] for _, channel in self.channels.values()]
        for key, (where, channel) in self.channels.items():
            team = channel["team"]
            display = text(channel.get("display_name"))
            topic = next(
                (channel[k] for k in ("header", "purpose") if isinstance(channel.get(k), str) and channel[k]),
                "",
            )
            self.mirror.conversation(
                Conversation(
                    key,
                    "c" if channel["type"] == "O" else "p",
                    channel["name"],
                    where,
                    fname=display,
                    topic=topic,
                    members=tuple(self.members.get(key, ())),
                    alt_name=f"{team}-{channel['name']}" if names.count(channel["name"]) > 1 else "",
                )
            )

    def direct_channel(self, where: str, direct: dict[str, Any]) -> None:
        self.settle()
        self.mirror.ignore()
        self._direct(where, direct.get("members"))

    def _direct(self, where: str, members: object) -> str:
        if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
            raise _Skip("a direct channel's members must be a list of usernames")
        key = "dm:" + ",".join(sorted(set(members)))
        if self.mirror.room(key) is None:
            for member in members:
                self.mirror.person(Person(member, member))
            self.mirror.conversation(Conversation(key, "d", "", where, members=tuple(sorted(set(members)))))
        return key

    def post(self, where: str, post: dict[str, Any], *, direct: bool = False) -> None:
        self.settle()
        if direct:
            key = self._direct(where, post.get("channel_members"))
            team, channel = (self.teams[0] if self.teams else ""), key
        else:
            team, channel = _string(post, "team"), _string(post, "channel")
            key = f"{team}/{channel}"
            if key not in self.channels:
                raise _Skip(f"channel {key!r} is not in the export")
        root = self._id(key, post)
        try:
            self._message(where, key, team, channel, post, None)
        except _Skip as error:
            self.mirror.reject(where, str(error), key)
        for n, reply in enumerate(post.get("replies") or (), start=1):
            try:
                if not isinstance(reply, dict):
                    raise _Skip("a reply must be an object")
                self._message(f"{where} reply {n}", key, team, channel, reply, root)
            except _Skip as error:
                self.mirror.reject(f"{where} reply {n}", str(error), key)

    def direct_post(self, where: str, post: dict[str, Any]) -> None:
        self.post(where, post, direct=True)

    # -- one message -----------------------------------------------------------------------------

    @staticmethod
    def _id(key: str, post: dict[str, Any]) -> str:
        return hashed_id(ORIGIN, key, str(post.get("user")), str(post.get("create_at")))

    def _message(
        self, where: str, key: str, team: str, channel: str, post: dict[str, Any], root: str | None
    ) -> None:
        user = _string(post, "user")
        created = _ms(post.get("create_at"), "create_at")
        message_id = self._id(key, post)
        kind = post.get("type") or ""
        if isinstance(kind, str) and kind.startswith("system_"):
            self.mirror.ignore(created)
            return
        text = self._text(post)
        edit_at = post.get("edit_at")
        self.mirror.message(
            where,
            key,
            username=self.mirror.person(Person(user, user)),
            ts=created,
            text=text,
            message_id=message_id,
            tmid=root,
            attachments=_attachments(post.get("attachments")),
            reactions=self._reactions(post.get("reactions")),
            edited_at=_ms(edit_at, "edit_at") if edit_at else None,
            pinned=post.get("is_pinned") is True,
            source_url=self._link(team, channel, key),
        )

    def _text(self, post: dict[str, Any]) -> str:
        """The post's message; an integration's attachments add theirs; file names stand in for none."""
        parts = [text(post.get("message"))]
        for attachment in seq(obj(post.get("props")).get("attachments")):
            attachment = obj(attachment)
            pieces = [text(attachment.get(k)) for k in ("pretext", "title", "text")]
            parts += [p for p in pieces if p.strip()] or [text(attachment.get("fallback"))]
        body = "\n".join(mattermost_text(p) for p in parts if p.strip()).strip()
        if not body:
            body = "\n".join(a.name for a in _attachments(post.get("attachments")))
        if not body:
            raise _Skip("a post without a message, attachments or files")
        return body

    def _reactions(self, reactions: object) -> tuple[Reaction, ...]:
        found: dict[str, list[str]] = {}
        for reaction in reactions if isinstance(reactions, list) else ():
            if (
                isinstance(reaction, dict)
                and isinstance(reaction.get("emoji_name"), str)
                and isinstance(reaction.get("user"), str)
            ):
                found.setdefault(f":{reaction['emoji_name']}:", []).append(
                    self.mirror.person(Person(reaction["user"], reaction["user"]))
                )
        return tuple(Reaction(emoji, tuple(dict.fromkeys(users))) for emoji, users in found.items())

    def _link(self, team: str, channel: str, key: str) -> str | None:
        # A direct channel's address is relative to who opens it (/team/messages/@other): none fits all.
        if self.base_url is None or not team or key.startswith("dm:"):
            return None
        return f"{self.base_url}/{quote(team)}/channels/{quote(channel)}"

    def finish(self) -> ImportReport:
        self.settle()
        if self.base_url is None:
            self.report.notes.append(
                "give --source-url https://YOUR-MATTERMOST to link messages back to Mattermost"
            )
        return self.mirror.finish()


def _attachments(attachments: object) -> tuple[Attachment, ...]:
    found = []
    for attachment in attachments if isinstance(attachments, list) else ():
        if (
            isinstance(attachment, dict)
            and isinstance(attachment.get("path"), str)
            and attachment["path"].strip()
        ):
            found.append(Attachment(PurePosixPath(attachment["path"]).name[:MAX_ATTACHMENT_TEXT_LENGTH]))
    return tuple(found[:MAX_ATTACHMENTS])


_HANDLERS = {
    "team": _MattermostExport.team,
    "channel": _MattermostExport.channel,
    "user": _MattermostExport.user,
    "bot": _MattermostExport.bot,
    "post": _MattermostExport.post,
    "direct_channel": _MattermostExport.direct_channel,
    "direct_post": _MattermostExport.direct_post,
}


def _read(
    export: _MattermostExport, name: str, stream: IO[bytes], total: int, progress: bool
) -> ImportReport:
    """Every line of the export, then the end (memberships, deletions). A zip member that breaks or
    goes past the archive's limits part way is reported, and what came before is imported."""
    with progress_bar(PurePosixPath(name).name, total, enabled=progress) as advance:
        try:
            for line_no, line in capped_lines(stream, MAX_LINE_BYTES, advance):
                _line(export, f"{PurePosixPath(name).name} line {line_no}", line)
        except BundleError as error:
            export.mirror.reject(name, error.reason)
    return export.finish()


def _line(export: _MattermostExport, where: str, line: bytes | None) -> None:
    if line is None:
        export.mirror.reject(where, f"line longer than {MAX_LINE_BYTES:,} bytes")
        return
    if not line.strip():
        return
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        export.mirror.reject(where, "line is not valid UTF-8")
        return
    except (json.JSONDecodeError, RecursionError):
        export.mirror.reject(where, "invalid JSON")
        return
    try:
        export.line(where, record)
    except _Skip as error:
        export.mirror.reject(where, str(error), _key_of(record))


def _key_of(record: object) -> str | None:
    """The channel a bad post line belongs to, when it says, so only that channel skips deletions."""
    post = record.get("post") if isinstance(record, dict) else None
    if isinstance(post, dict) and isinstance(post.get("team"), str) and isinstance(post.get("channel"), str):
        return f"{post['team']}/{post['channel']}"
    return None


def import_mattermost_file(
    store: Store, path: Path, options: ImportOptions = DEFAULT_OPTIONS
) -> ImportReport:
    """Imports a Mattermost bulk export JSONL file (the module docstring says how).

    Raises:
        OSError: the file cannot be read.
        StorageFailure: the database failed; what was imported stays, and importing again completes it.
    """
    export = _MattermostExport(
        store,
        ImportReport(str(path), unit="records"),
        options.source_url,
        options.batch_size,
        options.mapping,
    )
    with path.open("rb") as stream:
        return _read(export, path.name, stream, path.stat().st_size, options.progress)


def import_mattermost(store: Store, bundle: Bundle, options: ImportOptions = DEFAULT_OPTIONS) -> ImportReport:
    """Imports the JSONL inside a Mattermost export zip (``mmctl export create`` makes one)."""
    export = _MattermostExport(
        store,
        ImportReport(bundle.label, unit="records"),
        options.source_url,
        options.batch_size,
        options.mapping,
    )
    names = [n for n in bundle.names() if n.endswith(".jsonl")]
    if not names:
        export.mirror.reject(bundle.label, "holds no .jsonl file")
        return export.finish()
    try:
        with bundle.open(names[0]) as stream:
            return _read(export, names[0], stream, bundle.size(names[0]), options.progress)
    except BundleError as error:  # the member cannot even be opened
        export.mirror.reject(names[0], error.reason)
        return export.finish()
