"""A message's link back to the system it came from ("open in Slack"), checked the same everywhere.

An importer or the Rocket.Chat mirror keeps each message's address in its own system
(``sourceUrl``). The store accepts only what :func:`is_source_url` accepts, and the page checks it
again before it makes a link, since a link is the one place a string from data becomes something a
click follows: a ``javascript:`` URL would run in the page. :func:`source_system` names the system
from the link's shape, for the link's words; an address of no known shape gets none::

    >>> is_source_url("https://acme.slack.com/archives/C024BE91L/p1355517523000005")
    True
    >>> is_source_url("javascript:alert(1)"), is_source_url("https://chat.example.com/a b")
    (False, False)
    >>> source_system("https://chat.example.com/channel/ops?msg=Xk2"), source_system("https://x.io/")
    ('Rocket.Chat', None)

A page module (``ai_search.PAGE_MODULES``: MicroPython has no ``urllib``): the link is split here, as
``urllib.parse.urlsplit`` and ``parse_qs`` split it (CPython 3.14's, the strictest: text around a
bracketed host is refused), for the parts the shapes need; tests/unit/test_source_links.py checks
the two agree on hostile input.
"""

from ._constants import MAX_SOURCE_URL_LENGTH
from ._portable import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

__all__ = ["SOURCE_URL_SCHEMES", "is_source_url", "source_system"]

# The schemes a source link may have: a web page. Every other one (javascript:, data:, file:, a
# custom app scheme) is refused, whatever follows it.
SOURCE_URL_SCHEMES = ("http", "https")
_SCHEME_PREFIXES = tuple(scheme + "://" for scheme in SOURCE_URL_SCHEMES)
# Printable ASCII without spaces (! to ~): what a percent-encoded URL is. No control character, no
# space, no character a URL parser would strip or fold before reading the scheme.
_FIRST_URL_CHARACTER, _LAST_URL_CHARACTER = "!", "~"
# Path heads of Rocket.Chat's message links (``/channel/ops?msg=ID``, ``/group/...``, ``/direct/<rid>``).
_ROCKETCHAT_ROOM_KINDS = frozenset({"channel", "group", "direct"})
# Mattermost's second path segment after the team (``/acme/channels/town-square``, ``/acme/pl/<id>``).
_MATTERMOST_VIEWS = frozenset({"channels", "messages", "pl"})
# The query field of a Rocket.Chat message link.
_ROCKETCHAT_MESSAGE_FIELD = "msg"

# What urlsplit takes as the URL's syntax: a scheme's characters, the characters it strips.
_SCHEME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")
_REMOVED_CHARACTERS = ("\t", "\r", "\n")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_NETLOC_ENDS = "/?#"
# The characters whose NFKC form holds one of / ? # @ : (urlsplit refuses a host holding one: after
# IDNA's normalisation it would point elsewhere), checked against unicodedata by
# tests/unit/test_source_links.py.
_NFKC_DELIMITERS = frozenset(
    "\u2047\u2048\u2049\u2100\u2101\u2105\u2106\u2a74\ufe13\ufe16\ufe55\ufe56\ufe5f\ufe6b"
    "\uff03\uff0f\uff1a\uff1f\uff20"
)
# IPv6 (ipaddress.IPv6Address): 8 hextets of at most 4 hex digits, at most 45 characters in all.
_HEXTETS = 8
_MAX_HEXTET_DIGITS = 4
_MAX_IPV6_CHARS = 45
_IPV4_OCTETS = 4
_MAX_OCTET = 255


def is_source_url(url: object) -> "TypeGuard[str]":
    """Whether ``url`` may be a message's source link: an http(s) URL of at most
    ``MAX_SOURCE_URL_LENGTH`` characters, printable ASCII, no spaces."""
    return (
        isinstance(url, str)
        and 0 < len(url) <= MAX_SOURCE_URL_LENGTH
        and all(_FIRST_URL_CHARACTER <= char <= _LAST_URL_CHARACTER for char in url)
        and fold(url[:8]).startswith(_SCHEME_PREFIXES)
    )


def source_system(url: str) -> "str | None":
    """The chat system a source link points into, by the link's shape (the forms the importers
    write), or None when the shape is not one of them. The name is ours, never read from the link."""
    parts = _split(url)
    if parts is None:
        return None
    host, path, query, fragment = parts
    segments = [segment for segment in path.split("/") if segment]
    if host == "slack.com" or host.endswith(".slack.com"):
        return "Slack"
    if fragment.startswith("narrow/"):
        return "Zulip"
    if segments and segments[0] in _ROCKETCHAT_ROOM_KINDS and _has_field(query, _ROCKETCHAT_MESSAGE_FIELD):
        return "Rocket.Chat"
    if len(segments) >= 2 and segments[1] in _MATTERMOST_VIEWS:
        return "Mattermost"
    return None


# -- urlsplit, for what source_system reads ----------------------------------------------------------


def _split(url: str) -> "tuple[str, str, str, str] | None":
    """(host in lower case, path, query, fragment) as `urlsplit(url)` gives them (`hostname`
    lowered, "" for None), or None where urlsplit raises ValueError."""
    start = 0
    while start < len(url) and url[start] <= " ":  # urlsplit's lstrip of C0 controls and space
        start += 1
    url = url[start:]
    for removed in _REMOVED_CHARACTERS:
        url = url.replace(removed, "")
    colon = url.find(":")
    scheme = url[:colon] if colon > 0 and ("a" <= url[0] <= "z" or "A" <= url[0] <= "Z") else ""
    if scheme and all(char in _SCHEME_CHARACTERS for char in scheme):
        url = url[colon + 1 :]
    netloc = ""
    if url.startswith("//"):
        end = len(url)
        for delimiter in _NETLOC_ENDS:
            found = url.find(delimiter, 2)
            if found >= 0:
                end = min(end, found)
        netloc, url = url[2:end], url[end:]
        if ("[" in netloc) != ("]" in netloc) or ("[" in netloc and not _bracketed_netloc_ok(netloc)):
            return None
    url, _, fragment = url.partition("#")
    url, _, query = url.partition("?")
    if len(netloc.encode()) != len(netloc) and any(char in _NFKC_DELIMITERS for char in netloc):
        return None
    return _hostname(netloc), url, query, fragment


def _hostname(netloc: str) -> str:
    # `SplitResult.hostname` (its zone, after %, kept as it is), then lowered whole by the caller.
    hostinfo = netloc.rpartition("@")[2]
    bracket = "[" in hostinfo
    hostname = hostinfo.partition("[")[2].partition("]")[0] if bracket else hostinfo.partition(":")[0]
    if not hostname:
        return ""
    name, percent, zone = hostname.partition("%")
    return fold(fold(name) + percent + zone)


def _bracketed_netloc_ok(netloc: str) -> bool:
    # urllib.parse._check_bracketed_netloc: nothing before the bracket, nothing but a port after it.
    before, bracket, bracketed = netloc.rpartition("@")[2].partition("[")
    if bracket:
        if before:
            return False
        hostname, _, port = bracketed.partition("]")
        if port and not port.startswith(":"):
            return False
    else:
        hostname = before.partition(":")[0]
    if hostname.startswith("v"):  # IPvFuture: v, hex digits, a dot, anything
        dot = hostname.find(".")
        return dot > 1 and dot < len(hostname) - 1 and all(char in _HEX_DIGITS for char in hostname[1:dot])
    return not _is_ipv4(hostname) and _is_ipv6(hostname)


def _is_ipv4(text: str) -> bool:
    # ipaddress.IPv4Address: four decimal octets, no leading zeros, each at most 255.
    octets = text.split(".")
    if len(octets) != _IPV4_OCTETS:
        return False
    for octet in octets:
        if not octet or len(octet) > 3 or not all("0" <= char <= "9" for char in octet):
            return False
        if (octet != "0" and octet[0] == "0") or int(octet) > _MAX_OCTET:
            return False
    return True


def _is_ipv6(text: str) -> bool:
    # ipaddress.IPv6Address, its scope (%zone) included: its parser's rules, in its order.
    if "/" in text:
        return False
    address, percent, zone = text.partition("%")
    if percent and (not zone or "%" in zone):
        return False
    if not address or len(address) > _MAX_IPV6_CHARS:
        return False
    parts = address.split(":")
    if len(parts) < 3:
        return False
    if "." in parts[-1]:
        if not _is_ipv4(parts[-1]):
            return False
        parts = parts[:-1] + ["0", "0"]  # noqa: RUF005 (MicroPython has no `*` in a list): its two hextets
    if len(parts) > _HEXTETS + 1:
        return False
    skip = None
    for index in range(1, len(parts) - 1):
        if not parts[index]:
            if skip is not None:
                return False
            skip = index
    if skip is not None:
        high, low = skip, len(parts) - skip - 1
        if not parts[0]:
            high -= 1
            if high:
                return False
        if not parts[-1]:
            low -= 1
            if low:
                return False
        if _HEXTETS - (high + low) < 1:
            return False
    else:
        if len(parts) != _HEXTETS or not parts[0] or not parts[-1]:
            return False
        high, low = len(parts), 0
    hextets = parts[:high] + (parts[len(parts) - low :] if low else [])
    return all(
        0 < len(hextet) <= _MAX_HEXTET_DIGITS and all(c in _HEX_DIGITS for c in hextet) for hextet in hextets
    )


def _has_field(query: str, name: str) -> bool:
    """Whether `name` is a key of `parse_qs(query)`: a `&`-separated field with a value whose
    name, `+` as a space and %XX decoded, is `name` (an ASCII name: no UTF-8 sequence decodes to it)."""
    for field in query.split("&"):
        key, equals, value = field.partition("=")
        if equals and value and _unquoted(key) == name:
            return True
    return False


def _unquoted(text: str) -> str:
    # urllib.parse.unquote_plus for what an ASCII name can come from: bytes past ASCII stay apart.
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        pair = text[index + 1 : index + 3]
        if char == "%" and len(pair) == 2 and pair[0] in _HEX_DIGITS and pair[1] in _HEX_DIGITS:
            out.append(chr(int(pair, 16)))
            index += 3
            continue
        out.append(" " if char == "+" else char)
        index += 1
    return "".join(out)
