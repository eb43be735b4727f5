"""One outbound call's bookkeeping: its redacted target, its absolute deadline, its byte count.

Kept apart from ``GuardedClient`` so the three rules every call shares sit in one place: the deadline
(an anyio cancel scope with an absolute deadline, entered around each await and never held across a
``yield``), the byte cap (counted per chunk as it arrives), and the mapping of httpx failures into our
tree with messages that name ``scheme://host:port/path`` and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager

import anyio
import httpx

from ai_search_server.outbound._addresses import METADATA_ADDRESSES, check_addresses, parse_ip_literal
from ai_search_server.outbound._errors import (
    OutboundError,
    OutboundProtocolError,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
)
from ai_search_server.outbound._policy import OutboundPolicy

__all__ = ["Call", "check_configured_url", "check_url_shape", "checked_headers", "checked_url", "redacted"]

_ALLOWED_SCHEMES = frozenset({"http", "https"})
# RFC 9110 token and field-value, as h11 checks them; checked here first so that h11's message,
# which quotes the offending value, never exists.
_HEADER_NAME = re.compile(r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_HEADER_VALUE = re.compile(r"([\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?")
# httpx failures -> our tree. Timeouts first: httpx.TimeoutException is a TransportError too.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[OutboundError]], ...] = (
    (httpx.TimeoutException, OutboundTimeout),
    (httpx.InvalidURL, OutboundRefused),
    (httpx.UnsupportedProtocol, OutboundRefused),
    (httpx.HTTPError, OutboundProtocolError),
)


class Call:
    """One call's target (redacted), absolute deadline and byte cap."""

    def __init__(self, method: str, target: str, timeout_seconds: float, max_bytes: int) -> None:
        self.method = method
        self.target = target
        self.timeout_seconds = timeout_seconds
        self.deadline = anyio.current_time() + timeout_seconds
        self.max_bytes = max_bytes
        self.read_bytes = 0

    def remaining(self) -> float:
        return max(self.deadline - anyio.current_time(), 0.0)

    def check_deadline(self) -> None:
        """Raise once the deadline passed: a stream checks before each item, because a consumer that
        is slow between items spends the call's time without awaiting anything of ours."""
        if anyio.current_time() >= self.deadline:
            raise self._timeout("handing over the stream")

    def _timeout(self, phase: str) -> OutboundTimeout:
        return OutboundTimeout(
            f"outbound {self.method} {self.target} took longer than {self.timeout_seconds:g} s "
            f"(deadline passed while {phase})",
            target=self.target,
        )

    @contextmanager
    def guarded(self, phase: str) -> Iterator[None]:
        """Run one step under the call's deadline and map httpx failures into our tree."""
        with anyio.CancelScope(deadline=self.deadline) as scope:
            try:
                yield
            except httpx.LocalProtocolError:
                # h11's message may quote a header value: keep neither its text nor the chain.
                raise OutboundProtocolError(
                    f"outbound {self.method} {self.target} failed while {phase}: the request was malformed",
                    target=self.target,
                ) from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                wanted = next(ours for theirs, ours in _HTTPX_ERRORS if isinstance(exc, theirs))
                raise wanted(
                    f"outbound {self.method} {self.target} failed while {phase}: {type(exc).__name__} {exc}",
                    target=self.target,
                ) from exc
        if scope.cancelled_caught:
            raise self._timeout(phase)

    async def next_chunk(self, chunks: AsyncIterator[bytes]) -> bytes | None:
        """The next body chunk, or None at the end; counted against the cap before it is returned."""
        with self.guarded("reading the body"):
            try:
                chunk: bytes | None = await anext(chunks)
            except StopAsyncIteration:
                chunk = None
        if chunk is None:
            return None
        self.read_bytes += len(chunk)
        if self.read_bytes > self.max_bytes:
            raise OutboundTooLarge(
                f"outbound {self.method} {self.target}: body passed the cap of {self.max_bytes} bytes",
                target=self.target,
                limit_bytes=self.max_bytes,
                read_bytes=self.read_bytes,
            )
        return chunk


def checked_url(url: str) -> httpx.URL:
    """Parse and check the URL's shape; the destination's addresses are checked at connect time."""
    try:
        parsed = httpx.URL(url)
        # httpx decodes an xn-- host only when .host is read: read it here, where a bad one is refused.
        parsed.host  # noqa: B018
    except (httpx.InvalidURL, TypeError) as exc:
        raise OutboundRefused(f"outbound destination refused: invalid URL ({exc})") from None
    except UnicodeError as exc:  # idna.IDNAError: an xn-- label that is no valid internationalised name
        raise OutboundRefused(
            f"outbound destination refused: the host is not a valid domain name ({exc})"
        ) from None
    if parsed.scheme not in _ALLOWED_SCHEMES:
        raise OutboundRefused(
            f"outbound destination refused: scheme {parsed.scheme!r} (only http and https are allowed)"
        )
    if not parsed.host:
        raise OutboundRefused("outbound destination refused: the URL has no host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise OutboundRefused(f"outbound destination refused: port {parsed.port} is out of range")
    if parsed.userinfo:
        raise OutboundRefused(
            f"outbound destination refused: credentials in the URL for {parsed.host}; send them as headers"
        )
    return parsed


def redacted(url: httpx.URL) -> str:
    """scheme://host:port/path: what messages and logs may show (no user info, query or fragment)."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{url.scheme}://{host}:{port}{url.path}"


def checked_headers(call: Call, headers: Mapping[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not (_HEADER_NAME.fullmatch(name) and value.isascii() and _HEADER_VALUE.fullmatch(value)):
            raise OutboundProtocolError(
                f"outbound {call.method} {call.target}: header {name!r} has an invalid value "
                "(control characters, non-ASCII, or surrounding whitespace; the value is not shown)",
                target=call.target,
            )
    return {name.lower(): value for name, value in headers.items()}


def check_url_shape(url: str) -> httpx.URL:
    """Refuse a configured upstream URL whose shape no call could ever use, whatever the policy: a bad
    shape (scheme, credentials, port) or a numeric host written in a disguised form (``2130706433``
    for 127.0.0.1). The settings run this when they are built.

    Raises:
        OutboundRefused: saying why.
    """
    parsed = checked_url(url)
    literal = parse_ip_literal(parsed.host)
    if literal is not None and str(literal) != parsed.host.strip("[]"):
        raise OutboundRefused(
            f"outbound destination refused: write the address {parsed.host!r} as {literal} if it is meant"
        )
    return parsed


def check_configured_url(url: str, policy: OutboundPolicy) -> None:
    """Refuse, at start-up, a configured upstream URL that no call could ever use: ``check_url_shape``,
    then a literal metadata or link-local address the policy does not list. Everything else, host
    names above all, is checked at each call after DNS, where loopback and private addresses meet
    the allow-list.

    Raises:
        OutboundRefused: saying why.
    """
    parsed = check_url_shape(url)
    literal = parse_ip_literal(parsed.host)
    if literal is not None and (literal in METADATA_ADDRESSES or literal.is_link_local):
        check_addresses(parsed.host, [literal], policy)
