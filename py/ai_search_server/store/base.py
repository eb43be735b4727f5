"""The one store interface every part of the server talks to.

SQLite (WAL) is the embedded default (``sqlite.py``); PostgreSQL (``postgres.py``) serves
deployments with several proxy processes. Dialect-specific parts (pragmas, FTS5) stay inside an
implementation; nothing above this interface writes SQL.

Exception tree (each class maps to one HTTP answer, one of ``errors.py``'s refusals, in the routes;
the names differ from the refusals' so that each is defined once)::

    StoreError
    ├── RecordNotFound    a user, room, message or token that does not exist (404 / error-*-not-found)
    ├── AlreadyTaken      a username, room name or id already taken (400 / error-duplicate-*)
    ├── InvalidValue      a value the store refuses: empty name, bad room type, over-long text (400)
    └── StorageFailure    the database itself failed: disk full, locked past the busy timeout (503)

All methods are synchronous and short (indexed lookups); callers on the event loop may call them
directly. Times are aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from .records import (
    AnswerFeedback,
    Attachment,
    ExternalKind,
    ExternalLink,
    ImportResult,
    ImportRow,
    LinkHow,
    Message,
    MessageChanges,
    MessageEvent,
    OAuthClient,
    OAuthCode,
    OAuthGrant,
    Room,
    RoomType,
    SessionLifetime,
    StoredAnswer,
    Subscription,
    ThreadSummary,
    Token,
    TokenKind,
    User,
)

__all__ = [
    "AlreadyTaken",
    "InvalidValue",
    "MessageListener",
    "RecordNotFound",
    "StorageFailure",
    "Store",
    "StoreError",
]


class StoreError(Exception):
    """Base of every error the store raises."""


class RecordNotFound(StoreError):
    """No user, room, message, token or answer has the id or name asked for."""


class AlreadyTaken(StoreError):
    """A username, room name (or a look-alike of one), token label or message id is taken."""


class InvalidValue(StoreError):
    pass


class StorageFailure(StoreError):
    pass


MessageListener = Callable[[Sequence[MessageEvent]], None]


class Store(Protocol):
    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None: ...
    @property
    def closed(self) -> bool:
        """True once ``close`` ran: readers that follow the store (the search index) stop."""
        ...

    @property
    def data_dir(self) -> Path | None:
        """This machine's folder for the server's other files (the embedded search index): where the
        SQLite store keeps its file, the data dir a PostgreSQL store was opened with; None when there
        is none (then the embedded index cannot be opened)."""
        ...

    # -- users -----------------------------------------------------------------------------------
    def create_user(
        self,
        username: str,
        *,
        name: str | None = None,
        password: str | None = None,
        roles: Sequence[str] = ("user",),
    ) -> User:
        """Raises AlreadyTaken when the username is taken (case-insensitively)."""
        ...

    def get_user(self, user_id: str) -> User | None: ...
    def get_user_by_username(self, username: str) -> User | None:
        """Case-insensitive; one leading '@' is ignored."""
        ...

    def get_users(self, user_ids: Iterable[str]) -> dict[str, User]: ...
    def find_users(
        self, text: str, *, limit: int, exclude: Sequence[str] = (), user_ids: Iterable[str] | None = None
    ) -> list[User]:
        """Users whose username or name contains ``text`` (case-insensitive), usernames starting
        with it first, then alphabetical."""
        ...

    def verify_password(self, username: str, password: str) -> User | None:
        """The user when the password matches; None otherwise (also for users without one).
        Takes the same time whether or not the user exists."""
        ...

    def set_password(self, user_id: str, password: str) -> None: ...
    def set_roles(self, user_id: str, roles: Sequence[str]) -> None: ...
    def permissions_of(self, user: User) -> frozenset[str]:
        """The union of the permissions of the user's roles; 'admin' has every permission."""
        ...

    def set_active(self, user_id: str, active: bool) -> None:
        """An inactive user cannot log in, their tokens stop resolving, and they hold no permission."""
        ...

    def grant_permission(self, role: str, permission: str) -> None: ...
    def revoke_permission(self, role: str, permission: str) -> None:
        """Revoking from 'admin' changes nothing: admins hold every permission by rule."""
        ...

    # -- tokens ----------------------------------------------------------------------------------
    def create_token(self, user_id: str, kind: TokenKind, *, label: str = "") -> tuple[Token, str]:
        """A new token and its plain text, shown once; only a hash is stored.
        Raises AlreadyTaken when a PAT with that label exists for the user."""
        ...

    def resolve_token(
        self, user_id: str, plain: str, *, session_lifetime: SessionLifetime | None = None
    ) -> Token | None:
        """The token when ``plain`` belongs to ``user_id``; updates last_used_at. A session token past
        ``session_lifetime`` (idle or absolute) is deleted and answers None."""
        ...

    def delete_expired_sessions(self, user_id: str, lifetime: SessionLifetime) -> int:
        """Deletes the user's session tokens past ``lifetime``; returns how many."""
        ...

    def list_tokens(self, user_id: str, kind: TokenKind) -> list[Token]: ...
    def delete_token(self, user_id: str, token_id: str) -> bool: ...
    def delete_token_by_label(self, user_id: str, label: str, kind: TokenKind = "pat") -> bool: ...

    # -- OAuth (oauth/: clients, codes and tokens; every value stored hashed) ---------------------
    def register_oauth_client(
        self, client: OAuthClient, secret: str | None, *, max_clients: int, stale_before: datetime
    ) -> bool:
        """Store a registered client; False when ``max_clients`` exist after clients registered
        before ``stale_before`` that were never used are removed."""
        ...

    def oauth_client(self, client_id: str) -> tuple[OAuthClient, str | None] | None:
        """The client and its secret's digest (None for a public client)."""
        ...

    def save_oauth_code(self, plain: str, code: OAuthCode) -> None: ...
    def take_oauth_code(self, plain: str, client_id: str) -> OAuthCode | None:
        """The unexpired code of ``client_id``, marked used; None otherwise. Any code presented is
        spent, another client's included; a code used before revokes the grant its first use opened."""
        ...

    def save_oauth_tokens(
        self,
        *,
        grant_id: str,
        user_id: str,
        client_id: str,
        scope: str,
        resource: str,
        access: tuple[str, datetime],
        refresh: tuple[str, datetime] | None,
        max_grants_per_user: int,
    ) -> str:
        """Store an access token (and refresh token) of a grant, with their expiries; the row id."""
        ...

    def resolve_oauth_access(self, plain: str) -> OAuthGrant | None:
        """The live grant of an access token whose user is active; records its use."""
        ...

    def oauth_grant_by_refresh(self, plain: str) -> OAuthGrant | None:
        """The live grant of a refresh token; a refresh token already rotated revokes its grant."""
        ...

    def rotate_oauth_tokens(self, token_id: str) -> bool:
        """Mark a pair replaced by a refresh; False when it already was (a replay)."""
        ...

    def revoke_oauth_grant(self, grant_id: str, user_id: str | None = None) -> bool: ...
    def revoke_oauth_token(self, plain: str, client_id: str) -> bool:
        """Revoke the grant of an access or refresh token of ``client_id`` (RFC 7009)."""
        ...

    def list_oauth_grants(self, user_id: str) -> list[OAuthGrant]: ...

    # -- rooms and subscriptions -----------------------------------------------------------------
    def create_room(
        self,
        type: RoomType,
        name: str,
        *,
        fname: str | None = None,
        creator_id: str | None = None,
        members: Sequence[str] = (),
        topic: str = "",
    ) -> Room:
        """``members`` are user ids subscribed at creation (the creator is added when given); the
        name is stored in NFKC form. Raises InvalidValue for a name with invisible or bidi-control
        characters, and AlreadyTaken when a channel or group would share its name with any room (direct
        rooms included, case-insensitive) or look like one (a confusable skeleton), or a direct room
        would take a channel's or group's name."""
        ...

    def get_room(self, room_id: str) -> Room | None: ...
    def get_room_by_name(self, name: str) -> Room | None:
        """By name or fname, case-insensitive; one leading '#' is ignored. Any room of the workspace:
        never for resolving what a caller names (``readable_room_by_name`` is)."""
        ...

    def readable_room_by_name(self, user_id: str, name: str) -> Room | None:
        """The room ``name`` means to this user: among the rooms they read only, a direct room first
        (so a name that meant a DM never comes to mean another room), exact names before fnames."""
        ...

    def get_rooms(self, room_ids: Iterable[str]) -> dict[str, Room]: ...
    def find_rooms(
        self,
        text: str,
        *,
        room_ids: Iterable[str] | None = None,
        types: Sequence[RoomType] | None = None,
        limit: int,
    ) -> list[Room]:
        """Rooms whose name or fname contains ``text`` (case-insensitive, literal: no wildcards),
        restricted to ``room_ids`` and ``types`` when given; names starting with it first."""
        ...

    def subscribe(self, user_id: str, room_id: str) -> Subscription: ...
    def unsubscribe(self, user_id: str, room_id: str) -> None: ...
    def set_banned(self, user_id: str, room_id: str, banned: bool) -> None: ...
    def get_subscription(self, user_id: str, room_id: str) -> Subscription | None: ...
    def subscriptions_of(self, user_id: str, *, include_banned: bool = False) -> list[Subscription]: ...
    def readable_room_ids(self, user_id: str) -> frozenset[str]:
        """Rooms the user is subscribed to and not banned from: the only rooms they may read."""
        ...

    def members_of(self, room_id: str) -> list[str]: ...

    # -- messages --------------------------------------------------------------------------------
    def post_message(
        self,
        room_id: str,
        user_id: str,
        text: str,
        *,
        ts: datetime | None = None,
        message_id: str | None = None,
        tmid: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> Message:
        """Stores the message and notifies listeners. Does NOT check permissions (callers do).
        ``tmid`` makes it a reply in that message's thread (RecordNotFound unless it is in this room);
        ``@name``s in the text become mentions of the people who exist."""
        ...

    def edit_message(
        self, message_id: str, text: str, *, edited_at: datetime | None = None, edited_by: str | None = None
    ) -> Message: ...
    def delete_message(self, message_id: str) -> None: ...
    def set_pinned(self, message_id: str, pinned_by: str | None) -> Message:
        """Pin the message (``pinned_by`` is who) or unpin it (None)."""
        ...

    def set_reaction(self, message_id: str, user_id: str, emoji: str, react: bool) -> Message:
        """Add or take back one person's emoji; InvalidValue for a malformed emoji name."""
        ...

    def get_message(self, message_id: str) -> Message | None: ...
    def get_messages(self, message_ids: Iterable[str]) -> dict[str, Message]: ...
    def room_messages(
        self,
        room_id: str,
        *,
        before: datetime | None = None,
        after: datetime | None = None,
        inclusive: bool = False,
        offset: int = 0,
        limit: int,
    ) -> list[Message]:
        """A room's messages between two times, newest first (Rocket.Chat's ``channels.history``)."""
        ...

    def messages_around(self, message: Message, *, before: int, after: int) -> list[Message]:
        """The message amid its room's neighbours, oldest first: the context of a hit outside a thread."""
        ...

    def earlier_in_conversation(self, message: Message, *, limit: int, within: timedelta) -> list[Message]:
        """What the message follows in its conversation, oldest first: its thread's first message and
        earlier replies, or the room's messages just before it (within ``within``). The search index
        embeds a message with these, so a short reply carries its conversation's meaning."""
        ...

    def thread_messages(self, tmid: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        """A thread's replies, oldest first, and how many it has in all."""
        ...

    def reply_position(self, reply: Message) -> int:
        """How many replies of its thread come before ``reply``: where a long thread is opened."""
        ...

    def thread_summaries(self, tmids: Iterable[str]) -> dict[str, ThreadSummary]: ...
    def room_threads(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]:
        """The first messages of a room's threads, latest reply first, and the number of threads."""
        ...

    def pinned_messages(self, room_id: str, *, offset: int = 0, limit: int) -> tuple[list[Message], int]: ...
    def find_room_messages(self, room_id: str, text: str, *, offset: int = 0, limit: int) -> list[Message]:
        """Case-insensitive literal substring search in one room (Rocket.Chat's ``chat.search``)."""
        ...

    def count_messages(self) -> int: ...
    def earliest_message_at(self, room_ids: Iterable[str]) -> datetime | None:
        """When the oldest message of these rooms was posted (None: they hold none): where a
        search's history begins, for the scope it reports."""
        ...

    def shares_a_room(self, user_id: str, username: str) -> bool:
        """Whether ``username`` is subscribed (not banned) to a room ``user_id`` can read: what a
        ``from:`` may name without saying whether anyone else by that name exists."""
        ...

    def iter_messages(self, *, batch_size: int = 1000) -> Iterable[list[Message]]:
        """Every message, in batches, oldest first (for rebuilding indexes)."""
        ...

    def add_message_listener(self, listener: MessageListener) -> None:
        """``listener`` is called with the events of each committed write, in commit order.

        It hears this process's writes only; readers that must see every process's writes (the
        search index beside an ``ai-search import``) follow the change log below.
        """
        ...

    def latest_message_change(self) -> int:
        """The number of the latest committed message change by any process (0: none yet)."""
        ...

    def message_changes_since(self, change: int, *, limit: int) -> MessageChanges:
        """Up to ``limit`` messages changed after change number ``change``, by any process."""
        ...

    # -- answers ---------------------------------------------------------------------------------
    def save_answer(self, answer: StoredAnswer) -> None:
        """Keep an answer as given (its text cut to a cap); InvalidValue for too many sources."""
        ...

    def get_answer(self, answer_id: str) -> StoredAnswer | None: ...
    def share_answer(self, answer_id: str) -> StoredAnswer:
        """Mark the answer shared (the first time counts); RecordNotFound when there is no such answer."""
        ...

    def rate_answer(self, answer_id: str, user_id: str, rating: str, reason: str = "") -> AnswerFeedback:
        """One person's thumbs up or down, replacing their earlier one; InvalidValue for a rating
        other than up or down or an over-long reason, RecordNotFound for an unknown answer."""
        ...

    def answer_feedback(self, answer_id: str, user_id: str) -> AnswerFeedback | None: ...
    def feedback_since(self, since: datetime | None) -> Sequence[tuple[AnswerFeedback, StoredAnswer, str]]:
        """Ratings given or changed from ``since`` on (all for None), oldest first, with their answer
        and the rater's username: what an admin exports."""
        ...

    # -- mirrors of other systems (imports of exports, live sync) ---------------------------------
    def link_external(
        self, origin: str, kind: ExternalKind, external_id: str, local_id: str, *, how: LinkHow
    ) -> None:
        """Remember that ``external_id`` (a user or room id in ``origin``) is our ``local_id``, and
        how it came to be (``LinkHow``: what the source may change of it follows from that)."""
        ...

    def external_ids(self, origin: str, kind: ExternalKind) -> dict[str, str]:
        """Every external id of ``origin`` and ``kind`` that maps to a user or room that exists."""
        ...

    def external_links(self, origin: str, kind: ExternalKind) -> dict[str, ExternalLink]:
        """``external_ids`` with how each link came to be."""
        ...

    def update_room(
        self, room_id: str, *, name: str | None = None, fname: str | None = None, topic: str | None = None
    ) -> Room:
        """Rename a room or change its topic; Conflict when a channel or group has that name."""
        ...

    def set_display_name(self, user_id: str, name: str) -> None: ...
    def set_members(self, room_id: str, user_ids: Sequence[str]) -> tuple[int, int]:
        """Make ``user_ids`` the room's members in one transaction (bans kept); returns
        (subscribed, unsubscribed)."""
        ...

    def add_members(self, room_id: str, user_ids: Sequence[str]) -> int:
        """Subscribe those of ``user_ids`` who are not members (bans kept), taking nobody away;
        returns how many were subscribed. What a source may do to a room it did not create."""
        ...

    def origin_message_ids(self, room_id: str, origin: str, *, start: datetime, end: datetime) -> list[str]:
        """Ids of the room's messages from ``origin`` sent at ``start`` or later and before ``end``."""
        ...

    def set_source_urls(self, urls: Mapping[str, str | None]) -> int:
        """Set the "open in ..." link of existing messages by id; returns how many changed."""
        ...

    def get_sync_state(self, origin: str) -> dict[str, Any] | None:
        """What a live mirror of ``origin`` saved last (its cursors), or None."""
        ...

    def set_sync_state(self, origin: str, state: Mapping[str, Any]) -> None: ...

    # -- bulk import -----------------------------------------------------------------------------
    def import_messages(self, rows: Sequence[ImportRow]) -> ImportResult:
        """One batch in one transaction, idempotent: missing users (no password) and rooms are
        created, authors and members subscribed; a row whose message id exists changes nothing.
        Rows refused are reported by index in the result, not raised. Listeners get 'posted'."""
        ...
