"""The address bar: the query line (``?q=``) and the message open in its context (``&msg=``), so a
search or a message can be shared and back/forward work.

A submitted search pushes one history entry (without ``msg``); opening a result in its context
pushes another (the same ``q`` plus ``msg``), so Back closes the view and shows the results where
they were. ``/?msg=ID`` alone is a message's permalink. The line is the serialized query, the same
one the box, REST (``ai.search?q=``) and MCP read::

    push_query("in:ops deploy")          # /?q=in%3Aops+deploy
    push_message("demo-pg-failover-12")  # /?q=in%3Aops+deploy&msg=demo-pg-failover-12
    on_history_change(page.follow_history)      # back/forward
"""

import js

from ai_search import strip_text

from .dom import listen, present
from .ffi import to_js

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ANSWER_PARAMETER",
    "MESSAGE_PARAMETER",
    "QUERY_PARAMETER",
    "forget_answer",
    "message_was_pushed",
    "on_history_change",
    "permalink",
    "push_message",
    "push_query",
    "read_answer",
    "read_message",
    "read_query",
    "replace_message",
]

QUERY_PARAMETER = "q"
MESSAGE_PARAMETER = "msg"
# A shared answer's link: ``/?answer=<answerId>`` (the server's ANSWER_LINK_PARAMETER).
ANSWER_PARAMETER = "answer"
# The history state field of an entry that opened a message in its context (see message_was_pushed).
_PUSHED_STATE = "aiSearchContext"
# Longest message id the address bar is read for (characters): ids are short; anything longer is
# no id of ours, and is not sent to the server.
MAX_MESSAGE_ID_CHARS = 256


def _read(name: str) -> str:
    value = js.URLSearchParams.new(js.location.search).get(name)
    return value if isinstance(value, str) else ""


def read_query() -> str:
    """The ``q`` parameter of the current address, or ``""``."""
    return _read(QUERY_PARAMETER)


def read_message() -> str:
    """The ``msg`` parameter of the current address (a message id), or ``""``."""
    value = strip_text(_read(MESSAGE_PARAMETER))
    return value if len(value) <= MAX_MESSAGE_ID_CHARS else ""


def read_answer() -> str:
    """The ``answer`` parameter of the current address (a shared answer's id), or ``""``."""
    value = strip_text(_read(ANSWER_PARAMETER))
    return value if len(value) <= MAX_MESSAGE_ID_CHARS else ""


def forget_answer() -> None:
    """Take ``answer`` out of the address (the shared answer was shown; a search replaces it)."""
    if read_answer():
        js.history.replaceState(None, "", _url_with(answer=""))


def _url_with(**changes: str) -> str:
    """The current address with parameters set (``""`` removes one); others are kept. Changed in
    the order of their names: a new parameter goes last, and (MicroPython's keyword arguments have
    no order) the address is the same on both runtimes."""
    params = js.URLSearchParams.new(js.location.search)
    for name in sorted(changes):  # portable: names are unique, no ties
        value = changes[name]
        if value:
            params.set(name, value)
        else:
            params.delete(name)
    search = params.toString()
    return str(js.location.pathname) + ("?" + search if search else "")


def push_query(query: str) -> None:
    """A new history entry for ``query`` (no message open), unless the address already holds it."""
    if query != read_query() or read_message() or read_answer():
        js.history.pushState(None, "", _url_with(q=query, msg="", answer=""))


def push_message(msg_id: str) -> None:
    """A new history entry with ``msg_id`` open, the query kept, marked as the page's own."""
    js.history.pushState(to_js({_PUSHED_STATE: True}), "", _url_with(msg=msg_id))


def message_was_pushed() -> bool:
    """Whether the current entry is one :func:`push_message` made (so Back leaves the message
    for the entry before it), not a permalink opened as it is."""
    state = present(js.history.state)
    return state is not None and getattr(state, _PUSHED_STATE, None) is True


def replace_message(msg_id: str) -> None:
    """Set (or with ``""`` remove) the open message of the current entry without adding one."""
    if msg_id != read_message():
        js.history.replaceState(None, "", _url_with(msg=msg_id))


def permalink(msg_id: str, parameter: str = MESSAGE_PARAMETER) -> str:
    """The search page's address that opens ``msg_id`` in its context (or, with ``parameter``
    ``answer``, a shared answer), for anyone who may read it (from the widget too: the page's
    folder, not the widget's ``/embed``)."""
    params = js.URLSearchParams.new()
    params.set(parameter, msg_id)
    return str(js.URL.new("./?" + params.toString(), js.location.href).href)


def on_history_change(handler: "Callable[[], None]") -> None:
    """Call ``handler()`` when back/forward moves to another entry (read the address from it)."""
    listen(js.window, "popstate", lambda _event: handler())
