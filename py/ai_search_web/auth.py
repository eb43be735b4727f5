"""Sign-in state: the session token lives in ``sessionStorage`` (this tab only, gone when it closes).

``static/fallback.js`` reads the same key before Python is ready, so a signed-in person can search at
once; both sides store the same JSON shape ``{"userId", "authToken", "username", "name"}``::

    session = Session.restore()
    session.credentials()        # ("<userId>", "<token>") or None
    await session.sign_in(api, "alice", "demo-alice")
    await session.sign_out(api)

Portable: :class:`SignedIn` is a plain class (MicroPython has no dataclasses), equal, hashed and
shown as the frozen dataclass it was.
"""

import json

import js

from . import storage
from .api import ApiClient, ApiError
from .message_parts import object_field
from .messages import BAD_RESPONSE_ERROR_TYPE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["SESSION_STORAGE_KEY", "Session", "SignedIn"]

# The sessionStorage key; static/fallback.js uses the same one.
SESSION_STORAGE_KEY = "ai-search.session"


class SignedIn:
    """Who is signed in, as the session keeps them. Immutable by convention: a new sign-in makes
    a new one."""

    __slots__ = ("auth_token", "name", "user_id", "username")

    def __init__(self, user_id: str, auth_token: str, username: str, name: str) -> None:
        self.user_id = user_id
        self.auth_token = auth_token
        self.username = username
        self.name = name

    def _values(self) -> "tuple[str, str, str, str]":
        return (self.user_id, self.auth_token, self.username, self.name)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if isinstance(other, SignedIn) else NotImplemented

    def __ne__(self, other: object) -> bool:
        # MicroPython does not derive `!=` from `__eq__`.
        return not self == other

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        user_id, auth_token, username, name = self._values()
        return (
            f"SignedIn(user_id={user_id!r}, auth_token={auth_token!r}, username={username!r}, name={name!r})"
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "userId": self.user_id,
                "authToken": self.auth_token,
                "username": self.username,
                "name": self.name,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> "SignedIn | None":
        try:
            data: Any = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        fields = [data.get(key) for key in ("userId", "authToken", "username", "name")]
        texts = [value for value in fields if isinstance(value, str)]
        if len(texts) != len(fields) or not texts[0] or not texts[1]:
            return None
        user_id, auth_token, username, name = texts
        return cls(user_id, auth_token, username, name)


class Session:
    """Who is signed in; ``on_change`` runs after every sign-in and sign-out (the page re-renders).

    ``ended`` says why the last sign-out happened: ``"expired"`` (the server refused the token) or
    ``"signed-out"``.
    """

    def __init__(self, current: "SignedIn | None") -> None:
        self.current = current
        self.on_change: Callable[[], None] = lambda: None
        self.ended = ""

    @classmethod
    def restore(cls) -> "Session":
        # Storage off: nothing kept, and the session lasts as long as the page.
        stored = storage.read(storage.SESSION, SESSION_STORAGE_KEY)
        return cls(SignedIn.from_json(stored) if stored is not None else None)

    def credentials(self) -> "tuple[str, str] | None":
        return None if self.current is None else (self.current.user_id, self.current.auth_token)

    def _set(self, current: "SignedIn | None") -> None:
        self.current = current
        storage.write(storage.SESSION, SESSION_STORAGE_KEY, None if current is None else current.to_json())
        js.document.documentElement.dataset.auth = "in" if current else "out"
        self.on_change()

    async def sign_in(self, api: ApiClient, username: str, password: str) -> None:
        """Log in; on success the session is stored and ``on_change`` runs.

        Raises:
            ApiError: wrong credentials (``error-login-failed``), rate limit, network...
        """
        data = await api.post("login", {"user": username, "password": password})
        payload = object_field(data, "data")
        me = object_field(payload, "me")
        user_id, token = payload.get("userId"), payload.get("authToken")
        if not isinstance(user_id, str) or not isinstance(token, str):
            raise ApiError(BAD_RESPONSE_ERROR_TYPE)
        self._set(SignedIn(user_id, token, str(me.get("username") or username), str(me.get("name") or "")))

    async def sign_out(self, api: ApiClient) -> None:
        """End the session on the server (best effort) and forget it here, whatever the server says."""
        if self.current is not None:
            try:  # noqa: SIM105 (MicroPython has no contextlib)
                await api.post("logout", {})
            except ApiError:  # an expired token is signed out all the same
                pass
        self.ended = "signed-out"
        self._set(None)

    def expired(self) -> None:
        """The server refused the token (401): forget it."""
        if self.current is not None:
            self.ended = "expired"
            self._set(None)
