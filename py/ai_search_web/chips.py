"""Applied filters as chips before the box: one per value, removable by click or keyboard.

Each chip is a ``<li>`` with its label (a button: clicking it puts the chip's token back into the
box for editing) and a remove button (the chip's focus target). An excluded value (``-in:#random``)
is marked ``is-excluded`` and reads "not ..."; a date chip shows the days its value means, and its
title the words typed. On a focused chip: Backspace or Delete removes it, Enter or Space too (it is
a button), E edits it, Left/Right move between chips and Right from the last one returns to the
box. Backspace or Left at the start of the box focuses the last chip (the box calls
:meth:`ChipsView.focus_last`)::

    chips = ChipsView(get("chips"), on_remove=page.remove_chip, on_leave=page.focus_box, on_edit=box.edit)
    chips.render(build_applied_filter_chips(filters))

Portable: the keystroke stage (:mod:`.keys`, MicroPython) renders its chips with this class, so the
chips before and after the page's Python takes over are the same markup.
"""

from .dom import closest, data_index, element, icon, listen, replace_children
from .ffi import JsProxy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ai_search import FilterChip

__all__ = ["ChipsView"]

_REMOVE_KEYS = frozenset({"Backspace", "Delete"})
_EDIT_KEYS = frozenset({"e", "E", "F2"})


class ChipsView:
    def __init__(
        self,
        container: JsProxy,
        *,
        on_remove: "Callable[[FilterChip, int], None]",
        on_leave: "Callable[[], None]",
        on_edit: "Callable[[FilterChip, int], None] | None" = None,
    ) -> None:
        self._container = container
        self._on_remove = on_remove
        self._on_leave = on_leave
        self._on_edit = on_edit
        self.chips: tuple[FilterChip, ...] = ()
        listen(container, "click", self._click)
        listen(container, "keydown", self._keydown)

    def render(self, chips: "Sequence[FilterChip]") -> None:
        """Show ``chips``; nothing is touched when they are the ones already shown."""
        chips = tuple(chips)
        if chips == self.chips:
            return
        self.chips = chips
        replace_children(self._container, *(self._chip(chip, index) for index, chip in enumerate(chips)))
        self._container.hidden = not chips
        self._container.scrollLeft = self._container.scrollWidth  # the newest chip in view

    @staticmethod
    def _chip(chip: "FilterChip", index: int) -> JsProxy:
        return element(
            "li",
            element(
                "button",
                element("span", chip.label, dir="auto"),
                type="button",
                class_="chip-label",
                title=f"{chip.title} (click to edit)",
                aria_label=f"Edit filter {chip.token}",
                tabindex="-1",
                data_index=str(index),
            ),
            element(
                "button",
                icon("close"),
                type="button",
                class_="chip-remove",
                title=chip.title,
                aria_label=f"Remove filter {chip.label}",
                data_index=str(index),
            ),
            class_="chip is-excluded" if chip.negated else "chip",
            title=chip.title,
            data_filter_key=chip.filter_key,
            data_token=chip.token,
        )

    def _buttons(self) -> "list[JsProxy]":
        return list(self._container.querySelectorAll("button.chip-remove"))

    def focus_last(self) -> bool:
        """Focus the last chip; False when there is none."""
        buttons = self._buttons()
        if not buttons:
            return False
        buttons[-1].focus()
        return True

    def _index(self, event: JsProxy) -> "int | None":
        return data_index(closest(event, "button.chip-remove"), len(self.chips))

    def _remove(self, index: int) -> None:
        self._on_remove(self.chips[index], index)

    def _click(self, event: JsProxy) -> None:
        edit = data_index(closest(event, "button.chip-label"), len(self.chips))
        if edit is not None and self._on_edit is not None:
            event.preventDefault()
            self._on_edit(self.chips[edit], edit)
            return
        index = self._index(event)
        if index is not None:
            event.preventDefault()
            self._remove(index)

    def _keydown(self, event: JsProxy) -> None:
        index = self._index(event)
        if index is None:
            return
        key = event.key
        if key in _REMOVE_KEYS:
            event.preventDefault()
            self._remove(index)
        elif key in _EDIT_KEYS and self._on_edit is not None:
            event.preventDefault()
            self._on_edit(self.chips[index], index)
        elif key == "ArrowLeft" and index > 0:
            event.preventDefault()
            self._buttons()[index - 1].focus()
        elif key == "ArrowRight":
            event.preventDefault()
            if index + 1 < len(self.chips):
                self._buttons()[index + 1].focus()
            else:
                self._on_leave()
