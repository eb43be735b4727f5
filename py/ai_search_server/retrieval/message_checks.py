"""What a stored message must be to stay a result: the search line's content and state filters.

The pipeline contract filters by room, author and time only (spec §6); the rest -- ``has:``,
``is:``, the excluded authors, words and phrases, and the quoted phrases a result must hold -- goes
to the pipeline as our extension (``conditions``), and is checked again here, on the message the
store gives back, for every candidate of both branches: the store has the last word (an index a
moment behind it never shows a message that no longer qualifies), and a pipeline that does not
apply the extension is still never wrong about what it returned. One table per operator
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

__all__ = [
    "HAS_CHECKS",
    "IMAGE_FILE_SUFFIXES",
    "IS_CHECKS",
    "MESSAGE_MARKS",
    "MessageChecks",
    "MessageContext",
    "message_marks",
]

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


#: What a message holds on its own, by mark name: the index stores each message's marks
#: (``index_db.doc_marks``) so that the conditions apply over the whole index, not only candidates.
MESSAGE_MARKS: Mapping[str, Callable[[Message], bool]] = {
    "link": lambda m: bool(_LINK.search(m.text)),
    "file": lambda m: bool(m.attachments),
    "image": _is_image,
    "reaction": lambda m: any(r.usernames for r in m.reactions),
    "pinned": lambda m: m.pinned_at is not None,
    "reply": lambda m: m.tmid is not None,
}


def message_marks(message: Message) -> tuple[str, ...]:
    """The marks a message holds, in ``MESSAGE_MARKS`` order."""
    return tuple(name for name, holds in MESSAGE_MARKS.items() if holds(message))


_Check = Callable[[MessageContext], bool]
#: `has:` value -> what a message must have.
HAS_CHECKS: Mapping[str, _Check] = {
    "link": lambda c: MESSAGE_MARKS["link"](c.message),
    "file": lambda c: MESSAGE_MARKS["file"](c.message),
    "image": lambda c: MESSAGE_MARKS["image"](c.message),
    "reaction": lambda c: MESSAGE_MARKS["reaction"](c.message),
    "thread": lambda c: c.starts_thread,
}
#: `is:` value -> what a message must be.
IS_CHECKS: Mapping[str, _Check] = {
    "thread": lambda c: MESSAGE_MARKS["reply"](c.message),
    "dm": lambda c: c.room.type == "d",
    "pinned": lambda c: MESSAGE_MARKS["pinned"](c.message),
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
