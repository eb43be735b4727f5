"""The outbound boundary's one exception tree.

::

    OutboundError                 502  base: any outbound call that did not give a usable answer
    ├── OutboundRefused           502  destination not allowed: scheme, URL, host or resolved address
    ├── OutboundTimeout           504  the call's one total deadline (connect + every read) passed
    ├── OutboundBusy              503  every slot of the process's call cap stayed taken for the wait
    ├── OutboundTooLarge          502  the body passed the byte cap (declared or counted)
    ├── OutboundRedirect          502  the upstream answered 3xx; redirects are never followed
    ├── OutboundHTTPError         502  the upstream answered non-2xx; ``.status`` holds its status
    └── OutboundProtocolError     502  connection failure, DNS failure, bad framing, bad JSON or UTF-8

``proxy_status`` is the status the proxy should answer its own client with; the API layer maps these
to its ``UpstreamFailure`` family. Messages name the method and the target as
``scheme://host:port/path`` (no user info, no query string, never a header), so they are safe to log,
but they are written for operators: upstream error text is kept off the message (``OutboundHTTPError``
keeps a short excerpt of the body in ``.body_excerpt`` for callers that parse provider errors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

__all__ = [
    "OutboundBusy",
    "OutboundError",
    "OutboundHTTPError",
    "OutboundProtocolError",
    "OutboundRedirect",
    "OutboundRefused",
    "OutboundTimeout",
    "OutboundTooLarge",
]


class OutboundError(Exception):
    """Base of every outbound failure; ``target`` is the redacted destination (may be empty)."""

    proxy_status: ClassVar[int] = 502

    def __init__(self, message: str, *, target: str = "") -> None:
        self.message = message
        self.target = target
        super().__init__(message)


class OutboundRefused(OutboundError):
    """The destination is not allowed: a scheme other than http/https, a malformed URL, credentials in
    the URL, or a host that is (or resolves to) a private, loopback, link-local, metadata or otherwise
    non-global address that is not allow-listed."""


class OutboundTimeout(OutboundError):
    """The total deadline of the call passed before the call finished."""

    proxy_status = 504


class OutboundBusy(OutboundError):
    """The process already runs its cap of outbound calls, and none ended within the queue wait."""

    proxy_status = 503


class OutboundTooLarge(OutboundError):
    """The body is larger than the cap: declared by Content-Length, or counted while reading."""

    def __init__(self, message: str, *, target: str = "", limit_bytes: int, read_bytes: int) -> None:
        super().__init__(message, target=target)
        self.limit_bytes = limit_bytes
        # Bytes received before giving up (0 when Content-Length alone gave it away).
        self.read_bytes = read_bytes


class OutboundRedirect(OutboundError):
    """The upstream answered with a redirect; the Location is not followed nor quoted."""

    def __init__(self, message: str, *, target: str = "", status: int) -> None:
        super().__init__(message, target=target)
        self.status = status


class OutboundHTTPError(OutboundError):
    """The upstream answered with a non-2xx status; ``status`` is the upstream's status. ``headers``
    are the answer's (lower-case names), for callers that honour ``Retry-After`` and rate-limit headers;
    like the excerpt, they are never put in the message."""

    def __init__(
        self,
        message: str,
        *,
        target: str = "",
        status: int,
        body_excerpt: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, target=target)
        self.status = status
        self.body_excerpt = body_excerpt
        self.headers: Mapping[str, str] = dict(headers or {})


class OutboundProtocolError(OutboundError):
    """The exchange broke: DNS or connection failure, a reset, bad HTTP framing, bad JSON or UTF-8."""
