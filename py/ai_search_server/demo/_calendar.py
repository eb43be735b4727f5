"""Day-by-day placement of background messages: the calendar, the posting context and snippets.

``Context.post`` is the one way a stream adds a message: it refuses an exact repeat of an earlier
text, a time after ``now`` and an author who had not joined yet, so every stream stays truthful and
varied without checking that itself.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from ._pools_social import Snippet
from ._pools_support import CUSTOMERS
from ._script import render
from ._workspace import DEMO_ROOMS, DEMO_USERS

__all__ = [
    "FIRST_NAMES",
    "JOINED",
    "MEMBERS",
    "Context",
    "Day",
    "Draft",
    "calendar_days",
    "place_snippet",
    "snippet_stream",
    "take_snippet",
]

FIRST_NAMES = {user.username: user.name.split()[0] for user in DEMO_USERS}
JOINED = {user.username: user.joined_days_ago for user in DEMO_USERS}
MEMBERS = {room.name: room.members for room in DEMO_ROOMS}


@dataclass(frozen=True, slots=True)
class Draft:
    room: str
    user: str
    ts: datetime
    text: str


@dataclass(frozen=True, slots=True)
class Day:
    day: date
    days_ago: int

    @property
    def weekday(self) -> bool:
        return self.day.weekday() < 5


@dataclass
class Context:
    rng: random.Random
    now: datetime
    drafts: list[Draft] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def post(self, room: str, user: str, ts: datetime, text: str) -> bool:
        """Add a message unless it would repeat an earlier text or lie in the future."""
        if text in self.seen or ts > self.now or JOINED[user] < (self.now.date() - ts.date()).days:
            return False
        self.seen.add(text)
        self.drafts.append(Draft(room, user, ts, text))
        return True

    def clock(self, day: date, start: float = 8.5, end: float = 17.5) -> datetime:
        hours = self.rng.uniform(start, end)
        moment = datetime.combine(day, time(0, 0), tzinfo=UTC) + timedelta(hours=hours)
        return moment.replace(second=self.rng.randrange(60), microsecond=0)

    def later(self, moment: datetime, low_minutes: int = 1, high_minutes: int = 14) -> datetime:
        return moment + timedelta(
            minutes=self.rng.randint(low_minutes, high_minutes), seconds=self.rng.randrange(60)
        )

    def active(self, room: str, days_ago: int, exclude: Sequence[str] = ()) -> list[str]:
        return [u for u in MEMBERS[room] if JOINED[u] >= days_ago and u not in exclude]


def calendar_days(now: datetime, span_days: int) -> Iterator[Day]:
    for days_ago in range(span_days, -1, -1):
        yield Day(now.date() - timedelta(days=days_ago), days_ago)


def _placeable(snippet: Snippet, room: str, days_ago: int) -> bool:
    """Whether every named speaker had joined and enough other members are there for the roles."""
    fixed = {speaker for speaker, _ in snippet if speaker in JOINED}
    roles = {speaker for speaker, _ in snippet if speaker not in JOINED}
    others = [u for u in MEMBERS[room] if JOINED[u] >= days_ago and u not in fixed]
    return all(JOINED[user] >= days_ago for user in fixed) and len(others) >= len(roles)


def take_snippet(rng: random.Random, pool: list[Snippet], room: str, days_ago: int) -> Snippet | None:
    """Remove and return a random snippet of ``pool`` that can be posted in ``room`` that day."""
    candidates = [index for index, snippet in enumerate(pool) if _placeable(snippet, room, days_ago)]
    return pool.pop(rng.choice(candidates)) if candidates else None


def place_snippet(
    ctx: Context,
    room: str,
    snippet: Snippet,
    start: datetime,
    days_ago: int,
    slots: dict[str, str] | None = None,
) -> None:
    """Post ``snippet`` in ``room`` from ``start``, giving its roles to distinct active members."""
    fixed = {speaker for speaker, _ in snippet if speaker in JOINED}
    roles = sorted({speaker for speaker, _ in snippet if speaker not in JOINED})
    people = ctx.active(room, days_ago, exclude=tuple(fixed))
    cast = dict(zip(roles, ctx.rng.sample(people, len(roles)), strict=True))
    names = {role: FIRST_NAMES[user] for role, user in cast.items()}
    moment = start
    for speaker, text in snippet:
        ctx.post(
            room,
            cast.get(speaker, speaker),
            moment,
            render(text, day=moment.date(), names=names, slots=slots),
        )
        moment = ctx.later(moment)


def snippet_stream(ctx: Context, days: list[Day], room: str, pool: Sequence[Snippet], rate: float) -> None:
    remaining = list(pool)
    for day in days:
        if (
            day.weekday
            and ctx.rng.random() < rate
            and (snippet := take_snippet(ctx.rng, remaining, room, day.days_ago))
        ):
            place_snippet(
                ctx, room, snippet, ctx.clock(day.day), day.days_ago, {"customer": ctx.rng.choice(CUSTOMERS)}
            )
