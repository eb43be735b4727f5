"""The Halden workspace: its people, its rooms, and the written conversations the judgments rest on.

Halden makes a smart heating hub (firmware, a cloud platform, a mobile app), with an office in Lisbon,
a Tokyo office (Japanese) and a contract manufacturer in Shenzhen (Chinese). The conversations live in
``conversations/*.txt``, written by hand in a small format::

    == pgb-pool incidents 2027-01-14 08:52        a block: conversation id, room, start (UTC)
    jonah: device-api is throwing 503s            the block's first message (id pgb-pool-01)
    > priya +1m: pgbouncer shows cl_waiting ...   a reply in its thread (tmid = pgb-pool-01)
    tomas +3m: ...                                a message in the room, outside the thread

A gap moves the clock from the previous message: ``+12m``, ``+3h``, ``+1d``, ``@09:30`` (same day),
``+1d@09:30``; without one, two minutes pass. Lines starting with ``#`` are comments. Message ids are
``<block>-<nn>``; a reply carries ``tmid``, the id of its thread's first message, as Rocket.Chat does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = [
    "CONVERSATIONS_DIR",
    "PEOPLE",
    "ROOMS",
    "Person",
    "Room",
    "WrittenMessage",
    "direct_room",
    "read_conversations",
    "rooms_of",
]

CONVERSATIONS_DIR = Path(__file__).resolve().parent / "conversations"
# The clock's step when a line gives no gap (minutes).
DEFAULT_GAP_MINUTES = 2


@dataclass(frozen=True)
class Person:
    username: str
    name: str
    role: str
    office: str  # lisbon, tokyo or shenzhen: decides the hours they chat in


@dataclass(frozen=True)
class Room:
    name: str
    type: str  # c public, p private, d direct
    members: tuple[str, ...]


PEOPLE: tuple[Person, ...] = (
    Person("oscar", "Oscar Brandt", "CEO", "lisbon"),
    Person("maya", "Maya Lindqvist", "CTO", "lisbon"),
    Person("ines", "Inês Duarte", "product manager", "lisbon"),
    Person("ava", "Ava Thompson", "people operations", "lisbon"),
    Person("tomas", "Tomás Ferreira", "platform lead", "lisbon"),
    Person("priya", "Priya Raman", "backend engineer", "lisbon"),
    Person("jonah", "Jonah Adeyemi", "site reliability engineer", "lisbon"),
    Person("dmitri", "Dmitri Volkov", "security engineer", "lisbon"),
    Person("hana", "Hana Novak", "data analyst", "lisbon"),
    Person("sam", "Sam Okafor", "mobile lead", "lisbon"),
    Person("nora", "Nora Kim", "mobile engineer", "lisbon"),
    Person("lena", "Lena Vogel", "firmware lead", "lisbon"),
    Person("rafael", "Rafael Costa", "support lead", "lisbon"),
    Person("kenji", "Kenji Watanabe", "firmware and QA engineer", "tokyo"),
    Person("yuki", "Yuki Sato", "support and localisation", "tokyo"),
    Person("wei", "Wei Chen", "manufacturing liaison", "shenzhen"),
    Person("mei", "Mei Lin", "supply chain", "shenzhen"),
)
_EVERYONE = tuple(p.username for p in PEOPLE)


def direct_room(first: str, second: str) -> Room:
    return Room("__".join(sorted((first, second))), "d", tuple(sorted((first, second))))


ROOMS: tuple[Room, ...] = (
    Room("general", "c", _EVERYONE),
    Room("random", "c", _EVERYONE),
    Room(
        "platform", "c", ("maya", "tomas", "priya", "jonah", "dmitri", "hana", "sam", "lena", "nora", "ines")
    ),
    Room(
        "incidents",
        "c",
        (
            "tomas",
            "priya",
            "jonah",
            "maya",
            "rafael",
            "dmitri",
            "sam",
            "lena",
            "oscar",
            "nora",
            "hana",
            "kenji",
        ),
    ),
    Room("firmware", "c", ("lena", "kenji", "wei", "maya", "tomas", "ines", "jonah")),
    Room("mobile", "c", ("sam", "nora", "priya", "ines", "yuki", "hana")),
    Room(
        "releases",
        "c",
        ("maya", "tomas", "priya", "jonah", "sam", "nora", "lena", "kenji", "ines", "rafael", "yuki"),
    ),
    Room("support", "c", ("rafael", "yuki", "ines", "sam", "jonah", "kenji", "nora")),
    Room("data", "c", ("hana", "ines", "priya", "oscar", "maya")),
    Room("tokyo", "c", ("kenji", "yuki", "lena", "ines", "rafael")),
    Room("manufacturing", "c", ("wei", "mei", "lena", "kenji", "oscar", "ines")),
    Room("leadership", "p", ("oscar", "maya", "ines", "ava")),
    Room("hiring", "p", ("ava", "maya", "tomas", "lena", "sam")),
    Room("security", "p", ("dmitri", "maya", "tomas", "jonah")),
    Room("pricing", "p", ("oscar", "ines", "hana", "rafael")),
    direct_room("priya", "tomas"),
    direct_room("lena", "wei"),
    direct_room("ava", "oscar"),
    direct_room("hana", "ines"),
    direct_room("jonah", "tomas"),
    direct_room("kenji", "yuki"),
    direct_room("mei", "wei"),
    direct_room("rafael", "sam"),
    direct_room("dmitri", "maya"),
)
_ROOM_BY_NAME = {room.name: room for room in ROOMS}


def rooms_of(username: str, rooms: Sequence[Room] = ROOMS) -> set[str]:
    """The rooms a person reads (is a member of), among `rooms` (Halden's by default)."""
    return {room.name for room in rooms if username in room.members}


@dataclass(frozen=True)
class WrittenMessage:
    id: str
    room: Room
    user: str
    ts: datetime
    text: str
    tmid: str | None  # the thread's first message, for a reply


_HEADER = re.compile(r"== (?P<id>[a-z0-9-]+) (?P<room>[a-z_]+) (?P<start>\d{4}-\d\d-\d\d \d\d:\d\d)")
_LINE = re.compile(
    r"(?P<reply>> )?(?P<user>[a-z]+)(?: (?P<gap>(?:\+\d+[mhd])?(?:@\d\d:\d\d)?))?: (?P<text>.+)"
)
_STEP = re.compile(r"\+(\d+)([mhd])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def apply_gap(moment: datetime, gap: str | None) -> datetime:
    """The clock after a gap (see the module docstring)."""
    if not gap:
        return moment + timedelta(minutes=DEFAULT_GAP_MINUTES)
    step, _, clock = gap.partition("@")
    if step:
        found = _STEP.fullmatch(step)
        if found is None:
            raise ValueError(f"bad gap {gap!r}")
        moment += timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})
    if clock:
        hour, minute = (int(part) for part in clock.split(":"))
        moment = moment.replace(hour=hour, minute=minute)
    return moment


def _parse(path: Path, rooms: Mapping[str, Room]) -> Iterator[WrittenMessage]:
    block: str | None = None
    room: Room | None = None
    clock = datetime.min.replace(tzinfo=UTC)
    number = 0
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{line_no}"
        if not line.strip() or line.startswith("#"):
            continue
        header = _HEADER.fullmatch(line)
        if header is not None:
            block, number = header["id"], 0
            if header["room"] not in rooms:
                raise ValueError(f"{where}: unknown room {header['room']!r}")
            room = rooms[header["room"]]
            clock = datetime.fromisoformat(header["start"]).replace(tzinfo=UTC)
            continue
        found = _LINE.fullmatch(line)
        if found is None or block is None or room is None:
            raise ValueError(f"{where}: not a message line: {line!r}")
        if found["user"] not in room.members:
            raise ValueError(f"{where}: {found['user']} is not a member of {room.name}")
        if number:
            clock = apply_gap(clock, found["gap"])
        elif found["gap"]:
            raise ValueError(f"{where}: a block's first message takes its time from the header")
        number += 1
        tmid = f"{block}-01" if found["reply"] else None
        if tmid is not None and number == 1:
            raise ValueError(f"{where}: a block's first message cannot be a reply")
        yield WrittenMessage(f"{block}-{number:02d}", room, found["user"], clock, found["text"], tmid)


def read_conversations(
    directory: Path = CONVERSATIONS_DIR, rooms: Sequence[Room] = ROOMS
) -> list[WrittenMessage]:
    """Every written message, in file order; raises ValueError naming the file and line of a bad one.

    Another workspace written in the same format (bench/ferry) passes its own directory and rooms.
    """
    by_name = _ROOM_BY_NAME if rooms is ROOMS else {room.name: room for room in rooms}
    messages = [message for path in sorted(directory.glob("*.txt")) for message in _parse(path, by_name)]
    ids = [m.id for m in messages]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"conversation ids used twice: {', '.join(repeated)}")
    return messages
