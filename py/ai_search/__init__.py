"""ai_search: the pure core of ai-search.

Standard library only, no I/O: the same functions run in the browser (Pyodide) for live feedback
while people type, and on the server to validate and normalise what the browser sends. The keystroke
modules (`KEYSTROKE_MODULES`) also run on MicroPython: the page's keystroke stage answers the first
keystrokes with them before Pyodide has loaded; the page modules (`PAGE_MODULES`: the answer's event
stream, source links, follow-up turns, who may pick a model) run there too, for the page's glue on
MicroPython. There this package imports only those two lists (the convention they follow is in
``_portable``). One grammar
everywhere: a query line means the same in the search box, a URL, the REST API and an MCP tool.

Modules (private; everything public is re-exported here and listed in ``__all__``):

- ``_portable``: records and Unicode-aware text helpers for CPython and MicroPython alike.
- ``_unicode_tables``: the tables ``_portable`` falls back on under MicroPython (generated).
- ``_constants``: limits and tuning constants, with units.
- ``_search_dates``: date values (``2026-11-03``, ``yesterday``, ``-7d``, ``last-week``) and their days.
- ``_operators``: the filter operators as one table (``in:``, ``-from:``, ``has:``, ``during:``, ``sort:``...).
- ``_grammar``: parsing, the token under the caret, applying a token, serialising a query.
- ``_suggestions``: suggestions for the token under the caret, chips, hints, tooltips.
- ``_search_receipt``: the scope receipt of a result list, and why a search found nothing.
- ``_room_lookup``: the backend-neutral room lookup the store turns into SQL.
- ``_pipeline``: Intelligent-Search pipeline filters, request, candidate normalisation.
- ``_fusion``: minimum similarity, the relevance floor, weighted reciprocal rank fusion, recency rerank.
- ``_answers``: validation of answer requests (message ids and scores, never texts).
- ``_prompt``: the answer prompt, with the question and sources marked untrusted.
- ``_citations``: citation normalisation, batch and streamed, and citation extraction.
- ``_model_permissions``: who may list the provider's models and pick one.
- ``_model_list``: the provider's model list, sorted as the upstream's locale compare.
- ``_sentences``: sentences with their offsets, and the words that carry their meaning.
- ``_answer_kinds``: what a question asks for (a cause, a number, a name...) and what a sentence offers.
- ``_extractive``: answers built from the sources themselves when no LLM is configured.
- ``_answer_turns``: the earlier turns a client keeps and sends with its next follow-up.
- ``_follow_ups``: follow-up questions: earlier turns, what a follow-up asks, its sources.
- ``_sharing``: a shared answer as one reader may see it, nothing from a source hidden from them.
- ``_grounding``: the citation check: the passage of its cited sources that supports each sentence.
- ``_event_stream``: server-sent events parsed as the bytes arrive (a provider's stream, the answer's).
- ``_source_links``: a message's link back to its system: which links are allowed, which system it is.
"""

import sys

from . import (
    _constants,
    _grammar,
    _operators,
    _room_lookup,
    _search_dates,
    _suggestions,
)
from ._constants import *  # noqa: F403
from ._grammar import *  # noqa: F403
from ._operators import *  # noqa: F403

# What the page's portable glue builds its records with, reads data by, and tells the runtimes apart by.
from ._portable import MAPPINGS, MICROPYTHON, FrozenRecord, Record, record

# The text helpers the page's portable glue needs too (its box text and the room and people lookups):
# `str.lower` and `str.strip` as CPython has them, Unicode included, on MicroPython as well.
from ._portable import fold as fold_text
from ._portable import split as split_text
from ._portable import strip as strip_text
from ._room_lookup import *  # noqa: F403
from ._search_dates import *  # noqa: F403
from ._suggestions import *  # noqa: F403

#: The modules of this package the page's MicroPython keystroke stage loads, in import order (each
#: `ai_search/<name>.py`, with this `__init__.py`): the one list the server builds the stage's files
#: from. Each follows the convention of `_portable` (tests/unit/test_core_portability.py checks it).
KEYSTROKE_MODULES: tuple[str, ...] = (
    "_portable",
    "_unicode_tables",
    "_constants",
    "_search_dates",
    "_operators",
    "_grammar",
    "_room_lookup",
    "_suggestions",
)

#: The modules beyond `KEYSTROKE_MODULES` that the page's glue needs on MicroPython (the whole page
#: there: the answer's stream, source links, follow-up turns, the model picker's permission), in
#: import order, after the keystroke modules. Small, so that the page's first import stays fast; each
#: follows the convention of `_portable` too (tests/unit/test_core_portability.py).
PAGE_MODULES: tuple[str, ...] = (
    "_event_stream",
    "_source_links",
    "_answer_turns",
    "_model_permissions",
)

# One statement per module, not `[*a, *b]`: MicroPython has no `*` in a list display, and mypy reads these.
__all__: list[str] = ["KEYSTROKE_MODULES", "PAGE_MODULES", "fold_text", "split_text", "strip_text"]
__all__ += ["MAPPINGS", "MICROPYTHON", "FrozenRecord", "Record", "record"]
__all__ += _constants.__all__
__all__ += _search_dates.__all__
__all__ += _operators.__all__
__all__ += _grammar.__all__
__all__ += _suggestions.__all__
__all__ += _room_lookup.__all__

# The page modules, after the keystroke modules (the stage's bundle holds both lists, in this order).
from . import _event_stream, _source_links, _answer_turns, _model_permissions  # noqa: E402, I001 (PAGE_MODULES' order)
from ._answer_turns import *  # noqa: E402, F403
from ._event_stream import *  # noqa: E402, F403
from ._model_permissions import *  # noqa: E402, F403
from ._source_links import *  # noqa: E402, F403

__all__ += _event_stream.__all__
__all__ += _source_links.__all__
__all__ += _answer_turns.__all__
__all__ += _model_permissions.__all__

if sys.implementation.name != "micropython":
    # The rest of the core: the server and Pyodide only (answers, citations, fusion, the pipeline...).
    from . import (
        _answer_kinds,
        _answers,
        _citations,
        _extractive,
        _follow_ups,
        _fusion,
        _grounding,
        _model_list,
        _pipeline,
        _prompt,
        _search_receipt,
        _sentences,
        _sharing,
    )
    from ._answer_kinds import *  # noqa: F403
    from ._answers import *  # noqa: F403
    from ._citations import *  # noqa: F403
    from ._extractive import *  # noqa: F403
    from ._follow_ups import *  # noqa: F403
    from ._fusion import *  # noqa: F403
    from ._grounding import *  # noqa: F403
    from ._model_list import *  # noqa: F403
    from ._pipeline import *  # noqa: F403
    from ._prompt import *  # noqa: F403
    from ._search_receipt import *  # noqa: F403
    from ._sentences import *  # noqa: F403
    from ._sharing import *  # noqa: F403

    __all__ += _search_receipt.__all__
    __all__ += _pipeline.__all__
    __all__ += _fusion.__all__
    __all__ += _answers.__all__
    __all__ += _prompt.__all__
    __all__ += _citations.__all__
    __all__ += _model_list.__all__
    __all__ += _sentences.__all__
    __all__ += _answer_kinds.__all__
    __all__ += _extractive.__all__
    __all__ += _grounding.__all__
    __all__ += _follow_ups.__all__
    __all__ += _sharing.__all__
