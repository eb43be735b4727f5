"""The one boundary between the page's Python and the browser: no traceback ever reaches a user.

Everything the browser calls back into Python goes through here: event listeners
(:func:`~ai_search_web.dom.listen`), observers, and the page's background tasks
(:func:`spawn`). An exception that escaped would reach the browser as an "Uncaught PythonError"
(and, with PyScript, a red box in the page); here it is logged to the console with its traceback,
for whoever debugs, and the status line says one plain sentence. The page keeps working::

    handler = guarded(view.on_click, "a click on the results")
    spawn(page.search(query), "a search")

Portable: the keystroke stage (MicroPython, :mod:`.keys`) runs its handlers behind the same
boundary. MicroPython has no ``traceback`` module (its ``sys.print_exception`` writes to a stream)
and its ``asyncio`` tasks take no done callbacks; the stage spawns nothing.
"""

import asyncio

import js

from .messages import UNEXPECTED_ERROR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

__all__ = ["STATUS_ID", "guarded", "report", "spawn"]

# The element whose text says what the page is doing (index.html, embed.html).
STATUS_ID = "status"
# Background tasks are kept until they end: asyncio holds only weak references to them.
_TASKS: "set[asyncio.Task[Any]]" = set()


def _details(exc: BaseException) -> str:
    try:  # only on this rare path: not worth its import at start-up
        import traceback
    except ImportError:  # the standard library is still on its way, or MicroPython
        return _micropython_details(exc)
    return "".join(traceback.format_exception(exc))


def _micropython_details(exc: BaseException) -> str:
    """MicroPython's traceback (``sys.print_exception`` into a buffer), else the exception's line."""
    import sys

    print_exception = getattr(sys, "print_exception", None)
    if print_exception is None:
        return f"{type(exc).__name__}: {exc}"
    import io

    buffer = io.StringIO()
    print_exception(exc, buffer)
    return buffer.getvalue()


def report(exc: BaseException, where: str) -> None:
    """Log ``exc`` with its traceback and tell the person, in words, that something failed."""
    js.console.error(f"ai-search: {where} failed\n" + _details(exc))
    status = js.document.getElementById(STATUS_ID)
    if status is not None and hasattr(status, "textContent"):
        status.textContent = UNEXPECTED_ERROR


def guarded(handler: "Callable[..., Any]", where: str) -> "Callable[..., Any]":
    """``handler`` behind the boundary: whatever it raises is reported, never passed on."""

    def run(*args: "Any") -> "Any":
        try:
            return handler(*args)
        except Exception as exc:  # the boundary: anything at all, reported in words
            report(exc, where)
            return None

    return run


def _finished(task: "asyncio.Task[Any]", where: str) -> None:
    _TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        report(task.exception(), where)  # type: ignore[arg-type]


async def _reported(coroutine: "Coroutine[Any, Any, Any]", where: str, held: "list[Any]") -> "Any":
    # MicroPython's tasks have no done callbacks: the task itself reports what it ends with, and
    # lets go of itself (`held` holds it from its start: a task waiting on a JavaScript promise is
    # otherwise reachable from no Python object, and the collector must not take it).
    try:
        return await coroutine
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the boundary: anything at all, reported in words
        report(exc, where)
        return None
    finally:
        for task in held:
            _TASKS.discard(task)


def spawn(coroutine: "Coroutine[Any, Any, Any]", where: str) -> "asyncio.Task[Any]":
    """Run ``coroutine`` in the background; an exception it ends with is reported."""
    if not hasattr(asyncio, "ensure_future"):  # MicroPython
        held: list[Any] = []
        task = asyncio.create_task(_reported(coroutine, where, held))
        held.append(task)
        _TASKS.add(task)
        return task
    task = asyncio.ensure_future(coroutine)
    _TASKS.add(task)
    task.add_done_callback(lambda done: _finished(done, where))
    return task
