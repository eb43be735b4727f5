"""The widget's postMessage protocol, pure (no ``js``): who the widget talks to, and what it accepts.

The widget page (``embed.html``) runs in an iframe on a host page. Every message, both ways, is a
plain object ``{"aiSearch": 1, "type": ..., ...fields}``; anything else is not ours and is ignored::

    host -> widget   open {query?}   focus the box; with a query, search it (default filters kept)
                     close           the host hid the widget: close the suggestion list
                     open-message-reply {id, taken}
                                     the answer to open-message: taken, the host shows it itself
    widget -> host   hello           the page loaded (static/embed-frame.js, before Python)
                     ready           Python is ready
                     opened {python} the box has focus after an "open"
                     resize {height} the content's height in CSS pixels
                     close           Escape or the × button: the host should hide the widget
                     result-selected {msgId, rid, position}
                     open-message    {id, msgId, rid, tmid, position, via}: a message is about to
                                     open in the widget's context view; a host that replies
                                     taken shows it itself instead
                     answer-shown    {provider, citations}

A host takes ``open-message`` only if it says it will reply (``?intercept=1`` in the iframe URL;
``static/embed.js`` always does, and replies for the host page's ``ai-search:open-message``
listeners); the widget then waits for the reply at most ``HOST_REPLY_MS`` before it opens the message
itself. Without ``intercept`` the message opens at once and ``open-message`` is only news.

``hello``, ``resize`` and ``close`` come from ``static/embed-frame.js`` (from the first paint, no
Python needed); the rest from :mod:`.embed_bridge` (and ``opened`` from the script before Python).
The host origin comes from the iframe URL (``?host=``, set by ``static/embed.js``); it counts only
when it is on the allow-list the server wrote into the page and, where the browser tells
(``location.ancestorOrigins``), it is the parent's origin. Messages then go to that origin only
(``postMessage`` target origin) and are accepted only from it::

    host = host_origin("https://docs.example.com", parse_allowed_origins(listed), framed=True,
                       parent_origin="https://docs.example.com")
    read_host_message({"aiSearch": 1, "type": "open", "query": "deploy"})  # HostMessage("open", "deploy")
    scoped_query("deploy in:#ops", "in:#support")                          # "in:support in:ops deploy"

Portable (the page on MicroPython 1.28 as on Pyodide: the convention of ``ai_search/_portable.py``).
"""

from ai_search import (
    MAPPINGS,
    MAX_SEARCH_QUERY_LENGTH,
    FrozenRecord,
    merge_search_filters,
    parse_search_filter_text,
    record,
    serialize_search_query,
    split_text,
    strip_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any

__all__ = [
    "HOST_MESSAGE_TYPES",
    "HOST_REPLY_MS",
    "PROTOCOL_FIELD",
    "PROTOCOL_VERSION",
    "WIDGET_MESSAGE_TYPES",
    "HostMessage",
    "host_origin",
    "parse_allowed_origins",
    "read_host_message",
    "scoped_query",
    "widget_message",
]

PROTOCOL_FIELD = "aiSearch"
PROTOCOL_VERSION = 1
HOST_MESSAGE_TYPES = frozenset({"open", "close", "open-message-reply"})
WIDGET_MESSAGE_TYPES = frozenset(
    {"hello", "ready", "opened", "resize", "close", "result-selected", "open-message", "answer-shown"}
)
# Milliseconds the widget waits for a host's open-message-reply before it opens the message itself:
# the loader replies within the same task (a few ms); a host that hangs must not hang the widget.
HOST_REPLY_MS = 1000
# Request numbers a reply may carry: open-message counts from 1 (a JavaScript number is exact to 2**53).
_MAX_REQUEST_ID = 2**53


@record
class HostMessage(FrozenRecord):
    """A message from the host: ``type`` is ``open``, ``close`` or ``open-message-reply``; ``query``
    only for ``open``, ``request`` and ``taken`` only for a reply."""

    __slots__ = _fields = ("type", "query", "request", "taken")
    type: str
    query: str
    request: int
    taken: bool

    def __init__(self, type: str, query: str = "", request: int = 0, taken: bool = False) -> None:
        self._set("type", type)
        self._set("query", query)
        self._set("request", request)
        self._set("taken", taken)


def parse_allowed_origins(text: str) -> "frozenset[str]":
    """The origins of ``<html data-embed-origins>``: space-separated, already serialised by the server."""
    return frozenset(split_text(text))


def host_origin(
    requested: str, allowed: "Collection[str]", *, framed: bool, parent_origin: "str | None"
) -> "str | None":
    """The origin the widget may talk to, or None (not framed, not allowed, or not the parent).

    ``requested`` is the iframe URL's ``host``; ``parent_origin`` is ``location.ancestorOrigins[0]``
    where the browser has it (None elsewhere: the postMessage target origin still stops any other
    parent from reading a message).
    """
    if not framed or requested not in allowed:
        return None
    if parent_origin is not None and parent_origin != requested:
        return None
    return requested


def read_host_message(data: "Any") -> "HostMessage | None":
    """The host message in ``data`` (a message event's data, converted), or None if it is not one.

    A query longer than the search route accepts is cut to ``MAX_SEARCH_QUERY_LENGTH`` characters.
    """
    if not isinstance(data, MAPPINGS) or data.get(PROTOCOL_FIELD) != PROTOCOL_VERSION:
        return None
    kind = data.get("type")
    if kind not in HOST_MESSAGE_TYPES:
        return None
    if kind == "open-message-reply":
        request = data.get("id")
        if (
            isinstance(request, float)
            and -_MAX_REQUEST_ID < request < _MAX_REQUEST_ID
            and request == int(request)
        ):
            request = int(request)  # a JavaScript number arrives as a float when converted
        if not isinstance(request, int) or isinstance(request, bool) or not 0 < request < _MAX_REQUEST_ID:
            return None
        return HostMessage(kind, request=request, taken=data.get("taken") is True)
    query = data.get("query") if kind == "open" else None
    return HostMessage(
        str(kind), strip_text(query)[:MAX_SEARCH_QUERY_LENGTH] if isinstance(query, str) else ""
    )


def widget_message(kind: str, **fields: "Any") -> "dict[str, Any]":
    """A message for the host.

    Raises:
        ValueError: ``kind`` is not a widget message type (a bug: the host would not know it).
    """
    if kind not in WIDGET_MESSAGE_TYPES:
        raise ValueError(f"{kind!r} is not a widget message type")
    message = {PROTOCOL_FIELD: PROTOCOL_VERSION, "type": kind}
    message.update(fields)  # MicroPython has no `**` in a dict display
    return message


def scoped_query(query: str, default_filters: str) -> str:
    """The query line of an ``open`` request: its words and filters plus the widget's default filters.

    A host asking for ``deploy`` in a widget scoped to ``in:#support`` searches ``#support``; filters
    of the query itself are added to (not replacing) the defaults, as chips are.
    """
    parsed = parse_search_filter_text(query)
    defaults = parse_search_filter_text(default_filters).filters
    return serialize_search_query(parsed.search_text, merge_search_filters(defaults, parsed.filters))
