"""The inline filter grammar of the search box: `deploy in:#ops,#infra from:@alice after:2026-11-01`.

One grammar everywhere: the browser parses the box as people type, the server re-parses what it is
sent, and both serialize back to the same line.

    >>> parsed = parse_search_filter_text('deploy in:#ops in:"team room" FROM:@alice after:2026-11-01')
    >>> parsed.search_text, parsed.filters.room_names, parsed.filters.from_usernames
    ('deploy', ('ops', 'team room'), ('alice',))
    >>> serialize_search_query(parsed.search_text, parsed.filters)
    'in:ops in:"team room" from:alice after:2026-11-01 deploy'
    >>> parse_search_filter_text('-in:#random has:link -"roll back" sort:new x').filters.excluded_words
    ('roll back',)

Grammar (upstream's newer, stricter "Client B" behaviour, grown by the rows of `_operators`):

- a token is a prefix and its value (`in:ops`, `-from:@bot`, `-word`) at the start of the text or
  after whitespace; prefixes are case-insensitive (ASCII only);
- a value is `"quoted"` (one value, may hold spaces and commas; the closing quote must be followed by
  whitespace or the end) or bare (up to the next whitespace; split on commas for list keys such as
  `in:` and `has:`, never for an excluded word, which must start with a letter or digit: `--x` and
  `-` alone are words);
- each value loses one leading `#` or `@` (names only) and is trimmed; empty or invalid values are
  dropped, and a token with no valid value stays in the text unchanged (`find_refused_search_filters`
  lists those, so the page can say why);
- tokens are taken out until the text left holds none: taking one out of the middle of a quote that
  never closed can close it (`in:"a from:b,c"d e"` is from `b` and the room `a e`), and the words
  left must never turn into a filter when the query is serialized and parsed again;
- list keys collect values, deduplicated case-insensitively (first spelling kept), at most
  `MAX_SEARCH_FILTER_VALUES` each; dates and `sort:` hold one value, the last one wins;
- a quoted phrase that is no filter's value (`"rolling back"`) stays in the words: the search reads it
  as a phrase.

The operators themselves are rows of `_operators.SEARCH_FILTER_OPERATORS`: this module only knows
tokens, quotes, commas and whitespace, so a new key is a new row there, never a branch here.

A keystroke module (`ai_search.KEYSTROKE_MODULES`): the page's MicroPython stage runs it too, so it
follows the convention of `_portable`. The tokenizer is a hand-written scanner, not a regex:
MicroPython's `re` has no lookbehind, named groups or `finditer`, and no Unicode `\\s`.
"""

from ._constants import MAX_SEARCH_FILTER_VALUES
from ._operators import (
    SEARCH_FILTER_OPERATORS,
    SEARCH_FILTER_PREFIXES,
    SearchFilterOperator,
    SearchFilters,
    get_search_filter_operator,
    operator_for_prefix,
)
from ._portable import (
    FrozenRecord,
    collapse_spaces,
    find_space,
    fold,
    is_space,
    lstrip,
    record,
    rstrip,
    strip,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ActiveSearchFilter",
    "AppliedSearchFilterToken",
    "CompletedSearchFilters",
    "ParsedSearchQuery",
    "RefusedSearchFilter",
    "apply_search_filter_token",
    "drop_unfinished_search_filters",
    "extract_completed_search_filters",
    "find_refused_search_filters",
    "format_search_filter_value",
    "get_active_search_filter",
    "insert_search_filter_token",
    "merge_search_filters",
    "parse_search_filter_text",
    "remove_search_filter",
    "serialize_search_query",
    "take_out_completed_search_filters",
]

_QUOTE = '"'


def _ascii_lower(text: str) -> str:
    # Keys are case-insensitive in ASCII only: Unicode case partners such as the dotless `ı`, `İ` or
    # the Kelvin sign are no `i` or `k` (`ın:ops` is no filter), so neither `str.lower` nor `fold`.
    return "".join(chr(ord(char) + 32) if "A" <= char <= "Z" else char for char in text)


def _prefixes_by_first_character() -> "dict[str, list[tuple[str, SearchFilterOperator]]]":
    # Under both cases of their first character, so that one lookup tells where a key may start.
    table: dict[str, list[tuple[str, SearchFilterOperator]]] = {}
    for prefix in SEARCH_FILTER_PREFIXES:  # longest first, so that `-in:` is tried before `-`
        if "a" <= prefix[-1] <= "z":  # prefixes are lower case
            raise ValueError(f"{prefix!r}: `_key_at` compares a prefix's last character (`:`) exactly")
        for first in {prefix[0], prefix[0].upper()}:  # portable: the prefixes are ASCII
            table.setdefault(first, []).append((prefix, operator_for_prefix(prefix)))
    return table


_PREFIXES_BY_FIRST = _prefixes_by_first_character()


def _key_at(text: str, start: int) -> "tuple[SearchFilterOperator, int] | None":
    """The row whose prefix (ASCII case-insensitive, the longest) `text` has at `start`, and where
    that prefix ends; None when there is none."""
    candidates = _PREFIXES_BY_FIRST.get(text[start])
    if candidates is None:
        return None
    for prefix, op in candidates:
        end = start + len(prefix)
        segment = text[start:end]  # shorter than the prefix at the end of the text: no match
        # A prefix ends in `:` (or is `-`), which has no case: most words fail at that test.
        if segment[-1:] == prefix[-1:] and (segment == prefix or _ascii_lower(segment) == prefix):
            return op, end
    return None


class _Token:
    """One `key:value` found by `_scan`: `text[start:end]`, its value `raw` = `text[value_start:end]`.

    `shape` is how the value is written: "closed" (`"in quotes"`, followed by whitespace or the
    end), "unclosed" (an opening quote running to the end: text being typed only) or "bare".
    """

    __slots__ = ("end", "op", "raw", "shape", "start", "value_start")

    def __init__(
        self, op: SearchFilterOperator, start: int, value_start: int, end: int, raw: str, shape: str
    ) -> None:
        self.op = op
        self.start = start
        self.value_start = value_start
        self.end = end
        self.raw = raw
        self.shape = shape


def _value_end(text: str, start: int, live: bool) -> "tuple[int, str]":
    """Where the value starting at `start` ends, and its shape. A quote closes at the next quote when
    whitespace or the end follows; else, in `live` text, an opening quote with no quote after it runs
    to the end (spaces included); else the value is bare, up to the next whitespace."""
    length = len(text)
    if start < length and text[start] == _QUOTE:
        close = text.find(_QUOTE, start + 1)
        if close >= 0 and (close + 1 == length or is_space(text[close + 1])):
            return close + 1, "closed"
        if live and close < 0:
            return length, "unclosed"
    end = find_space(text, start)
    return (length if end < 0 else end), "bare"


def _scan(text: str, live: bool, start: int = 0) -> "list[_Token]":
    """The tokens of `text` from `start` on, left to right: a key at the start of the text or after
    whitespace, then its value (`_value_end`). Finished text (`live` False) reads an unclosed quote
    as a bare value, which then holds a quote: invalid. The text before `start` is only read to see
    whether whitespace precedes a key."""
    tokens = []
    length = len(text)
    position = start
    while position < length:
        if position == 0 or is_space(text[position - 1]):
            key = _key_at(text, position)
            if key is not None:
                op, value_start = key
                end, shape = _value_end(text, value_start, live)
                tokens.append(_Token(op, position, value_start, end, text[value_start:end], shape))
                position = end
                continue
        # No key here: the next place one may start is just after the next whitespace.
        space = find_space(text, position)
        if space < 0:
            break
        position = space + 1
    return tokens


def _token_values(token: _Token) -> list[str]:
    if token.shape == "closed":
        pieces = [token.raw[1:-1]]
    elif token.op.bare_value is not None and not token.op.bare_value(token.raw):
        return []  # `-` alone or `--verbose`: words, not an excluded word
    elif token.op.multiple and token.op.splits:
        pieces = token.raw.split(",")
    else:
        pieces = [token.raw]
    return [value for value in map(token.op.normalise, pieces) if value is not None]


class _Collector:
    """Accumulates values in the table's order with the grammar's dedupe, cap and last-wins rules."""

    __slots__ = ("_seen", "_values")

    def __init__(self) -> None:
        self._values: dict[str, list[str]] = {op.key: [] for op in SEARCH_FILTER_OPERATORS}
        self._seen: dict[str, set[str]] = {op.key: set() for op in SEARCH_FILTER_OPERATORS}

    def add(self, op: SearchFilterOperator, value: str) -> None:
        values = self._values[op.key]
        if not op.multiple:
            values[:] = [value]
            return
        folded = fold(value)
        if folded in self._seen[op.key] or len(values) >= MAX_SEARCH_FILTER_VALUES:
            return
        self._seen[op.key].add(folded)
        values.append(value)

    def fields(self) -> "dict[str, Any]":
        return {op.field: op.field_value(tuple(self._values[op.key])) for op in SEARCH_FILTER_OPERATORS}


def _take_out(text: str, live: bool) -> "tuple[str, SearchFilters, bool]":
    """Replace each token with at least one valid value by a space, until no such token is left; the
    rest stays as typed. With `live`, a token reaching the very end is still being typed and stays.

    One pass is not enough: taking a token out of the middle of a quote that never closed can close
    it (`in:"a from:b,c"d e"` leaves `in:"a e"`, the room `a e`), and words that still held a filter
    would turn into it once serialized and parsed again. So the text a pass leaves is scanned again;
    each pass takes out at least one token (longer than its space), so this ends. A pass scans again
    only from the first token taken out, or from the token that opened the last quote before it when
    that quote never closed (in this pass or an earlier one): only that quote can close now, since a
    quote closes at the next quote after it and every earlier quote still meets its next one where it
    did. So a deep nest of such quotes costs a scan of the text after it per level, not a scan of the
    whole text.
    """
    collector = _Collector()
    removed = False
    start = 0  # the text before `start` is unchanged by this pass
    opened: dict[int, int] = {}  # quote position -> start, of every token whose quote never closed
    while True:
        tokens = _scan(text, live, start)
        if live and tokens and tokens[-1].end == len(text):
            tokens.pop()
        opened = {quote: at for quote, at in opened.items() if quote < start}  # portable: a lookup table
        opened.update(
            (t.value_start, t.start) for t in tokens if t.shape == "bare" and t.raw.startswith(_QUOTE)
        )
        pieces = [text[:start]]
        position = first = start
        for token in tokens:
            values = _token_values(token)
            if not values:
                continue
            if position == start:
                first = token.start
            pieces += (text[position : token.start], " ")
            position = token.end
            for value in values:
                collector.add(token.op, value)
        if position == start:
            return text, SearchFilters(**collector.fields()), removed
        removed = True
        start = opened.get(text.rfind(_QUOTE, 0, first), first)
        pieces.append(text[position:])
        # Collapsed now, not only at the end: a value a later pass closes is made of words.
        text = "".join(pieces)
        text = text[:start] + collapse_spaces(text[start:])


@record
class ParsedSearchQuery(FrozenRecord):
    """Finished text split into the words to search for and the filters."""

    __slots__ = _fields = ("search_text", "filters")
    search_text: str
    filters: SearchFilters

    def __init__(self, search_text: str, filters: SearchFilters) -> None:
        self._set("search_text", search_text)
        self._set("filters", filters)


@record
class CompletedSearchFilters(FrozenRecord):
    """Text being typed: finished filters taken out, the token being typed left in `search_text`."""

    __slots__ = _fields = ("search_text", "filters", "has_completed_filters")
    search_text: str
    filters: SearchFilters
    has_completed_filters: bool

    def __init__(self, search_text: str, filters: SearchFilters, has_completed_filters: bool) -> None:
        self._set("search_text", search_text)
        self._set("filters", filters)
        self._set("has_completed_filters", has_completed_filters)


def parse_search_filter_text(text: str) -> ParsedSearchQuery:
    """Take every valid filter token out of finished text; whitespace is collapsed and trimmed."""
    rest, filters, _ = _take_out(text, live=False)
    return ParsedSearchQuery(collapse_spaces(rest).strip(" "), filters)


def drop_unfinished_search_filters(text: str) -> str:
    """`text` without the filter keys that have no value yet: `in:`, `in:#`, `from:@`, `in:""`.

    What a search box holds when Enter is pressed before a value was picked: searching it would look
    for the word "in". A token with a value, valid or not (`after:2026-13`), stays, so that the
    grammar's own rules decide it. Whitespace is collapsed where a token went.
    """
    pieces: list[str] = []
    position = 0
    for token in _scan(text, live=False):
        raw = token.raw[1:-1] if token.shape == "closed" else token.raw
        if not token.op.drop_when_empty or strip(token.op.strip_sigil(raw)):
            continue
        pieces += (text[position : token.start], " ")
        position = token.end
    if not pieces:
        return text
    pieces.append(text[position:])
    return collapse_spaces("".join(pieces)).strip(" ")


def extract_completed_search_filters(text: str) -> CompletedSearchFilters:
    """Like `parse_search_filter_text` for text being typed: the token at the very end (nothing after
    it, or an unclosed quote) is still being typed and stays in the text. Whitespace is collapsed
    and only the start is trimmed, so the space that finished the last token is kept."""
    rest, filters, removed = _take_out(text, live=True)
    return CompletedSearchFilters(collapse_spaces(rest).lstrip(" "), filters, removed)


def take_out_completed_search_filters(text: str, caret: int) -> "tuple[str, int, SearchFilters | None]":
    """The box's text with the filters finished before `caret` taken out (the box shows them as chips
    instead), where the caret is then, and those filters: None when none was finished, and then the
    text and caret are as given. Only the text before the caret is read as finished; a space that
    would double where a filter stood between two words is dropped. The page's box and its
    keystroke stage both take chips out this way on every keystroke."""
    before, after = text[:caret], text[caret:]
    completed = extract_completed_search_filters(before)
    if not completed.has_completed_filters:
        return text, caret, None
    before = completed.search_text
    if before.endswith(" ") and after.startswith(" "):
        after = after.lstrip(" ")
    return before + after, len(before), completed.filters


@record
class RefusedSearchFilter(FrozenRecord):
    """A token left in the words because none of its values is valid (`has:pdf`, `after:2026-13`)."""

    __slots__ = _fields = ("key", "token")
    key: str
    token: str

    def __init__(self, key: str, token: str) -> None:
        self._set("key", key)
        self._set("token", token)


def find_refused_search_filters(text: str) -> "tuple[RefusedSearchFilter, ...]":
    """The tokens of finished `text` that stay words because every value was refused, in order.

    A key with no value yet (`in:`) is unfinished, not refused, and a `-` before a non-word (`--x`)
    is a word: neither is listed.
    """
    rest = parse_search_filter_text(drop_unfinished_search_filters(text)).search_text
    return tuple(
        RefusedSearchFilter(token.op.key, rest[token.start : token.end])
        for token in _scan(rest, live=False)
        if token.op.drop_when_empty
    )


def merge_search_filters(*filters: SearchFilters) -> SearchFilters:
    """Union of lists in first-seen order (names deduped case-insensitively and capped, `rids`
    deduped exactly and capped); each single value is the last non-empty one."""
    collector = _Collector()
    rids: list[str] = []  # a list, not a dict: MicroPython's dicts keep no order
    rid = from_username = None
    for item in filters:
        for op in SEARCH_FILTER_OPERATORS:
            for value in op.values_of(item):
                collector.add(op, value)
        for value in item.rids:
            if value and len(rids) < MAX_SEARCH_FILTER_VALUES and value not in rids:
                rids.append(value)
        rid = item.rid or rid
        from_username = item.from_username or from_username
    return SearchFilters(**collector.fields(), rids=tuple(rids), rid=rid, from_username=from_username)


def remove_search_filter(filters: SearchFilters, key: str, value: str) -> SearchFilters:
    """`filters` without `value` (compared case-insensitively) under `key`: what removing a chip does.

    Raises:
        ValueError: `key` is not a filter key.
    """
    op = get_search_filter_operator(key)
    folded = fold(value)
    return op.with_values(filters, tuple(v for v in op.values_of(filters) if fold(v) != folded))


def format_search_filter_value(key: str, value: str) -> str:
    """`key:value`, the value quoted when it holds whitespace, a comma or a quote (inner quotes dropped).

    Raises:
        ValueError: `key` is not a filter key.
    """
    op = get_search_filter_operator(key)
    raw = op.serialize(value.replace(_QUOTE, ""))
    if op.needs_quotes(value) or _reads_as_longer_prefix(op, op.prefix + raw):
        return f'{op.prefix}"{raw}"'
    return op.prefix + raw


def _reads_as_longer_prefix(op: SearchFilterOperator, token: str) -> bool:
    """Whether `token`, written bare, would start with another row's longer prefix: the excluded
    word `in:x` is written `-"in:x"`, since `-in:x` leaves out the room `x`."""
    head = _key_at(token, 0)
    return head is None or head[0] is not op


def serialize_search_query(search_text: str, filters: SearchFilters) -> str:
    """One line: a token per value in the table's order, then the search text (collapsed, trimmed).

    `parse_search_filter_text` gives back exactly `filters` and the text for every valid query.
    """
    parts = [
        format_search_filter_value(op.key, value)
        for op in SEARCH_FILTER_OPERATORS
        for value in op.values_of(filters)
        if value
    ]
    text = collapse_spaces(search_text).strip(" ")
    if text:
        parts.append(text)
    return " ".join(parts)


@record
class ActiveSearchFilter(FrozenRecord):
    """The token under the caret: `text[start:end]` is `key:value`, `value` as typed (sigil, quote)."""

    __slots__ = _fields = ("key", "value", "start", "end")
    key: str
    value: str
    start: int
    end: int

    def __init__(self, key: str, value: str, start: int, end: int) -> None:
        self._set("key", key)
        self._set("value", value)
        self._set("start", start)
        self._set("end", end)

    @property
    def lookup_text(self) -> str:
        """What to look up: the value without its quotes and one leading sigil, trimmed."""
        value = self.value
        if value.startswith(_QUOTE):
            value = value[1:-1] if len(value) > 1 and value.endswith(_QUOTE) else value[1:]
        return strip(get_search_filter_operator(self.key).strip_sigil(value))


@record
class AppliedSearchFilterToken(FrozenRecord):
    """The new text and where the caret goes: just after the token and its space."""

    __slots__ = _fields = ("text", "caret")
    text: str
    caret: int

    def __init__(self, text: str, caret: int) -> None:
        self._set("text", text)
        self._set("caret", caret)


def _clamp_caret(text: str, caret: int | None) -> int:
    # Carets are code points here; the browser glue converts from the DOM's UTF-16 offsets.
    return len(text) if caret is None else max(0, min(caret, len(text)))


def _word_end(text: str, position: int) -> int:
    """`position`, or the end of the word it is inside (a caret inside a word is not split)."""
    if position > 0 and not is_space(text[position - 1]):
        end = find_space(text, position)
        return len(text) if end < 0 else end
    return position


def get_active_search_filter(text: str, caret: int | None = None) -> ActiveSearchFilter | None:
    """The token whose value the caret (default: end of text, clamped) sits in, or None.

    The token runs from its key to its end (past the caret for a bare or closed value); an unclosed
    quote has no end of its own, so it stops at the caret and the text after the caret is kept.
    """
    position = _clamp_caret(text, caret)
    for token in _scan(text, live=True):
        if token.start >= position:
            break
        if token.value_start <= position <= token.end:
            end = position if token.shape == "unclosed" else token.end
            return ActiveSearchFilter(token.op.key, text[token.value_start : end], token.start, end)
    return None


def apply_search_filter_token(
    text: str, active: ActiveSearchFilter | None, key: str, value: str, caret: int | None = None
) -> AppliedSearchFilterToken:
    """Put `key:value` in place of `active`, or, without one, at the caret (default: the end; a word
    under the caret is not split). One space follows the token; the text after it is kept.

    Raises:
        ValueError: `key` is not a filter key, or `active` does not fit in `text`.
    """
    token = format_search_filter_value(key, value)
    if active is not None:
        if not 0 <= active.start <= active.end <= len(text):
            raise ValueError(f"active filter {active.start}..{active.end} is outside a text of {len(text)}")
        before, after = text[: active.start], text[active.end :]
    else:
        position = _word_end(text, _clamp_caret(text, caret))
        before = rstrip(text[:position])
        before, after = (before + " " if before else ""), text[position:]
    new_text = f"{before}{token} {lstrip(after)}"
    return AppliedSearchFilterToken(new_text, len(before) + len(token) + 1)


def insert_search_filter_token(text: str, caret: int | None, token: str) -> AppliedSearchFilterToken:
    """Put `token` (a chip's `token`, being edited again) at the caret (default: the end; a word under
    the caret is not split), the caret at its end: with nothing typed after it, the token is the
    one being typed, so it stays in the box until it is finished (a space, Enter) or changed."""
    position = _word_end(text, _clamp_caret(text, caret))
    before = rstrip(text[:position])
    before = before + " " if before else ""
    after = lstrip(text[position:])
    new_text = f"{before}{token}" + (f" {after}" if after else "")
    return AppliedSearchFilterToken(new_text, len(before) + len(token))
