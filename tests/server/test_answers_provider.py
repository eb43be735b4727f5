"""The OpenAI-compatible provider against a real local OpenAI-compatible server (``_fake_openai``).

Real sockets through the real guarded client: models, plain and streamed completions, and every
failure the issue names (500, too slow, garbage, empty, oversize, cut mid-stream), each mapped to
its stable error type. Calls that must end by themselves run under a guard, so nothing can hang.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from ai_search import ModelOption
from ai_search_server.answers.provider import (
    ANSWER_TEMPERATURE,
    Completion,
    OpenAICompatibleProvider,
    ProviderConfig,
    ProviderEmptyResponse,
    ProviderError,
    ProviderRequestFailed,
    endpoint_url,
)
from ai_search_server.outbound import GuardedClient, OutboundPolicy

from ._fake_openai import DEFAULT_ANSWER, DEFAULT_CHUNKS, PROVIDER_SECRET_TEXT, FakeOpenAI, UvicornThread

pytestmark = pytest.mark.anyio

API_KEY = "sk-test-4c0ffee-do-not-leak-91b2"
SYSTEM_PROMPT = "You answer from sources."
USER_PROMPT = "User question (untrusted):\nwhy?"
# Deadline for the slow-provider cases (seconds): short, so the file stays fast.
SHORT_DEADLINE_SECONDS = 0.5
# Deadline for the cases that must fail for another reason (seconds): a 5 MiB oversize body takes
# longer than the short one on a busy machine, and must still be told apart from a timeout.
UNHURRIED_DEADLINE_SECONDS = 5.0
# Guard around calls that must end by themselves (seconds); tripping it means a deadline failed.
MUST_END_WITHIN_SECONDS = 10.0
LOOPBACK = OutboundPolicy(allow_hosts=("127.0.0.1",))


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[FakeOpenAI, UvicornThread]]:
    fake = FakeOpenAI()
    with fake.serve() as server:
        yield fake, server


@pytest.fixture
def fake(fake_server: tuple[FakeOpenAI, UvicornThread]) -> FakeOpenAI:
    fake_server[0].reset()
    return fake_server[0]


@pytest.fixture
def base_url(fake_server: tuple[FakeOpenAI, UvicornThread]) -> str:
    return f"{fake_server[1].url}/v1"


@pytest.fixture
async def client() -> AsyncIterator[GuardedClient]:
    async with GuardedClient(LOOPBACK) as guarded:
        yield guarded


def make_provider(
    client: GuardedClient,
    base_url: str,
    *,
    model: str = "gpt-4o",
    api_key: str = API_KEY,
    deadline_seconds: float = SHORT_DEADLINE_SECONDS,
) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        client,
        ProviderConfig(base_url=base_url, model=model, api_key=api_key),
        completion_timeout_seconds=deadline_seconds,
        models_timeout_seconds=deadline_seconds,
    )


def deadline_for(timed_out: bool) -> float:
    """The short deadline where the case is a timeout, an unhurried one where it must not be."""
    return SHORT_DEADLINE_SECONDS if timed_out else UNHURRIED_DEADLINE_SECONDS


async def collect(provider: OpenAICompatibleProvider) -> list[str]:
    with anyio.fail_after(MUST_END_WITHIN_SECONDS):
        return [delta async for delta in provider.stream(SYSTEM_PROMPT, USER_PROMPT)]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- URLs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "path", "expected"),
    [
        pytest.param(
            "https://api.openai.com/v1", "models", "https://api.openai.com/v1/models", id="base-path-kept"
        ),
        pytest.param(
            "https://h/v1/", "chat/completions", "https://h/v1/chat/completions", id="trailing-slash"
        ),
        pytest.param("http://127.0.0.1:11434", "models", "http://127.0.0.1:11434/models", id="bare-host"),
    ],
)
def test_endpoint_urls_keep_the_base_path(base: str, path: str, expected: str) -> None:
    assert endpoint_url(base, path) == expected


# -- models --------------------------------------------------------------------------------------


async def test_models_are_listed_sorted_with_the_missing_selected_model_first(
    fake: FakeOpenAI, base_url: str, client: GuardedClient
) -> None:
    provider = make_provider(client, base_url, model="my-finetune")
    options = await provider.list_models()
    assert [o.key for o in options] == ["my-finetune", "a-model", "B-model", "gpt-4o", "llama3.1:8b"]
    assert all(o.key == o.label for o in options)
    (request,) = fake.requests
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize(
    "behaviour",
    [
        pytest.param("500", id="server-error"),
        pytest.param("slow", id="slower-than-the-deadline"),
        pytest.param("garbage", id="not-json"),
        pytest.param("oversize", id="larger-than-the-cap"),
    ],
)
async def test_models_fall_back_to_the_selected_model_whatever_goes_wrong(
    fake: FakeOpenAI, base_url: str, client: GuardedClient, behaviour: str
) -> None:
    fake.behaviour = behaviour
    with anyio.fail_after(MUST_END_WITHIN_SECONDS):
        options = await make_provider(client, base_url, model="gpt-4o").list_models()
    assert options == [ModelOption("gpt-4o", "gpt-4o")]
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("policy", "base", "expected_requests"),
    [
        pytest.param(LOOPBACK, "", 0, id="no-base-url-asks-nobody"),
        pytest.param(OutboundPolicy(), "fake", 0, id="loopback-not-allow-listed-is-refused"),
    ],
)
async def test_models_fall_back_without_reaching_the_provider(
    fake: FakeOpenAI, base_url: str, policy: OutboundPolicy, base: str, expected_requests: int
) -> None:
    async with GuardedClient(policy) as guarded:
        provider = make_provider(guarded, base_url if base == "fake" else base, model="")
        assert await provider.list_models() == []
    assert len(fake.requests) == expected_requests


# -- plain completions ---------------------------------------------------------------------------


async def test_completion_sends_the_openai_request_and_returns_the_content(
    fake: FakeOpenAI, base_url: str, client: GuardedClient
) -> None:
    answer = await make_provider(client, base_url).complete(SYSTEM_PROMPT, USER_PROMPT)
    assert answer == Completion(DEFAULT_ANSWER, truncated=False)
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {
        "model": "gpt-4o",
        "temperature": ANSWER_TEMPERATURE,
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": USER_PROMPT}],
    }


async def test_an_empty_key_sends_no_authorization_header(
    fake: FakeOpenAI, base_url: str, client: GuardedClient
) -> None:
    provider = make_provider(client, base_url, api_key="")
    await provider.complete(SYSTEM_PROMPT, USER_PROMPT)
    await provider.list_models()
    assert [("authorization" in r.headers) for r in fake.requests] == [False, False]


@pytest.mark.parametrize(
    ("behaviour", "error", "timed_out"),
    [
        pytest.param("500", ProviderRequestFailed, False, id="http-500-is-request-failed"),
        pytest.param("slow", ProviderRequestFailed, True, id="past-the-deadline-is-a-timeout"),
        pytest.param("garbage", ProviderRequestFailed, False, id="garbage-json-is-request-failed"),
        pytest.param("oversize", ProviderRequestFailed, False, id="oversize-body-is-request-failed"),
        pytest.param("empty", ProviderEmptyResponse, False, id="whitespace-answer-is-empty"),
        pytest.param("no-choices", ProviderEmptyResponse, False, id="no-choices-is-empty"),
    ],
)
async def test_completion_failures_map_to_stable_error_types(
    fake: FakeOpenAI,
    base_url: str,
    client: GuardedClient,
    behaviour: str,
    error: type[ProviderError],
    timed_out: bool,
) -> None:
    fake.behaviour = behaviour
    with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(error) as caught:
        provider = make_provider(client, base_url, deadline_seconds=deadline_for(timed_out))
        await provider.complete(SYSTEM_PROMPT, USER_PROMPT)
    assert type(caught.value) is error
    assert caught.value.timed_out is timed_out
    assert PROVIDER_SECRET_TEXT not in caught.value.message
    assert caught.value.message.startswith("The AI provider")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(42, ProviderEmptyResponse, id="content-not-a-string"),
        pytest.param(None, ProviderEmptyResponse, id="content-null"),
        pytest.param("", ProviderEmptyResponse, id="content-empty"),
    ],
)
async def test_content_that_is_not_text_is_an_empty_response(
    fake: FakeOpenAI, base_url: str, client: GuardedClient, content: object, expected: type[ProviderError]
) -> None:
    fake.answer = content  # type: ignore[assignment]
    with pytest.raises(expected):
        await make_provider(client, base_url).complete(SYSTEM_PROMPT, USER_PROMPT)


async def test_an_unreachable_provider_is_request_failed(client: GuardedClient) -> None:
    provider = make_provider(client, f"http://127.0.0.1:{closed_port()}/v1")
    with anyio.fail_after(MUST_END_WITHIN_SECONDS), pytest.raises(ProviderRequestFailed):
        await provider.complete(SYSTEM_PROMPT, USER_PROMPT)


# -- streamed completions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "behaviour",
    [
        pytest.param("ok", id="ends-with-done"),
        pytest.param("finish-only", id="ends-with-a-finish-reason-and-no-done"),
    ],
)
async def test_stream_yields_the_deltas_as_sent(
    fake: FakeOpenAI, base_url: str, client: GuardedClient, behaviour: str
) -> None:
    fake.behaviour = behaviour
    assert await collect(make_provider(client, base_url)) == list(DEFAULT_CHUNKS)
    (request,) = fake.requests
    assert request.body["stream"] is True
    assert request.headers["accept"] == "text/event-stream"


async def test_an_answer_stopped_at_the_token_limit_is_kept_and_marked_truncated(
    fake: FakeOpenAI, base_url: str, client: GuardedClient
) -> None:
    fake.behaviour = "length"
    provider = make_provider(client, base_url)
    assert await provider.complete(SYSTEM_PROMPT, USER_PROMPT) == Completion(DEFAULT_ANSWER, truncated=True)
    stream = provider.stream(SYSTEM_PROMPT, USER_PROMPT)
    assert [delta async for delta in stream] == list(DEFAULT_CHUNKS)
    assert stream.truncated is True


@pytest.mark.parametrize("behaviour", ["ok", "finish-only"])
async def test_an_answer_the_model_finished_is_not_truncated(
    fake: FakeOpenAI, base_url: str, client: GuardedClient, behaviour: str
) -> None:
    fake.behaviour = behaviour
    stream = make_provider(client, base_url).stream(SYSTEM_PROMPT, USER_PROMPT)
    assert [delta async for delta in stream] == list(DEFAULT_CHUNKS)
    assert stream.truncated is False


@pytest.mark.parametrize(
    ("behaviour", "error", "timed_out"),
    [
        pytest.param("500", ProviderRequestFailed, False, id="http-500-before-the-stream"),
        pytest.param("slow", ProviderRequestFailed, True, id="no-first-byte-before-the-deadline"),
        pytest.param("stall", ProviderRequestFailed, True, id="stalls-after-the-first-token"),
        pytest.param("cut", ProviderRequestFailed, False, id="cut-mid-stream-is-not-complete"),
        pytest.param("garbage", ProviderRequestFailed, False, id="an-event-that-is-not-json"),
        pytest.param("error-event", ProviderRequestFailed, False, id="an-error-object-mid-stream"),
        pytest.param("oversize", ProviderRequestFailed, False, id="stream-larger-than-the-cap"),
        pytest.param("empty", ProviderEmptyResponse, False, id="only-whitespace-streamed"),
        pytest.param("no-choices", ProviderEmptyResponse, False, id="no-text-at-all"),
    ],
)
async def test_stream_failures_map_to_stable_error_types(
    fake: FakeOpenAI,
    base_url: str,
    client: GuardedClient,
    behaviour: str,
    error: type[ProviderError],
    timed_out: bool,
) -> None:
    fake.behaviour = behaviour
    with pytest.raises(error) as caught:
        await collect(make_provider(client, base_url, deadline_seconds=deadline_for(timed_out)))
    assert type(caught.value) is error
    assert caught.value.timed_out is timed_out
    assert PROVIDER_SECRET_TEXT not in caught.value.message


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["401-echo", "500", "garbage", "ok"])
async def test_the_api_key_never_reaches_messages_or_logs(
    fake: FakeOpenAI,
    base_url: str,
    client: GuardedClient,
    caplog: pytest.LogCaptureFixture,
    behaviour: str,
) -> None:
    fake.behaviour = behaviour
    provider = make_provider(client, base_url)
    messages: list[str] = [repr(provider.config)]
    with caplog.at_level(logging.DEBUG):
        for call in (provider.complete(SYSTEM_PROMPT, USER_PROMPT), collect(provider)):
            try:
                await call
            except ProviderError as exc:
                messages.append(exc.message)
        await provider.list_models()
    assert fake.requests, "the provider was reached"
    assert all(r.headers.get("authorization") == f"Bearer {API_KEY}" for r in fake.requests)
    if behaviour == "401-echo":
        assert "[redacted]" in caplog.text, "the echoed key was logged, redacted"
    assert API_KEY not in caplog.text
    assert not any(API_KEY in m for m in messages)
