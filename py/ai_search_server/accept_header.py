"""The ``Accept`` header: whether a request admits a media type (RFC 9110 §12.5.1).

One reading for the whole server: the MCP endpoint asks whether ``application/json`` is admitted (a
wildcard range counts; without it the answer is 406), the answer route whether ``text/event-stream``
is named (a wildcard does not count: plain JSON clients keep the JSON answer)::

    >>> accepts("application/json, text/event-stream;q=0.5", "text/event-stream", wildcards=False)
    True
    >>> accepts("*/*", "text/event-stream", wildcards=False), accepts("*/*", "application/json")
    (False, True)
    >>> accepts("application/json;q=0", "application/json")
    False

A range admits the type with any weight above 0; a weight that is no number counts as 1 (the client
named the type), one that is 0 or below refuses it.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["accepts"]


@lru_cache(maxsize=256)
def accepts(accept: str | None, media_type: str, *, wildcards: bool = True) -> bool:
    """Whether ``accept`` (an ``Accept`` value, or None when absent) admits ``media_type``.

    With ``wildcards``, ``type/*`` and ``*/*`` ranges count; without, only the type named.
    """
    wanted = media_type.lower()
    family = wanted.partition("/")[0] + "/*"
    names = {wanted, family, "*/*"} if wildcards else {wanted}
    for media_range in (accept or "").split(","):
        media, *params = (part.strip() for part in media_range.split(";"))
        if media.lower() in names and _weight(params) > 0:
            return True
    return False


def _weight(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 1.0
    return 1.0
