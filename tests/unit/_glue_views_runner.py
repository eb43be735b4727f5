"""Runs the page's view modules (results, context, answer, search_box, page) on MicroPython (in Node,
without a DOM) and writes what each case gives as JSON; tests/unit/test_glue_views_micropython.py
runs the same cases on CPython and compares.

Written into MicroPython's file system with the packages and run by `main`. The views import their
siblings at import time; a sibling that does not import there yet (another part of the page not yet
portable) is replaced by a stand-in, named in the output, so that the views themselves still import
and run. The cases are the views' own readings of data (room labels, the empty state's relaxations,
the answer's provider label and citation spans, what the answer route is told) and, on MicroPython
only, their readings of JavaScript values (`js_cases`). Follows the portable convention itself.
"""

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VIEWS = ("results", "context", "answer", "search_box", "page")
# The glue modules the views import that others make portable; stood in for while they are not.
SIBLINGS = (
    "storage", "url_state", "wording", "message_parts", "conversations", "message_view", "api",
    "auth", "signin", "recent", "clipboard", "answer_text", "answer_actions",
)  # fmt: skip
# The core's names the views import beyond the keystroke modules.
CORE_NAMES = ("append_turn", "may_list_models", "MAX_SEARCH_ANSWER_MESSAGES")

STAND_INS: "list[str]" = []


def _text_field(record: "Any", key: str) -> str:
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, str) else ""


class _ApiError(Exception):
    pass


# What a stand-in gives for the few names the cases call.
_KNOWN = {"text_field": _text_field, "ApiError": _ApiError}


class _StandIn:
    """A module whose every name is a function doing nothing, but for those of `_KNOWN`."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __getattr__(self, name: str) -> "Any":
        known = _KNOWN.get(name)
        return known if known is not None else (lambda *args, **kwargs: None)


def _stand_in_what_does_not_import() -> None:
    import ai_search
    import ai_search_web

    for name in SIBLINGS:
        try:
            __import__("ai_search_web." + name)
        except Exception:  # any failure: SyntaxError, ImportError, a missing name
            stand_in = _StandIn("ai_search_web." + name)
            sys.modules["ai_search_web." + name] = stand_in  # type: ignore[assignment]
            setattr(ai_search_web, name, stand_in)
            STAND_INS.append("ai_search_web." + name)
    for name in CORE_NAMES:
        if not hasattr(ai_search, name):
            setattr(ai_search, name, lambda *args, **kwargs: None)
            STAND_INS.append("ai_search." + name)


def run(cases: "dict[str, Any]") -> "dict[str, Any]":
    """The views' readings of data: the same on both interpreters."""
    from ai_search_web import answer, context, results

    return {
        "room_label": [results.room_label(room) for room in cases["rooms"]],
        "digits": [results._is_digits(text) for text in cases["digits"]],
        "relaxations": [
            [list(offer) for offer in results._relaxations(diagnosis, labels)]
            for diagnosis, labels in cases["relaxations"]
        ],
        "provider_label": [answer.provider_label(provider) for provider in cases["providers"]],
        "read_span": [_plain(answer._read_span(value)) for value in cases["spans"]],
        "source": [_sorted(answer._source(result)) for result in cases["sources"]],
        "as_message": [_sorted(context._as_message(result)) for result in cases["messages"]],
    }


def js_cases(cases: "dict[str, Any]") -> "dict[str, Any]":
    """The views' readings of JavaScript values (MicroPython only: CPython here has no JavaScript)."""
    import js

    from ai_search_web import page, search_box

    out: dict[str, Any] = {
        "js_dict": [_plain(page._js_dict(js.JSON.parse(text))) for text in cases["js_values"]],
        "items": [_plain(page._items(js.JSON.parse(text), "rooms")) for text in cases["fallbacks"]],
        "stage_filters": [],
    }
    for text in cases["stages"]:
        js.globalThis.window = js.JSON.parse(text)
        out["stage_filters"].append(page._stage_filters())
    out["today"] = search_box.browser_today().isoformat()
    out["time_zone"] = search_box.browser_time_zone()
    return out


def _plain(value: "Any") -> "Any":
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return _sorted(value)
    return value


def _sorted(record: "dict[str, Any]") -> "list[Any]":
    """A dict as its [key, value] pairs by key: MicroPython's dicts keep no order."""
    return [[key, _plain(record[key])] for key in sorted(record)]  # portable: sorted by its unique keys


def main(cases_path: str, results_path: str) -> None:
    _stand_in_what_does_not_import()
    with open(cases_path) as source:
        cases = json.load(source)
    out = run(cases)
    out["js"] = js_cases(cases)
    out["stand_ins"] = STAND_INS
    with open(results_path, "w") as target:
        json.dump(out, target)
