"""Who is in the demo workspace and which rooms each person can read.

The memberships are the point of the demo: every user sees a different subset of rooms, so the same
query gives different results to different people (see the package docstring for the showcase).
Direct-message rooms are named after their two members, sorted and joined by ``__`` (``alice__bob``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEMO_ROOMS",
    "DEMO_USERS",
    "DemoRoom",
    "DemoUser",
    "direct_room_name",
    "rooms_of",
]

RoomType = Literal["c", "p", "d"]


@dataclass(frozen=True, slots=True)
class DemoUser:
    username: str
    name: str
    role: Literal["admin", "user"]
    password: str
    title: str
    joined_days_ago: int  # days before the demo's `now` when the person started posting


@dataclass(frozen=True, slots=True)
class DemoRoom:
    name: str
    type: RoomType
    members: tuple[str, ...]
    topic: str = ""


# Passwords are deliberately simple and printed by the CLI: this is a local demo, not an account store.
DEMO_USERS: list[DemoUser] = [
    DemoUser("alice", "Alice Okafor", "admin", "demo-alice", "Engineering manager", 120),
    DemoUser("bob", "Bob Lindqvist", "user", "demo-bob", "Site reliability engineer, platform lead", 120),
    DemoUser("carol", "Carol Nakamura", "user", "demo-carol", "Senior backend engineer, billing", 120),
    DemoUser("dave", "Dave Brennan", "user", "demo-dave", "Frontend and design engineer, checkout", 120),
    DemoUser("erin", "Erin Castillo", "user", "demo-erin", "Security engineer", 120),
    DemoUser("frank", "Frank Osei", "user", "demo-frank", "Customer success lead", 120),
    DemoUser("grace", "Grace Whitfield", "user", "demo-grace", "Backend engineer, billing (new hire)", 56),
]

_ALL = tuple(user.username for user in DEMO_USERS)


def direct_room_name(first: str, second: str) -> str:
    """The name of the direct-message room between two users: sorted usernames joined by ``__``."""
    low, high = sorted((first, second))
    return f"{low}__{high}"


def _dm(first: str, second: str) -> DemoRoom:
    return DemoRoom(direct_room_name(first, second), "d", tuple(sorted((first, second))))


DEMO_ROOMS: list[DemoRoom] = [
    DemoRoom("general", "c", _ALL, "Company-wide announcements"),
    DemoRoom("random", "c", _ALL, "Lunch, weekends, pets and everything else"),
    DemoRoom(
        "engineering", "c", ("alice", "bob", "carol", "dave", "erin", "grace"), "Engineering discussion"
    ),
    DemoRoom("ops", "c", ("alice", "bob", "carol", "erin"), "Deploys, alerts and on-call"),
    DemoRoom("incidents", "c", ("alice", "bob", "carol", "frank"), "Live incident channel"),
    DemoRoom(
        "releases", "c", ("alice", "bob", "carol", "dave", "frank", "grace"), "Release plans and trains"
    ),
    DemoRoom("design", "c", ("alice", "carol", "dave", "grace"), "Product and UI design"),
    DemoRoom("support-escalations", "c", ("alice", "bob", "carol", "frank"), "Customer escalations"),
    DemoRoom("onboarding", "c", ("alice", "carol", "grace"), "Getting new people productive"),
    DemoRoom("leadership", "p", ("alice", "erin", "frank"), "Leads only"),
    DemoRoom("hiring-committee", "p", ("alice", "bob", "dave"), "Interview debriefs and headcount"),
    DemoRoom("security-review", "p", ("alice", "erin"), "Findings before they are fixed"),
    _dm("alice", "bob"),
    _dm("alice", "erin"),
    _dm("alice", "grace"),
    _dm("bob", "carol"),
    _dm("carol", "grace"),
    _dm("dave", "frank"),
]


def rooms_of(username: str) -> frozenset[str]:
    """The names of the rooms ``username`` is a member of (the only rooms they may read)."""
    return frozenset(room.name for room in DEMO_ROOMS if username in room.members)
