"""Turn the scripted threads and the background streams into import rows.

Scripted threads are placed on their day (``days_ago`` before ``now``; a working-hours thread that
would fall on a weekend moves back to the Friday) with a few minutes of seeded jitter, so their facts,
dates and ids do not depend on the seed. The background fills the rest of the span. Rows come out
oldest first; the first row of every room carries its ``members``.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time, timedelta

from ._ambient import Draft, ambient_drafts
from ._business import BUSINESS_THREADS
from ._conversations import DEMO_EDITED_MINUTES, DEMO_FILES, DEMO_PINNED, DEMO_REACTIONS, is_threaded
from ._design import DESIGN_THREADS
from ._followups import FOLLOWUP_THREADS
from ._incidents import INCIDENT_THREADS
from ._launches import LAUNCH_THREADS
from ._people import PEOPLE_THREADS
from ._practice import PRACTICE_THREADS
from ._releases import RELEASE_THREADS
from ._script import Thread, apply_gap, render
from ._security import SECURITY_THREADS
from ._workspace import DEMO_ROOMS

__all__ = [
    "DEFAULT_DEMO_NOW",
    "DEFAULT_DEMO_SEED",
    "DEMO_SPAN_DAYS",
    "SCRIPTED_THREADS",
    "generate_demo_messages",
]

DEFAULT_DEMO_SEED = 2026
# A fixed end of the timeline, so the default output (and the relevance judgments) never change.
DEFAULT_DEMO_NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# Days of history before `now` (the brief asks for at least 90).
DEMO_SPAN_DAYS = 98
# Most minutes a scripted thread's first message moves from its written time.
_THREAD_JITTER_MINUTES = 6

SCRIPTED_THREADS: list[Thread] = [
    *INCIDENT_THREADS,
    *RELEASE_THREADS,
    *PEOPLE_THREADS,
    *BUSINESS_THREADS,
    *SECURITY_THREADS,
    *DESIGN_THREADS,
    *PRACTICE_THREADS,
    *FOLLOWUP_THREADS,
    *LAUNCH_THREADS,
]

_ROOM_TYPES = {room.name: room.type for room in DEMO_ROOMS}
_ROOM_MEMBERS = {room.name: sorted(room.members) for room in DEMO_ROOMS}


def _thread_day(thread: Thread, now: datetime) -> date:
    day = now.date() - timedelta(days=thread.days_ago)
    if not thread.night and day.weekday() >= 5:
        day -= timedelta(days=day.weekday() - 4)
    return day


def _scripted(thread: Thread, rng: random.Random, now: datetime) -> list[tuple[str, Draft]]:
    day = _thread_day(thread, now)
    hour, minute = (int(part) for part in thread.at.split(":"))
    moment = datetime.combine(day, time(hour, minute), tzinfo=UTC)
    moment += timedelta(minutes=rng.randint(0, _THREAD_JITTER_MINUTES), seconds=rng.randrange(60))
    drafts = []
    for number, turn in enumerate(thread.turns, start=1):
        speaker, text, *gap = turn
        if number > 1:
            if gap:
                moment = apply_gap(moment, gap[0]) + timedelta(seconds=rng.randrange(90))
            else:
                # Longer messages take longer to type.
                moment += timedelta(minutes=rng.randint(1, 3) + len(text) // 140, seconds=rng.randrange(60))
        message_id = f"demo-{thread.key}-{number:02d}"
        drafts.append((message_id, Draft(thread.room, speaker, moment, render(text, day=day))))
    return drafts


def _conversation_fields(thread: Thread) -> dict[str, dict[str, object]]:
    """Per scripted id, what the row adds: ``tmid`` for a thread's replies, files, edits, reactions, pins."""
    first = f"demo-{thread.key}-01"
    out: dict[str, dict[str, object]] = {}
    for number in range(1, len(thread.turns) + 1):
        message_id = f"demo-{thread.key}-{number:02d}"
        fields: dict[str, object] = {}
        if number > 1 and is_threaded(thread.key, thread.room):
            fields["tmid"] = first
        if message_id in DEMO_FILES:
            fields["attachments"] = DEMO_FILES[message_id]
        if message_id in DEMO_REACTIONS:
            fields["reactions"] = DEMO_REACTIONS[message_id]
        if message_id in DEMO_PINNED:
            fields["pinned"] = True
        out[message_id] = fields
    return out


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_demo_messages(
    seed: int = DEFAULT_DEMO_SEED, *, now: datetime | None = None
) -> list[dict[str, object]]:
    """The demo workspace as import rows (the format ``ai-search import FILE.jsonl`` reads), oldest first.

    Each row: ``id`` (``demo-<thread>-<NN>`` for scripted messages, ``demo-<room>-<NNNN>`` for the
    background), ``room``, ``room_type`` (``c``/``p``/``d``), ``user``, ``ts`` (ISO 8601 UTC, ``Z``),
    ``text``; the first row of each room also has ``members`` (sorted usernames). The same ``seed``
    and ``now`` always give the same rows. Scripted conversations in threads carry ``tmid`` on their
    replies; some messages carry ``attachments``, ``reactions``, ``edited_at`` or ``pinned``
    (``_conversations.py``). Users are not rows: create ``DEMO_USERS`` first so they get
    their names and passwords (the importer creates unknown users without either).

    Raises:
        ValueError: ``now`` is a naive datetime.
    """
    if now is None:
        now = DEFAULT_DEMO_NOW
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (UTC), e.g. datetime(2026, 11, 30, tzinfo=timezone.utc)")
    now = now.astimezone(UTC)
    rng = random.Random(seed)
    identified: list[tuple[str | None, Draft]] = []
    extras: dict[str, dict[str, object]] = {}
    for thread in SCRIPTED_THREADS:
        identified.extend(_scripted(thread, rng, now))
        extras.update(_conversation_fields(thread))
    identified.extend((None, draft) for draft in ambient_drafts(rng, now, DEMO_SPAN_DAYS))
    identified.sort(key=lambda item: (item[1].ts, item[0] or "", item[1].room, item[1].text))

    counters = dict.fromkeys(_ROOM_TYPES, 0)
    rows: list[dict[str, object]] = []
    for message_id, draft in identified:
        if message_id is None:
            counters[draft.room] += 1
            message_id = f"demo-{draft.room}-{counters[draft.room]:04d}"
        row: dict[str, object] = {
            "id": message_id,
            "room": draft.room,
            "room_type": _ROOM_TYPES[draft.room],
            "user": draft.user,
            "ts": _iso(draft.ts),
            "text": draft.text,
            **extras.get(message_id, {}),
        }
        if message_id in DEMO_EDITED_MINUTES:
            row["edited_at"] = _iso(draft.ts + timedelta(minutes=DEMO_EDITED_MINUTES[message_id]))
        rows.append(row)
    seen: set[str] = set()
    for row in rows:
        room = str(row["room"])
        if room not in seen:
            seen.add(room)
            row["members"] = list(_ROOM_MEMBERS[room])
    return rows
