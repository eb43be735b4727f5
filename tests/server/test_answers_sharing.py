"""Kept answers: shared by link, opened as each reader may see them, rated per person, exported.

In the scoping spirit: bob's answer draws on #secret, which alice never reads and carol is banned
from; whatever they open, no word of the secret message reaches them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_search import HIDDEN_ANSWER_NOTE, HIDDEN_SOURCES_NOTE, content_stems
from ai_search_server.cli import main
from ai_search_server.store.base import Store

from ._fake_openai import FakeOpenAI
from .conftest import Workspace, cited
from .test_answers_route import ANSWER, SSE, events, llm, serving

pytestmark = pytest.mark.anyio

GET, SHARE, FEEDBACK = (
    "/api/v1/ai.search.answer.get",
    "/api/v1/ai.search.answer.share",
    "/api/v1/ai.search.answer.feedback",
)
# Sources: [1] the #secret message, [2] bob's #general message.
BOBS_ANSWER = (
    "The deploy went fine today [2]. The acquisition closes in march [1]. "
    "The deploy went fine and the acquisition closes in march [1] [2]. Everything closes in march."
)


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with fake.serve() as server:
        yield fake, f"{server.url}/v1"


@pytest.fixture
async def http(provider: tuple[FakeOpenAI, str], store: Store) -> AsyncIterator[httpx.AsyncClient]:
    fake, url = provider
    fake.reset()
    fake.answer = BOBS_ANSWER
    async with serving(store, **llm(url)) as client:
        yield client


def sources(ws: Workspace) -> dict[str, Any]:
    return {
        "query": "what is going on?",
        "messages": [{"_id": ws.messages["secret-5"].id}, {"_id": ws.messages["general-2"].id}],
    }


async def bobs_answer(http: httpx.AsyncClient, ws: Workspace, *, share: bool = True) -> str:
    r = await http.post(ANSWER, json=sources(ws), headers=ws["bob"].headers)
    assert r.status_code == 200, r.text
    answer_id: str = r.json()["answerId"]
    if share:
        shared = await http.post(SHARE, json={"answerId": answer_id}, headers=ws["bob"].headers)
        assert shared.status_code == 200, shared.text
        assert shared.json()["link"].endswith(f"/?answer={answer_id}")
    return answer_id


def secret_words(ws: Workspace) -> frozenset[str]:
    """Words of the secret message that no message alice reads holds."""
    alice_reads = ws.store.readable_room_ids(ws["alice"].user.id)
    visible = " ".join(m.text for m in ws.messages.values() if m.room_id in alice_reads)
    return content_stems(ws.messages["secret-5"].text) - content_stems(visible)


@pytest.mark.parametrize("reader", ["alice", "carol"])
async def test_a_reader_without_the_room_sees_the_answer_without_that_source(
    http: httpx.AsyncClient, workspace: Workspace, reader: str
) -> None:
    answer_id = await bobs_answer(http, workspace)
    r = await http.get(GET, params={"answerId": answer_id}, headers=workspace[reader].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["answer"] == "The deploy went fine today [2]."
    assert data["citations"] == [cited(workspace, 2, workspace.messages["general-2"])]
    assert [s["supported"] for s in data["sentences"]] == [True]
    assert (data["hiddenSources"], data["note"], data["mine"]) == (1, HIDDEN_SOURCES_NOTE, False)
    # Nothing of the secret message anywhere in what the reader gets: not its words, not its id.
    body = r.text.casefold()
    assert not any(word in content_stems(body) for word in secret_words(workspace))
    assert workspace.messages["secret-5"].id not in r.text


async def test_the_owner_sees_the_whole_answer(http: httpx.AsyncClient, workspace: Workspace) -> None:
    answer_id = await bobs_answer(http, workspace)
    data = (await http.get(GET, params={"answerId": answer_id}, headers=workspace["bob"].headers)).json()
    assert data["answer"] == BOBS_ANSWER
    assert (data["hiddenSources"], data["note"], data["mine"], data["shared"]) == (0, None, True, True)


async def test_an_answer_not_shared_opens_for_its_owner_only(
    http: httpx.AsyncClient, workspace: Workspace
) -> None:
    answer_id = await bobs_answer(http, workspace, share=False)
    unknown = await http.get(GET, params={"answerId": "no-such-answer"}, headers=workspace["alice"].headers)
    hidden = await http.get(GET, params={"answerId": answer_id}, headers=workspace["alice"].headers)
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json() == unknown.json()
    assert hidden.json()["errorType"] == "error-answer-not-found"
    mine = await http.get(GET, params={"answerId": answer_id}, headers=workspace["bob"].headers)
    assert mine.status_code == 200 and mine.json()["shared"] is False


async def test_only_the_owner_shares(http: httpx.AsyncClient, workspace: Workspace) -> None:
    answer_id = await bobs_answer(http, workspace, share=False)
    r = await http.post(SHARE, json={"answerId": answer_id}, headers=workspace["alice"].headers)
    assert r.status_code == 404


async def test_a_streamed_answer_carries_its_id_too(http: httpx.AsyncClient, workspace: Workspace) -> None:
    r = await http.post(ANSWER, json=sources(workspace), headers={**workspace["bob"].headers, **SSE})
    kind, done = events(r)[-1]
    assert kind == "done" and isinstance(done["answerId"], str)
    assert (
        await http.get(GET, params={"answerId": done["answerId"]}, headers=workspace["bob"].headers)
    ).status_code == 200


async def test_feedback_is_kept_per_person_and_replaced(
    http: httpx.AsyncClient, workspace: Workspace
) -> None:
    answer_id = await bobs_answer(http, workspace)
    up = {"answerId": answer_id, "rating": "up", "reason": "  found it  "}
    r = await http.post(FEEDBACK, json=up, headers=workspace["alice"].headers)
    assert r.json() == {"answerId": answer_id, "rating": "up", "reason": "found it", "success": True}
    down = {"answerId": answer_id, "rating": "down"}
    assert (await http.post(FEEDBACK, json=down, headers=workspace["alice"].headers)).status_code == 200
    assert (await http.post(FEEDBACK, json=up, headers=workspace["bob"].headers)).status_code == 200
    alice_view = (
        await http.get(GET, params={"answerId": answer_id}, headers=workspace["alice"].headers)
    ).json()
    bob_view = (await http.get(GET, params={"answerId": answer_id}, headers=workspace["bob"].headers)).json()
    assert alice_view["feedback"] == {"rating": "down", "reason": ""}
    assert bob_view["feedback"] == {"rating": "up", "reason": "found it"}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        pytest.param({"rating": "sideways"}, 400, id="bad-rating"),
        pytest.param({"rating": "up", "reason": "x" * 1001}, 400, id="reason-too-long"),
        pytest.param({"rating": "up", "extra": 1}, 400, id="unknown-field"),
    ],
)
async def test_bad_feedback_is_refused(
    http: httpx.AsyncClient, workspace: Workspace, body: dict[str, Any], status: int
) -> None:
    answer_id = await bobs_answer(http, workspace)
    r = await http.post(FEEDBACK, json={"answerId": answer_id, **body}, headers=workspace["alice"].headers)
    assert r.status_code == status, r.text


async def test_an_answer_not_shared_cannot_be_rated_by_others(
    http: httpx.AsyncClient, workspace: Workspace
) -> None:
    answer_id = await bobs_answer(http, workspace, share=False)
    r = await http.post(
        FEEDBACK, json={"answerId": answer_id, "rating": "up"}, headers=workspace["alice"].headers
    )
    assert r.status_code == 404


async def test_admins_export_the_feedback(
    http: httpx.AsyncClient,
    workspace: Workspace,
    store: Store,
    data_dir: Path,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer_id = await bobs_answer(http, workspace)
    await http.post(
        FEEDBACK,
        json={"answerId": answer_id, "rating": "down", "reason": "too long"},
        headers=workspace["alice"].headers,
    )
    store.close()  # the CLI opens the data dir itself, as an admin at the terminal would
    where = ["--data", str(data_dir), *(["--database", database_url] if database_url else [])]
    assert main(["feedback", "export", *where]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    record = json.loads(line)
    assert {
        k: record[k] for k in ("answerId", "username", "rating", "reason", "query", "answer", "model")
    } == {
        "answerId": answer_id,
        "username": "alice",
        "rating": "down",
        "reason": "too long",
        "query": "what is going on?",
        "answer": BOBS_ANSWER,
        "model": "gpt-4o",
    }
    assert (
        main(["feedback", "export", *where, "--format", "csv", "--since", "2000-01-01"]) == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(row["username"], row["rating"]) for row in rows] == [("alice", "down")]
    assert main(["feedback", "export", *where, "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["feedback", "export", *where, "--since", "yesterday"]) == 2


@pytest.mark.parametrize(
    ("answer", "reader", "note", "shown"),
    [
        pytest.param(BOBS_ANSWER, "bob", None, True, id="its-owner-sees-everything"),
        pytest.param(BOBS_ANSWER, "alice", HIDDEN_SOURCES_NOTE, True, id="some-sources-hidden"),
        pytest.param(
            "The acquisition closes in march [1].", "alice", HIDDEN_ANSWER_NOTE, False, id="every-source-hidden"
        ),
    ],
)
async def test_the_note_says_plainly_how_much_is_hidden(
    provider: tuple[FakeOpenAI, str],
    http: httpx.AsyncClient,
    workspace: Workspace,
    answer: str,
    reader: str,
    note: str | None,
    shown: bool,
) -> None:
    """Issue 36: a shared answer whose every source the reader cannot read is no empty body under
    "some sources are hidden": the note says that nothing of it can be shown, and nothing is."""
    provider[0].answer = answer
    answer_id = await bobs_answer(http, workspace)
    r = await http.get(GET, params={"answerId": answer_id}, headers=workspace[reader].headers)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["note"] == note
    assert bool(data["answer"]) is shown
    if not shown:
        assert (data["citations"], data["sentences"]) == ([], [])
        assert not any(word in content_stems(r.text.casefold()) for word in secret_words(workspace))
