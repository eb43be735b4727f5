"""The Ferry workspace: its people and rooms. The written conversations live in ``conversations/*.txt``.

Ferry is an open-source, self-hosted backup tool (deduplicated, encrypted snapshots to local disks,
SFTP, S3 and friends; a ``ferry`` CLI and a ``ferryd`` daemon with a scheduler and a web UI). This is
its community workspace: users ask in #help and #install, maintainers and experienced users answer,
contributors work in #dev, the CI bot posts in #ci, releases go to #announcements, and the five
maintainers have a private #maintainers group.

The conversations are written in Halden's format and read by Halden's parser
(``bench.halden.workspace``: ``== <id> <room> <start UTC>``, then ``[>] user [gap]: text``).
"""

from __future__ import annotations

from pathlib import Path

from bench.halden.workspace import Person, Room, WrittenMessage, direct_room, read_conversations
from bench.halden.workspace import rooms_of as _rooms_of

__all__ = ["CONVERSATIONS_DIR", "PEOPLE", "ROOMS", "read_written", "rooms_of"]

CONVERSATIONS_DIR = Path(__file__).resolve().parent / "conversations"

# `office` is the region whose hours a person chats in (the background uses it).
PEOPLE: tuple[Person, ...] = (
    Person("mira", "Mira Castellanos", "project lead, maintainer", "europe"),
    Person("tobias", "Tobias Reinholt", "maintainer: storage backends, repository format", "europe"),
    Person("anil", "Anil Mehta", "maintainer: scheduler, release manager", "asia"),
    Person("june", "June Park", "maintainer: web UI and docs", "americas"),
    Person("oskar", "Oskar Lund", "maintainer: packaging (Debian, Docker, Homebrew)", "europe"),
    Person("felix", "Felix Brandão", "contributor: chunker and performance", "americas"),
    Person("sofia", "Sofia Marchetti", "contributor: docs and translations", "europe"),
    Person("kwame", "Kwame Asante", "contributor: cloud backends", "europe"),
    Person("lucas", "Lucas Weber", "contributor: Windows support", "europe"),
    Person("dana", "Dana Whitfield", "experienced user, homelab, triager", "americas"),
    Person("ravi", "Ravi Kulkarni", "experienced user, sysadmin", "asia"),
    Person("greta", "Greta Sørensen", "experienced user, NAS", "europe"),
    Person("tom", "Tom Becker", "user", "europe"),
    Person("yusuf", "Yusuf Demir", "user", "europe"),
    Person("carla", "Carla Jiménez", "user", "americas"),
    Person("ben", "Ben Hollis", "user", "americas"),
    Person("aiko", "Aiko Mori", "user", "asia"),
    Person("pete", "Pete Novak", "user", "americas"),
    Person("lin", "Lin Zhou", "user", "asia"),
    Person("marco", "Marco Ferri", "user", "europe"),
    Person("buildbot", "Ferry CI", "the CI bot", "bot"),
)
_HUMANS = tuple(p.username for p in PEOPLE if p.office != "bot")
MAINTAINERS = ("mira", "tobias", "anil", "june", "oskar")

ROOMS: tuple[Room, ...] = (
    Room("general", "c", _HUMANS),
    Room("help", "c", _HUMANS),
    Room("install", "c", _HUMANS),
    Room("announcements", "c", _HUMANS),
    Room("offtopic", "c", _HUMANS),
    Room(
        "dev",
        "c",
        (*MAINTAINERS, "felix", "sofia", "kwame", "lucas", "dana", "ravi", "buildbot"),
    ),
    Room("docs", "c", ("june", "sofia", "mira", "greta", "carla", "oskar")),
    Room("ci", "c", ("buildbot", "mira", "tobias", "anil", "oskar", "felix", "kwame", "lucas")),
    Room("maintainers", "p", MAINTAINERS),
    direct_room("anil", "dana"),
    direct_room("mira", "tobias"),
    direct_room("june", "sofia"),
)


def rooms_of(username: str) -> set[str]:
    """The Ferry rooms a person reads (is a member of)."""
    return _rooms_of(username, ROOMS)


def read_written() -> list[WrittenMessage]:
    """Every written Ferry message, read with Halden's parser."""
    return read_conversations(CONVERSATIONS_DIR, ROOMS)
