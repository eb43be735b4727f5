"""The lines of a JSON-lines file (ours, Mattermost's), each capped, with the progress bar fed as
bytes go by.

A line longer than the cap is read through in pieces and given as None (the importer reports it by
number and goes on), so a damaged file with no line breaks costs the cap in memory, not its size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO

__all__ = ["PROGRESS_STEP_BYTES", "capped_lines"]

# Bytes read between two progress bar updates: Rich redraws on each, so not once per line.
PROGRESS_STEP_BYTES = 256 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"


def capped_lines(
    stream: IO[bytes], max_line_bytes: int, advance: Callable[[int], None]
) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) for each line, numbered from 1, the first without a UTF-8 BOM; None for a
    line longer than ``max_line_bytes``. ``advance(bytes)`` is called every PROGRESS_STEP_BYTES and
    once at the end."""
    line_no = pending = 0
    while line := stream.readline(max_line_bytes + 1):
        line_no += 1
        pending += len(line)
        if len(line) > max_line_bytes and not line.endswith(b"\n"):
            while rest := stream.readline(max_line_bytes + 1):
                pending += len(rest)
                if rest.endswith(b"\n"):
                    break
            content: bytes | None = None
        else:
            content = line.removeprefix(_UTF8_BOM) if line_no == 1 else line
        if pending >= PROGRESS_STEP_BYTES:
            advance(pending)
            pending = 0
        yield line_no, content
    advance(pending)
