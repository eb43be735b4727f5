"""The server's halves of the search language without a workspace: the message checks' tables, the
line to request mapping and its relaxations, and the receipt's wording."""

from __future__ import annotations

import datetime

import pytest

from ai_search import (
    HAS_VALUES,
    IS_VALUES,
    SearchFilters,
    describe_search_scope,
    describe_zero_results,
    parse_search_filter_text,
)
from ai_search_server.retrieval.message_checks import HAS_CHECKS, IS_CHECKS, MessageChecks, MessageContext
from ai_search_server.retrieval.search_query import (
    relaxations_of,
    request_filters,
    request_line,
    search_request,
)
from ai_search_server.store.records import Attachment, Message, Reaction, Room

T = datetime.datetime(2026, 11, 30, 9, tzinfo=datetime.UTC)
TODAY = datetime.date(2026, 12, 1)
CHANNEL = Room("r1", "c", "ops", "ops", T)
DIRECT = Room("r2", "d", "alice__bob", "", T)


def test_every_value_the_grammar_accepts_has_a_check() -> None:
    assert set(HAS_CHECKS) == set(HAS_VALUES.values())
    assert set(IS_CHECKS) == set(IS_VALUES.values())


def _message(**fields: object) -> Message:
    base: dict[str, object] = {"id": "m1", "room_id": "r1", "user_id": "u1", "username": "alice",
                               "user_name": "Alice", "ts": T, "text": "release notes"}  # fmt: skip
    base.update(fields)
    return Message(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "room", "starts_thread", "holds"),
    [
        pytest.param(
            _message(text="see https://x.example/a"), CHANNEL, False, {"has:link"}, id="a-url-is-a-link"
        ),
        pytest.param(_message(text="see www.example.org"), CHANNEL, False, {"has:link"}, id="www-is-a-link"),
        pytest.param(_message(text="http:// alone"), CHANNEL, False, set(), id="a-scheme-alone-is-no-link"),
        pytest.param(
            _message(attachments=(Attachment("a.png", type="image/png"),)),
            CHANNEL,
            False,
            {"has:file", "has:image"},
            id="an-image-is-a-file",
        ),
        pytest.param(
            _message(attachments=(Attachment("shot.JPG"),)),
            CHANNEL,
            False,
            {"has:file", "has:image"},
            id="an-image-by-its-name",
        ),
        pytest.param(
            _message(attachments=(Attachment("notes.txt", type="text/plain"),)),
            CHANNEL,
            False,
            {"has:file"},
            id="a-file",
        ),
        pytest.param(
            _message(reactions=(Reaction(":+1:", ("bob",)),)),
            CHANNEL,
            False,
            {"has:reaction"},
            id="a-reaction",
        ),
        pytest.param(_message(reactions=(Reaction(":+1:", ()),)), CHANNEL, False, set(), id="nobody-reacted"),
        pytest.param(_message(), CHANNEL, True, {"has:thread"}, id="a-threads-first-message"),
        pytest.param(_message(tmid="m0"), CHANNEL, False, {"is:thread"}, id="a-reply"),
        pytest.param(_message(), DIRECT, False, {"is:dm"}, id="a-direct-message"),
        pytest.param(_message(pinned_at=T), CHANNEL, False, {"is:pinned"}, id="pinned"),
        pytest.param(_message(), CHANNEL, False, set(), id="a-plain-message"),
    ],
)
def test_checks(message: Message, room: Room, starts_thread: bool, holds: set[str]) -> None:
    context = MessageContext(message, room, starts_thread)
    found = {f"has:{k}" for k, check in HAS_CHECKS.items() if check(context)}
    found |= {f"is:{k}" for k, check in IS_CHECKS.items() if check(context)}
    assert found == holds
    for token in holds:
        key, value = token.split(":")
        wanted = MessageChecks(**{"has" if key == "has" else "is_": (value,)})  # type: ignore[arg-type]
        excluded = MessageChecks(**{"excluded_has" if key == "has" else "excluded_is": (value,)})  # type: ignore[arg-type]
        assert wanted.matcher().passes(context) and not excluded.matcher().passes(context)


@pytest.mark.parametrize(
    ("checks", "passes"),
    [
        pytest.param(MessageChecks(excluded_words=(("release",),)), False, id="an-excluded-word"),
        pytest.param(MessageChecks(excluded_words=(("rele",),)), False, id="an-excluded-prefix-of-four"),
        pytest.param(
            MessageChecks(excluded_words=(("notes", "release"),)), True, id="an-excluded-phrase-out-of-order"
        ),
        pytest.param(MessageChecks(required_phrases=(("release", "notes"),)), True, id="a-phrase-in-order"),
        pytest.param(
            MessageChecks(required_phrases=(("notes", "release"),)), False, id="a-phrase-out-of-order"
        ),
        pytest.param(MessageChecks(excluded_usernames=("ALICE",)), False, id="an-excluded-author-any-case"),
        pytest.param(MessageChecks(has=("link", "file")), False, id="every-has-must-hold"),
    ],
)
def test_words_phrases_and_authors(checks: MessageChecks, passes: bool) -> None:
    assert checks.matcher().passes(MessageContext(_message(), CHANNEL, False)) is passes


def test_a_line_becomes_a_request_and_back() -> None:
    line = 'in:ops -in:random from:al -from:bot has:link -has:file is:thread -is:dm after:-7d before:2026-11-30 on:today during:2026-11 sort:new -canary -"roll back" deploy now'
    parsed = parse_search_filter_text(line)
    request = search_request(parsed.search_text, parsed.filters, limit=5)
    assert request.sort == "new" and request.dates.start_date == "-7d"
    assert request_filters(request) == parsed.filters
    assert request_line(request) == line


def test_each_relaxation_drops_one_family_then_all() -> None:
    parsed = parse_search_filter_text('"roll back" in:ops after:-7d has:link -bot sort:new')
    request = search_request(parsed.search_text, parsed.filters, limit=5)
    lines = [(r.key, request_line(relaxed)) for r, relaxed in relaxations_of(request)]
    assert lines == [
        ("in", 'has:link after:-7d sort:new -bot "roll back"'),
        ("after", 'in:ops has:link sort:new -bot "roll back"'),
        ("has", 'in:ops after:-7d sort:new -bot "roll back"'),
        ("-", 'in:ops has:link after:-7d sort:new "roll back"'),
        ("quotes", "in:ops has:link after:-7d sort:new -bot roll back"),
        ("all", "sort:new roll back"),  # the order is no filter
    ]


def test_one_filter_has_no_all_relaxation_beside_it() -> None:
    request = search_request("x", SearchFilters(room_names=("ops",)), limit=5)
    assert [r.key for r, _ in relaxations_of(request)] == ["in"]


@pytest.mark.parametrize(
    ("rooms", "first", "last", "text"),
    [
        pytest.param(
            12,
            datetime.date(2026, 7, 1),
            TODAY,
            "searched 12 rooms you are in, 1 Jul – today",
            id="this-year",
        ),
        pytest.param(
            1,
            datetime.date(2025, 7, 1),
            datetime.date(2026, 11, 29),
            "searched 1 room you are in, 1 Jul 2025 – 29 Nov",
            id="a-year-back",
        ),
        pytest.param(3, TODAY, TODAY, "searched 3 rooms you are in, today", id="one-day"),
        pytest.param(
            3, None, TODAY, "searched 3 rooms you are in; they hold no messages yet", id="no-messages"
        ),
        pytest.param(
            0, None, TODAY, "searched no room: none is both asked for and one you are in", id="no-room"
        ),
    ],
)
def test_describe_search_scope(
    rooms: int, first: datetime.date | None, last: datetime.date, text: str
) -> None:
    assert describe_search_scope(rooms, first, last, TODAY) == text


def test_describe_zero_results() -> None:
    found = [("after", ("after:2026-10-01",), 3, False), ("quotes", (), 5, False), ("all", (), 50, True)]
    assert describe_zero_results(["#incidents", "after:2026-10-01"], found, True) == (
        "0 in #incidents after:2026-10-01; 3 without after:2026-10-01; 5 without the quotes; 50+ in all your rooms"
    )
    assert describe_zero_results([], [("all", (), 2, False)], False) == "0 results; 2 without any filter"
