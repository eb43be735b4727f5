"""A stand-in Rocket.Chat REST server for the sync tests: Starlette on uvicorn, in a thread, on loopback.

Built from Rocket.Chat's REST API documentation and its server code (``apps/meteor/app/api/server/v1``):
the routes the mirror and the sign-in use, in Rocket.Chat's names, parameters and shapes.

=========================  ==============================================================
GET  /api/info             ``{"version", "success"}`` (``version`` is settable: "6.9.0" has no cursor API)
POST /api/v1/login         ``{"user", "password"}`` -> ``{"status": "success", "data": {userId, authToken, me}}``
                           (401 ``totp-required`` for a user in ``two_factor``)
POST /api/v1/logout        ends the login token used
GET  /api/v1/me            the caller (401 ``{"status": "error", "message": "You must be logged in to do this."}``)
GET  /api/v1/users.list    ``offset``/``count`` pages of users (``_id, username, name, type, active, roles``)
GET  /api/v1/rooms.adminRooms  pages of rooms, ``types[]`` filtered (admins only)
GET  /api/v1/channels.members, groups.members   pages of a room's members (403 for a room listed in ``unreadable``)
GET  /api/v1/chat.syncMessages  ``type=UPDATED|DELETED&next=<ms>&count`` pages sorted by ``_updatedAt``
                           (``_deletedAt``), Rocket.Chat's cursor rules; or ``lastUpdate`` (everything since)
GET  /api/v1/chat.getMessage   one message by ``msgId``
=========================  ==============================================================

A route named in ``hostile`` (path -> one of ``HOSTILE_MODES``) answers as a hostile or broken server
would: pages without end (``endless``: ``total`` 10**12, every page full of made-up items), the first
page whatever the ``offset`` (``ignores-offset``), ``offset: 0`` on every page (``wrong-offset``), a
``total`` that grows with every page after the first (``growing``), pages ten times the ``count`` asked for
(``oversized``); ``chat.syncMessages`` the same page with a ``next`` cursor for ever (``stuck``) or
made-up messages without end (``endless``). Past ``HOSTILE_PATIENCE_PAGES`` calls to the route it
gives up and answers an empty page, so a client without bounds ends (and its test fails) rather than
hangs.

Every answer carries ``X-RateLimit-Limit/-Remaining/-Reset`` for a window of ``rate_window_seconds``
per route and token; past ``rate_limit`` calls in a window the route answers 429 with
``Retry-After`` (Rocket.Chat's own error text, too). Tests change the workspace through methods
(``post``, ``edit``, ``delete``, ``join``, ``leave``, ``rename``...), make the server fail
(``fail_next``), and ``restart`` it on the same port.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import formatdate
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._uvicorn import UvicornThread

__all__ = ["HOSTILE_MODES", "HOSTILE_PATIENCE_PAGES", "FakeRocketChat", "iso", "sync_argv"]

HOSTILE_MODES = ("endless", "ignores-offset", "wrong-offset", "growing", "oversized", "stuck")
# Calls to a hostile route after which it answers an empty page (the test fails instead of hanging).
HOSTILE_PATIENCE_PAGES = 300
# What an endless listing claims to hold.
HOSTILE_TOTAL = 10**12
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
ADMIN_ID = "rcAdminUser000001"
ADMIN_TOKEN = "admin-pat-0123456789abcdefghijklmnopqrst"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass
class _Workspace:
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)  # username -> password
    tokens: dict[str, str] = field(default_factory=dict)  # token -> user id
    rooms: dict[str, dict[str, Any]] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)  # room id -> user ids
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    trash: dict[str, dict[str, Any]] = field(default_factory=dict)


class FakeRocketChat:
    """The server and its workspace; ``serve()`` starts it (module docstring)."""

    def __init__(
        self, *, version: str = "7.4.0", rate_limit: int = 10_000, rate_window_seconds: float = 60.0
    ) -> None:
        self.version = version
        self.rate_limit = rate_limit
        self.rate_window_seconds = rate_window_seconds
        self.ws = _Workspace()
        self.unreadable: set[str] = set()  # room ids whose members and messages the admin may not read
        self.two_factor: set[str] = set()  # usernames whose login asks for a TOTP code
        self.hostile: dict[str, str] = {}  # route path -> one of HOSTILE_MODES
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path, query)
        self.generations: list[int] = []  # the server's generation for each request
        self._failures: list[int] = []  # statuses to answer next, whatever the route
        self._bounce: tuple[str, int, float] | None = None
        self._bouncing = False
        self._unavailable: tuple[str, int, float] | None = None
        self._unavailable_until = 0.0
        self.generation = 0  # how many times the server started; requests are logged with it
        self._windows: dict[tuple[str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._clock = T0
        self._ids = itertools.count(1)
        self.server: UvicornThread | None = None
        self.port = 0
        self.add_user(
            ADMIN_ID, "admin", "Ada Admin", roles=["admin"], password="admin-pass-123", token=ADMIN_TOKEN
        )
        self.app = Starlette(
            routes=[
                Route("/api/info", self._info),
                Route("/api/v1/login", self._login, methods=["POST"]),
                Route("/api/v1/logout", self._logout, methods=["POST"]),
                Route("/api/v1/me", self._me),
                Route("/api/v1/users.list", self._users),
                Route("/api/v1/rooms.adminRooms", self._admin_rooms),
                Route("/api/v1/channels.members", self._room_members),
                Route("/api/v1/groups.members", self._room_members),
                Route("/api/v1/chat.syncMessages", self._sync),
                Route("/api/v1/chat.getMessage", self._get_message),
            ]
        )

    # -- running ---------------------------------------------------------------------------------

    def serve(self) -> FakeRocketChat:
        self.generation += 1
        self.server = UvicornThread(self.app, port=self.port).start()
        self.port = self.server.port
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def restart(self) -> None:
        """Stop and start again on the same port, workspace kept (as a server restart does)."""
        self.stop()
        self.serve()

    def bounce_after(self, path: str, calls: int, down_seconds: float) -> None:
        """After ``calls`` more requests to ``path``, go away for ``down_seconds``, then come back on
        the same port with the same workspace (a restart in the middle of a sync)."""
        self._bounce = (path, len(self.calls(path)) + calls, down_seconds)

    def _bounce_now(self, down_seconds: float) -> None:
        """From now on 503 (what a proxy answers for a server going down) until the server is gone;
        then nothing listens for ``down_seconds``; then the server is back."""
        self._bouncing = True

        def bounce() -> None:
            self.stop()
            time.sleep(down_seconds)
            self._bouncing = False
            self.serve()

        threading.Thread(target=bounce, daemon=True).start()

    def unavailable_after(self, path: str, calls: int, seconds: float) -> None:
        """After ``calls`` more requests to ``path``, answer 503 to everything for ``seconds``."""
        self._unavailable = (path, len(self.calls(path)) + calls, seconds)

    def fail_next(self, *statuses: int) -> None:
        """Answer the next requests with these statuses (503, 429...), then behave again."""
        with self._lock:
            self._failures.extend(statuses)

    def calls(self, path: str) -> list[dict[str, str]]:
        return [query for _method, p, query in self.requests if p == path]

    # -- the workspace ---------------------------------------------------------------------------

    def tick(self, seconds: float = 1.0) -> datetime:
        self._clock += timedelta(seconds=seconds)
        return self._clock

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):0{17 - len(prefix)}d}"

    def add_user(
        self,
        user_id: str,
        username: str,
        name: str,
        *,
        kind: str = "user",
        roles: list[str] | None = None,
        active: bool = True,
        password: str | None = None,
        token: str | None = None,
    ) -> None:
        self.ws.users[user_id] = {
            "_id": user_id, "username": username, "name": name, "type": kind, "active": active,
            "roles": roles or (["bot"] if kind == "bot" else ["user"]), "status": "online",
            "_updatedAt": iso(self.tick()),
        }  # fmt: skip
        if password is not None:
            self.ws.passwords[username] = password
        if token is not None:
            self.ws.tokens[token] = user_id

    def add_room(
        self, room_id: str, kind: str, name: str, members: list[str], *, topic: str = "", fname: str = ""
    ) -> None:
        room: dict[str, Any] = {
            "_id": room_id,
            "t": kind,
            "ts": iso(self.tick()),
            "_updatedAt": iso(self._clock),
            "usersCount": len(members),
        }
        if kind == "d":
            room.update(uids=list(members), usernames=[self.ws.users[u]["username"] for u in members])
        else:
            room.update(name=name, fname=fname or name, topic=topic)
        self.ws.rooms[room_id] = room
        self.ws.members[room_id] = list(members)

    def join(self, room_id: str, user_id: str) -> None:
        self.ws.members[room_id].append(user_id)
        self.ws.rooms[room_id]["_updatedAt"] = iso(self.tick())

    def leave(self, room_id: str, user_id: str) -> None:
        self.ws.members[room_id].remove(user_id)
        self.ws.rooms[room_id]["_updatedAt"] = iso(self.tick())

    def rename(self, room_id: str, name: str) -> None:
        self.ws.rooms[room_id].update(name=name, fname=name, _updatedAt=iso(self.tick()))

    def remove_room(self, room_id: str) -> None:
        del self.ws.rooms[room_id]

    def post(
        self,
        room_id: str,
        user_id: str,
        text: str,
        *,
        tmid: str | None = None,
        message_id: str | None = None,
        **extra: Any,
    ) -> str:
        now = self.tick()
        user = self.ws.users[user_id]
        message_id = message_id or self.new_id("m")
        message: dict[str, Any] = {
            "_id": message_id, "rid": room_id, "msg": text, "ts": iso(now), "_updatedAt": iso(now),
            "u": {"_id": user_id, "username": user["username"], "name": user["name"]}, "mentions": [], "channels": [],
            **extra,
        }  # fmt: skip
        if tmid is not None:
            message["tmid"] = tmid
            parent = self.ws.messages[tmid]  # a reply updates its thread's first message, as in Rocket.Chat
            parent.update(tcount=parent.get("tcount", 0) + 1, tlm=iso(now), _updatedAt=iso(self.tick(0.001)))
        self.ws.messages[message_id] = message
        return message_id

    def edit(self, message_id: str, text: str) -> None:
        now = self.tick()
        self.ws.messages[message_id].update(
            msg=text, editedAt=iso(now), _updatedAt=iso(now), editedBy={"_id": ADMIN_ID, "username": "admin"}
        )

    def react(self, message_id: str, emoji: str, usernames: list[str]) -> None:
        self.ws.messages[message_id].setdefault("reactions", {})[emoji] = {"usernames": usernames}
        self.ws.messages[message_id]["_updatedAt"] = iso(self.tick())

    def delete(self, message_id: str) -> None:
        message = self.ws.messages.pop(message_id)
        self.ws.trash[message_id] = {"_id": message_id, "rid": message["rid"], "_deletedAt": iso(self.tick())}

    # -- plumbing --------------------------------------------------------------------------------

    def _answer(self, request: Request, body: dict[str, Any], status: int = 200) -> Response:
        route = request.url.path
        caller = request.headers.get("x-auth-token", request.client.host if request.client else "")
        now = time.monotonic()
        with self._lock:
            start, used = self._windows.get((route, caller), (now, 0))
            if now - start >= self.rate_window_seconds:
                start, used = now, 0
            used += 1
            self._windows[(route, caller)] = (start, used)
        reset_ms = int((time.time() + self.rate_window_seconds - (now - start)) * 1000)
        headers = {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(max(0, self.rate_limit - used)),
            "X-RateLimit-Reset": str(reset_ms),
            "Date": formatdate(usegmt=True),
        }
        if used > self.rate_limit:
            wait = max(1, round(self.rate_window_seconds - (now - start)))
            return JSONResponse(
                {"success": False, "error": f"Error, too many requests. Please slow down. You must wait {wait} seconds before trying this endpoint again. [error-too-many-requests]", "errorType": "error-too-many-requests"},
                status_code=429,
                headers={**headers, "Retry-After": str(wait)},
            )  # fmt: skip
        return JSONResponse(body, status_code=status, headers=headers)

    def _enter(self, request: Request, *, auth: bool = True) -> tuple[str | None, Response | None]:
        self.requests.append((request.method, request.url.path, dict(request.query_params)))
        self.generations.append(self.generation)
        path = request.url.path
        if self._bounce is not None and self._bounce[0] == path and len(self.calls(path)) >= self._bounce[1]:
            self._bounce_now(self._bounce[2])
            self._bounce = None
        if (
            self._unavailable is not None
            and self._unavailable[0] == path
            and len(self.calls(path)) >= self._unavailable[1]
        ):
            self._unavailable_until = time.monotonic() + self._unavailable[2]
            self._unavailable = None
        if self._bouncing or time.monotonic() < self._unavailable_until:
            return None, JSONResponse({"success": False, "error": "Service Unavailable"}, status_code=503)
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            return None, JSONResponse({"success": False, "error": "injected failure"}, status_code=failure)
        if not auth:
            return None, None
        user_id = self.ws.tokens.get(request.headers.get("x-auth-token", ""))
        if user_id is None or user_id != request.headers.get("x-user-id"):
            return None, JSONResponse(
                {"status": "error", "message": "You must be logged in to do this."}, status_code=401
            )
        return user_id, None

    def _page(self, request: Request, items: list[dict[str, Any]], key: str) -> Response:
        offset = int(request.query_params.get("offset", 0))
        count = min(int(request.query_params.get("count", 50)), 100)
        mode = self.hostile.get(request.url.path)
        if mode is not None:
            return self._hostile_page(request, items, key, mode, offset, count)
        chunk = items[offset : offset + count]
        return self._answer(
            request, {key: chunk, "count": len(chunk), "offset": offset, "total": len(items), "success": True}
        )

    def _hostile_page(
        self, request: Request, items: list[dict[str, Any]], key: str, mode: str, offset: int, count: int
    ) -> Response:
        """A page as ``mode`` has it (module docstring): the real items, then made-up ones past them."""
        calls = len(self.calls(request.url.path))
        start = 0 if mode == "ignores-offset" else offset
        size = count * 10 if mode == "oversized" else count
        chunk = [items[n] if n < len(items) else _made_up(key, n) for n in range(start, start + size)]
        growing = len(items) if offset == 0 else offset + 2 * count  # honest at first, then more and more
        total = {"growing": growing, "oversized": len(items)}.get(mode, HOSTILE_TOTAL)
        if calls > HOSTILE_PATIENCE_PAGES:
            chunk = []
        said = 0 if mode == "wrong-offset" else offset
        return self._answer(
            request, {key: chunk, "count": len(chunk), "offset": said, "total": total, "success": True}
        )

    def _error(self, request: Request, status: int, error: str, error_type: str) -> Response:
        return self._answer(request, {"success": False, "error": error, "errorType": error_type}, status)

    # -- routes ----------------------------------------------------------------------------------

    async def _info(self, request: Request) -> Response:
        _, refused = self._enter(request, auth=False)
        return refused or self._answer(request, {"version": self.version, "success": True})

    async def _login(self, request: Request) -> Response:
        _, refused = self._enter(request, auth=False)
        if refused:
            return refused
        body = await request.json()
        username = str(body.get("user") or body.get("username") or "")
        if not username or self.ws.passwords.get(username) != body.get("password"):
            return JSONResponse(
                {"status": "error", "error": "Unauthorized", "message": "Unauthorized"}, status_code=401
            )
        if username in self.two_factor:
            return JSONResponse(
                {
                    "status": "error",
                    "error": "totp-required",
                    "message": "TOTP Required",
                    "details": {"method": "totp"},
                },
                status_code=401,
            )
        user_id = next(u for u, user in self.ws.users.items() if user["username"] == username)
        token = f"login-{self.new_id('t')}"
        self.ws.tokens[token] = user_id
        return self._answer(
            request,
            {
                "status": "success",
                "data": {"userId": user_id, "authToken": token, "me": self.ws.users[user_id]},
            },
        )

    async def _logout(self, request: Request) -> Response:
        _, refused = self._enter(request)
        if refused:
            return refused
        self.ws.tokens.pop(request.headers.get("x-auth-token", ""), None)
        return self._answer(request, {"status": "success", "data": {"message": "You've been logged out!"}})

    async def _me(self, request: Request) -> Response:
        user_id, refused = self._enter(request)
        return refused or self._answer(request, {**self.ws.users[user_id or ""], "success": True})

    async def _users(self, request: Request) -> Response:
        _, refused = self._enter(request)
        return refused or self._page(request, list(self.ws.users.values()), "users")

    async def _admin_rooms(self, request: Request) -> Response:
        user_id, refused = self._enter(request)
        if refused:
            return refused
        if "admin" not in self.ws.users[user_id or ""]["roles"]:
            return self._error(
                request,
                403,
                "User does not have the permissions required for this action",
                "error-unauthorized",
            )
        types = request.query_params.getlist("types[]") or ["c", "p", "d"]
        return self._page(request, [r for r in self.ws.rooms.values() if r["t"] in types], "rooms")

    async def _room_members(self, request: Request) -> Response:
        _, refused = self._enter(request)
        if refused:
            return refused
        room_id = request.query_params.get("roomId", "")
        if room_id not in self.ws.rooms or room_id in self.unreadable:
            return self._error(
                request,
                400,
                'The required "roomId" or "roomName" param provided does not match any channel [error-room-not-found]',
                "error-room-not-found",
            )
        members = [self.ws.users[u] for u in self.ws.members[room_id]]
        return self._page(
            request, [{k: m[k] for k in ("_id", "username", "name", "status")} for m in members], "members"
        )

    async def _sync(self, request: Request) -> Response:
        _, refused = self._enter(request)
        if refused:
            return refused
        q = request.query_params
        room_id = q.get("roomId", "")
        if room_id not in self.ws.rooms or room_id in self.unreadable:
            return self._error(request, 400, "Not allowed [error-not-allowed]", "error-not-allowed")
        cursor_api = tuple(int(p) for p in self.version.split(".")[:2]) >= (7, 1)
        updated = [m for m in self.ws.messages.values() if m["rid"] == room_id]
        deleted = [m for m in self.ws.trash.values() if m["rid"] == room_id]
        if q.get("lastUpdate"):
            since = datetime.fromisoformat(q["lastUpdate"].replace("Z", "+00:00"))
            newer = [
                m for m in updated if datetime.fromisoformat(m["_updatedAt"].replace("Z", "+00:00")) > since
            ]
            gone = [
                {"_id": m["_id"], "_deletedAt": m["_deletedAt"]}
                for m in deleted
                if datetime.fromisoformat(m["_deletedAt"].replace("Z", "+00:00")) > since
            ]
            return self._answer(
                request,
                {
                    "result": {
                        "updated": sorted(newer, key=lambda m: m["ts"], reverse=True),
                        "deleted": gone,
                    },
                    "success": True,
                },
            )
        if not cursor_api or not q.get("type"):
            return self._error(
                request,
                400,
                'The required "lastUpdate" query param is missing.',
                "error-lastUpdate-param-not-provided",
            )
        count, kind = int(q.get("count", 20)), q["type"]
        stamp = "_updatedAt" if kind == "UPDATED" else "_deletedAt"
        after = int(q.get("next") or 0)
        mode = self.hostile.get(request.url.path)
        if mode is not None and kind == "UPDATED":
            return self._hostile_sync(request, room_id, mode, count, after)
        pool = (
            updated
            if kind == "UPDATED"
            else [{"_id": m["_id"], "_deletedAt": m["_deletedAt"]} for m in deleted]
        )
        found = sorted(
            (m for m in pool if _ms(datetime.fromisoformat(m[stamp].replace("Z", "+00:00"))) > after),
            key=lambda m: m[stamp],
        )[: count + 1]
        following = None
        if len(found) > count:
            found = found[:count]
            following = str(_ms(datetime.fromisoformat(found[-1][stamp].replace("Z", "+00:00"))))
        key = "updated" if kind == "UPDATED" else "deleted"
        other = "deleted" if kind == "UPDATED" else "updated"
        return self._answer(
            request,
            {
                "result": {key: found, other: [], "cursor": {"next": following, "previous": None}},
                "success": True,
            },
        )

    def _hostile_sync(self, request: Request, room_id: str, mode: str, count: int, after: int) -> Response:
        """``stuck``: the room's first page, whatever ``next`` says, with a cursor to follow; ``endless``:
        made-up messages a millisecond apart after ``next``, always with a cursor to follow."""
        if mode == "stuck":
            found = sorted(
                (m for m in self.ws.messages.values() if m["rid"] == room_id), key=lambda m: m["_updatedAt"]
            )
            found = found[:count]
        else:
            start = max(after, _ms(T0)) + 1
            found = [_made_up_message(room_id, start + n) for n in range(count)]
        if len(self.calls(request.url.path)) > HOSTILE_PATIENCE_PAGES:
            found = []
        following = str(after + 1) if found else None
        return self._answer(
            request,
            {
                "result": {"updated": found, "deleted": [], "cursor": {"next": following, "previous": None}},
                "success": True,
            },
        )

    async def _get_message(self, request: Request) -> Response:
        _, refused = self._enter(request)
        if refused:
            return refused
        message = self.ws.messages.get(request.query_params.get("msgId", ""))
        if message is None:
            return self._error(request, 400, "Message not found", "error-message-not-found")
        return self._answer(request, {"message": message, "success": True})


def _made_up(key: str, n: int) -> dict[str, Any]:
    """Item ``n`` of a listing past its real items: a person, a room or a member nobody has."""
    made = f"{n:012d}"
    if key == "rooms":
        return {
            "_id": f"rMadeUp{made}",
            "t": "c",
            "name": f"made-up-{made}",
            "fname": f"made-up-{made}",
            "usersCount": 0,
        }
    person = {
        "_id": f"uMadeUp{made}",
        "username": f"made-up-{made}",
        "name": f"Made Up {made}",
        "status": "online",
    }
    return person if key == "members" else {**person, "type": "user", "active": True, "roles": ["user"]}


def _made_up_message(room_id: str, ms: int) -> dict[str, Any]:
    moment = iso(datetime.fromtimestamp(ms / 1000, UTC))
    return {
        "_id": f"m{room_id[1:4]}{ms:013d}", "rid": room_id, "msg": f"made up {ms}", "ts": moment, "_updatedAt": moment,
        "u": {"_id": ADMIN_ID, "username": "admin", "name": "Ada Admin"},
    }  # fmt: skip


def sync_argv(server: FakeRocketChat, data: Path, database_url: str, *token: str) -> list[str]:
    """``ai-search sync rocketchat`` against ``server`` as its admin, quiet, into ``data`` (and the
    PostgreSQL database when ``database_url`` names one); ``token`` is how the token is given."""
    database = ["--database", database_url] if database_url else []
    return [
        "sync", "rocketchat", "--url", server.url, "--user-id", ADMIN_ID, *token, "--quiet",
        "--data", str(data), *database,
    ]  # fmt: skip
