"""Records the store hands out: plain frozen values, never live rows.

Every layer above the store (routes, retrieval, MCP) works with these, so none of them writes SQL
and a second store implementation (PostgreSQL) only has to produce the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

RoomType = Literal["c", "p", "d"]  # public channel, private group, direct message
# login session token, personal access token, OAuth access token (only ever a caller's, never stored
# in the tokens table: the OAuth tables hold those, records below)
TokenKind = Literal["session", "pat", "oauth"]
Role = Literal["admin", "user", "bot"]
ExternalKind = Literal["user", "room"]  # what an external id names (store.link_external)
# How an external id came to name a local user or room: the source's import made it ("created": the
# source owns it and keeps it like the source's), an admin said so ("mapped"), or an import before
# links were recorded found it by its name ("adopted"). Only "created" lets a source rename,
# deactivate or take members away; only "created" and "mapped" let a person sign in through it.
LinkHow = Literal["created", "mapped", "adopted"]


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str
    name: str
    roles: tuple[str, ...]
    created_at: datetime
    has_password: bool
    active: bool = True


@dataclass(frozen=True, slots=True)
class ExternalLink:
    """The local user or room an external id names, and how it came to (``LinkHow``)."""

    local_id: str
    how: LinkHow


@dataclass(frozen=True, slots=True)
class Room:
    id: str
    type: RoomType
    name: str
    fname: str
    created_at: datetime
    creator_id: str | None = None
    topic: str = ""


@dataclass(frozen=True, slots=True)
class Subscription:
    user_id: str
    room_id: str
    banned: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file or link attached to a message: what is known of it, never its bytes.

    ``name`` is the file name (``pgbouncer.ini``), ``title`` and ``description`` what the poster wrote,
    ``type`` a MIME type (``image/png``) and ``size`` bytes (0 when unknown). Names, titles and
    descriptions are searchable with the message.
    """

    name: str
    title: str = ""
    description: str = ""
    type: str = ""
    size: int = 0


@dataclass(frozen=True, slots=True)
class Reaction:
    """One emoji on a message and who reacted with it (usernames, in the order they reacted)."""

    emoji: str  # ":+1:" as Rocket.Chat names it
    usernames: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Message:
    """A message as the store keeps it; Rocket.Chat's model where it has one.

    A reply in a thread carries ``tmid``, the id of the thread's first message (which is in the same
    room and is itself no reply). ``mentions`` are the usernames an ``@name`` in the text named, of
    people who exist. ``pinned_at``/``pinned_by`` say who pinned it and when.
    """

    id: str
    room_id: str
    user_id: str
    username: str
    user_name: str
    ts: datetime  # aware, UTC
    text: str
    edited_at: datetime | None = None
    tmid: str | None = None
    attachments: tuple[Attachment, ...] = ()
    reactions: tuple[Reaction, ...] = ()
    mentions: tuple[str, ...] = ()
    pinned_at: datetime | None = None
    pinned_by: str | None = None  # user id
    edited_by: str | None = None  # user id; None when the author edited or nobody did
    source_url: str | None = None  # the message in the system it came from ("open in Slack")

    @property
    def searchable_text(self) -> str:
        """The text and each attachment's name, title and description, one per line: what search reads."""
        parts = [self.text]
        for attachment in self.attachments:
            parts += [p for p in (attachment.name, attachment.title, attachment.description) if p]
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """What a thread's first message shows of its replies (Rocket.Chat's ``tcount``, ``tlm``, ``replies``)."""

    tmid: str
    count: int  # replies
    last_reply_at: datetime
    participants: tuple[str, ...]  # user ids of the repliers, first reply first


@dataclass(frozen=True, slots=True)
class Token:
    id: str
    user_id: str
    kind: TokenKind
    label: str
    created_at: datetime
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SessionLifetime:
    """How long a login session token stays valid: ``idle_ms`` after its last use, and ``max_age_ms``
    after its creation whatever its use. Personal access tokens have no lifetime: they are revoked."""

    idle_ms: int
    max_age_ms: int


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """A change the store made to a message, delivered to listeners after the commit.

    The embedded pipeline listens to keep its keyword and vector indexes current.
    """

    kind: Literal["posted", "edited", "deleted"]
    message: Message


@dataclass(frozen=True, slots=True)
class MessageChanges:
    """Messages changed after a change number, for readers that follow the store from any process.

    ``message_ids`` were posted, edited or deleted (each once, in the order of their last change);
    read them back to know which. ``last`` is the change number to ask after next time. ``complete`` is
    False when changes after the asked number were already pruned from the log: the reader missed
    some and must rescan the store.
    """

    message_ids: tuple[str, ...]
    last: int
    complete: bool


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One message to import, by names rather than ids. ``ts`` is aware; ``message_id`` is required
    (the importer derives a deterministic one when the file has none).

    ``tmid`` makes it a reply in the thread of that message id, which must be in the same room, in the
    store already or in the same batch; ``reactions`` map an emoji to the usernames who reacted.
    ``origin`` names the system the message comes from (``slack:T0123``) and ``source_url`` is its
    link there; messages written in ai-search have neither. ``author_joins`` subscribes the author to
    the room, as a JSONL history means it; a mirror whose source lists each room's members says False
    (a message from someone who left stays, and they do not become a member again).
    """

    room: str
    room_type: RoomType
    username: str
    ts: datetime
    text: str
    message_id: str
    user_name: str | None = None  # display name, used only when the user is created
    members: tuple[str, ...] = ()  # usernames subscribed to the room
    tmid: str | None = None
    attachments: tuple[Attachment, ...] = ()
    reactions: tuple[Reaction, ...] = ()
    edited_at: datetime | None = None
    pinned: bool = False
    origin: str | None = None
    source_url: str | None = None
    author_joins: bool = True


@dataclass(frozen=True, slots=True)
class ImportResult:
    imported: int
    unchanged: int
    users_created: int
    rooms_created: int
    rejected: tuple[tuple[int, str], ...] = ()  # (index in the batch, reason)


AnswerRating = Literal["up", "down"]


@dataclass(frozen=True, slots=True)
class AnswerSourceRecord:
    """Source ``n`` (1-based, as the answer cites it) of a stored answer: a message id and its room."""

    n: int
    msg_id: str
    rid: str


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """An answer as given, kept so that it can be shared and rated: the question, the text, and the
    ids of every source it was numbered over (never their texts, which are read again when shown).
    ``shared_at`` is set once its owner shared it; until then only the owner may open it."""

    id: str
    user_id: str
    query: str
    answer: str
    sources: tuple[AnswerSourceRecord, ...]
    provider: dict[str, str]
    created_at: datetime
    shared_at: datetime | None = None
    searched: str | None = None  # a follow-up: what it was searched as


@dataclass(frozen=True, slots=True)
class AnswerFeedback:
    """One person's thumbs up or down on one answer, with an optional reason; the latest one counts."""

    answer_id: str
    user_id: str
    rating: AnswerRating
    reason: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class OAuthClient:
    """A client registered by dynamic client registration (RFC 7591); ``metadata`` is the registered
    client metadata as answered at registration (JSON text), ``has_secret`` whether it authenticates."""

    id: str
    name: str
    metadata: str
    has_secret: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class OAuthCode:
    """An authorization code as issued (its plain value is never stored): single use, short-lived."""

    grant_id: str  # the grant its tokens will belong to: a reused code revokes that grant
    client_id: str
    user_id: str
    redirect_uri: str
    scope: str
    resource: str
    code_challenge: str
    code_challenge_method: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class OAuthGrant:
    """One consent's live tokens: an access token and its refresh token (both stored hashed). A
    refresh replaces the pair and keeps ``grant_id``; removing a grant ends both at once."""

    id: str  # the grant id, what a person names to revoke it
    token_id: str  # the current pair's row: what a refresh marks replaced
    user_id: str
    client_id: str
    client_name: str
    scope: str
    resource: str
    created_at: datetime  # when this pair was issued
    access_expires_at: datetime
    refresh_expires_at: datetime | None
    last_used_at: datetime | None = None
