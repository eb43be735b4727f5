"""The shape of scripted content: threads, turns, gaps and the placeholders texts may hold.

A ``Thread`` is one conversation with known facts; the relevance judgments point at its messages,
whose ids are ``demo-<key>-<turn number>`` so they do not depend on the seed. Placeholders let a text
name a date without hard-coding it, so the content stays true whatever ``now`` the generator is given:

- ``{d}``, ``{d+3}``: the thread's (first) day, or three days later, as ``Sep 17``;
- ``{dow}``, ``{dow-1}``: the weekday name of that day (``Thursday``);
- ``{A}``, ``{B}``, ``{C}``: first names of the people a snippet's roles were given to;
- any other ``{word}`` the caller passes in ``slots``. Unknown ``{words}`` (``{id}``) stay as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = [
    "Thread",
    "Turn",
    "apply_gap",
    "render",
    "thread",
]

# (speaker, text) or (speaker, text, gap); see apply_gap for the gap syntax.
Turn = tuple[str, ...]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)([+-]\d+)?\}")
_GAP = re.compile(r"^(?:\+(\d+)([mhd]))?(?:@(\d{2}):(\d{2}))?$")


@dataclass(frozen=True, slots=True)
class Thread:
    key: str
    room: str
    days_ago: int  # calendar days before `now` of the first message
    at: str  # "HH:MM" UTC of the first message
    turns: tuple[Turn, ...]
    night: bool = False  # may start outside working hours or on a weekend (incidents)


def thread(key: str, room: str, days_ago: int, at: str, *turns: Turn, night: bool = False) -> Thread:
    """Build a Thread; positional turns read like the chat they script."""
    return Thread(key, room, days_ago, at, tuple(turns), night)


def apply_gap(previous: datetime, gap: str) -> datetime:
    """The time of a turn ``gap`` after ``previous``.

    ``+12m`` / ``+3h`` / ``+2d`` add minutes, hours or days; ``@09:30`` sets the clock (same day);
    ``+1d@09:30`` is the next day at 09:30.

    Raises:
        ValueError: the gap is not in that syntax.
    """
    match = _GAP.match(gap)
    if match is None or gap == "":
        raise ValueError(f"bad gap {gap!r}: expected +Nm, +Nh, +Nd, @HH:MM or +Nd@HH:MM")
    amount, unit, hour, minute = match.groups()
    moment = previous
    if amount is not None:
        size = int(amount)
        moment += {"m": timedelta(minutes=size), "h": timedelta(hours=size), "d": timedelta(days=size)}[unit]
    if hour is not None:
        moment = moment.replace(hour=int(hour), minute=int(minute), second=0)
    return moment


def render(
    text: str, *, day: date, names: dict[str, str] | None = None, slots: dict[str, str] | None = None
) -> str:
    """Fill the placeholders of ``text`` (see the module docstring)."""

    def fill(match: re.Match[str]) -> str:
        key, offset = match.group(1), int(match.group(2) or 0)
        moment = day + timedelta(days=offset)
        if key == "d":
            return f"{moment:%b} {moment.day}"
        if key == "dow":
            return f"{moment:%A}"
        if names is not None and key in names and offset == 0:
            return names[key]
        if slots is not None and key in slots and offset == 0:
            return slots[key]
        return match.group(0)

    return _PLACEHOLDER.sub(fill, text)
