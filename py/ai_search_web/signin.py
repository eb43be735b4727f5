"""The account corner of the header: the sign-in form, who is signed in, and sign out.

A refused sign-in always clears the password (a wrong one must not be sent again by pressing
Enter). When the server locks sign-in for a while (429 with ``Retry-After``, after repeated wrong
passwords), the form says the real wait and counts it down, with the button disabled until then::

    form = SignInForm(session, api, on_error=...)
    form.show()        # after any change of session

The countdown reads the page's clock (``performance.now``): MicroPython's asyncio has no loop clock.
"""

import asyncio

import js

from ai_search import strip_text

from .api import ApiClient, ApiError
from .auth import Session
from .boundary import spawn
from .dom import get, listen, set_text
from .wording import lockout_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .ffi import JsProxy

__all__ = ["LOGIN_FAILED_TEXT", "SignInForm"]

LOGIN_FAILED_TEXT = "That username and password do not match."
# Seconds between two updates of the lockout countdown.
_COUNTDOWN_STEP_SECONDS = 1
_MS_PER_SECOND = 1000


def _now_seconds() -> float:
    """A monotonic clock in seconds: the page's (``performance.now``), the same on both runtimes
    (MicroPython's asyncio has no loop clock to ask)."""
    return float(js.performance.now()) / _MS_PER_SECOND


class SignInForm:
    def __init__(self, session: Session, api: ApiClient) -> None:
        self.session = session
        self.api = api
        self._form = get("login-form")
        self._user = get("login-user")
        self._password = get("login-password")
        self._button = self._form.querySelector("button")
        self._error = get("login-error")
        self._locked_until = 0.0
        listen(self._form, "submit", self._on_submit)
        listen(get("logout"), "click", lambda _event: spawn(self.session.sign_out(self.api), "signing out"))

    def show(self) -> None:
        """Reflect the session: who is signed in, and a clean form for the next person."""
        current = self.session.current
        if current is not None:
            set_text(get("whoami"), f"{current.name or current.username} (@{current.username})")
        set_text(self._error, "")

    def focus(self) -> None:
        (self._password if strip_text(str(self._user.value)) else self._user).focus()

    def _on_submit(self, event: "JsProxy") -> None:
        event.preventDefault()
        if not self._button.disabled:
            spawn(self._sign_in(), "signing in")

    async def _sign_in(self) -> None:
        self._button.disabled = True
        try:
            await self.session.sign_in(self.api, strip_text(str(self._user.value)), str(self._password.value))
            self._password.value = ""
        except ApiError as exc:
            self._password.value = ""
            if exc.status == 429 and exc.retry_after:
                await self._locked(exc.retry_after)
                return
            set_text(
                self._error, LOGIN_FAILED_TEXT if exc.error_type == "error-login-failed" else exc.message
            )
            self._password.focus()
        finally:
            if not self._locked_until:
                self._button.disabled = False

    async def _locked(self, seconds: int) -> None:
        """Count the server's wait down in the form; then sign-in can be tried again."""
        self._locked_until = _now_seconds() + seconds
        try:
            while (left := round(self._locked_until - _now_seconds())) > 0:
                set_text(self._error, lockout_text(left))
                await asyncio.sleep(_COUNTDOWN_STEP_SECONDS)
            set_text(self._error, "You can sign in again now.")
        finally:
            self._locked_until = 0.0
            self._button.disabled = False
        self._password.focus()
