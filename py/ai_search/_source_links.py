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
"""

from __future__ import annotations

import re
from typing import TypeGuard
from urllib.parse import parse_qs, urlsplit

from ._constants import MAX_SOURCE_URL_LENGTH

__all__ = ["SOURCE_URL_SCHEMES", "is_source_url", "source_system"]

# The schemes a source link may have: a web page. Every other one (javascript:, data:, file:, a
# custom app scheme) is refused, whatever follows it.
SOURCE_URL_SCHEMES = ("http", "https")
# Printable ASCII without spaces: what a percent-encoded URL is. No control character, no space, no
# character a URL parser would strip or fold before reading the scheme.
_URL_CHARACTERS = re.compile(r"[!-~]+")
# Path heads of Rocket.Chat's message links (``/channel/ops?msg=ID``, ``/group/...``, ``/direct/<rid>``).
_ROCKETCHAT_ROOM_KINDS = frozenset({"channel", "group", "direct"})
# Mattermost's second path segment after the team (``/acme/channels/town-square``, ``/acme/pl/<id>``).
_MATTERMOST_VIEWS = frozenset({"channels", "messages", "pl"})


def is_source_url(url: object) -> TypeGuard[str]:
    """Whether ``url`` may be a message's source link: an http(s) URL of at most
    ``MAX_SOURCE_URL_LENGTH`` characters, printable ASCII, no spaces."""
    return (
        isinstance(url, str)
        and len(url) <= MAX_SOURCE_URL_LENGTH
        and _URL_CHARACTERS.fullmatch(url) is not None
        and url.lower().startswith(tuple(f"{scheme}://" for scheme in SOURCE_URL_SCHEMES))
    )


def source_system(url: str) -> str | None:
    """The chat system a source link points into, by the link's shape (the forms the importers
    write), or None when the shape is not one of them. The name is ours, never read from the link."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    segments = [segment for segment in parts.path.split("/") if segment]
    if host == "slack.com" or host.endswith(".slack.com"):
        return "Slack"
    if parts.fragment.startswith("narrow/"):
        return "Zulip"
    if segments and segments[0] in _ROCKETCHAT_ROOM_KINDS and "msg" in parse_qs(parts.query):
        return "Rocket.Chat"
    if len(segments) >= 2 and segments[1] in _MATTERMOST_VIEWS:
        return "Mattermost"
    return None
