"""Property: the conditions applied inside the index find exactly what checking every message finds.

One workspace of a few hundred messages drawn from a small vocabulary (so words repeat and prefixes
collide), with links, files, images, reactions, pins, threads and several authors; hypothesis draws
any mix of ``has:``, ``-has:``, ``is:``, ``-is:``, ``-from:``, excluded words and phrases and
required phrases. The keyword branch (with every match returned) and the semantic branch's mask
must each hold exactly the messages that the store-side check (``message_checks``) passes, among
those holding a query term (keyword) or among all in scope (semantic). Under ``--store=postgres``
the keyword branch on PostgreSQL (``keyword_index = "postgres"``) is held to the same.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_search_server.retrieval.conditions import PIPELINE_HAS_VALUES, PIPELINE_IS_VALUES, MessageConditions
from ai_search_server.retrieval.embedded import doc_conditions
from ai_search_server.retrieval.index import INDEX_FILENAME, EmbeddedIndex
from ai_search_server.retrieval.index_db import KeywordScope
from ai_search_server.retrieval.message_checks import MessageChecks, MessageContext
from ai_search_server.retrieval.pg_keyword import PgKeywordIndex
from ai_search_server.retrieval.terms import TermMatcher, query_terms, value_term
from ai_search_server.retrieval.vectors import VectorScope
from ai_search_server.store import open_store
from ai_search_server.store.base import Store
from ai_search_server.store.records import Attachment, Message, Room

from ._search_support import EMBED_WAIT_SECONDS, TEST_DIMENSIONS, HashingEmbedder

MESSAGES = 300
VOCABULARY = ("deploy", "deployment", "rollout", "canary", "window", "green", "light", "cache", "db")
USERS = ("alice", "bob", "carol")
T0 = datetime(2026, 11, 1, tzinfo=UTC)
QUERY = "deploy rollout"
# Every match: more than the workspace holds, so no ranking cut hides a difference.
ALL_K = 1000


def _build(store: Store) -> None:
    rng = random.Random(20261201)
    users = {name: store.create_user(name, name=name.title(), password=f"pw-{name}-123456") for name in USERS}
    ids = [u.id for u in users.values()]
    rooms = [
        store.create_room("c", "general", members=ids),
        store.create_room("d", "alice__bob", members=ids[:2]),
    ]
    posted: list[Message] = []
    for n in range(MESSAGES):
        room = rooms[0] if rng.random() < 0.8 else rooms[1]
        words = rng.choices(VOCABULARY, k=rng.randint(2, 8))
        if rng.random() < 0.1:
            words.append("https://example.org/x")
        attachments: tuple[Attachment, ...] = ()
        if rng.random() < 0.1:
            image = rng.random() < 0.5
            attachments = (
                Attachment("shot.png" if image else "notes.txt", type="image/png" if image else ""),
            )
        parents = [m for m in posted if m.room_id == room.id and m.tmid is None]
        tmid = rng.choice(parents).id if parents and rng.random() < 0.15 else None
        author = rng.choice([u for u in users.values() if u.id in ids[: 2 if room is rooms[1] else 3]])
        message = store.post_message(
            room.id,
            author.id,
            " ".join(words),
            ts=T0 + timedelta(minutes=n),
            tmid=tmid,
            attachments=attachments,
        )
        posted.append(message)
        if rng.random() < 0.1:
            store.set_reaction(message.id, rng.choice(ids), ":+1:", True)
        if rng.random() < 0.05:
            store.set_pinned(message.id, ids[0])


@pytest.fixture(scope="module")
def indexed(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[tuple[Store, EmbeddedIndex, list[str]]]:
    """The workspace, its index, and the rooms (all of them: alice reads both)."""
    data_dir: Path = tmp_path_factory.mktemp("conditions-property")
    store = open_store(data_dir, database_url=module_database_url)
    _build(store)
    index = EmbeddedIndex.open(data_dir / INDEX_FILENAME, store, HashingEmbedder())
    assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
    alice = store.get_user_by_username("alice")
    assert alice is not None
    yield store, index, sorted(store.readable_room_ids(alice.id))
    index.close()
    store.close()


def _expected(store: Store, conditions: MessageConditions, *, needs_terms: bool) -> set[str]:
    """The messages the store-side check passes, checking every one."""
    messages = [m for batch in store.iter_messages(batch_size=1000) for m in batch]
    rooms: dict[str, Room] = store.get_rooms({m.room_id for m in messages})
    roots = set(store.thread_summaries({m.id for m in messages}))
    matcher = MessageChecks(
        has=conditions.has,
        excluded_has=conditions.not_has,
        is_=conditions.is_,
        excluded_is=conditions.not_is,
        excluded_usernames=conditions.not_usernames,
        excluded_words=tuple(t for t in map(value_term, conditions.not_words) if t),
        required_phrases=tuple(t for t in map(value_term, conditions.phrases) if t),
    ).matcher()
    words = TermMatcher(query_terms(QUERY))
    return {
        m.id
        for m in messages
        if (not needs_terms or words.matched(m.searchable_text))
        and matcher.passes(MessageContext(m, rooms[m.room_id], m.id in roots))
    }


_phrases = st.tuples(st.sampled_from(VOCABULARY), st.sampled_from(VOCABULARY)).map(" ".join)
conditions_strategy = st.builds(
    MessageConditions,
    has=st.lists(st.sampled_from(PIPELINE_HAS_VALUES), max_size=2, unique=True).map(tuple),
    not_has=st.lists(st.sampled_from(PIPELINE_HAS_VALUES), max_size=2, unique=True).map(tuple),
    is_=st.lists(st.sampled_from(PIPELINE_IS_VALUES), max_size=1, unique=True).map(tuple),
    not_is=st.lists(st.sampled_from(PIPELINE_IS_VALUES), max_size=1, unique=True).map(tuple),
    not_usernames=st.lists(st.sampled_from(USERS), max_size=1, unique=True).map(tuple),
    not_words=st.lists(st.sampled_from(VOCABULARY) | _phrases, max_size=2, unique=True).map(tuple),
    phrases=st.lists(_phrases, max_size=1, unique=True).map(tuple),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conditions=conditions_strategy)
def test_the_index_finds_what_checking_every_message_finds(
    indexed: tuple[Store, EmbeddedIndex, list[str]], conditions: MessageConditions
) -> None:
    store, index, rooms = indexed
    found_keyword = {
        hit.msg_id
        for hit in index.keyword_search(
            query_terms(QUERY), KeywordScope(rooms), ALL_K, conditions=doc_conditions(conditions)
        )
    }
    assert found_keyword == _expected(store, conditions, needs_terms=True)
    scope = index.condition_scope(VectorScope(frozenset(rooms)), doc_conditions(conditions))
    vector = np.full(TEST_DIMENSIONS, 1 / np.sqrt(TEST_DIMENSIONS), dtype=np.float32)
    hits = index.semantic_search(vector, scope, ALL_K, -2.0)  # every row in the mask, whatever its score
    found_semantic = {row.msg_id for row in index.rows([rowid for rowid, _ in hits]).values()}
    assert found_semantic == _expected(store, conditions, needs_terms=False)


@pytest.fixture(scope="module")
def pg_keyword(
    indexed: tuple[Store, EmbeddedIndex, list[str]], module_database_url: str
) -> Iterator[PgKeywordIndex]:
    if not module_database_url:
        pytest.skip("the PostgreSQL keyword branch needs --store=postgres")
    opened = PgKeywordIndex.open(module_database_url, indexed[0])
    yield opened
    opened.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conditions=conditions_strategy)
def test_the_postgres_keyword_branch_finds_what_checking_every_message_finds(
    indexed: tuple[Store, EmbeddedIndex, list[str]], pg_keyword: PgKeywordIndex, conditions: MessageConditions
) -> None:
    store, _index, rooms = indexed
    hits = pg_keyword.keyword_search(query_terms(QUERY), KeywordScope(rooms), ALL_K, conditions=conditions)
    assert {hit.msg_id for hit in hits} == _expected(store, conditions, needs_terms=True)
