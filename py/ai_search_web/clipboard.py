"""Copying a link: to the clipboard where the page may write it, else shown selected for Ctrl+C.

The context view's and the answer's "Copy link" both end here. An iframe whose host gave no
``allow="clipboard-write"`` may not write the clipboard (and asking anyway logs a permissions-policy
violation), nor may a page without focus; then the link itself is put in the status line, selected.
"""

import js

from .dom import element, present, replace_children, set_text
from .ffi import JsException, settled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .ffi import JsProxy

__all__ = ["copy_link"]

COPIED = "Link copied."


def _may_write_clipboard() -> bool:
    policy = present(getattr(js.document, "permissionsPolicy", None)) or present(
        getattr(js.document, "featurePolicy", None)
    )
    if policy is None:
        return True  # a browser without the API: try, and fall back to the selected link
    return bool(policy.allowsFeature("clipboard-write"))


async def copy_link(link: str, status: "JsProxy") -> None:
    """Copy ``link`` and say so in ``status``, or show it there selected."""
    clipboard = present(getattr(js.navigator, "clipboard", None)) if _may_write_clipboard() else None
    if clipboard is not None:
        try:
            await settled(clipboard.writeText(link))
            set_text(status, COPIED)
            return
        except JsException:
            pass  # refused: a page without focus, a browser that asks and was told no
    shown = element("span", link, class_="context-link", dir="ltr")
    replace_children(status, "Copy this link: ", shown)
    js.window.getSelection().selectAllChildren(shown)
