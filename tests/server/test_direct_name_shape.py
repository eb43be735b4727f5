"""``names.names_people``: which room names are a direct room's name of people who exist (C5).

The promise through every route is in ``tests/reliability/test_direct_names.py``; this is the rule's
table, including the splits a username holding ``_`` makes possible.
"""

from __future__ import annotations

import pytest

from ai_search_server.store.names import names_people, normal_room_name

PEOPLE = ("alice", "bob", "carol", "a_", "_b", "Dana.M")


@pytest.mark.parametrize(
    ("name", "direct"),
    [
        pytest.param("alice__bob", True, id="two"),
        pytest.param("bob__alice", True, id="any-order"),
        pytest.param("alice__bob__carol", True, id="three"),
        pytest.param("ALICE__Bob", True, id="case"),
        pytest.param("dana.m__alice", True, id="a-dot-in-a-username"),
        pytest.param("aIice__bob", True, id="capital-i-for-l"),
        pytest.param("\u0430lice__bob", True, id="cyrillic-a"),
        pytest.param("alice\uff3f\uff3fbob", True, id="fullwidth"),
        pytest.param("a___bob", True, id="a_-then-bob"),
        pytest.param("alice___b", True, id="alice-then-_b"),
        pytest.param("alice__alice", True, id="one-person-twice"),
        pytest.param("alice", False, id="one-person"),
        pytest.param("alice__", False, id="nobody-after"),
        pytest.param("__alice", False, id="nobody-before"),
        pytest.param("alice__zed", False, id="an-unknown-person"),
        pytest.param("team__alpha", False, id="no-people"),
        pytest.param("alice_bob", False, id="one-underscore"),
        pytest.param("alice__bob-2f3a9c1d", False, id="a-suffix"),
        pytest.param("alice__bob extra", False, id="more-words"),
    ],
)
def test_a_name_is_a_dm_name_when_it_joins_two_or_more_people(name: str, direct: bool) -> None:
    assert names_people(normal_room_name(name), lambda: PEOPLE) is direct


def test_the_users_are_only_read_for_a_name_holding_the_separator() -> None:
    def unexpected() -> tuple[str, ...]:
        raise AssertionError("the users were read for a name without '__'")

    assert names_people("general", unexpected) is False
