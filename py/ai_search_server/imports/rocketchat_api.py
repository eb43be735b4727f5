"""Rocket.Chat's REST API as the mirror uses it: authenticated calls, pages, rate limits, outages.

Every call goes through the project's ``GuardedClient`` (the outbound policy, one deadline, a byte
cap) with Rocket.Chat's ``X-User-Id``/``X-Auth-Token`` headers. What this adds:

- **Rate limits.** Rocket.Chat answers ``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset`` (the
  reset as milliseconds since 1970, server time). When Remaining reaches 0 the next call waits for
  the reset (measured against the answer's ``Date``, so a skewed clock here does not matter); a 429
  waits ``Retry-After`` seconds, else until the reset, else what the error text says ("You must wait
  N seconds"), and is tried again, up to ``MAX_RATE_LIMITED_RETRIES`` times.
- **Outages.** A refused connection, a timeout or a 502/503/504 (a server restarting, a proxy in
  front of it) is retried with growing pauses for up to ``max_outage_seconds``; then
  ``RocketChatUnreachable``. A sync that gives up keeps what it wrote and resumes from there.
- **Pages.** ``pages(path, key)`` walks ``offset``/``count`` until ``total``, as far as the first
  page's ``total`` said and never past ``max_listed_items`` (``MAX_LISTED_ITEMS``), whatever later
  pages claim: a server that answers ``total: 10**12`` with full pages forever is read to the cap,
  not for ever. A page whose ``offset`` is not the one asked for, that holds more items than asked
  for, or that brings no ``_id`` not read before (a server that ignores ``offset``) ends the listing
  too. Whatever stops a listing early, the pages read before are yielded and then
  ``RocketChatListingCut`` says why, so the caller can tell a partial listing from a whole one (and
  never take what is missing from it for gone).

Errors (``RocketChatError`` and its kinds) carry a sentence for people; a refused token, a missing
permission and a bad parameter are told apart by ``status`` and Rocket.Chat's ``errorType``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode

import anyio

from ..outbound import (
    GuardedClient,
    OutboundError,
    OutboundHTTPError,
    OutboundProtocolError,
    OutboundRefused,
    OutboundTimeout,
)

__all__ = [
    "DEFAULT_MAX_OUTAGE_SECONDS",
    "DEFAULT_PAGE_SIZE",
    "MAX_LISTED_ITEMS",
    "MAX_RATE_LIMITED_RETRIES",
    "Credentials",
    "RocketChatAPI",
    "RocketChatError",
    "RocketChatListingCut",
    "RocketChatRefused",
    "RocketChatUnreachable",
]

# Items a page asks for: Rocket.Chat's default API_Upper_Count_Limit is 100, and more is cut to it.
DEFAULT_PAGE_SIZE = 100
# Items one listing (users.list, rooms.adminRooms, one room's members) reads at most (items), whatever
# its pages say: the bound on a server that claims a listing without end. A million people, rooms or
# members of one room is beyond the largest Rocket.Chat workspaces we know of; the first page's
# ``total`` bounds a listing well before this in any other case.
MAX_LISTED_ITEMS = 1_000_000
# How long a server may stay unreachable before the sync gives up (seconds): a restart or an
# upgrade of Rocket.Chat takes a minute or two.
DEFAULT_MAX_OUTAGE_SECONDS = 300.0
# 429s in a row answered with a wait and a retry before giving up (a limit that never lifts).
MAX_RATE_LIMITED_RETRIES = 10
# Longest single wait for a rate limit (seconds): Rocket.Chat's windows are a minute by default.
MAX_RATE_LIMIT_WAIT_SECONDS = 120.0
# Pauses between tries during an outage (seconds): doubling from the first up to the last.
_OUTAGE_FIRST_PAUSE_SECONDS = 0.5
_OUTAGE_MAX_PAUSE_SECONDS = 10.0
# Seconds of one call (connect to last byte); a page of 100 messages is tens of kilobytes.
CALL_TIMEOUT_SECONDS = 30.0
# Bytes of one answer: a page is small, but the legacy chat.syncMessages answers a room's whole history.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
_WAIT_IN_TEXT = re.compile(r"wait (\d+) seconds")
_OUTAGE_STATUSES = frozenset({502, 503, 504})

Sleep = Callable[[float], Awaitable[None]]


class RocketChatError(Exception):
    """A call failed; the message says what for people. ``status``/``error_type`` as Rocket.Chat said."""

    def __init__(self, message: str, *, status: int = 0, error_type: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class RocketChatRefused(RocketChatError):
    """The server refused the call: the token, a permission, a parameter, the outbound policy."""


class RocketChatUnreachable(RocketChatError):
    """The server stayed unreachable (or rate-limited) longer than the sync waits."""


class RocketChatListingCut(RocketChatError):
    """A listing ended before its end: the cap, or pages that contradict each other. Raised by
    ``pages`` after the pages read before it were yielded; the message says which listing, why, and
    how many items were read (``items``)."""

    def __init__(self, message: str, *, items: int) -> None:
        super().__init__(message)
        self.items = items


@dataclass(frozen=True)
class Credentials:
    """``X-User-Id`` and ``X-Auth-Token``: an admin's personal access token, or a login's token."""

    user_id: str
    token: str


def _error_of(error: OutboundHTTPError) -> tuple[str, str]:
    """Rocket.Chat's ``error`` and ``errorType`` from an error body, when it has them."""
    try:
        body = json.loads(error.body_excerpt.decode("utf-8", "replace"))
    except ValueError:
        return "", ""
    if not isinstance(body, dict):
        return "", ""
    text = body.get("error") or body.get("message") or ""
    kind = body.get("errorType") or ""
    return (str(text)[:300], str(kind)[:100])


def _count(value: object) -> int | None:
    """A count Rocket.Chat answered (``total``, ``offset``), or None when it is no count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _where(path: str) -> str:
    """A call as people read it in a message: ``users.list``, without version or query."""
    return path.split("?", 1)[0].removeprefix("v1/")


class RocketChatAPI:
    """One Rocket.Chat server's REST API (``base_url`` like ``https://chat.example.com``)."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials | None,
        client: GuardedClient,
        *,
        sleep: Sleep = anyio.sleep,
        max_outage_seconds: float = DEFAULT_MAX_OUTAGE_SECONDS,
        page_size: int = DEFAULT_PAGE_SIZE,
        max_listed_items: int = MAX_LISTED_ITEMS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.client = client
        self.sleep = sleep
        self.max_outage_seconds = max_outage_seconds
        self.page_size = page_size
        self.max_listed_items = max_listed_items
        self.calls = 0
        self.rate_limited = 0  # 429s answered
        self.waited_seconds = 0.0  # waits for rate limits, in all
        self._resume_at = 0.0  # monotonic time before which the next call waits (Remaining hit 0)

    # -- calls -----------------------------------------------------------------------------------

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``GET /api/v1/<path>`` with ``params`` as the query (lists repeat: ``types[]=c&types[]=p``)."""
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, doseq=True)
        return await self._call("GET", f"v1/{path}?{query}" if query else f"v1/{path}", None)

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self._call("POST", f"v1/{path}", dict(body))

    async def server_info(self) -> dict[str, Any]:
        """``GET /api/info``: the server's version (no credentials needed)."""
        return await self._call("GET", "info", None)

    async def pages(
        self, path: str, key: str, params: Mapping[str, Any] | None = None
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The items under ``key`` of every page of ``path``, a page at a time.

        Raises:
            RocketChatListingCut: after the last page it yields, when the listing stopped early (the
                module docstring says when); the pages yielded before stand.
        """
        offset = 0
        claimed: int | None = None  # the first page's total
        bound: int | None = None  # the items this listing reads: that total, within max_listed_items
        seen: set[str] = set()
        while True:
            answer = await self.get(path, {**(params or {}), "offset": offset, "count": self.page_size})
            items = [item for item in answer.get(key) or () if isinstance(item, dict)]
            total = _count(answer.get("total"))
            if bound is None:
                claimed = total
                bound = self.max_listed_items if total is None else min(total, self.max_listed_items)
            contradiction = self._contradiction(answer, offset, items, seen)
            if contradiction:
                raise self._cut(path, contradiction, offset)
            wanted = items[: max(0, bound - offset)]
            if wanted:
                yield wanted
            offset += len(wanted)
            more = (
                len(wanted) < len(items)  # the page went past the bound
                or (claimed is not None and claimed > bound)  # the first page said more than the cap
                or (claimed is None and len(items) == self.page_size)  # full pages, and no total
            )
            if offset >= bound and more:
                raise self._cut(path, self._past(claimed, bound), offset)
            if not items or offset >= bound or len(items) < self.page_size:
                return
            if total is not None and offset >= total:
                return

    @staticmethod
    def _past(claimed: int | None, bound: int) -> str:
        if claimed is None:
            return f"sent full pages past the {bound:,} items one listing reads, naming no total"
        if claimed > bound:
            return f"said it holds {claimed:,} items, more than the {bound:,} one listing reads"
        return f"sent more than the {claimed:,} items its first page said it holds"

    def _contradiction(
        self, answer: Mapping[str, Any], offset: int, items: list[dict[str, Any]], seen: set[str]
    ) -> str:
        """Why this page cannot be the one asked for (empty when it can): the offset it names, more
        items than asked for, or nothing new (a server that ignores ``offset`` sends page 1 again)."""
        said = answer.get("offset")
        if said is not None and _count(said) != offset:
            return f"answered offset {str(said)[:20]} when asked for offset {offset:,}"
        if len(items) > self.page_size:
            return f"answered {len(items):,} items when asked for at most {self.page_size:,}"
        ids = {item["_id"] for item in items if isinstance(item.get("_id"), str)}
        if items and not ids - seen:
            return f"answered the page at offset {offset:,} with no _id it had not sent before"
        seen |= ids
        return ""

    @staticmethod
    def _cut(path: str, why: str, items: int) -> RocketChatListingCut:
        return RocketChatListingCut(
            f"Rocket.Chat {_where(path)} {why}: stopped after {items:,} items", items=items
        )

    async def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        url = f"{self.base_url}/api/{path}"
        headers = (
            {"X-User-Id": self.credentials.user_id, "X-Auth-Token": self.credentials.token}
            if self.credentials is not None
            else {}
        )
        limited = 0
        outage_since: float | None = None
        pause = _OUTAGE_FIRST_PAUSE_SECONDS
        while True:
            await self._pace()
            self.calls += 1
            try:
                answer = await self.client.request_json(
                    method,
                    url,
                    headers=headers,
                    json=body,
                    timeout_seconds=CALL_TIMEOUT_SECONDS,
                    max_bytes=MAX_ANSWER_BYTES,
                )
            except OutboundHTTPError as error:
                if error.status == 429:
                    limited += 1
                    self.rate_limited += 1
                    if limited > MAX_RATE_LIMITED_RETRIES:
                        raise RocketChatUnreachable(
                            f"Rocket.Chat kept answering 429 (too many requests) to {_where(path)}",
                            status=429,
                        ) from None
                    await self._wait(self._rate_wait(error.headers, error.body_excerpt, limited))
                    continue
                if error.status in _OUTAGE_STATUSES:
                    outage_since, pause = await self._outage(
                        path, outage_since, pause, f"HTTP {error.status}"
                    )
                    continue
                raise self._refused(path, error) from None
            except (OutboundProtocolError, OutboundTimeout) as error:
                outage_since, pause = await self._outage(path, outage_since, pause, error.message)
                continue
            except OutboundRefused as error:
                raise RocketChatRefused(
                    f"the outbound policy refuses {self.base_url}: {error.message}"
                ) from None
            except OutboundError as error:
                raise RocketChatError(f"Rocket.Chat {_where(path)}: {error.message}") from None
            self._note_limits(answer.headers)
            data = answer.json
            if not isinstance(data, dict):
                raise RocketChatError(
                    f"Rocket.Chat {_where(path)} answered something that is not a JSON object"
                )
            if data.get("success") is False or data.get("status") == "error":
                raise RocketChatRefused(
                    f"Rocket.Chat refused {_where(path)}: {data.get('error') or data.get('message') or 'no reason given'}",
                    error_type=str(data.get("errorType") or ""),
                )
            return data

    def _refused(self, path: str, error: OutboundHTTPError) -> RocketChatError:
        text, kind = _error_of(error)
        kind = kind or text  # Rocket.Chat puts some kinds ("totp-required") in "error" alone
        where = _where(path)
        if error.status == 401:
            return RocketChatRefused(
                f"Rocket.Chat refused the credentials for {where} (HTTP 401): check the user id and token",
                status=401,
                error_type=kind,
            )
        if error.status in (400, 403, 404):
            detail = f": {text}" if text else ""
            return RocketChatRefused(
                f"Rocket.Chat refused {where} (HTTP {error.status}){detail}",
                status=error.status,
                error_type=kind,
            )
        return RocketChatError(
            f"Rocket.Chat {where} answered HTTP {error.status}", status=error.status, error_type=kind
        )

    # -- waiting ---------------------------------------------------------------------------------

    async def _outage(self, path: str, since: float | None, pause: float, why: str) -> tuple[float, float]:
        now = time.monotonic()
        since = now if since is None else since
        if now - since >= self.max_outage_seconds:
            raise RocketChatUnreachable(
                f"Rocket.Chat at {self.base_url} stayed unreachable for {now - since:.0f} s ({why}); "
                "run the sync again to resume where it stopped"
            )
        await self.sleep(pause)
        return since, min(pause * 2, _OUTAGE_MAX_PAUSE_SECONDS)

    async def _wait(self, seconds: float) -> None:
        seconds = min(max(seconds, 0.0), MAX_RATE_LIMIT_WAIT_SECONDS)
        self.waited_seconds += seconds
        await self.sleep(seconds)

    async def _pace(self) -> None:
        wait = self._resume_at - time.monotonic()
        if wait > 0:
            await self._wait(wait)
        self._resume_at = 0.0

    def _note_limits(self, headers: Mapping[str, str]) -> None:
        remaining = headers.get("x-ratelimit-remaining", "")
        if remaining.strip() == "0":
            self._resume_at = time.monotonic() + self._until_reset(headers)

    @staticmethod
    def _until_reset(headers: Mapping[str, str]) -> float:
        """Seconds until ``X-RateLimit-Reset`` (ms since 1970), by the server's own ``Date``."""
        try:
            reset = float(headers.get("x-ratelimit-reset", "")) / 1000
        except ValueError:
            return 1.0
        try:
            now = parsedate_to_datetime(headers["date"]).timestamp()
        except (KeyError, TypeError, ValueError):
            now = time.time()
        wait = reset - now
        return wait if math.isfinite(wait) and wait > 0 else 0.0

    def _rate_wait(self, headers: Mapping[str, str], body: bytes, attempt: int) -> float:
        retry_after = headers.get("retry-after", "").strip()
        if retry_after.isdigit():
            return float(retry_after)
        if headers.get("x-ratelimit-reset"):
            return max(self._until_reset(headers), 0.1)
        found = _WAIT_IN_TEXT.search(body.decode("utf-8", "replace"))
        if found:
            return float(found.group(1))
        return min(2.0**attempt, MAX_RATE_LIMIT_WAIT_SECONDS)
