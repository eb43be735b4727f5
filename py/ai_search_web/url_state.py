"""The query line in the address bar (``?q=``), so a search can be shared and back/forward work.

A submitted search pushes one history entry; going back or forward calls the page's handler with
that entry's query line (``""`` for none). The line is the serialized query, the same one the box,
REST (``ai.search?q=``) and MCP read::

    push_query("in:ops deploy")          # /?q=in%3Aops+deploy
    on_query_change(page.load_query)      # back/forward
"""

from __future__ import annotations

from collections.abc import Callable

import js

from .dom import listen

__all__ = ["QUERY_PARAMETER", "on_query_change", "push_query", "read_query"]

QUERY_PARAMETER = "q"


def read_query() -> str:
    """The ``q`` parameter of the current address, or ``""``."""
    value = js.URLSearchParams.new(js.location.search).get(QUERY_PARAMETER)
    return value if isinstance(value, str) else ""


def _url_for(query: str) -> str:
    params = js.URLSearchParams.new(js.location.search)
    if query:
        params.set(QUERY_PARAMETER, query)
    else:
        params.delete(QUERY_PARAMETER)
    search = params.toString()
    return str(js.location.pathname) + ("?" + search if search else "")


def push_query(query: str) -> None:
    """A new history entry for ``query``, unless the address already holds it."""
    if query != read_query():
        js.history.pushState(None, "", _url_for(query))


def on_query_change(handler: Callable[[str], None]) -> None:
    """Call ``handler(query)`` when back/forward moves to another entry."""
    listen(js.window, "popstate", lambda _event: handler(read_query()))
