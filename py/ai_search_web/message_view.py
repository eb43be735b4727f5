"""How a message looks, in the result list and in the context view: who, when, its files, reactions,
edits and pins, and the thread it belongs to.

Everything here is untrusted data turned into text nodes by :mod:`.dom` (each text in its own
bidirectional isolate, ``dir="auto"``); the parts are read defensively by :mod:`.message_parts`.
Files are labels, not links: the workspace keeps their names, titles and sizes, never their bytes::

    item.appendChild(file_chips(result))               # pgbouncer.ini · ledger pool settings
    context_item(message, index=3, hit=True, spans=[[4, 10]], in_room=False)
"""

import js

from .conversations import message_id, thread_of
from .dom import element, external_link, highlighted, icon
from .ffi import to_js
from .message_parts import is_image, message_files, message_reactions, source_link, text_field
from .wording import file_size_text, replies_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .ffi import JsProxy

__all__ = [
    "CONTEXT_ITEM_PREFIX",
    "author",
    "context_item",
    "file_chips",
    "source_anchor",
    "thread_note",
    "when",
]

# Element ids of the context view's messages: by position, never by message id (ids are data, and an
# element id taken from data could shadow one of the page's own).
CONTEXT_ITEM_PREFIX = "context-message-"

_formats: "dict[str, JsProxy]" = {}  # made on first use: not on the start-up path


def when(ts: str) -> str:
    """``ts`` (ISO 8601) in the reader's locale and time zone; the text itself if it is no time."""
    date = js.Date.new(ts)
    if js.Number.isNaN(date.getTime()):
        return ts
    if "time" not in _formats:
        _formats["time"] = js.Intl.DateTimeFormat.new(
            js.undefined,
            to_js({"dateStyle": "medium", "timeStyle": "short"}),
        )
    return str(_formats["time"].format(date))


def author(message: "Mapping[str, Any]", class_: str = "message-author") -> "JsProxy":
    """The author's name (``@username`` as its tooltip), or the username when there is no name."""
    user = message.get("u") if isinstance(message.get("u"), dict) else {}  # a JSON object
    username, name = text_field(user, "username"), text_field(user, "name")
    return element(
        "span", name or username, class_=class_, title=f"@{username}" if username else None, dir="auto"
    )


def _time(ts: str, class_: str) -> "JsProxy | None":
    return element("time", when(ts), datetime=ts, class_=class_) if ts else None


def source_anchor(message: "Mapping[str, Any]") -> "JsProxy | None":
    """The message's "Open in Slack" link (a new tab), or None when it has no http(s) source link."""
    link = source_link(message)
    if link is None:
        return None
    return external_link(link.url, icon("external"), link.text, class_="source-link")


def file_chips(message: "Mapping[str, Any]") -> "JsProxy | None":
    """The message's files as labelled chips (name, and size when known; title as the tooltip)."""
    files = message_files(message)
    if not files:
        return None
    chips = []
    for file in files:
        tooltip = " — ".join(part for part in (file.title, file.description) if part)
        size = file_size_text(file.size)
        chips.append(
            element(
                "li",
                icon("image" if is_image(file) else "file"),
                element("span", file.name, class_="file-name", dir="auto"),
                element("span", file.title, class_="file-title", dir="auto") if file.title else None,
                element("span", size, class_="file-size") if size else None,
                class_="file",
                title=tooltip or None,
            )
        )
    return element("ul", *chips, class_="files", aria_label="Files")


def thread_note(result: "Mapping[str, Any]", *, grouped: bool) -> "JsProxy | None":
    """A result's thread, in the list: ``In thread “title” · 6 replies`` for a reply, ``Started a
    thread · 6 replies`` for its first message; under a thread heading only ``Started this thread``."""
    thread = thread_of(result)
    if thread is None:
        return None
    replies = "" if grouped else replies_text(thread.get("replies"))  # the heading says it
    if thread["_id"] == message_id(result):
        words: list[Any] = ["Started this thread" if grouped else "Started a thread"]
    elif grouped:
        return None
    else:
        words = [
            element("span", "In thread ", class_="thread-label"),
            element("span", f"“{text_field(thread, 'title')}”", class_="thread-title", dir="auto"),
        ]
    # Words in boxes of their own: a bare text node would be squeezed into two lines by the title.
    count = element("span", f" · {replies}", class_="thread-label") if replies else None
    return element("p", icon("thread"), *words, count, class_="result-thread")


def _reactions(message: "Mapping[str, Any]") -> "JsProxy | None":
    reactions = message_reactions(message)
    if not reactions:
        return None
    return element(
        "ul",
        *(
            element(
                "li",
                element("span", reaction.emoji, class_="reaction-emoji"),
                element("span", str(len(reaction.usernames)), class_="reaction-count"),
                class_="reaction",
                title=", ".join(f"@{name}" for name in reaction.usernames)
                + f" reacted with {reaction.shortcode}",
            )
            for reaction in reactions
        ),
        class_="reactions",
        aria_label="Reactions",
    )


def context_item(
    message: "Mapping[str, Any]",
    *,
    index: int,
    hit: bool,
    found: bool,
    spans: "Sequence[Any]",
    in_room: bool,
) -> "JsProxy":
    """One message of the context view. ``hit`` marks the one opened, ``found`` one the search also
    found; ``spans`` are ``[start, end)`` code points of its text to mark; ``in_room`` says the view
    is a room's, where a thread's first message and a reply offer their thread."""
    text = text_field(message, "msg")
    edited = text_field(message, "editedAt")
    replies = message.get("tcount")
    starts = isinstance(replies, int) and not isinstance(replies, bool) and replies > 0
    thread = None
    if in_room and (starts or text_field(message, "tmid")):
        thread = element(
            "p",
            icon("thread"),
            None if starts else "Reply in a thread",
            element(
                "button",
                f"View thread · {replies_text(replies)}" if starts else "View thread",
                type="button",
                class_="open-thread",
                data_index=str(index),
            ),
            class_="message-thread",
        )
    return element(
        "li",
        element(
            "article",
            element(
                "header",
                author(message),
                _time(text_field(message, "ts"), "message-time"),
                element("span", "(edited)", class_="message-edited", title=f"Edited {when(edited)}")
                if edited
                else None,
                element("span", icon("pin"), "Pinned", class_="message-pinned")
                if message.get("pinned") is True
                else None,
                source_anchor(message),
                class_="message-meta",
            ),
            element("p", *highlighted(text, spans), class_="message-text", dir="auto"),
            file_chips(message),
            _reactions(message),
            thread,
        ),
        id=f"{CONTEXT_ITEM_PREFIX}{index}",
        class_="context-message is-hit"
        if hit
        else "context-message is-found"
        if found
        else "context-message",
        tabindex="-1",
        aria_current="true" if hit else None,
        data_msg_id=message_id(message),
    )
