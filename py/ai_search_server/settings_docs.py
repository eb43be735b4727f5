"""The README's table of settings, printed from the ``Settings`` table itself (a test keeps them equal)::

    python -m ai_search_server.settings_docs
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from .settings import ENV_PREFIX, OPTIONAL_FLOAT, Settings

__all__ = ["settings_markdown", "settings_table"]


def settings_table() -> list[tuple[str, str, Any, str]]:
    """(name, type, default, help) for every setting: the README table is printed from this."""
    rows = []
    hints = typing.get_type_hints(Settings)
    for f in dataclasses.fields(Settings):
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        rows.append((f.name, _type_name(hints[f.name]), default, f.metadata["help"]))
    return rows


def _type_name(tp: Any) -> str:
    if isinstance(tp, types.GenericAlias):
        return "list"
    if tp == OPTIONAL_FLOAT:
        return "float"
    return str(tp.__name__)


def settings_markdown() -> str:
    """The README's settings table; ``python -m ai_search_server.settings_docs`` prints it."""
    rows = ["| setting | environment variable | type | default | what it does |", "|---|---|---|---|---|"]
    for name, type_name, default, help_text in settings_table():
        shown = (
            ",".join(default)
            if isinstance(default, list)
            else str(default).lower()
            if isinstance(default, bool)
            else ""
            if default is None
            else str(default)
        )
        cell = f"`{shown}`" if shown else "(empty)"
        rows.append(f"| `{name}` | `{ENV_PREFIX}{name.upper()}` | {type_name} | {cell} | {help_text} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(settings_markdown(), end="")
