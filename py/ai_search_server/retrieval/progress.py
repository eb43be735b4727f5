"""A progress bar on stderr for long index work (catching up, embedding), or nothing at all.

Wraps rich's progress display so the index code reads the same with the bar on (the CLI, a
terminal) or off (tests, a server under a process manager): ``enabled=False`` makes every call a
no-op. The bar appears only when there is enough work to be worth watching.

    with ProgressReporter("embedding messages", total=5000, enabled=True) as bar:
        bar.advance(64)
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

__all__ = ["PROGRESS_MIN_ITEMS", "ProgressReporter"]

# Work smaller than this (items) finishes before a bar would be readable: no bar.
PROGRESS_MIN_ITEMS = 500


class ProgressReporter:
    def __init__(self, description: str, total: int, *, enabled: bool) -> None:
        self._description = description
        self._total = total
        self._enabled = enabled and total >= PROGRESS_MIN_ITEMS
        self._progress: Any = None
        self._task: Any = None

    @property
    def shows(self) -> bool:
        """True when entering will draw a bar."""
        return self._enabled

    def __enter__(self) -> ProgressReporter:
        if self._enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=self._total)
        return self

    def advance(self, items: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, items)

    def update(self, *, completed: int, total: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, total=total)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
