"""ai_search: the pure core of ai-search.

Standard library only, no I/O: the same functions run in the browser (Pyodide) for live feedback
while people type, and on the server to validate and normalise what the browser sends. One grammar
everywhere: a query line means the same in the search box, a URL, the REST API and an MCP tool.

Modules (private; everything public is re-exported here and listed in ``__all__``):

- ``_constants``: limits and tuning constants, with units.
"""

from __future__ import annotations

from . import _constants
from ._constants import *  # noqa: F403

__all__: list[str] = [*_constants.__all__]
