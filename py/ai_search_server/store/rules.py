"""The values a store accepts, whatever its database: names, texts, ids, emoji, feedback, times.

Part of the store's interface (with ``base.py`` and ``records.py``): every implementation refuses the
same values with the same words, and the layers above check a value where the caller learns of it
(a route's parameter, an import line) with the very rule the store applies. Each check returns the
value to keep (trimmed or normalised) or raises ``InvalidValue``. Case-insensitive names compare by
``fold``, which mirrors SQLite's ``NOCASE`` collation (ASCII letters only). Times are aware UTC
datetimes, kept as integer milliseconds since the Unix epoch (``to_ms``, ``from_ms``).
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from ai_search import MAX_FEEDBACK_REASON_LENGTH, MAX_SOURCE_URL_LENGTH, is_source_url

from . import names
from .base import InvalidValue
from .records import AnswerRating, Attachment, RoomType

__all__ = [
    "ALL_PERMISSIONS",
    "ANSWERS_PRUNE_EVERY",
    "ANSWER_RATINGS",
    "ANSWER_RETENTION_DAYS",
    "DEFAULT_DATABASE_POOL_SIZE",
    "DEFAULT_ROLE_PERMISSIONS",
    "ID_LENGTH",
    "KNOWN_ROLES",
    "MAX_ATTACHMENTS",
    "MAX_ATTACHMENT_TEXT_LENGTH",
    "MAX_DISPLAY_NAME_LENGTH",
    "MAX_EMOJI_LENGTH",
    "MAX_EXTERNAL_ID_LENGTH",
    "MAX_FEEDBACK_REASON_LENGTH",
    "MAX_MESSAGE_ID_LENGTH",
    "MAX_MESSAGE_TEXT_LENGTH",
    "MAX_ORIGIN_LENGTH",
    "MAX_ROLE_LENGTH",
    "MAX_ROOM_NAME_LENGTH",
    "MAX_SOURCE_URL_LENGTH",
    "MAX_STORED_ANSWER_LENGTH",
    "MAX_STORED_ANSWER_SOURCES",
    "MAX_TOKEN_LABEL_LENGTH",
    "MAX_TOPIC_LENGTH",
    "MAX_USERNAME_LENGTH",
    "MESSAGE_CHANGES_KEPT",
    "MESSAGE_CHANGES_PRUNE_EVERY",
    "ROOM_TYPES",
    "check_attachments",
    "check_display_name",
    "check_emoji",
    "check_external_id",
    "check_feedback",
    "check_message_id",
    "check_origin",
    "check_roles",
    "check_room_name",
    "check_room_type",
    "check_source_url",
    "check_text",
    "check_token_label",
    "check_topic",
    "check_username",
    "fold",
    "from_ms",
    "new_id",
    "now_ms",
    "to_ms",
]

# Characters of a username; Rocket.Chat's default validation allows about as much.
MAX_USERNAME_LENGTH = 64
# Characters of a display name (user name, room fname).
MAX_DISPLAY_NAME_LENGTH = 120
# Characters of a room name.
MAX_ROOM_NAME_LENGTH = 100
# Characters of a room topic.
MAX_TOPIC_LENGTH = 250
# Characters of a message text: Rocket.Chat's default Message_MaxAllowedSize.
MAX_MESSAGE_TEXT_LENGTH = 5000
# Characters of a message id given by a caller or an import file (our own ids are 17).
MAX_MESSAGE_ID_LENGTH = 64
# Characters of a personal access token's label.
MAX_TOKEN_LABEL_LENGTH = 100
# Characters of a role name.
MAX_ROLE_LENGTH = 64
# Characters of a message's origin ("slack:T0123", "rocketchat:https://chat.example.com").
MAX_ORIGIN_LENGTH = 300
# Characters of an id in another system (Slack's "C024BE91L", a Zulip stream id, a Rocket.Chat _id).
MAX_EXTERNAL_ID_LENGTH = 200
# Files or links on one message (attachments): Rocket.Chat posts one file per message; exports from
# other systems carry a handful. More is refused rather than silently cut.
MAX_ATTACHMENTS = 20
# Characters of an attachment's name, title, description or type.
MAX_ATTACHMENT_TEXT_LENGTH = 1000
# Characters of a reaction's emoji name (":+1:", ":white_check_mark:", a custom ":party-parrot:").
MAX_EMOJI_LENGTH = 64
# Characters of an answer's text kept (characters): far above any answer a model writes within its
# output limit; a longer one is cut, so one runaway answer cannot fill the disk.
MAX_STORED_ANSWER_LENGTH = 20_000
# Sources one stored answer may number (messages): an answer's 20 and their conversations' context.
MAX_STORED_ANSWER_SOURCES = 200
# MAX_FEEDBACK_REASON_LENGTH (characters of the optional reason given with a rating) is the core's:
# the page's reason field stops at the same length.
ANSWER_RATINGS: tuple[AnswerRating, ...] = ("up", "down")
# Characters of the ids we mint, as Rocket.Chat's Random.id(): 17 base62 characters, about 101 bits.
ID_LENGTH = 17

ROOM_TYPES: tuple[RoomType, ...] = ("c", "p", "d")
# Letters, digits and ``._-``: nothing the filter grammar (``from:@a,b``) would split or quote.
_USERNAME = re.compile(r"[\w.-]+")
_ROLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MESSAGE_ID = re.compile(r"[A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_EMOJI = re.compile(r":[\w+-]{1,62}:")
_ID_ALPHABET = string.digits + string.ascii_letters


# -- values ---------------------------------------------------------------------------------------


def fold(text: str) -> str:
    """``text`` with ASCII letters lower-cased: the key SQLite's NOCASE collation compares."""
    return text.translate(_ASCII_LOWER)


def _check_unicode(value: str, what: str) -> None:
    # JSON can carry lone surrogates ("\\ud800"); SQLite stores UTF-8 and would refuse them mid-write.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValue(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


# Distinct names remembered by the cached checks below (names).
_CHECK_CACHE_SIZE = 4096


# Cached (here and check_room_name) because an import checks the same few names on every line.
@lru_cache(maxsize=_CHECK_CACHE_SIZE)
def check_username(username: str) -> str:
    if not username:
        raise InvalidValue("a username cannot be empty")
    if len(username) > MAX_USERNAME_LENGTH:
        raise InvalidValue(f"a username has at most {MAX_USERNAME_LENGTH} characters")
    if not _USERNAME.fullmatch(username):
        raise InvalidValue(f"username {username!r} may hold only letters, digits, '.', '_' and '-'")
    return username


def _check_one_line(value: str, what: str, max_length: int) -> str:
    """A short free text shown on one line: a display name, a token label."""
    if len(value) > max_length:
        raise InvalidValue(f"{what} has at most {max_length} characters")
    if _CONTROL.search(value):
        raise InvalidValue(f"{what} cannot hold control characters")
    _check_unicode(value, what)
    return value


def check_display_name(name: str) -> str:
    return _check_one_line(name, "a display name", MAX_DISPLAY_NAME_LENGTH)


@lru_cache(maxsize=_CHECK_CACHE_SIZE)
def check_room_name(name: str) -> str:
    """The room name to store (NFKC form), or InvalidValue.

    Free text, but trimmed, one line, no leading '#' (lookups strip one, so such a name could never be
    found as typed), no '"' (the search line quotes a name with spaces or commas and has no escape for
    a quote inside it, so `in:` could never name such a room), and nothing invisible or reordering
    (zero-width characters, bidi controls: names.invisible_character), so that what people see is the
    name. Look-alikes of other rooms are the store's AlreadyTaken (names.confusable_keys)."""
    _check_unicode(name, "a room name")
    hidden = names.invisible_character(name)
    if hidden is not None and not _CONTROL.search(name):
        raise InvalidValue(
            f"a room name cannot hold invisible or text-reordering characters ({hidden}): "
            "people would see a name other than the one stored"
        )
    name = names.normal_room_name(name)
    if not name or not name.strip():
        raise InvalidValue("a room name cannot be empty")
    if name != name.strip():
        raise InvalidValue("a room name cannot start or end with whitespace")
    if name.startswith("#"):
        raise InvalidValue("a room name cannot start with '#'")
    if len(name) > MAX_ROOM_NAME_LENGTH:
        raise InvalidValue(f"a room name has at most {MAX_ROOM_NAME_LENGTH} characters")
    if _CONTROL.search(name):
        raise InvalidValue("a room name cannot hold control characters")
    if '"' in name:
        raise InvalidValue("a room name cannot hold '\"' (the search line could not name the room)")
    return name


def check_room_type(room_type: str) -> RoomType:
    if room_type not in ROOM_TYPES:
        raise InvalidValue(f"room type must be one of c, p, d (not {room_type!r})")
    return room_type


def check_topic(topic: str) -> str:
    if len(topic) > MAX_TOPIC_LENGTH:
        raise InvalidValue(f"a topic has at most {MAX_TOPIC_LENGTH} characters")
    _check_unicode(topic, "a topic")
    return topic


def check_text(text: str) -> str:
    """A message text: not blank, at most MAX_MESSAGE_TEXT_LENGTH characters, no NUL (several SQLite
    functions, FTS5 included, stop reading a string at NUL)."""
    if not text.strip():
        raise InvalidValue("a message text cannot be empty")
    if len(text) > MAX_MESSAGE_TEXT_LENGTH:
        raise InvalidValue(
            f"a message text has at most {MAX_MESSAGE_TEXT_LENGTH} characters (got {len(text)})"
        )
    if "\x00" in text:
        raise InvalidValue("a message text cannot hold NUL characters")
    _check_unicode(text, "a message text")
    return text


def check_message_id(message_id: str) -> str:
    if not message_id or len(message_id) > MAX_MESSAGE_ID_LENGTH or not _MESSAGE_ID.fullmatch(message_id):
        raise InvalidValue(
            f"a message id is 1 to {MAX_MESSAGE_ID_LENGTH} characters of letters, digits, '.', '_' and '-'"
        )
    return message_id


def check_token_label(label: str) -> str:
    return _check_one_line(label, "a token label", MAX_TOKEN_LABEL_LENGTH)


def check_origin(origin: str) -> str:
    """An origin names a source system: one line of at most MAX_ORIGIN_LENGTH characters."""
    if not origin.strip() or len(origin) > MAX_ORIGIN_LENGTH or _CONTROL.search(origin):
        raise InvalidValue(f"an origin is 1 to {MAX_ORIGIN_LENGTH} characters on one line")
    _check_unicode(origin, "an origin")
    return origin


def check_external_id(external_id: str) -> str:
    if not external_id.strip() or len(external_id) > MAX_EXTERNAL_ID_LENGTH or _CONTROL.search(external_id):
        raise InvalidValue(f"an external id is 1 to {MAX_EXTERNAL_ID_LENGTH} characters on one line")
    _check_unicode(external_id, "an external id")
    return external_id


def check_source_url(url: str) -> str:
    """An http(s) link of at most MAX_SOURCE_URL_LENGTH characters, no spaces or control characters:
    a page may render it as a link, so ``javascript:`` and friends never get in."""
    if not is_source_url(url):
        raise InvalidValue(f"a source link is an http(s) URL of at most {MAX_SOURCE_URL_LENGTH} characters")
    return url


def check_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Role names, first occurrence kept, order preserved. Any well-formed name is a role: one with no
    rows in role_permissions simply grants nothing (KNOWN_ROLES are the ones seeded)."""
    if isinstance(roles, str):
        # A bare string would iterate as one-letter roles.
        raise InvalidValue(f"roles must be a list of role names, not the string {roles!r}")
    unique = tuple(dict.fromkeys(roles))
    for role in unique:
        if not isinstance(role, str) or len(role) > MAX_ROLE_LENGTH or not _ROLE.fullmatch(role):
            raise InvalidValue(
                f"role {role!r} must be 1 to {MAX_ROLE_LENGTH} letters, digits, '.', '_' or '-',"
                " starting with a letter or digit"
            )
    return unique


def to_ms(moment: datetime) -> int:
    """Milliseconds since the epoch; refuses naive datetimes, whose zone would be a guess."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidValue("times must be timezone-aware (UTC)")
    return (moment - _EPOCH) // _MS


def from_ms(ms: int) -> datetime:
    return _EPOCH + ms * _MS


def now_ms() -> int:
    return to_ms(datetime.now(UTC))


def check_attachments(attachments: Sequence[Attachment]) -> tuple[Attachment, ...]:
    """Raises InvalidValue for too many attachments, an empty name, over-long text or a negative size."""
    if len(attachments) > MAX_ATTACHMENTS:
        raise InvalidValue(f"a message has at most {MAX_ATTACHMENTS} attachments")
    for attachment in attachments:
        if not attachment.name.strip():
            raise InvalidValue("an attachment needs a name")
        texts = (attachment.name, attachment.title, attachment.description, attachment.type)
        if any(len(text) > MAX_ATTACHMENT_TEXT_LENGTH for text in texts):
            raise InvalidValue(f"an attachment's texts have at most {MAX_ATTACHMENT_TEXT_LENGTH} characters")
        if any("\x00" in text for text in texts):
            raise InvalidValue("an attachment's texts must not hold NUL characters")
        if attachment.size < 0:
            raise InvalidValue("an attachment's size is not negative")
    return tuple(attachments)


def check_emoji(emoji: str) -> str:
    """``:name:`` (a leading and trailing colon are added when missing), at most MAX_EMOJI_LENGTH."""
    emoji = emoji.strip()
    if not emoji.startswith(":"):
        emoji = f":{emoji}:"
    if len(emoji) > MAX_EMOJI_LENGTH or not _EMOJI.fullmatch(emoji):
        raise InvalidValue("an emoji is a name like :+1: or :white_check_mark:")
    return emoji


def check_feedback(rating: str, reason: str) -> tuple[AnswerRating, str]:
    """The rating and the trimmed reason.

    Raises:
        InvalidValue: a rating other than up or down, or a reason over ``MAX_FEEDBACK_REASON_LENGTH``
            characters or holding a NUL.
    """
    if rating not in ANSWER_RATINGS:
        raise InvalidValue(f"rating must be 'up' or 'down' (not {rating!r})")
    reason = reason.strip()
    if len(reason) > MAX_FEEDBACK_REASON_LENGTH:
        raise InvalidValue(
            f"reason must be at most {MAX_FEEDBACK_REASON_LENGTH} characters, got {len(reason)}"
        )
    if "\x00" in reason:
        raise InvalidValue("reason must not contain NUL characters")
    return rating, reason


# -- roles, permissions and what a store keeps ---------------------------------------------------

KNOWN_ROLES = ("admin", "user", "bot")

# Every permission the server checks. 'admin' has all of them by rule (every store's permissions_of),
# so it needs no rows and cannot be locked out by a revoke.
ALL_PERMISSIONS = frozenset(
    {
        "access-mcp",
        "add-user-to-any-c-room",
        "change-setting-llm_model",
        "create-c",
        "create-d",
        "create-p",
        "create-personal-access-tokens",
        "delete-message",
        "delete-own-message",
        "edit-message",
        "edit-privileged-setting",
        "manage-selected-settings",
        "pin-message",
        "view-privileged-setting",
        "view-room-administration",
    }
)
# Upstream grants access-mcp to admins only; we grant it to users and bots too, because the MCP endpoint
# acts *as* the user with the user's own permissions (it can read nothing the user cannot), and a
# workspace that wants it admin-only revokes it from the role.
# Members may delete their own messages and pin messages in rooms they read (Rocket.Chat grants
# pin-message to room owners and moderators; rooms here have no moderators, so members pin, as in Slack);
# editing or deleting someone else's message (edit-message, delete-message) stays with admins.
_MEMBER_PERMISSIONS = (
    "access-mcp",
    "create-c",
    "create-d",
    "create-p",
    "create-personal-access-tokens",
    "delete-own-message",
    "pin-message",
)
DEFAULT_ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "user": _MEMBER_PERMISSIONS,
    "bot": _MEMBER_PERMISSIONS,
}

# Change numbers a message change log keeps (changes): far more than one catch-up step reads, so a
# reader that falls further behind (an index closed for a week of imports) rescans the store instead.
MESSAGE_CHANGES_KEPT = 200_000
# The log is pruned once every this many changes (changes), so pruning costs one indexed range delete
# per thousand writes instead of one per write.
MESSAGE_CHANGES_PRUNE_EVERY = 1000
# Days an answer nobody shared or rated is kept (days): long enough to come back to it from a link
# or a rating; a shared or rated answer is kept until its owner is deleted.
ANSWER_RETENTION_DAYS = 90
# Old answers are pruned once every this many answers stored (answers): one indexed delete per hundred.
ANSWERS_PRUNE_EVERY = 100


# Connections to PostgreSQL one server process keeps open at most (connections): the event loop,
# uvicorn's worker threads and the index's reader share them; past this a caller waits for one.
DEFAULT_DATABASE_POOL_SIZE = 10


# -- ids ---------------------------------------------------------------------------------------


def new_id() -> str:
    """A fresh random id: ID_LENGTH base62 characters from the OS's CSPRNG."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(ID_LENGTH))
