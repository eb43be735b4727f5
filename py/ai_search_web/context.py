"""The context view: a message opened in its conversation, the thread or the messages around it.

A result (a click, or Enter on a focused one), a citation ``[N]`` of an answer, a thread's "N more
in this thread" and a permalink (``/?msg=ID``) all open the same view. It asks
``chat.getMessageContext`` once per message (answers are kept, so opening it again is immediate) and
shows the thread (first message, then the replies) or, outside a thread, the messages before and
after it in its room, oldest first. The message opened is marked (``aria-current``), scrolled to the
middle and focused; the words the search matched are marked in it, and in every other message of the
conversation the search found. A citation can pass the span of the text that supports it, which is
marked instead. Edits, pins, reactions and files show where present.

On a wide screen the view is a panel beside the results; below ``960px`` (a phone, the widget) it is a
full view in their place (``app.css``; ``<html data-context>`` says it is open). Opening pushes a
history entry (``&msg=``) and closing goes back, so the browser's Back closes it too and the results
are where they were (their scroll position is kept, focus returns to what opened it). Escape and the
close button close it; "Copy link" copies the message's permalink::

    view = ContextView(api, hits=results.hit, locate=page.result_element, spawn=spawn, embedded=False)
    view.open("demo-pg-failover-12", hit=result, invoker=item)
    view.close()
"""

from collections import OrderedDict

import js

from . import url_state
from .api import ApiError
from .clipboard import copy_link
from .conversations import message_id
from .dom import closest, data_index, element, get, listen, present, replace_children, set_text
from .ffi import js_object
from .message_parts import text_field
from .message_view import CONTEXT_ITEM_PREFIX, context_item
from .results import room_label
from .wording import replies_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
    from typing import Any, Literal

    from .api import ApiClient
    from .ffi import JsProxy

    # The route's answer, and what the view was asked to show.
    Context = Mapping[str, Any]
    Span = tuple[int, int]
    History = Literal["push", "replace", "none"]
    # What is about to open, for someone who may show it instead (the widget's host: open-message):
    # the message, its room and thread, its place in the result list (0: none), and what opened it.
    OpenRequest = Mapping[str, Any]

__all__ = ["MAX_CACHED_CONTEXTS", "ContextView"]

# Conversations kept after they were shown, so that Back/Forward and opening again need no request;
# a few dozen is a long reading session, and each is at most about sixty messages.
MAX_CACHED_CONTEXTS = 40
_LOADING = "Loading the conversation…"


def _as_message(result: "Mapping[str, Any]") -> "dict[str, Any]":
    """A search result in the shape of a message, shown alone while its conversation loads."""
    message = dict(result)
    message["msg"] = text_field(result, "text")
    return message


class ContextView:
    def __init__(
        self,
        api: "ApiClient",
        *,
        hits: "Callable[[str], Mapping[str, Any] | None]",
        locate: "Callable[[str], JsProxy | None]",
        spawn: "Callable[[Coroutine[Any, Any, Any], str], None]",
        embedded: bool,
    ) -> None:
        self._api = api
        self._hits = hits  # the search's result for a message id: its highlights
        self._locate = locate  # the result element of a message id, to return focus to
        self._spawn = spawn
        self._embedded = embedded  # the widget: history entries are replaced, never stepped back
        self._section = get("context")
        self._title = get("context-title")
        self._where = get("context-where")
        self._status = get("context-status")
        self._retry = get("context-retry")
        self._list = get("context-list")
        self.msg_id = ""  # the message open, "" when closed
        self._span: Span | None = None
        self._invoker: JsProxy | None = None
        self._scroll = 0.0
        self._seq = 0
        self._controller: JsProxy | None = None
        self._shown: tuple[Mapping[str, Any], ...] = ()
        self._cache: OrderedDict[str, Context] = OrderedDict()
        # Told before a search result opens here (the widget's host). It answers None (open it now)
        # or an awaitable that is True when someone else showed the message instead.
        self.intercept: Callable[[OpenRequest], Awaitable[bool] | None] | None = None
        listen(get("context-close"), "click", lambda _event: self.close())
        listen(get("context-copy"), "click", lambda _event: self._spawn(self._copy(), "copying a link"))
        listen(self._retry, "click", lambda _event: self._reload())
        listen(self._list, "click", self._click)
        listen(js.document.body, "keydown", self._key)

    @property
    def is_open(self) -> bool:
        return bool(self.msg_id)

    # -- opening and closing ---------------------------------------------------------------------

    def open(
        self,
        msg_id: str,
        *,
        hit: "Mapping[str, Any] | None" = None,
        span: "Span | None" = None,
        invoker: "JsProxy | None" = None,
        history: "History" = "push",
    ) -> None:
        """Show ``msg_id`` in its conversation. ``hit`` (its search result) is shown at once while
        the conversation loads; ``span`` marks the text a citation stands on; focus goes back to
        ``invoker`` when the view closes. A view already open changes message in the same entry."""
        if not msg_id:
            return
        if not self.is_open:
            self._scroll = float(js.window.scrollY)
            self._invoker = invoker
        elif invoker is not None:
            self._invoker = invoker
        if history == "push" and not self.is_open:
            url_state.push_message(msg_id)
        elif history != "none":
            url_state.replace_message(msg_id)
        self._mark_result(self.msg_id, False)
        self.msg_id, self._span = msg_id, span
        self._mark_result(msg_id, True)
        self._seq += 1
        self._abort()
        js.document.documentElement.dataset.context = "open"
        self._section.hidden = False
        if (cached := self._cache.pop(msg_id, None)) is not None:
            self._cache[msg_id] = cached  # the newest again (MicroPython's OrderedDict has no move_to_end)
            self._render(cached)
            return
        self._loading(hit)
        self._spawn(self._load(msg_id, self._seq), "loading a conversation")

    def show_result(
        self,
        result: "Mapping[str, Any]",
        *,
        invoker: "JsProxy | None",
        position: int | None,
        span: "Span | None" = None,
        via: str,
        preview: bool = True,
    ) -> None:
        """Open a search result (``via`` a click on it, or a citation), unless :attr:`intercept`
        says it was taken; with ``preview`` it is shown alone while its conversation loads (a
        message that is no result has nothing to show before it loads)."""
        msg_id = message_id(result)
        if not msg_id:
            return
        request = {
            "msgId": msg_id,
            "rid": text_field(result, "rid"),
            "tmid": text_field(result, "tmid"),
            "position": position or 0,
            "via": via,
        }
        hit = result if preview else None
        taken = self.intercept(request) if self.intercept is not None else None
        if taken is None:
            self.open(msg_id, hit=hit, span=span, invoker=invoker)
        else:
            self._spawn(self._open_unless_taken(taken, msg_id, hit, span, invoker), "opening a message")

    async def _open_unless_taken(
        self,
        taken: "Awaitable[bool]",
        msg_id: str,
        hit: "Mapping[str, Any] | None",
        span: "Span | None",
        invoker: "JsProxy | None",
    ) -> None:
        if not await taken:
            self.open(msg_id, hit=hit, span=span, invoker=invoker)

    def close(self, *, history: bool = True, restore_focus: bool = True) -> None:
        """Close the view. With ``history``, its entry goes too (Back, when it pushed one); without,
        the address is left as it is (Back/Forward already moved it, or a new search replaces it)."""
        if not self.is_open:
            return
        self._seq += 1
        self._abort()
        closed, self.msg_id, self._shown = self.msg_id, "", ()
        self._mark_result(closed, False)
        js.document.documentElement.removeAttribute("data-context")
        self._section.hidden = True
        self._section.dataset.state = "closed"
        replace_children(self._list)
        if history:
            if not self._embedded and url_state.message_was_pushed():
                js.history.back()  # the entry it pushed: Back and the close button end the same way
            else:
                url_state.replace_message("")
        js.window.scrollTo(0, self._scroll)
        invoker, self._invoker = self._invoker, None
        if restore_focus:
            target = invoker if invoker is not None and bool(invoker.isConnected) else self._locate(closed)
            (target if target is not None else get("search-box")).focus()

    def focus(self) -> None:
        """Focus the message opened (the view was hidden and is shown again)."""
        if self.is_open:
            self._focus_hit(scroll=False)

    def _mark_result(self, msg_id: str, is_open: bool) -> None:
        """Mark the listed result whose conversation is open (beside the list on a wide screen)."""
        node = self._locate(msg_id) if msg_id else None
        if node is not None:
            node.classList.toggle("is-open", is_open)

    def reset(self) -> None:
        """Signed out: close without touching the address (signing in again reopens it), forget all."""
        self.close(history=False, restore_focus=False)
        self._cache.clear()

    def _abort(self) -> None:
        if self._controller is not None:
            self._controller.abort()
            self._controller = None

    # -- loading ---------------------------------------------------------------------------------

    def _loading(self, hit: "Mapping[str, Any] | None") -> None:
        self._section.dataset.state = "loading"
        self._section.setAttribute("aria-busy", "true")
        self._retry.hidden = True
        set_text(self._title, "Conversation")
        set_text(self._where, room_label(hit.get("room")) if hit is not None else "")
        set_text(self._status, _LOADING)
        self._shown = (_as_message(hit),) if hit is not None else ()
        replace_children(self._list, *self._items(self._shown, in_room=False))
        self._focus_hit(scroll=False)

    async def _load(self, msg_id: str, seq: int) -> None:
        controller = self._controller = js.AbortController.new()
        try:
            data = await self._api.get("chat.getMessageContext", {"msgId": msg_id}, signal=controller.signal)
        except ApiError as exc:
            if seq == self._seq:
                self._failed(exc.message)
            return
        if seq != self._seq:
            return
        self._controller = None
        self._cache[msg_id] = data
        while len(self._cache) > MAX_CACHED_CONTEXTS:
            del self._cache[next(iter(self._cache))]  # the oldest (an OrderedDict iterates in order)
        self._render(data)

    def _reload(self) -> None:
        if self.is_open:
            self.open(self.msg_id, span=self._span, history="none")

    def _failed(self, message: str) -> None:
        self._section.dataset.state = "failed"
        self._section.setAttribute("aria-busy", "false")
        set_text(self._status, message)
        self._retry.hidden = False

    # -- rendering -------------------------------------------------------------------------------

    def _render(self, data: "Context") -> None:
        messages = data.get("messages")
        shown = tuple(m for m in messages if isinstance(m, dict)) if isinstance(messages, list) else ()
        thread = data.get("kind") == "thread"
        room = room_label(data.get("room"))
        replies = count if isinstance(count := data.get("replies"), int) else 0
        set_text(self._title, "Thread" if thread else "Conversation")
        set_text(self._where, " · ".join(p for p in (room, replies_text(replies) if thread else "") if p))
        items = self._items(shown, in_room=not thread)
        if thread and shown and message_id(shown[0]) == data.get("tmid"):
            items.insert(1, element("li", replies_text(replies), class_="context-divider", role="separator"))
        listed = sum(1 for m in shown if message_id(m) != data.get("tmid"))
        partial = thread and replies > listed
        set_text(
            self._status,
            f"Showing {listed} of {replies_text(replies)}, around this message." if partial else "",
        )
        self._shown = shown
        replace_children(self._list, *items)
        self._retry.hidden = True
        self._section.setAttribute("aria-busy", "false")
        self._section.dataset.state = (
            "ready" if any(message_id(m) == self.msg_id for m in shown) else "missing"
        )
        self._focus_hit(scroll=True)

    def _items(self, messages: "Sequence[Mapping[str, Any]]", *, in_room: bool) -> "list[Any]":
        items = []
        for index, message in enumerate(messages):
            ident = message_id(message)
            found = self._hits(ident)
            spans: Any = found.get("highlights") if found is not None else None
            if ident == self.msg_id and self._span is not None:
                spans = [list(self._span)]
            items.append(
                context_item(
                    message,
                    index=index,
                    hit=ident == self.msg_id,
                    found=found is not None,
                    spans=spans if isinstance(spans, list) else [],
                    in_room=in_room,
                )
            )
        return items

    def _focus_hit(self, *, scroll: bool) -> None:
        """The message opened to the middle of the view, with focus, unless a control of the view
        took focus since (it is not taken away from there)."""
        index = next((i for i, m in enumerate(self._shown) if message_id(m) == self.msg_id), None)
        node = (
            present(js.document.getElementById(f"{CONTEXT_ITEM_PREFIX}{index}"))
            if index is not None
            else None
        )
        active = present(js.document.activeElement)
        inside = on_control = False
        if active is not None:
            inside = bool(self._section.contains(active))
            on_control = (
                inside and active != self._section and not bool(active.classList.contains("context-message"))
            )
        if node is None:
            if not inside:
                self._section.focus(js_object(preventScroll=True))
            return
        if scroll:
            node.scrollIntoView(js_object(block="center"))
        if not on_control:
            node.focus(js_object(preventScroll=True))

    # -- the view's controls ---------------------------------------------------------------------

    def _click(self, event: "JsProxy") -> None:
        index = data_index(closest(event, "button.open-thread"), len(self._shown))
        if index is not None:
            self.open(message_id(self._shown[index]), history="replace")

    def _key(self, event: "JsProxy") -> None:
        """Escape closes the view, unless it belongs to a text field outside it, an open list
        (which took it first) or an IME composition."""
        if not self.is_open or event.key != "Escape" or event.defaultPrevented or event.isComposing:
            return
        target = present(event.target)
        editing = target is not None and (
            bool(getattr(target, "isContentEditable", False))
            or str(getattr(target, "tagName", "")) in ("INPUT", "TEXTAREA", "SELECT")
        )
        if editing and not self._section.contains(target):
            return
        event.preventDefault()  # the widget's host must not close the whole widget for it
        self.close()

    async def _copy(self) -> None:
        if self.is_open:
            await copy_link(url_state.permalink(self.msg_id), self._status)
