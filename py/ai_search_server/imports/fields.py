"""Typed reads of an export's JSON, where any field may be missing or of another type.

Exports are written by other programs, edited by people, cut by crashes; a field that is absent or
of the wrong type reads as empty here, and the importer decides whether that makes the record bad.
"""

from __future__ import annotations

from typing import Any

__all__ = ["first_text", "obj", "seq", "text"]


def obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def seq(value: object) -> list[Any]:
    """``value`` when it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: object) -> str:
    """``value`` when it is a string, else empty."""
    return value if isinstance(value, str) else ""


def first_text(*values: object) -> str:
    """The first of ``values`` that is a non-blank string, else empty."""
    return next((v for v in values if isinstance(v, str) and v.strip()), "")
