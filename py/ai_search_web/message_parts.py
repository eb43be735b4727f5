"""What a message carries besides its text, read defensively: files, reactions, edits, pins, threads,
its link back to the system it came from.

Search results and ``chat.getMessageContext`` give these in Rocket.Chat's shapes, and like every
answer they are untrusted data: anything malformed is left out, never shown half. Pure (no ``js``),
so CPython tests cover it; :mod:`.message_view` turns the records into elements::

    message_files({"files": [{"name": "pgbouncer.ini", "type": "text/plain", "size": 912}],
                   "attachments": [{"title": "ledger pool settings"}]})
    # [MessageFile(name='pgbouncer.ini', title='ledger pool settings', description='', ...)]
    message_reactions({"reactions": {":+1:": {"usernames": ["bob", "carol"]}}})
    # [Reaction(shortcode=':+1:', emoji='👍', usernames=('bob', 'carol'))]
    source_link({"sourceUrl": "https://acme.slack.com/archives/C024BE91L/p1355517523000005"})
    # SourceLink(url='https://acme.slack.com/archives/...', text='Open in Slack')

Reactions are stored by shortcode, as Rocket.Chat does. The common ones are shown as their emoji
from :data:`REACTION_EMOJI` (a full shortcode library would add hundreds of kilobytes to what every
visitor downloads into the browser, for names rarely used as reactions); any other shortcode is
shown as written, which still says what it is.

Portable (the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``).
"""

from ai_search import MAPPINGS, FrozenRecord, is_source_url, record, source_system

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "MAX_FILES_SHOWN",
    "MAX_REACTIONS_SHOWN",
    "REACTION_EMOJI",
    "UNKNOWN_SOURCE_LINK_TEXT",
    "MessageFile",
    "Reaction",
    "SourceLink",
    "emoji_for",
    "is_image",
    "list_field",
    "message_files",
    "message_reactions",
    "object_field",
    "source_link",
    "text_field",
]

# Files and reactions one message shows at most: a message is not a file browser, and a flood of
# either (an import gone wrong, a bot) must not push the conversation off the screen.
MAX_FILES_SHOWN = 10
MAX_REACTIONS_SHOWN = 20

REACTION_EMOJI: "Mapping[str, str]" = {
    ":+1:": "👍", ":thumbsup:": "👍", ":-1:": "👎", ":thumbsdown:": "👎", ":tada:": "🎉",
    ":rocket:": "🚀", ":white_check_mark:": "✅", ":heavy_check_mark:": "✔️", ":x:": "❌",
    ":lock:": "🔒", ":wave:": "👋", ":eyes:": "👀", ":heart:": "❤️", ":fire:": "🔥",
    ":joy:": "😂", ":smile:": "😄", ":slight_smile:": "🙂", ":sweat_smile:": "😅", ":pray:": "🙏",
    ":clap:": "👏", ":raised_hands:": "🙌", ":ok_hand:": "👌", ":100:": "💯", ":thinking:": "🤔",
    ":thinking_face:": "🤔", ":warning:": "⚠️", ":bug:": "🐛", ":star:": "⭐", ":muscle:": "💪",
    ":point_up:": "☝️", ":sob:": "😭", ":rotating_light:": "🚨", ":memo:": "📝", ":calendar:": "📅",
}  # fmt: skip


@record
class MessageFile(FrozenRecord):
    """A file a message carries: its name, and what the message says of it."""

    __slots__ = _fields = ("name", "title", "description", "type", "size")
    name: str
    title: str
    description: str
    type: str
    size: int

    def __init__(
        self, name: str, title: str = "", description: str = "", type: str = "", size: int = 0
    ) -> None:
        self._set("name", name)
        self._set("title", title)
        self._set("description", description)
        self._set("type", type)
        self._set("size", size)


@record
class Reaction(FrozenRecord):
    """A reaction: its shortcode, the emoji shown for it, who reacted."""

    __slots__ = _fields = ("shortcode", "emoji", "usernames")
    shortcode: str
    emoji: str
    usernames: "tuple[str, ...]"

    def __init__(self, shortcode: str, emoji: str, usernames: "tuple[str, ...]") -> None:
        self._set("shortcode", shortcode)
        self._set("emoji", emoji)
        self._set("usernames", usernames)


@record
class SourceLink(FrozenRecord):
    """Where a message was first posted: an http(s) ``url`` and the link's words, all our own."""

    __slots__ = _fields = ("url", "text")
    url: str
    text: str

    def __init__(self, url: str, text: str) -> None:
        self._set("url", url)
        self._set("text", text)


# The words of a source link whose system its shape does not tell (another importer's, a proxy's).
UNKNOWN_SOURCE_LINK_TEXT = "Open where it was posted"


def source_link(record: "Any") -> "SourceLink | None":
    """The message's ``sourceUrl`` as a link, or None when it has none or it is not an http(s)
    address (:func:`ai_search.is_source_url`: a ``javascript:`` or any other scheme makes no link).
    The words name the system from the link's shape, never from the link's text."""
    url = record.get("sourceUrl") if isinstance(record, MAPPINGS) else None
    if not is_source_url(url):
        return None
    system = source_system(url)
    return SourceLink(url, f"Open in {system}" if system else UNKNOWN_SOURCE_LINK_TEXT)


def text_field(record: "Any", key: str) -> str:
    """``record[key]`` when ``record`` is a mapping and the value is text, else ``""``."""
    value = record.get(key) if isinstance(record, MAPPINGS) else None
    return value if isinstance(value, str) else ""


def object_field(record: "Any", key: str) -> "Mapping[str, Any]":
    """``record[key]`` when ``record`` is a mapping and the value is an object, else ``{}``."""
    value = record.get(key) if isinstance(record, MAPPINGS) else None
    return value if isinstance(value, MAPPINGS) else {}


def list_field(record: "Any", key: str) -> "list[Any]":
    """``record[key]`` when ``record`` is a mapping and the value is a list, else ``[]``."""
    value = record.get(key) if isinstance(record, MAPPINGS) else None
    return value if isinstance(value, list) else []


def _size(record: "Any") -> int:
    value = record.get("size") if isinstance(record, MAPPINGS) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def message_files(message: "Mapping[str, Any]") -> "list[MessageFile]":
    """The files of a result (``files: [{name, title, type}]``) or a message (``files: [{name, type,
    size}]`` beside ``attachments: [{title, description, size}]``, in the same order)."""
    files = message.get("files")
    attachments = message.get("attachments")
    extra = attachments if isinstance(attachments, list) else []
    found = []
    for index, file in enumerate(files if isinstance(files, list) else []):
        name = text_field(file, "name")
        if not name:
            continue
        attachment = extra[index] if index < len(extra) and isinstance(extra[index], MAPPINGS) else {}
        title = text_field(file, "title") or text_field(attachment, "title")
        found.append(
            MessageFile(
                name=name,
                title="" if title == name else title,
                description=text_field(attachment, "description"),
                type=text_field(file, "type"),
                size=_size(file) or _size(attachment),
            )
        )
        if len(found) == MAX_FILES_SHOWN:
            break
    return found


def is_image(file: "MessageFile") -> bool:
    return file.type.startswith("image/")


def emoji_for(shortcode: str) -> str:
    """The emoji of ``shortcode``, or the shortcode itself when the table does not have it."""
    return REACTION_EMOJI.get(shortcode, shortcode)


def message_reactions(message: "Mapping[str, Any]") -> "list[Reaction]":
    """A message's reactions (``{":+1:": {"usernames": [...]}}``), those with people only: the most
    given first, ties by shortcode, at most :data:`MAX_REACTIONS_SHOWN`.

    An order of the page's own, not the object's: on MicroPython the object arrives as a dict that
    keeps no order (``ffi.to_py`` parses JSON there), and both interpreters must show the same
    reactions in the same order.
    """
    reactions = message.get("reactions")
    found = []
    pairs = reactions.items() if isinstance(reactions, MAPPINGS) else ()  # portable: sorted below
    for shortcode, reaction in pairs:
        usernames = reaction.get("usernames") if isinstance(reaction, MAPPINGS) else None
        people = (
            tuple(u for u in usernames if isinstance(u, str) and u) if isinstance(usernames, list) else ()
        )
        if isinstance(shortcode, str) and shortcode and people:
            found.append(Reaction(shortcode, emoji_for(shortcode), people))
    found.sort(key=lambda reaction: (-len(reaction.usernames), reaction.shortcode))  # portable: a total order
    return found[:MAX_REACTIONS_SHOWN]
