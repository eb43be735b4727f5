"""Every sentence of an answer comes back checked against the sources it cites, whole or streamed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ai_search_server.store.base import Store

from ._fake_openai import FakeOpenAI
from .conftest import Workspace
from .test_answers_route import ANSWER, SSE, body, events, llm, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[FakeOpenAI, str]]:
    """The local OpenAI-compatible test provider and its base URL."""
    fake = FakeOpenAI()
    with fake.serve() as server:
        yield fake, f"{server.url}/v1"

# Sources ops-3 ("deploy failed on billing-api with ERR_CONN_RESET", alice) and ops-4 ("rolling back
# now", carol): one sentence each source holds, one naming the wrong person, one with a number no
# source has, one citing a source that was not given.
ANSWER_TEXT = (
    "The deploy failed on billing-api with ERR_CONN_RESET [1]. It was rolled back [2]. "
    "alice rolled it back [2]. The outage lasted 3 hours [1]. Lunch is at noon [9]."
)
EXPECTED = [
    (
        "The deploy failed on billing-api with ERR_CONN_RESET [1].",
        [1],
        True,
        [{"n": 1, "start": 0, "end": 48}],
    ),
    ("It was rolled back [2].", [2], True, [{"n": 2, "start": 0, "end": 16}]),
    ("alice rolled it back [2].", [2], False, []),
    ("The outage lasted 3 hours [1].", [1], False, []),
    ("Lunch is at noon [9?].", [], None, []),
]


def as_tuples(sentences: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(s["text"], s["citations"], s["supported"], s["spans"]) for s in sentences]


async def test_each_sentence_is_marked_supported_or_not(
    provider: tuple[FakeOpenAI, str], store: Store, workspace: Workspace
) -> None:
    fake, provider_url = provider
    fake.reset()
    fake.answer = ANSWER_TEXT
    async with serving(store, **llm(provider_url)) as http:
        r = await http.post(
            ANSWER, json=body(workspace, "ops-3", "ops-4"), headers=workspace["alice"].headers
        )
    assert r.status_code == 200, r.text
    data = r.json()
    assert as_tuples(data["sentences"]) == EXPECTED
    # The unknown citation is dropped from the answer's citations too, and shown as [9?].
    assert [c["n"] for c in data["citations"]] == [1, 2]
    assert "[9?]" in data["answer"]


async def test_the_streamed_answer_ends_with_the_same_checked_sentences(
    provider: tuple[FakeOpenAI, str], store: Store, workspace: Workspace
) -> None:
    fake, provider_url = provider
    fake.reset()
    fake.answer = ANSWER_TEXT
    fake.chunks = [ANSWER_TEXT[i : i + 7] for i in range(0, len(ANSWER_TEXT), 7)]
    async with serving(store, **llm(provider_url)) as http:
        r = await http.post(
            ANSWER, json=body(workspace, "ops-3", "ops-4"), headers={**workspace["alice"].headers, **SSE}
        )
    stream = events(r)
    kind, done = stream[-1]
    assert kind == "done"
    assert "".join(data["text"] for name, data in stream if name == "delta") == done["answer"]
    assert as_tuples(done["sentences"]) == EXPECTED


async def test_every_sentence_of_an_extractive_answer_is_supported(
    store: Store, workspace: Workspace
) -> None:
    async with serving(store) as http:
        r = await http.post(
            ANSWER, json=body(workspace, "ops-3", "ops-4"), headers=workspace["alice"].headers
        )
    sentences = r.json()["sentences"]
    assert sentences
    assert all(s["supported"] is True and s["spans"] for s in sentences)
