"""Who may call the API from a browser, and under which ``Host`` names the server answers.

:class:`OriginPolicy` holds the allow-lists; the functions here read a request's ``Origin`` and
``Host`` the way a browser serialises them (WHATWG origins, upstream-mcp.md §8.4). They decide;
``origin_middleware.py`` answers (421, 403, CORS), and the MCP endpoint asks them again for its own
Origin rule. Pure: headers in, a yes or no out.

    >>> policy = OriginPolicy("http://127.0.0.1:8000", cors_allowed_origins=("*",))
    >>> origin_allowed("HTTP://127.0.0.1:80", policy), origin_allowed("HTTP://127.0.0.1:8000", policy)
    (False, True)
    >>> origin_allowed(None, policy), origin_allowed("null", policy), origin_allowed("https://x.io", policy)
    (True, False, False)
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from starlette.datastructures import Headers

__all__ = [
    "OriginPolicy",
    "default_allowed_hosts",
    "host_name",
    "normalize_origin",
    "origin_allowed",
    "parse_origin_list",
    "request_host",
    "request_origin_allowed",
    "same_origin_as_host",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# A DNS name as browsers serialise it in an origin: ASCII labels (IDNA already applied), an optional
# final dot, which makes a different origin and is kept so that it does not match.
_HOST_NAME = re.compile(r"^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$")


def normalize_origin(value: str) -> str | None:
    """The serialised origin of ``value`` (WHATWG ``new URL(value).origin`` for http/https), or None.

    Lower-cases scheme and host, drops a default port, ignores path, query and credentials, as
    upstream-mcp.md §8.4 specifies. ``null``, the empty string, non-http(s) schemes, bad ports and hosts
    with characters a browser never sends all give None. Numeric IPv4 shorthands (``127.1``) are not
    expanded, so they never match: a browser always sends the dotted-quad form.
    """
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if "%" in host:  # percent-escapes and IPv6 zone ids: never in a browser's origin
        return None
    if ":" in host:
        try:
            host = f"[{ipaddress.IPv6Address(host).compressed}]"
        except ValueError:
            return None
    else:
        try:
            host = host.encode("idna").decode("ascii").lower() if not host.isascii() else host
        except UnicodeError:
            return None
        if not _HOST_NAME.match(host):
            return None
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def parse_origin_list(text: str) -> tuple[str, ...]:
    """Split a comma-separated setting (upstream ``API_CORS_Origin``) into trimmed, non-empty entries."""
    return tuple(entry.strip() for entry in text.split(",") if entry.strip())


def host_name(value: str) -> str | None:
    """The name in a ``Host`` value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lower-cased.

    The port is checked for shape and dropped: the Host check compares names, because a name is what a
    DNS-rebinding page controls, while the port changes with every ``ssh -L``, container mapping or
    dev proxy in front of the server. None for a value no browser sends (empty, bad port, stray
    brackets).
    """
    value = value.strip().lower()
    # An IPv6 name is bracketed, so the port is whatever follows the closing bracket.
    split_at = value.find("]") + 1 if value.startswith("[") else 0
    name, colon, port = value[split_at:].partition(":")
    name = value[:split_at] + name
    if name in ("", "[", "[]") or (name.startswith("[") and not name.endswith("]")):
        return None
    if colon and not (port.isdigit() and 0 < int(port) < 65536):
        return None
    return name


def default_allowed_hosts(site_url: str) -> tuple[str, ...]:
    """The ``Host`` names a server at ``site_url`` accepts: the site URL's host and the loopback names.

    Loopback names are always accepted, on any port: a browser sends ``Host: localhost`` only when
    its user asked for the machine itself, never because a page rebound a name. A public name must be
    the site URL's (or listed in ``allowed_hosts``), since behind a proxy the Host is that name.

    Raises:
        ValueError: ``site_url`` is not an http(s) URL.
    """
    site_origin = normalize_origin(site_url)
    if site_origin is None:
        raise ValueError(f"site_url {site_url!r} is not an http or https URL")
    name = host_name(site_origin.partition("://")[2])
    assert name is not None  # a normalised origin always has a host
    return tuple(dict.fromkeys((name, *_LOOPBACK_HOSTS)))


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return name == "localhost"


@dataclass(frozen=True)
class OriginPolicy:
    """Who may call the API from a browser, and under which ``Host`` names the server answers.

    ``site_url`` is the product's own URL; its origin is always allowed, and so is the origin a request
    names in its own (accepted) ``Host``: the page reached through ``ssh -L 9000:127.0.0.1:8000`` or a
    container's ``-p 9000:8000`` is same-origin with itself. ``cors_allowed_origins`` are other browser
    origins allowed to call the API; ``embed_allowed_origins`` host the widget and are allowed API
    origins too (and the CSP frame ancestors). A ``*`` or any entry that is not an http(s) origin never
    matches (upstream §8.4); :attr:`ignored_entries` lists them so start-up can say so.

    ``allowed_hosts`` are Host *names* accepted besides the site URL's and the loopback names (a port
    given with one is ignored; :func:`default_allowed_hosts`); None (the default) adds none. The check
    is on by default because a server without it is open to DNS rebinding; an explicit empty tuple
    turns it off (a proxy in front already pins Host).

    Raises:
        ValueError: ``site_url`` is not an http(s) URL, or an ``allowed_hosts`` entry is not a host.
    """

    site_url: str
    cors_allowed_origins: tuple[str, ...] = ()
    embed_allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Accept any sequence from settings code but keep the frozen record immutable.
        object.__setattr__(self, "cors_allowed_origins", tuple(self.cors_allowed_origins))
        object.__setattr__(self, "embed_allowed_origins", tuple(self.embed_allowed_origins))
        names = default_allowed_hosts(self.site_url)
        if self.allowed_hosts is not None:
            listed = tuple(_configured_host(entry) for entry in self.allowed_hosts)
            names = (*names, *listed) if listed else ()
        object.__setattr__(self, "allowed_hosts", tuple(dict.fromkeys(names)))

    @cached_property
    def site_origin(self) -> str:
        origin = normalize_origin(self.site_url)
        assert origin is not None  # checked in __post_init__
        return origin

    @cached_property
    def allowed_cross_origins(self) -> frozenset[str]:
        entries = (normalize_origin(e) for e in (*self.cors_allowed_origins, *self.embed_allowed_origins))
        return frozenset(origin for origin in entries if origin is not None)

    @property
    def ignored_entries(self) -> tuple[str, ...]:
        """Allow-list entries that can never match an origin (``*``, typos, other schemes)."""
        entries = (*self.cors_allowed_origins, *self.embed_allowed_origins)
        return tuple(entry for entry in entries if normalize_origin(entry) is None)

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` header value names this server (any port): a listed or loopback name."""
        if not self.allowed_hosts:
            return True
        name = host_name(value)
        return name is not None and (name in self.allowed_hosts or _is_loopback(name))


def _configured_host(entry: str) -> str:
    name = host_name(entry)
    if name is None or "/" in entry:
        raise ValueError(f"allowed_hosts entry {entry!r} is not a host name (name or name:port)")
    return name


def same_origin_as_host(origin: str, host: str, scheme: str = "http") -> bool:
    """Whether ``origin`` is the origin of a page loaded from ``Host: host`` over ``scheme``.

    Both sides are compared as a browser serialises them (lower case, the scheme's default port left
    out), so ``http://localhost:9000`` matches ``Host: localhost:9000`` and ``https://x.io`` matches
    ``Host: x.io:443`` over https; an https origin never matches a request that came over http.
    """
    normalized = normalize_origin(origin)
    own = normalize_origin(f"{scheme}://{host.strip()}") if host_name(host) is not None else None
    return normalized is not None and normalized == own


def origin_allowed(
    origin: str | None, policy: OriginPolicy, host: str | None = None, scheme: str = "http"
) -> bool:
    """Whether a request carrying this ``Origin`` header value may use the API (upstream §8.4).

    No header (native clients, curl, MCP SDK) is allowed; ``null`` and unparsable values are refused;
    otherwise the normalised origin must be the site's own, the one of the request's ``host`` and
    ``scheme`` (a Host the Host check has already accepted), or in one of the allow-lists.
    """
    if origin is None:
        return True
    normalized = normalize_origin(origin)
    if normalized is None:
        return False
    if host is not None and same_origin_as_host(normalized, host, scheme):
        return True
    return normalized == policy.site_origin or normalized in policy.allowed_cross_origins


def _single_host(headers: Headers) -> str | None:
    values = headers.getlist("host")
    return values[0] if len(values) == 1 else None


def request_host(headers: Headers, policy: OriginPolicy) -> str | None:
    """The request's ``Host`` when it may vouch for a same-origin ``Origin``: one Host header that the
    policy's Host check accepts. With the check off, none: any page could name itself in Host."""
    host = _single_host(headers)
    return host if policy.allowed_hosts and host is not None and policy.host_allowed(host) else None


def request_origin_allowed(headers: Headers, policy: OriginPolicy, scheme: str = "http") -> bool:
    """The Origin rule for one request: at most one ``Origin``, and :func:`origin_allowed` for it."""
    origins = headers.getlist("origin")
    if len(origins) > 1:
        return False
    return origin_allowed(origins[0] if origins else None, policy, request_host(headers, policy), scheme)
