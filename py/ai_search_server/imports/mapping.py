"""An admin's mapping of a source's people and conversations to accounts and rooms that exist here.

An import (``ai-search import``) or the Rocket.Chat mirror (``ai-search sync rocketchat``) never takes
an account or a room of this workspace for one of its own because the names agree: whoever writes
the export or runs the other server chooses the names there (a Slack handle ``alice``, a private
channel called ``leadership``), and taking them at their word would hand them the account here, or
the room's members and history. A person or a conversation whose name is taken comes in under a
name of its own instead. When they really are the same, the admin says so, one mapping a line::

    # --map-users FILE: a person of the source, by its id or username = a username here
    U024BE7LH = alice
    bob.smith = bob

    # --map-rooms FILE: a conversation of the source, by its id or name = a channel or group here
    C024BE91L = general
    leadership = leadership

Blank lines and lines starting with ``#`` are skipped; ids compare exactly, names case-insensitively
(one leading ``@`` or ``#`` is dropped from names here). What a mapping may do is less than what the
source may do to what it created (``mirror.py``): a mapped account is linked and never changed (its
name, active flag and roles stay as they are here), and a mapped room only gains the source's
members and keeps its name and topic; it must be of the conversation's type, so a private group
never pours into a public channel. The link is remembered: later runs need the file no more.

    mapping = read_mapping(users=Path("people.txt"))
    check_mapping(store, mapping)      # every name here exists, before anything is imported
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..store.base import Store
from ..store.rules import fold

__all__ = [
    "MAX_MAPPING_FILE_BYTES",
    "NO_MAPPING",
    "MappingError",
    "SourceMapping",
    "check_mapping",
    "read_mapping",
]

# Bytes of one mapping file: a line is ~30 bytes, so 100,000 people fit with room to spare; a file
# larger than that is not a list of people (and is never read into memory whole).
MAX_MAPPING_FILE_BYTES = 4 * 1024 * 1024
# Problems one refusal names: the first few say what to fix; the rest are counted.
MAX_NAMED_PROBLEMS = 5
_COMMENT = "#"
_SEPARATOR = "="


class MappingError(ValueError):
    """A mapping file that cannot be used; the message names the file and line, for the admin."""


@dataclass(frozen=True)
class _Side:
    """One file's mappings: the source's id or name -> a name here, and where each was written."""

    exact: dict[str, str] = field(default_factory=dict)  # as written (ids compare exactly)
    folded: dict[str, str] = field(default_factory=dict)  # folded (names compare case-insensitively)
    lines: dict[str, str] = field(default_factory=dict)  # folded name here -> "FILE line N"

    def find(self, key: str, name: str) -> str | None:
        """The name here for the source's ``key`` (its id), else for its ``name``."""
        if key in self.exact:
            return self.exact[key]
        return self.folded.get(fold(name)) if name else None

    def __bool__(self) -> bool:
        return bool(self.exact)


@dataclass(frozen=True)
class SourceMapping:
    """Who and what of a source an admin mapped to accounts and rooms here (module docstring)."""

    users: _Side = field(default_factory=_Side)
    rooms: _Side = field(default_factory=_Side)

    def user_for(self, key: str, username: str) -> str | None:
        """The username here of the source's person ``key`` (its id) or ``username``, or None."""
        return self.users.find(key, username)

    def room_for(self, key: str, name: str) -> str | None:
        """The room name here of the source's conversation ``key`` (its id) or ``name``, or None."""
        return self.rooms.find(key, name)

    def __bool__(self) -> bool:
        return bool(self.users) or bool(self.rooms)


NO_MAPPING = SourceMapping()


def read_mapping(*, users: Path | None = None, rooms: Path | None = None) -> SourceMapping:
    """The mappings of the files given (module docstring for their lines).

    Raises:
        MappingError: a file cannot be read, is too large, or has a line that maps nothing, a source
            mapped twice, or two sources mapped to one account or room.
    """
    return SourceMapping(
        users=_read(users, "@", "an account") if users else _Side(),
        rooms=_read(rooms, "#", "a room") if rooms else _Side(),
    )


def _read(path: Path, prefix: str, what: str) -> _Side:
    side = _Side()
    sources: dict[str, str] = {}  # the source's id or name, folded -> where it was written
    for where, line in _lines(path):
        source, separator, local = line.partition(_SEPARATOR)
        source, local = source.strip(), local.strip().removeprefix(prefix).strip()
        if not separator or not source or not local:
            raise MappingError(f"{where}: write SOURCE = NAME-HERE (a source id or name, then {what} here)")
        if fold(source) in sources:
            raise MappingError(f"{where}: {source!r} is mapped already ({sources[fold(source)]})")
        if fold(local) in side.lines:
            raise MappingError(
                f"{where}: {local!r} is mapped already ({side.lines[fold(local)]}): {what} here is one source's"
            )
        sources[fold(source)] = where
        side.exact[source] = local
        side.folded[fold(source.removeprefix(prefix))] = local
        side.lines[fold(local)] = where
    return side


def _lines(path: Path) -> Iterator[tuple[str, str]]:
    """("FILE line N", line) of each line that is no blank and no comment."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_MAPPING_FILE_BYTES + 1)
        if len(data) > MAX_MAPPING_FILE_BYTES:
            raise MappingError(f"{path}: a mapping file holds at most {MAX_MAPPING_FILE_BYTES:,} bytes")
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MappingError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise MappingError(f"{path}: cannot be read ({error.strerror or error})") from None
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith(_COMMENT):
            yield f"{path} line {n}", line


def check_mapping(store: Store, mapping: SourceMapping) -> None:
    """Every account and room the mapping names exists here, and no room is a direct one (their
    names repeat, so a name cannot say which); checked before an import writes anything.

    Raises:
        MappingError: naming the first few that do not, with their lines.
    """
    problems = [
        f"{where}: no account here is named {local!r}"
        for local, where in _named(mapping.users)
        if store.get_user_by_username(local) is None
    ]
    for local, where in _named(mapping.rooms):
        room = store.get_room_by_name(local)
        if room is None or fold(room.name) != fold(local):
            problems.append(f"{where}: no room here is named {local!r}")
        elif room.type == "d":
            problems.append(
                f"{where}: {room.name!r} is a direct room, and direct rooms share names: none is mapped"
            )
    if problems:
        more = len(problems) - MAX_NAMED_PROBLEMS
        raise MappingError(
            "; ".join(problems[:MAX_NAMED_PROBLEMS]) + (f"; and {more:,} more" if more > 0 else "")
        )


def _named(side: _Side) -> Iterator[tuple[str, str]]:
    """(name here, where it was written) of every mapping of one file."""
    for local in dict.fromkeys(side.exact.values()):
        yield local, side.lines[fold(local)]
