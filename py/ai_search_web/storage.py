"""Browser storage that may be switched off: reads answer ``None``, writes are dropped.

``sessionStorage`` and ``localStorage`` throw on every call when the person or the host page blocks
storage (a sandboxed iframe, third-party storage blocked for the widget, some private modes). Nothing
the page keeps there is essential (the session, the chosen model, recent searches), so a blocked
store means "nothing kept" and the page works for as long as it is open. One place catches that, so
no caller can forget to. The store is named, not passed: in a sandboxed frame merely reading
``window.sessionStorage`` throws, so even that must happen inside the guard::

    token = read(SESSION, SESSION_STORAGE_KEY)
    write(LOCAL, RECENT_SEARCHES_KEY, None)  # removes the key
"""

import js

from .dom import present
from .ffi import JsException

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
    try:
        value = present(getattr(js, area).getItem(key))
    except JsException:
        return None
    return value if isinstance(value, str) else None


def write(area: "StorageArea", key: str, value: "str | None") -> None:
    """Keep `value` under `key` (None removes it); dropped when storage is off or full."""
    try:
        store = getattr(js, area)
        if value is None:
            store.removeItem(key)
        else:
            store.setItem(key, value)
    except JsException:  # off, or over its quota: keeping it was a convenience
        pass
