"""The remote second stages against a real server on loopback (``_fake_second_stage``).

Real sockets through the real guarded client: a TEI and a Cohere-shaped ``/rerank`` and an
OpenAI-compatible ``/embeddings``, what each sends (shapes, key, batches, caps), what each makes of
the answer, the passage-vector cache, every misbehaviour the brief names (too slow, 500, 401, not
JSON, wrong indexes, NaN, too large) as one ``SecondStageError`` whose message names the stage and
never the key, in the error or in any log record. Then the settings that configure them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import numpy as np
import pytest

from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.retrieval.embedder import MAX_EMBEDDING_BATCH_TEXTS, EmbedderUnavailable
from ai_search_server.retrieval.second_stage import Passage, SecondStageError
from ai_search_server.retrieval.second_stage.remote import (
    FULL_COVERAGE,
    MAX_PASSAGE_CHARS,
    MAX_RERANK_PASSAGES_PER_CALL,
    EmbeddingsStage,
    RerankStage,
    build_remote_stage,
)
from ai_search_server.settings import Settings, SettingsError, load_settings
from ai_search_server.settings_docs import settings_table

from ._fake_second_stage import FakeSecondStage, UvicornThread, overlap, vector

pytestmark = pytest.mark.anyio

API_KEY = "sk-rerank-4c0ffee-do-not-leak-91b2"
LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))
# Deadline of the too-slow cases (seconds): short, so the file stays fast.
SHORT_DEADLINE_SECONDS = 0.4
# Deadline of the cases that must fail for another reason (seconds): a 5 MiB body takes longer than
# the short one on a busy machine, and must still be told apart from a timeout.
UNHURRIED_DEADLINE_SECONDS = 10.0
# How far past its deadline a too-slow scoring may end (seconds): the stage's own cancel, a loaded box.
DEADLINE_SLACK_SECONDS = 1.5
# Guard around every scoring (seconds); tripping it means a deadline failed.
MUST_END_WITHIN_SECONDS = 20.0

QUERY = "deploy failed on billing"
PASSAGES = (
    Passage("m1", "the deploy of billing failed at noon"),
    Passage("m2", "lunch is at noon"),
    Passage("m3", "billing deploy rolled back"),
)
# (format, path under the server of the base URL): Cohere's base ends in /v2, TEI's is the server.
FORMATS = [pytest.param("tei", "", id="tei"), pytest.param("cohere", "/v2", id="cohere")]


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeSecondStage, UvicornThread]]:
    fake = FakeSecondStage()
    with fake.serve() as server:
        yield fake, server


@pytest.fixture
def fake(fake_server: tuple[FakeSecondStage, UvicornThread]) -> FakeSecondStage:
    fake_server[0].reset()
    return fake_server[0]


@pytest.fixture
def server_url(fake_server: tuple[FakeSecondStage, UvicornThread]) -> str:
    return fake_server[1].url


@pytest.fixture
async def client() -> AsyncIterator[GuardedClient]:
    async with GuardedClient(LOOPBACK) as guarded:
        yield guarded


def rerank(
    client: GuardedClient,
    server_url: str,
    rerank_format: str,
    path: str,
    *,
    model: str = "rerank-v3.5",
    timeout_seconds: float = UNHURRIED_DEADLINE_SECONDS,
) -> RerankStage:
    return RerankStage(
        client,
        server_url + path,
        rerank_format=rerank_format,
        model=model,
        api_key=API_KEY,
        timeout_seconds=timeout_seconds,
    )


def embeddings(
    client: GuardedClient,
    server_url: str,
    *,
    timeout_seconds: float = UNHURRIED_DEADLINE_SECONDS,
    cache_entries: int = 4096,
) -> EmbeddingsStage:
    return EmbeddingsStage(
        client,
        f"{server_url}/v1",
        "bge-large",
        api_key=API_KEY,
        timeout_seconds=timeout_seconds,
        cache_entries=cache_entries,
    )


async def scored(
    stage: RerankStage | EmbeddingsStage, query: str = QUERY, passages: Any = PASSAGES
) -> dict[str, float]:
    with anyio.fail_after(MUST_END_WITHIN_SECONDS):
        return dict(await stage.score(query, passages))


def cosine(a: str, b: str) -> float:
    left, right = np.asarray(vector(a)), np.asarray(vector(b))
    return float(left @ right / (np.linalg.norm(left) * np.linalg.norm(right)))


def assert_key_kept(caplog: pytest.LogCaptureFixture, *texts: str) -> None:
    """The key is in none of ``texts`` nor any log record (message, arguments or traceback)."""
    for text in texts:
        assert API_KEY not in text
    for record in caplog.records:
        assert API_KEY not in record.getMessage()
        assert API_KEY not in (record.exc_text or "")
    assert API_KEY not in caplog.text


# -- rerank: what is sent and what comes back -------------------------------------------------------


@pytest.mark.parametrize(("rerank_format", "path"), FORMATS)
async def test_rerank_scores_every_passage_in_its_own_order(
    fake: FakeSecondStage, server_url: str, client: GuardedClient, rerank_format: str, path: str
) -> None:
    """The server answers best first; each score still lands on the passage it belongs to."""
    stage = rerank(client, server_url, rerank_format, path)
    assert await scored(stage) == {p.id: overlap(QUERY, p.text) for p in PASSAGES}
    (request,) = fake.requests
    assert request.authorization == f"Bearer {API_KEY}"
    texts = [p.text for p in PASSAGES]
    if rerank_format == "tei":
        assert request.path == "/rerank"
        assert request.body == {"query": QUERY, "texts": texts, "truncate": True, "raw_scores": False}
    else:
        assert request.path == "/v2/rerank"
        assert request.body == {"model": "rerank-v3.5", "query": QUERY, "documents": texts, "top_n": 3}


@pytest.mark.parametrize(
    ("rerank_format", "model", "expected"),
    [
        pytest.param("tei", "", "rerank:tei:127.0.0.1:{port}", id="tei-named-by-host-and-port"),
        pytest.param("cohere", "", "rerank:cohere:127.0.0.1:{port}", id="vllm-without-a-model"),
        pytest.param("cohere", "jina-reranker-v2", "rerank:cohere:jina-reranker-v2", id="named-model"),
    ],
)
async def test_rerank_model_id_names_the_model_or_the_host(
    fake_server: tuple[FakeSecondStage, UvicornThread],
    client: GuardedClient,
    rerank_format: str,
    model: str,
    expected: str,
) -> None:
    server = fake_server[1]
    stage = rerank(client, server.url, rerank_format, "/v2", model=model)
    assert stage.model_id == expected.format(port=server.port)
    assert (stage.kind, stage.coverage(), stage.coverage().ratio) == ("rerank", FULL_COVERAGE, 1.0)
    assert API_KEY not in repr(stage)


async def test_cohere_shape_without_a_model_sends_none(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    """vLLM serves one model and takes a request without one; an empty name is never sent."""
    await scored(rerank(client, server_url, "cohere", "/v2", model=""))
    assert "model" not in fake.requests[0].body


@pytest.mark.parametrize(("rerank_format", "path"), FORMATS)
async def test_rerank_sends_at_most_the_cap_of_passages_per_call(
    fake: FakeSecondStage, server_url: str, client: GuardedClient, rerank_format: str, path: str
) -> None:
    passages = [Passage(f"m{n}", f"billing note {n}" + " deploy" * (n % 3)) for n in range(50)]
    scores = await scored(rerank(client, server_url, rerank_format, path), passages=passages)
    assert scores == {p.id: overlap(QUERY, p.text) for p in passages}
    field = "texts" if rerank_format == "tei" else "documents"
    sent = sorted((len(r.body[field]) for r in fake.requests), reverse=True)
    assert sent == [MAX_RERANK_PASSAGES_PER_CALL, 50 - MAX_RERANK_PASSAGES_PER_CALL]


@pytest.mark.parametrize(("rerank_format", "path"), FORMATS)
async def test_rerank_cuts_long_passages_and_queries(
    fake: FakeSecondStage, server_url: str, client: GuardedClient, rerank_format: str, path: str
) -> None:
    long_text = "billing " * (MAX_PASSAGE_CHARS // 4)
    await scored(
        rerank(client, server_url, rerank_format, path), query=long_text, passages=[Passage("m", long_text)]
    )
    body = fake.requests[0].body
    sent = body["texts"] if rerank_format == "tei" else body["documents"]
    assert body["query"] == sent[0] == long_text[:MAX_PASSAGE_CHARS]


async def test_no_passages_make_no_call(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    assert await scored(rerank(client, server_url, "tei", ""), passages=[]) == {}
    assert await scored(embeddings(client, server_url), passages=[]) == {}
    assert fake.requests == []


# -- rerank: every misbehaviour is one SecondStageError -----------------------------------------------

RERANK_FAILURES = [
    pytest.param("slow", r"no answer within 0\.4 s", id="slow"),
    pytest.param("500", "answered HTTP 500", id="http-500"),
    pytest.param("401-echo", r"answered HTTP 401 \(is second_stage_api_key", id="http-401-echoing-the-key"),
    pytest.param("redirect", "redirect", id="redirect"),
    pytest.param("malformed", "not valid JSON", id="malformed-json"),
    pytest.param("nan", "not valid JSON", id="nan-score"),
    pytest.param("huge", "has no finite", id="infinite-score"),
    pytest.param("wrong-index", "has no index from 0 to 2", id="index-out-of-range"),
    pytest.param("duplicate", "is given twice", id="duplicate-index"),
    pytest.param("bool-index", "has no index from 0 to 2", id="boolean-index"),
    pytest.param("string-score", "has no finite", id="string-score"),
    pytest.param("missing", "holds 2 results for 3 passages", id="result-missing"),
    pytest.param("not-a-list", "(not a list of results|no 'results' list)", id="no-results"),
    pytest.param("echo-in-result", "has no index from 0 to 2", id="key-echoed-in-a-bad-result"),
    pytest.param("oversize", "over the cap", id="too-large-body"),
]


@pytest.mark.parametrize(("rerank_format", "path"), FORMATS)
@pytest.mark.parametrize(("behaviour", "fragment"), RERANK_FAILURES)
async def test_a_rerank_misbehaviour_is_a_stage_error_without_the_key(
    fake: FakeSecondStage,
    server_url: str,
    client: GuardedClient,
    caplog: pytest.LogCaptureFixture,
    rerank_format: str,
    path: str,
    behaviour: str,
    fragment: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.behaviour = behaviour
    timeout = SHORT_DEADLINE_SECONDS if behaviour == "slow" else UNHURRIED_DEADLINE_SECONDS
    stage = rerank(client, server_url, rerank_format, path, timeout_seconds=timeout)
    started = time.monotonic()
    with pytest.raises(SecondStageError, match=fragment) as raised:
        await scored(stage)
    message = str(raised.value)
    assert message.startswith(f"second stage rerank:{rerank_format}:rerank-v3.5: ")
    if behaviour == "slow":
        assert time.monotonic() - started < SHORT_DEADLINE_SECONDS + DEADLINE_SLACK_SECONDS
    assert_key_kept(caplog, message, repr(raised.value))


async def test_an_echoed_key_is_redacted_in_the_quoted_result(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    """The result quoted in the message is the upstream's text: the key it quotes becomes [redacted]."""
    fake.behaviour = "echo-in-result"
    with pytest.raises(SecondStageError, match=r"Bearer \[redacted\]"):
        await scored(rerank(client, server_url, "tei", ""))


async def test_a_destination_the_policy_refuses_is_a_stage_error(server_url: str) -> None:
    async with GuardedClient(OutboundPolicy()) as strict:
        with pytest.raises(SecondStageError, match=r"second stage rerank:tei:.*refused"):
            await scored(rerank(strict, server_url, "tei", ""))


async def test_scorings_run_at_once_each_get_their_own_scores(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    stage = rerank(client, server_url, "cohere", "/v2")
    queries = ["deploy", "billing noon", "lunch", "rolled back"]
    results: dict[str, dict[str, float]] = {}

    async def one(query: str) -> None:
        results[query] = await scored(stage, query=query)

    async with anyio.create_task_group() as group:
        for query in queries:
            group.start_soon(one, query)
    assert results == {q: {p.id: overlap(q, p.text) for p in PASSAGES} for q in queries}


# -- embeddings ----------------------------------------------------------------------------------------


async def test_embeddings_scores_are_cosines(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    stage = embeddings(client, server_url)
    scores = await scored(stage)
    assert scores == pytest.approx({p.id: cosine(QUERY, p.text) for p in PASSAGES}, abs=1e-6)
    assert scores["m1"] > scores["m2"]
    (request,) = fake.requests
    assert request.path == "/v1/embeddings"
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.body == {"model": "bge-large", "input": [QUERY, *(p.text for p in PASSAGES)]}
    assert (stage.model_id, stage.kind, stage.coverage().ratio) == ("embeddings:bge-large", "embeddings", 1.0)
    assert API_KEY not in repr(stage)


async def test_embeddings_send_each_passage_once_while_it_is_cached(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    stage = embeddings(client, server_url)
    first = await scored(stage)
    again = await scored(stage)
    twin = Passage("m4", PASSAGES[0].text)  # another message, the same text
    more = await scored(stage, query="lunch", passages=[*PASSAGES, twin, Passage("m5", "new text")])
    assert first == again
    assert more["m4"] == more["m1"]
    assert [r.body["input"] for r in fake.requests] == [
        [QUERY, *(p.text for p in PASSAGES)],
        [QUERY],
        ["lunch", "new text"],
    ]


async def test_the_cache_forgets_the_least_recently_used(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    stage = embeddings(client, server_url, cache_entries=2)
    a, b, c = PASSAGES
    await scored(stage, passages=[a, b])
    await scored(stage, passages=[a])  # a is used again: b is now the oldest
    await scored(stage, passages=[c])  # c evicts b
    await scored(stage, passages=[a, b])
    assert [r.body["input"][1:] for r in fake.requests] == [[a.text, b.text], [], [c.text], [b.text]]
    await stage.aclose()
    await scored(stage, passages=[a])
    assert fake.requests[-1].body["input"][1:] == [a.text]


async def test_embeddings_go_in_batches_of_the_endpoint_cap(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    passages = [Passage(f"m{n}", f"message number {n}") for n in range(100)]
    scores = await scored(embeddings(client, server_url), passages=passages)
    assert scores == pytest.approx({p.id: cosine(QUERY, p.text) for p in passages}, abs=1e-6)
    sent = sorted((len(r.body["input"]) for r in fake.requests), reverse=True)
    assert sent == [MAX_EMBEDDING_BATCH_TEXTS, 101 - MAX_EMBEDDING_BATCH_TEXTS]


EMBEDDINGS_FAILURES = [
    pytest.param("slow", r"no answer within 0\.4 s", id="slow"),
    pytest.param("500", "answered HTTP 500", id="http-500"),
    pytest.param("401-echo", r"answered HTTP 401 \(is second_stage_api_key", id="http-401-echoing-the-key"),
    pytest.param("malformed", "not valid JSON", id="malformed-json"),
    pytest.param("nan", "not valid JSON", id="nan-value"),
    pytest.param("huge", "non-finite", id="infinite-value"),
    pytest.param("missing", "without 4 items", id="vector-missing"),
    pytest.param("wrong-index", "without 'embedding' or 'index'", id="index-out-of-range"),
    pytest.param("duplicate", "index 0 twice", id="duplicate-index"),
    pytest.param("string-score", "not lists of numbers|without 'embedding'", id="vector-not-numbers"),
    pytest.param("echo-in-result", "not lists of numbers|without 'embedding'", id="key-echoed-as-a-vector"),
    pytest.param("not-a-list", "without 4 items", id="no-data"),
    pytest.param("oversize", "over the cap", id="too-large-body"),
]


@pytest.mark.parametrize(("behaviour", "fragment"), EMBEDDINGS_FAILURES)
async def test_an_embeddings_misbehaviour_is_a_stage_error_without_the_key(
    fake: FakeSecondStage,
    server_url: str,
    client: GuardedClient,
    caplog: pytest.LogCaptureFixture,
    behaviour: str,
    fragment: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.behaviour = behaviour
    timeout = SHORT_DEADLINE_SECONDS if behaviour == "slow" else UNHURRIED_DEADLINE_SECONDS
    stage = embeddings(client, server_url, timeout_seconds=timeout)
    started = time.monotonic()
    with pytest.raises(SecondStageError, match=fragment) as raised:
        await scored(stage)
    message = str(raised.value)
    assert message.startswith("second stage embeddings:bge-large: ")
    if behaviour == "slow":
        assert time.monotonic() - started < SHORT_DEADLINE_SECONDS + DEADLINE_SLACK_SECONDS
    assert_key_kept(caplog, message, repr(raised.value))
    fake.behaviour = "ok"  # a failed scoring caches nothing: the next one sends every passage
    await scored(stage)
    assert len(fake.requests[-1].body["input"]) == 1 + len(PASSAGES)


async def test_a_change_of_dimensions_is_refused(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    stage = embeddings(client, server_url)
    await scored(stage)
    fake.behaviour = "wide"
    with pytest.raises(SecondStageError, match="17 dimensions, expected 16"):
        await scored(stage, query="another question")


# -- settings and the factory -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            {},
            {
                "second_stage": "auto",
                "second_stage_url": "",
                "second_stage_rerank_format": "tei",
                "second_stage_timeout_seconds": 3.0,
                "second_stage_candidates": 50,
                "second_stage_strong_score": None,
                "second_stage_related_score": None,
            },
            id="defaults",
        ),
        pytest.param(
            {
                "AI_SEARCH_SECOND_STAGE": "rerank",
                "AI_SEARCH_SECOND_STAGE_URL": "http://127.0.0.1:8080",
                "AI_SEARCH_SECOND_STAGE_RERANK_FORMAT": "cohere",
                "AI_SEARCH_SECOND_STAGE_TIMEOUT_SECONDS": " 1.5 ",
                "AI_SEARCH_SECOND_STAGE_CANDIDATES": "80",
            },
            {
                "second_stage": "rerank",
                "second_stage_rerank_format": "cohere",
                "second_stage_timeout_seconds": 1.5,
                "second_stage_candidates": 80,
            },
            id="rerank-configured",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": "0.8", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "-0.25"},
            {"second_stage_strong_score": 0.8, "second_stage_related_score": -0.25},
            id="bands-set",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": " ", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": ""},
            {"second_stage_strong_score": None, "second_stage_related_score": None},
            id="empty-is-unset",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": "0.5", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "0.5"},
            {"second_stage_strong_score": 0.5, "second_stage_related_score": 0.5},
            id="one-band-boundary",
        ),
    ],
)
def test_second_stage_settings_are_read(env: dict[str, str], expected: dict[str, object]) -> None:
    settings = load_settings(environ=env)
    assert {name: getattr(settings, name) for name in expected} == expected


def test_settings_from_a_config_file_take_a_whole_number_as_a_float(tmp_path: Any) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "second_stage_timeout_seconds = 2\nsecond_stage_strong_score = 1\nsecond_stage_related_score = 0\n"
    )
    settings = load_settings(config_file=config, environ={})
    assert settings.second_stage_timeout_seconds == 2.0
    assert isinstance(settings.second_stage_timeout_seconds, float)
    assert (settings.second_stage_strong_score, settings.second_stage_related_score) == (1.0, 0.0)


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE": "cross"}, "'second_stage'.*expected auto, local", id="unknown-stage"
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_RERANK_FORMAT": "jina"},
            "'second_stage_rerank_format'",
            id="unknown-format",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE": "rerank"},
            r"second_stage = rerank needs second_stage_url \(env AI_SEARCH_SECOND_STAGE_URL\)",
            id="rerank-without-a-url",
        ),
        pytest.param(
            {
                "AI_SEARCH_SECOND_STAGE": "embeddings",
                "AI_SEARCH_SECOND_STAGE_URL": "http://127.0.0.1:11434/v1",
            },
            "second_stage = embeddings needs second_stage_model",
            id="embeddings-without-a-model",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_URL": "ftp://rerank.internal"},
            "'second_stage_url': .*scheme 'ftp'",
            id="url-not-http",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_URL": "https://user:pw@rerank.example"},
            "'second_stage_url'",
            id="url-with-credentials",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_TIMEOUT_SECONDS": "0"},
            "'second_stage_timeout_seconds'.*from 0.1 to 60",
            id="timeout-zero",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_TIMEOUT_SECONDS": "soon"},
            "'second_stage_timeout_seconds'",
            id="timeout-text",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_CANDIDATES": "0"},
            "'second_stage_candidates'.*from 1 to 200",
            id="no-candidates",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": "nan", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "0"},
            "'second_stage_strong_score'.*finite number",
            id="threshold-nan",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": "1", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "-inf"},
            "'second_stage_related_score'.*finite number",
            id="threshold-infinite",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_STRONG_SCORE": "0.2", "AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "0.6"},
            "'second_stage_strong_score': 0.2 is below second_stage_related_score",
            id="strong-below-related",
        ),
        pytest.param(
            {"AI_SEARCH_SECOND_STAGE_RELATED_SCORE": "0.3"},
            "'second_stage_related_score' needs second_stage_strong_score",
            id="one-threshold-alone",
        ),
    ],
)
def test_bad_second_stage_settings_fail_naming_the_setting(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(SettingsError, match=fragment):
        load_settings(environ=env)


def test_the_key_is_a_secret_setting() -> None:
    settings = load_settings(environ={"AI_SEARCH_SECOND_STAGE_API_KEY": API_KEY})
    assert settings.public_view()["second_stage_api_key"] is True
    assert API_KEY not in repr(settings.public_view())
    rows = {name: (type_name, default) for name, type_name, default, _help in settings_table()}
    assert rows["second_stage_strong_score"] == ("float", None)
    assert rows["second_stage_timeout_seconds"] == ("float", 3.0)


@pytest.mark.parametrize(
    ("changes", "kind", "model_id"),
    [
        pytest.param({}, None, None, id="auto-is-the-wirings"),
        pytest.param({"second_stage": "local"}, None, None, id="local"),
        pytest.param({"second_stage": "off"}, None, None, id="off"),
        pytest.param(
            {"second_stage": "rerank", "second_stage_url": "http://127.0.0.1:8080"},
            RerankStage,
            "rerank:tei:127.0.0.1:8080",
            id="rerank-tei",
        ),
        pytest.param(
            {
                "second_stage": "rerank",
                "second_stage_url": "https://api.cohere.com/v2",
                "second_stage_rerank_format": "cohere",
                "second_stage_model": "rerank-v3.5",
            },
            RerankStage,
            "rerank:cohere:rerank-v3.5",
            id="rerank-cohere",
        ),
        pytest.param(
            {
                "second_stage": "embeddings",
                "second_stage_url": "http://127.0.0.1:11434/v1",
                "second_stage_model": "nomic-embed-text",
            },
            EmbeddingsStage,
            "embeddings:nomic-embed-text",
            id="embeddings",
        ),
    ],
)
async def test_build_remote_stage_from_settings(
    client: GuardedClient, changes: dict[str, Any], kind: type | None, model_id: str | None
) -> None:
    stage = build_remote_stage(dataclasses.replace(Settings(), **changes), client)
    if kind is None:
        assert stage is None
        return
    assert isinstance(stage, kind)
    assert stage.model_id == model_id


async def test_the_factory_passes_the_key_and_the_deadline(
    fake: FakeSecondStage, server_url: str, client: GuardedClient
) -> None:
    settings = dataclasses.replace(
        Settings(),
        second_stage="rerank",
        second_stage_url=server_url,
        second_stage_api_key=API_KEY,
        second_stage_timeout_seconds=SHORT_DEADLINE_SECONDS,
    )
    stage = build_remote_stage(settings, client)
    assert stage is not None
    assert await scored(stage) == {p.id: overlap(QUERY, p.text) for p in PASSAGES}  # type: ignore[arg-type]
    assert fake.requests[0].authorization == f"Bearer {API_KEY}"
    fake.behaviour = "slow"
    with pytest.raises(SecondStageError, match=r"within 0\.4 s"):
        await scored(stage)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("base_url", "model"),
    [pytest.param("", "m", id="no-url"), pytest.param("http://127.0.0.1:9/v1", " ", id="no-model")],
)
async def test_an_unconfigured_embeddings_stage_names_its_settings(
    client: GuardedClient, base_url: str, model: str
) -> None:
    with pytest.raises(EmbedderUnavailable, match="second_stage_url and second_stage_model"):
        EmbeddingsStage(client, base_url, model)


@pytest.mark.parametrize(
    ("base_url", "rerank_format", "fragment"),
    [
        pytest.param("http://127.0.0.1:9", "jina", "rerank format 'jina'", id="unknown-format"),
        pytest.param(" ", "tei", "needs second_stage_url", id="no-url"),
    ],
)
async def test_an_unconfigured_rerank_stage_says_what_is_missing(
    client: GuardedClient, base_url: str, rerank_format: str, fragment: str
) -> None:
    with pytest.raises(ValueError, match=fragment):
        RerankStage(client, base_url, rerank_format=rerank_format)
