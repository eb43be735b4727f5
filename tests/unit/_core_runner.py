"""Runs cases through the keystroke core and the page modules and writes what each gives as JSON: on
CPython and on MicroPython.

tests/unit/test_core_micropython.py runs this same file on both interpreters (on MicroPython in
Node, written into its file system with the keystroke modules) and compares the two outputs. So it
follows the portable convention itself: no typing at run time, no dataclasses, no `*` in displays.

A case is `[operation, argument...]` (see `_OPERATIONS`); `line` runs the battery of everything the
page does with a query line as it is typed. Records come out as `{field: value}`, tuples as lists,
days as ISO text, an exception as `{"error": its class name}` (messages hold reprs, which differ).
"""

import datetime
import json

import ai_search as core
from ai_search import _portable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TODAY = datetime.date(2026, 12, 1)  # a Tuesday
ROOMS = [
    {"_id": "r1", "name": "ops", "fname": "Ops team", "t": "c"},
    {"_id": "r2", "name": "", "fname": "Équipe", "t": "p"},
    {"rid": "r3", "name": "日本語", "t": "c"},
    {"_id": "", "name": "general"},
    {"_id": "r5", "fname": ""},
    {"_id": "r6", "name": "ΟΔΟΣ", "fname": "Δρόμος"},
    {"_id": "r7", "name": "seven"},
]
USERS = [
    {"_id": "u1", "username": "alice", "name": "Alice"},
    {"_id": "u2", "username": "", "name": "nobody"},
    {"username": "zoë"},
    {"_id": "u4", "username": "ПЁТР", "name": "Пётр"},
]


def plain(value: "Any") -> "Any":
    """`value` as JSON can hold it (records by their fields)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, dict):  # compared as JSON objects: their order does not count
        return {key: plain(item) for key, item in value.items()}
    fields = getattr(value, "_fields", None)
    if fields is not None:
        return {name: plain(getattr(value, name)) for name in fields}
    raise TypeError("not plain: " + type(value).__name__)


def _active(text: str, caret: "int | None" = None) -> "dict[str, Any]":
    active = core.get_active_search_filter(text, caret)
    out = {"active": plain(active), "room_lookup": core.get_room_lookup_text(active)}
    if active is not None:
        out["lookup_text"] = active.lookup_text
        out["suggestions"] = plain(core.build_filter_suggestions(active, ROOMS, today=TODAY))
        out["users"] = plain(core.build_user_filter_suggestions(active, USERS))
        key = "in" if active.key in ("in", "-in", "from", "-from") else active.key
        out["applied"] = plain(_call(core.apply_search_filter_token, text, active, key, "Zoë team", caret))
    return out


def _line(text: str) -> "dict[str, Any]":
    """What the page does with `text` as it is typed and when it is run."""
    parsed = core.parse_search_filter_text(text)
    completed = core.extract_completed_search_filters(text)
    refused = core.find_refused_search_filters(text)
    line = core.serialize_search_query(parsed.search_text, parsed.filters)
    out = {
        "parsed": plain(parsed),
        "completed": plain(completed),
        "dropped": core.drop_unfinished_search_filters(text),
        "refused": plain(refused),
        "hints": plain(core.build_filter_hints(refused)),
        "line": line,
        "again": plain(core.parse_search_filter_text(line)),
        "chips": plain(core.build_applied_filter_chips(parsed.filters, today=TODAY)),
        "chips_as_typed": plain(core.build_applied_filter_chips(completed.filters)),
        "dates": plain(_call(core.resolve_search_dates, parsed.filters, TODAY)),
        "merged": plain(core.merge_search_filters(parsed.filters, completed.filters, core.SearchFilters(rids=("r1", "r1", "r2")))),
    }
    carets = [None, 0, len(text) // 2, len(text) - 1]
    out["carets"] = [_active(text, caret) for caret in carets]
    out["inserted"] = plain(core.insert_search_filter_token(text, len(text) // 3, "from:x"))
    out["taken_out"] = [
        plain(core.take_out_completed_search_filters(text, caret)) for caret in (0, len(text) // 2, len(text))
    ]
    for chip in core.build_applied_filter_chips(parsed.filters)[:2]:
        out["removed_" + chip.key] = plain(core.remove_search_filter(parsed.filters, chip.filter_key, chip.value))
    return out


def _room_query(value: str, mention: "str | None", names: "list[list[str]]") -> "dict[str, Any]":
    query = core.build_room_search_query(value, mention)
    out: dict[str, Any] = plain(query)
    out["needle"] = query.needle
    out["like_pattern"] = query.like_pattern
    out["matches"] = [query.matches(name, fname, room_type) for name, fname, room_type in names]
    return out


def _text(text: str) -> "dict[str, Any]":
    return {
        "fold": _portable.fold(text),
        "split": _portable.split(text),
        "strip": [_portable.strip(text), _portable.lstrip(text), _portable.rstrip(text)],
        "collapse": _portable.collapse_spaces(text),
        "space": [_portable.is_space(char) for char in text],
        "alnum": [_portable.is_alnum(char) for char in text],
    }


def _date(raw: str) -> "dict[str, Any]":
    value = core.normalise_search_date(raw)
    period = None if value is None else core.resolve_search_date(value, TODAY)
    return {"value": value, "period": plain(period), "shown": None if period is None else core.format_date_period(period)}


def _call(function: "Callable[..., Any]", *args: "Any", **kwargs: "Any") -> "Any":
    try:
        return function(*args, **kwargs)
    except Exception as error:  # the class is the result
        return {"error": type(error).__name__}


def _events(data: "list[int]", cuts: "list[int]", errors: str) -> "Any":
    """The events of the stream `data` (its bytes) fed in the chunks `cuts` makes, then closed: per
    chunk, what it completed; the error's family where the decoder refuses (strict)."""
    parser = core.EventStreamParser(errors=errors)
    raw = bytes(data)
    edges = [0] + [cut for cut in cuts if 0 < cut < len(raw)] + [len(raw)]
    out = []
    try:
        for index in range(len(edges) - 1):
            out.append(plain(parser.feed(raw[edges[index] : edges[index + 1]])))
        out.append(plain(parser.close()))
    except UnicodeError:  # UnicodeDecodeError on CPython, UnicodeError on MicroPython
        out.append({"error": "UnicodeError"})
    except ValueError as error:
        out.append({"error": type(error).__name__})
    return out


def _events_every_split(data: "list[int]", errors: str) -> "Any":
    """`_events` for the stream whole, byte by byte, and cut once at every offset (all the same)."""
    return {
        "whole": _events(data, [], errors),
        "bytes": _events(data, list(range(1, len(data))), errors),
        "split": [_events(data, [cut], errors) for cut in range(1, len(data))],
    }


def _decode(data: "list[int]", cuts: "list[int]", errors: str) -> "Any":
    """The text each chunk decodes to, with the decoder the parser uses on this interpreter."""
    parser = core.EventStreamParser(errors=errors)
    raw = bytes(data)
    edges = [0] + [cut for cut in cuts if 0 < cut < len(raw)] + [len(raw)]
    out = []
    try:
        for index in range(len(edges) - 1):
            out.append(parser._decoder.decode(raw[edges[index] : edges[index + 1]]))
        out.append(parser._decoder.decode(b"", True))
    except UnicodeError:
        out.append({"error": "UnicodeError"})
    return out


def _decode_each(items: "list[list[Any]]") -> "list[Any]":
    """Each `[bytes, errors]` decoded whole, then ended: what the parser's decoder gives, or refuses."""
    out = []
    for data, errors in items:
        decoder = core.EventStreamParser(errors=errors)._decoder
        try:
            out.append([decoder.decode(bytes(data)), decoder.decode(b"", True)])
        except UnicodeError:
            out.append({"error": "UnicodeError"})
    return out


def _source(url: "Any") -> "dict[str, Any]":
    allowed = core.is_source_url(url)
    return {"allowed": allowed, "system": core.source_system(url) if isinstance(url, str) else None}


def _translate(key: str, params: "dict[str, str]") -> str:
    return core.translate_english(key, **params)


def _tooltips() -> "list[str]":
    flags = (False, True)
    return [core.get_ai_search_button_tooltip(a, b, c) for a in flags for b in flags for c in flags]


def _operators() -> "dict[str, Any]":
    rows = []
    for op in core.SEARCH_FILTER_OPERATORS:
        row = {name: plain(getattr(op, name)) for name in op._fields if name not in ("normalise", "bare_value", "bounds")}
        row["prefix"] = op.prefix
        rows.append(row)
    return {
        "rows": rows,
        "keys": list(core.SEARCH_FILTER_KEYS),
        "prefixes": list(core.SEARCH_FILTER_PREFIXES),
        "date_words": list(core.SEARCH_DATE_WORDS),
        "modules": list(core.KEYSTROKE_MODULES),
    }


_OPERATIONS: "dict[str, Callable[..., Any]]" = {
    "line": _line,
    "active": _active,
    "room_query": _room_query,
    "text": _text,
    "date": _date,
    "format": lambda key, value: _call(core.format_search_filter_value, key, value),
    "translate": _translate,
    "tooltips": _tooltips,
    "operators": _operators,
    "events": _events,
    "events_every_split": _events_every_split,
    "decode": _decode,
    "decode_each": _decode_each,
    "source": _source,
    "append_turn": lambda turns, query, cited: core.append_turn(turns, query, cited),
    "may_list_models": lambda permissions: core.may_list_models(frozenset(permissions)),
    "page_modules": lambda: list(core.PAGE_MODULES),
}


def run(cases: "list[list[Any]]") -> "list[Any]":
    """The result of each case, in order."""
    results = []
    for case in cases:
        result = _call(_OPERATIONS[case[0]], *case[1:])
        results.append(plain(result) if not isinstance(result, dict) else result)
    return results


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as handle:
        cases = json.load(handle)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(run(cases), handle)
