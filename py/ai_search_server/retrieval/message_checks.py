"""What a stored message must be to stay a result: the search line's content and state filters.

The pipeline contract filters by room, author and time only (spec §6), so ``has:``, ``is:``, the
excluded authors, words and phrases, and the quoted phrases a result must hold are checked here, on
the message the store gives back, for every candidate of both branches. One table per operator
(``HAS_CHECKS``, ``IS_CHECKS``), keyed by the core's canonical values, so a value the grammar
accepts and no check knows is caught by a test, not by a user.

    >>> checks = MessageChecks(has=("reaction",), excluded_words=(("canary",),))
    >>> checks.active
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from ..store.records import Message, Room
from .terms import Term, TermMatcher

__all__ = ["HAS_CHECKS", "IMAGE_FILE_SUFFIXES", "IS_CHECKS", "MessageChecks", "MessageContext"]

# A link in a message: a URL with a scheme, or one starting with www. (Rocket.Chat unfurls both).
_LINK = re.compile(r"(?:\bhttps?://|\bwww\.)\S", re.IGNORECASE)
#: File name endings read as images when an attachment names no MIME type.
IMAGE_FILE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".heic")


@dataclass(frozen=True, slots=True)
class MessageContext:
    """A candidate as the checks see it: the message, its room, and whether replies follow it."""

    message: Message
    room: Room
    starts_thread: bool


def _is_image(message: Message) -> bool:
    return any(
        a.type.lower().startswith("image/") or a.name.lower().endswith(IMAGE_FILE_SUFFIXES)
        for a in message.attachments
    )


_Check = Callable[[MessageContext], bool]
#: `has:` value -> what a message must have.
HAS_CHECKS: Mapping[str, _Check] = {
    "link": lambda c: bool(_LINK.search(c.message.text)),
    "file": lambda c: bool(c.message.attachments),
    "image": lambda c: _is_image(c.message),
    "reaction": lambda c: any(r.usernames for r in c.message.reactions),
    "thread": lambda c: c.starts_thread,
}
#: `is:` value -> what a message must be.
IS_CHECKS: Mapping[str, _Check] = {
    "thread": lambda c: c.message.tmid is not None,
    "dm": lambda c: c.room.type == "d",
    "pinned": lambda c: c.message.pinned_at is not None,
}


@dataclass(frozen=True, slots=True)
class MessageChecks:
    """The checks of one search: every `has`/`is` holds, no excluded one does, no excluded author
    wrote it, no excluded word or phrase is in it, and every quoted phrase is.

    Words and phrases match as the keyword branch matches them (``terms``): folded, and a word of
    four letters or more also matches longer words (``-deploy`` leaves out "deployment" too).
    """

    has: tuple[str, ...] = ()
    excluded_has: tuple[str, ...] = ()
    is_: tuple[str, ...] = ()
    excluded_is: tuple[str, ...] = ()
    excluded_usernames: Collection[str] = ()
    excluded_words: tuple[Term, ...] = ()
    required_phrases: tuple[Term, ...] = ()

    @property
    def active(self) -> bool:
        return any(
            (
                self.has,
                self.excluded_has,
                self.is_,
                self.excluded_is,
                self.excluded_usernames,
                self.excluded_words,
                self.required_phrases,
            )
        )

    @property
    def needs_threads(self) -> bool:
        """Whether a check asks if replies follow a message (a store lookup)."""
        return "thread" in self.has or "thread" in self.excluded_has

    def matcher(self) -> _Matcher:
        return _Matcher(self)


class _Matcher:
    """The checks ready for many messages: the word matchers are built once per search."""

    def __init__(self, checks: MessageChecks) -> None:
        self._checks = checks
        self._authors = {name.lower() for name in checks.excluded_usernames}
        self._excluded = TermMatcher(checks.excluded_words) if checks.excluded_words else None
        self._required = TermMatcher(checks.required_phrases) if checks.required_phrases else None

    def passes(self, context: MessageContext) -> bool:
        checks = self._checks
        if context.message.username.lower() in self._authors:
            return False
        if not all(HAS_CHECKS[value](context) for value in checks.has):
            return False
        if any(HAS_CHECKS[value](context) for value in checks.excluded_has):
            return False
        if not all(IS_CHECKS[value](context) for value in checks.is_):
            return False
        if any(IS_CHECKS[value](context) for value in checks.excluded_is):
            return False
        text = context.message.searchable_text
        if self._excluded is not None and self._excluded.matched(text):
            return False
        return self._required is None or len(self._required.matched(text)) == len(checks.required_phrases)
