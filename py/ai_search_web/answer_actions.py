"""What a reader does with an answer: rate it (thumbs up or down, and why) and copy its link.

Every answer the server keeps has an ``answerId``. A thumb sends ``ai.search.answer.feedback``
``{answerId, rating}`` at once (one rating per person and answer; the latest counts) and offers a
reason field; sending a reason sends the rating again with it (at most
``MAX_FEEDBACK_REASON_LENGTH`` characters, the route's own limit). "Copy link" shares the answer
(``ai.search.answer.share``, its owner only) and copies the page's ``/?answer=<answerId>``; a reader
who opens it sees the answer as they may see it (sources they cannot read left out, with a note).
An answer the store could not keep (``answerId`` null) offers neither.
"""

from ai_search import MAX_FEEDBACK_REASON_LENGTH, strip_text

from . import url_state
from .api import ApiClient, ApiError
from .clipboard import copy_link
from .dom import get, listen, set_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from .ffi import JsProxy

__all__ = ["RATINGS", "AnswerActions"]

RATINGS = ("up", "down")
_THANKS = {"up": "Thanks: marked as a good answer.", "down": "Thanks: marked as a poor answer."}
_REASON_SAVED = "Thanks: your reason was saved."


class AnswerActions:
    def __init__(self, api: ApiClient, *, spawn: "Callable[[Coroutine[Any, Any, Any], str], None]") -> None:
        self._api = api
        self._spawn = spawn
        self._bar = get("answer-actions")
        self._buttons = {rating: get(f"answer-{rating}") for rating in RATINGS}
        self._share = get("answer-share")
        self._status = get("answer-actions-status")
        self._form = get("answer-reason-form")
        self._reason = get("answer-reason")
        self._reason.maxLength = MAX_FEEDBACK_REASON_LENGTH
        self.answer_id = ""
        self.rating = ""
        for rating in RATINGS:
            listen(self._buttons[rating], "click", self._rating_click(rating))
        listen(self._share, "click", lambda _event: self._spawn(self._copy(), "sharing an answer"))
        listen(self._form, "submit", self._submit)

    def show(self, answer_id: str, *, rating: str = "", reason: str = "", mine: bool = True) -> None:
        """Offer the actions for ``answer_id`` (none for ""): the reader's own rating and reason
        when they gave one; the link only to the answer's owner (sharing is theirs)."""
        self.answer_id = answer_id
        self._bar.hidden = not answer_id
        self._share.hidden = not mine
        self._reason.value = reason
        self._form.hidden = True
        set_text(self._status, "")
        self._press(rating if rating in RATINGS else "")

    def hide(self) -> None:
        self.show("")

    def _press(self, rating: str) -> None:
        self.rating = rating
        for name in RATINGS:
            self._buttons[name].setAttribute("aria-pressed", "true" if name == rating else "false")

    async def _send(self, rating: str, reason: str) -> bool:
        answer_id = self.answer_id
        try:
            await self._api.post(
                "ai.search.answer.feedback", {"answerId": answer_id, "rating": rating, "reason": reason}
            )
        except ApiError as exc:
            if answer_id == self.answer_id:
                set_text(self._status, exc.message)
            return False
        return answer_id == self.answer_id

    def _rating_click(self, rating: str) -> "Callable[[JsProxy], None]":
        """The click handler of ``rating``'s button (a closure per button: each sends its own)."""

        def click(_event: "JsProxy") -> None:
            self._spawn(self._rate(rating), "rating an answer")

        return click

    async def _rate(self, rating: str) -> None:
        if not self.answer_id:
            return
        if await self._send(rating, ""):
            self._press(rating)
            set_text(self._status, _THANKS[rating])
            self._reason.value = ""
            self._form.hidden = False

    def _submit(self, event: "JsProxy") -> None:
        event.preventDefault()
        self._spawn(self._send_reason(), "sending a reason")

    async def _send_reason(self) -> None:
        reason = strip_text(str(self._reason.value or ""))[:MAX_FEEDBACK_REASON_LENGTH]
        if not self.answer_id or not self.rating or not reason:
            return
        if await self._send(self.rating, reason):
            self._form.hidden = True
            set_text(self._status, _REASON_SAVED)
            self._buttons[self.rating].focus()

    async def _copy(self) -> None:
        answer_id = self.answer_id
        if not answer_id:
            return
        try:
            await self._api.post("ai.search.answer.share", {"answerId": answer_id})
        except ApiError as exc:
            set_text(self._status, exc.message)
            return
        if answer_id == self.answer_id:
            await copy_link(url_state.permalink(answer_id, url_state.ANSWER_PARAMETER), self._status)
