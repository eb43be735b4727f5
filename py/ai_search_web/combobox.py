"""The suggestion list under the box, as the WAI-ARIA APG combobox with list autocomplete.

The box is the ``role="combobox"`` input (``aria-autocomplete="list"``, ``aria-controls`` the listbox);
the list is ``role="listbox"`` with ``role="option"`` items. Focus stays in the box: the active option
is named by ``aria-activedescendant`` and marked ``aria-selected="true"``. Keys, handled only when the
list has options and never while an IME is composing (``isComposing`` or key code 229):

==============  ============================================================
Down / Up       move the active option (wrapping); Down opens a closed list
Alt+Down        open the list without moving
Enter / Tab     accept the active option (nothing active: Enter searches, Tab moves on)
Escape          close the list (a closed list leaves Escape to the box)
==============  ============================================================

A click (or tap) on an option accepts it; ``mousedown`` is cancelled so the box keeps focus. Until
Python is ready, static/fallback.js fills the same list (``data-by="fallback"``); from the first
list Python shows (``data-by="python"``, the ``ai-search:python-suggestions`` mark) it is this one::

    combo = Combobox(get("search-box"), get("suggestions"), on_accept=page.accept_suggestion)
    combo.show(suggestions)     # same options as shown: no DOM work

Portable: the keystroke stage (:mod:`.keys`, MicroPython, before the page's Python is ready) shows
its lists with this class too, marked ``data-by="keys"`` (its first: ``ai-search:keys-suggestions``).
"""

import js

from .dom import closest, data_index, element, icon, listen, present, replace_children, set_attribute
from .ffi import JsProxy, js_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ai_search import FilterSuggestion

__all__ = ["FIRST_SUGGESTIONS_MARK", "OPTION_ID_PREFIX", "Combobox", "is_composing", "suggestions_mark"]

OPTION_ID_PREFIX = "suggestion-"
# The performance mark of the first suggestions Python shows (bench/bench_page.py reads it).
FIRST_SUGGESTIONS_MARK = "ai-search:python-suggestions"


def suggestions_mark(by: str) -> str:
    """The mark of the first list shown by ``by`` ("python": the page; "keys": the stage)."""
    return f"ai-search:{by}-suggestions"


# The key code browsers report for keys that belong to an IME composition.
_IME_KEY_CODE = 229
# The icon of each suggestion icon name (decorative: the group is in the option text).
_ICONS = {"hash": "hash", "user": "user", "calendar": "calendar", "clock": "clock", "close": "close"}


def is_composing(event: JsProxy) -> bool:
    """Whether ``event`` is part of an IME composition (Enter there confirms text, never a choice)."""
    return bool(getattr(event, "isComposing", False)) or getattr(event, "keyCode", 0) == _IME_KEY_CODE


class Combobox:
    def __init__(
        self,
        box: JsProxy,
        listbox: JsProxy,
        *,
        on_accept: "Callable[[FilterSuggestion], None]",
        by: str = "python",
    ) -> None:
        self._box = box
        self._listbox = listbox
        self._on_accept = on_accept
        self._by = by  # data-by on the list: who drew it (the bench and the tests tell them apart)
        self.options: tuple[FilterSuggestion, ...] = ()
        self.active = -1
        self.expanded = False
        self._marked = False
        # Whatever the fallback script (or the keystroke stage) showed goes; refresh() shows ours.
        replace_children(listbox)
        self._set_expanded(False)
        listen(listbox, "mousedown", lambda event: event.preventDefault())
        listen(listbox, "click", self._click)

    # -- state -----------------------------------------------------------------------------------

    def show(self, options: "Sequence[FilterSuggestion]") -> None:
        """Offer ``options`` (an empty list closes). The active option survives when still offered."""
        options = tuple(options)
        if options == self.options and self.expanded == bool(options):
            return
        previous = self.options[self.active].key if 0 <= self.active < len(self.options) else None
        self.options = options
        keys = [option.key for option in options]
        self.active = keys.index(previous) if previous in keys else -1
        replace_children(self._listbox, *(self._option(option, i) for i, option in enumerate(options)))
        self._listbox.dataset.by = self._by
        self._set_expanded(bool(options))
        self._mark_active()
        if options and not self._marked:
            self._marked = True
            js.performance.mark(suggestions_mark(self._by))

    def close(self) -> None:
        if self.expanded:
            self._set_expanded(False)
            self.active = -1
            self._mark_active()

    def _set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        self._listbox.hidden = not expanded
        set_attribute(self._box, "aria-expanded", "true" if expanded else "false")

    def _option(self, option: "FilterSuggestion", index: int) -> JsProxy:
        return element(
            "li",
            element(
                "span", icon(_ICONS[option.icon]) if option.icon in _ICONS else None, class_="option-icon"
            ),
            element("span", option.title, class_="option-title", dir="auto"),
            element("span", option.description, class_="option-description", dir="auto"),
            id=f"{OPTION_ID_PREFIX}{index}",
            role="option",
            class_="option",
            aria_selected="false",
            data_index=str(index),
            data_group=option.group,
        )

    def _mark_active(self) -> None:
        for node in self._listbox.children:
            set_attribute(node, "aria-selected", "true" if node.id == self._active_id() else "false")
        active_id = self._active_id()
        set_attribute(self._box, "aria-activedescendant", active_id or False)
        if active_id:
            node = present(self._listbox.querySelector(f"#{active_id}"))
            if node is not None and hasattr(node, "scrollIntoView"):
                node.scrollIntoView(js_object(block="nearest"))

    def _active_id(self) -> str:
        return f"{OPTION_ID_PREFIX}{self.active}" if self.expanded and self.active >= 0 else ""

    def move(self, step: int) -> None:
        if not self.options:
            return
        if not self.expanded:
            self._set_expanded(True)
        if self.active < 0:
            self.active = 0 if step > 0 else len(self.options) - 1
        else:
            self.active = (self.active + step) % len(self.options)
        self._mark_active()

    def accept(self, index: "int | None" = None) -> bool:
        """Accept option ``index`` (default: the active one); False when there is none."""
        index = self.active if index is None else index
        if not self.expanded or not 0 <= index < len(self.options):
            return False
        chosen = self.options[index]
        self.close()
        self._on_accept(chosen)
        return True

    # -- events ----------------------------------------------------------------------------------

    def handle_key(self, event: JsProxy) -> bool:
        """Act on a keydown of the box; True when it was the list's key (default prevented)."""
        if is_composing(event) or not self.options:
            return False
        key = event.key
        consumed = True
        if key == "ArrowDown" and event.altKey:
            self._set_expanded(True)
            self._mark_active()
        elif key == "ArrowDown":
            self.move(1)
        elif key == "ArrowUp" and self.expanded:
            self.move(-1)
        elif key in ("Enter", "Tab") and not event.shiftKey:
            consumed = self.accept()
        elif key == "Escape" and self.expanded:
            self.close()
        else:
            consumed = False
        if consumed:
            event.preventDefault()
        return consumed

    def _click(self, event: JsProxy) -> None:
        index = data_index(closest(event, '[role="option"]'), len(self.options))
        if index is not None:
            self.accept(index)
