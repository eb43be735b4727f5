"""Browser storage that may be switched off: reads answer ``None``, writes are dropped.

``sessionStorage`` and ``localStorage`` throw on every call when the person or the host page blocks
storage (a sandboxed iframe, third-party storage blocked for the widget, some private modes). Nothing
the page keeps there is essential (the session, the chosen model, recent searches), so a blocked
store means "nothing kept" and the page works for as long as it is open. One place catches that, so
no caller can forget to. The store is named, not passed: in a sandboxed frame merely reading
``window.sessionStorage`` throws, so even that must happen inside the guard (:func:`.ffi.try_get`,
:func:`.ffi.try_call`: on MicroPython no ``except`` catches a synchronous JavaScript throw)::

    token = read(SESSION, SESSION_STORAGE_KEY)
    write(LOCAL, RECENT_SEARCHES_KEY, None)  # removes the key
"""

import js

from .dom import present
from .ffi import try_call, try_get

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    StorageArea = Literal["sessionStorage", "localStorage"]
else:
    StorageArea = str  # the name, for callers; the two areas are its only values

__all__ = ["LOCAL", "SESSION", "StorageArea", "read", "write"]

# This tab only, gone when it closes (the session, the chosen model).
SESSION: "StorageArea" = "sessionStorage"
# This browser, across visits (recent searches).
LOCAL: "StorageArea" = "localStorage"


def read(area: "StorageArea", key: str) -> "str | None":
    """The string kept under `key`, or None (nothing kept, not a string, or storage off)."""
    reachable, store = try_get(js.window, area)
    found, value = try_call(store, "getItem", key) if reachable else (False, None)
    value = present(value) if found else None
    return value if isinstance(value, str) else None


def write(area: "StorageArea", key: str, value: "str | None") -> None:
    """Keep `value` under `key` (None removes it); dropped when storage is off or full (keeping it
    was a convenience)."""
    reachable, store = try_get(js.window, area)
    if not reachable:
        return
    if value is None:
        try_call(store, "removeItem", key)
    else:
        try_call(store, "setItem", key, value)
