"""An OpenAI-compatible chat provider (OpenAI, Ollama, vLLM, llama.cpp, LM Studio) over the guarded client.

Three calls, each through the app's one ``GuardedClient`` (allow-list, destination checked after DNS,
no redirects, one total deadline, a byte cap):

- ``list_models``: ``GET {base}/models`` (10 s, 5 MiB). Never fails: any trouble gives the fallback,
  the selected model alone, so the settings page always renders.
- ``complete``: ``POST {base}/chat/completions`` (20 s, 5 MiB), ``temperature`` 0.2, one system and one
  user message; the answer is ``choices[0].message.content``, as a ``Completion``.
- ``stream``: the same with ``stream: true``; a ``ProviderStream`` that yields the content deltas of the
  server-sent events as they arrive. A stream counts as complete only at ``data: [DONE]`` or a chunk
  with a ``finish_reason``; one that just stops is a failure, so a cut answer never passes for a whole one.

A ``finish_reason`` of ``length`` (the model reached its output token limit) or ``content_filter`` (the
provider's filter stopped it) ends an answer the model had not finished: the text is kept, and the
``Completion`` or the ended ``ProviderStream`` says ``truncated``, so the caller can say so.

The exception tree (the service maps it to the API's ``UpstreamFailure``)::

    ProviderError                 error_type
    ├── ProviderRequestFailed     error-ai-provider-request-failed  non-2xx, timeout, busy, cap, bad JSON, cut off
    └── ProviderEmptyResponse     error-ai-provider-empty-response  no content string, or only whitespace

Messages are written for the API's caller: they never quote the provider's body. What the provider
said is logged at debug level, with the API key replaced, since some providers echo the key they
were given ("Incorrect API key provided: sk-...").
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urljoin

from ai_search import MAX_AI_SERVICE_RESPONSE_SIZE, ModelOption, model_list_fallback, parse_model_list

from ..outbound import (
    GuardedClient,
    OutboundBusy,
    OutboundError,
    OutboundHTTPError,
    OutboundTimeout,
    OutboundTooLarge,
)
from ..redaction import SecretRedactor

__all__ = [
    "ANSWER_TEMPERATURE",
    "COMPLETION_TIMEOUT_SECONDS",
    "MAX_PROVIDER_RESPONSE_BYTES",
    "MODELS_TIMEOUT_SECONDS",
    "PROVIDER_NAME",
    "TRUNCATING_FINISH_REASONS",
    "Completion",
    "OpenAICompatibleProvider",
    "ProviderConfig",
    "ProviderEmptyResponse",
    "ProviderError",
    "ProviderRequestFailed",
    "ProviderStream",
]

log = logging.getLogger(__name__)

PROVIDER_NAME = "OpenAI compatible"
# Whole-call deadline of one answer, streamed or not (seconds), as upstream.
COMPLETION_TIMEOUT_SECONDS = 20.0
# Whole-call deadline of the model list (seconds), as upstream; the settings page waits for it.
MODELS_TIMEOUT_SECONDS = 10.0
# Body cap of either call (bytes): the upstream's 5 MiB.
MAX_PROVIDER_RESPONSE_BYTES = MAX_AI_SERVICE_RESPONSE_SIZE
# Sampling temperature of answers, as upstream: low, so answers stay close to the sources.
ANSWER_TEMPERATURE = 0.2
# Characters of a provider's error body kept in the debug log.
MAX_LOGGED_PROVIDER_TEXT_CHARS = 500

# `finish_reason`s that end an answer before the model finished it (OpenAI's; Ollama, vLLM and
# llama.cpp send `length` too): the output token limit, and the provider's content filter.
TRUNCATING_FINISH_REASONS = frozenset({"length", "content_filter"})

_STREAM_DONE = "[DONE]"


class ProviderError(Exception):
    """The provider gave no usable answer; ``message`` is safe to show, ``error_type`` is stable."""

    error_type: ClassVar[str] = "error-ai-provider-request-failed"

    def __init__(self, message: str, *, timed_out: bool = False, busy: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.timed_out = timed_out
        # The process's cap of outbound calls at once was full: the call was never made.
        self.busy = busy


class ProviderRequestFailed(ProviderError):
    """Non-2xx, unreachable, too slow, too large, not JSON, or a stream that stopped half-way."""


class ProviderEmptyResponse(ProviderError):
    """The provider answered, but with no text: no content string, or only whitespace."""

    error_type = "error-ai-provider-empty-response"


@dataclass(frozen=True, slots=True)
class Completion:
    """A whole answer as the provider wrote it (not trimmed), and whether the model stopped before
    finishing it (a ``TRUNCATING_FINISH_REASONS`` finish)."""

    text: str
    truncated: bool = False


class ProviderStream:
    """One streamed answer: iterate it for the text deltas (close it with ``contextlib.aclosing`` when
    leaving early, so the connection is released); once it has ended, ``truncated`` says whether the
    model stopped before finishing the answer."""

    def __init__(self, deltas: Callable[[ProviderStream], AsyncGenerator[str, None]]) -> None:
        self.truncated = False
        self._deltas = deltas(self)

    def __aiter__(self) -> ProviderStream:
        return self

    async def __anext__(self) -> str:
        return await anext(self._deltas)

    async def aclose(self) -> None:
        await self._deltas.aclose()


@dataclass(frozen=True)
class ProviderConfig:
    """Where the provider is and which model answers; ``api_key`` may be empty (Ollama, llama.cpp).

    The key is left out of ``repr`` so no log line or traceback that prints the config shows it.
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    name: str = PROVIDER_NAME


def endpoint_url(base_url: str, path: str) -> str:
    """``{base}/{path}``, keeping the base's own path (``http://h:11434/v1`` + ``models``), as upstream."""
    return urljoin(base_url if base_url.endswith("/") else base_url + "/", path)


class OpenAICompatibleProvider:
    """One configured provider; stateless, shares the app's ``GuardedClient``.

    The deadlines and the cap are constructor arguments so tests can use short ones; the server
    uses the module constants.
    """

    def __init__(
        self,
        client: GuardedClient,
        config: ProviderConfig,
        *,
        completion_timeout_seconds: float = COMPLETION_TIMEOUT_SECONDS,
        models_timeout_seconds: float = MODELS_TIMEOUT_SECONDS,
        max_response_bytes: int = MAX_PROVIDER_RESPONSE_BYTES,
        redactor: SecretRedactor | None = None,
    ) -> None:
        self.client = client
        self.config = config
        # What the provider says about a failure goes to the debug log through the server's one
        # redaction (redaction.py), with this provider's key among the secrets.
        self.redactor = redactor if redactor is not None else SecretRedactor((config.api_key,))
        self.completion_timeout_seconds = completion_timeout_seconds
        self.models_timeout_seconds = models_timeout_seconds
        self.max_response_bytes = max_response_bytes

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def model(self) -> str:
        return self.config.model

    def with_model(self, model: str) -> OpenAICompatibleProvider:
        """The same provider answering with another of its models (a per-request choice)."""
        return OpenAICompatibleProvider(
            self.client,
            dataclasses.replace(self.config, model=model),
            completion_timeout_seconds=self.completion_timeout_seconds,
            models_timeout_seconds=self.models_timeout_seconds,
            max_response_bytes=self.max_response_bytes,
            redactor=self.redactor,
        )

    def _headers(self) -> dict[str, str]:
        # No key (a local Ollama or llama.cpp server): send no Authorization header at all rather
        # than "Bearer ", which some servers reject.
        return {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}

    def _body(self, system_prompt: str, user_prompt: str, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "temperature": ANSWER_TEMPERATURE,
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_prompt},
            ],
        }
        if stream:
            body["stream"] = True
        return body

    # -- models ----------------------------------------------------------------------------------

    async def list_models(self) -> list[ModelOption]:
        """The provider's models, sorted, the selected one first if the provider does not list it.

        Never raises: a provider that is down, slow, refused or answering garbage gives
        ``model_list_fallback(selected)``.
        """
        selected = self.config.model or None
        if not self.config.base_url:
            return model_list_fallback(selected)
        try:
            response = await self.client.request_json(
                "GET",
                endpoint_url(self.config.base_url, "models"),
                headers=self._headers(),
                timeout_seconds=self.models_timeout_seconds,
                max_bytes=self.max_response_bytes,
            )
        except OutboundError as exc:
            self._log_failure("listing models", exc)
            return model_list_fallback(selected)
        return parse_model_list(response.json, selected)

    # -- answers ---------------------------------------------------------------------------------

    async def complete(self, system_prompt: str, user_prompt: str) -> Completion:
        """The model's answer to one system + user turn, as the provider wrote it (not trimmed).

        Raises:
            ProviderRequestFailed: the call failed (see the class).
            ProviderEmptyResponse: no ``choices[0].message.content`` string, or only whitespace.
        """
        try:
            response = await self.client.request_json(
                "POST",
                endpoint_url(self.config.base_url, "chat/completions"),
                headers=self._headers(),
                json=self._body(system_prompt, user_prompt, stream=False),
                timeout_seconds=self.completion_timeout_seconds,
                max_bytes=self.max_response_bytes,
            )
        except OutboundError as exc:
            raise self._failure("answering", exc) from None
        content = _message_content(response.json)
        if content is None or not content.strip():
            log.debug("provider answer had no text: %s", self._excerpt(response.body))
            raise ProviderEmptyResponse("The AI provider returned an empty answer.")
        return Completion(content, _finish_reason(response.json) in TRUNCATING_FINISH_REASONS)

    def stream(self, system_prompt: str, user_prompt: str) -> ProviderStream:
        """The answer's text deltas as the provider streams them (empty deltas skipped).

        Raises (while iterating):
            see ``_stream_deltas``.
        """
        return ProviderStream(lambda outcome: self._stream_deltas(system_prompt, user_prompt, outcome))

    async def _stream_deltas(
        self, system_prompt: str, user_prompt: str, outcome: ProviderStream
    ) -> AsyncGenerator[str, None]:
        """Yield the text deltas; mark ``outcome`` truncated on a truncating ``finish_reason``.

        Raises:
            ProviderRequestFailed: the call failed, an event is not JSON or carries an error, or the
                stream ended before ``[DONE]`` or a ``finish_reason``.
            ProviderEmptyResponse: the stream completed without any non-whitespace text.
        """
        events = self.client.stream_sse(
            "POST",
            endpoint_url(self.config.base_url, "chat/completions"),
            headers=self._headers(),
            json=self._body(system_prompt, user_prompt, stream=True),
            timeout_seconds=self.completion_timeout_seconds,
            max_bytes=self.max_response_bytes,
        )
        complete = False
        has_text = False
        try:
            async with aclosing(events):
                async for payload in events:
                    if payload.strip() == _STREAM_DONE:
                        complete = True
                        break
                    delta, finish_reason = self._stream_chunk(payload)
                    complete = complete or finish_reason is not None
                    outcome.truncated = outcome.truncated or finish_reason in TRUNCATING_FINISH_REASONS
                    if delta:
                        has_text = has_text or not delta.isspace()
                        yield delta
        except OutboundError as exc:
            raise self._failure("streaming an answer", exc) from None
        if not complete:
            log.warning("provider stream of %s ended before [DONE] or a finish_reason", self.config.model)
            raise ProviderRequestFailed(
                "The AI provider's answer stream ended before the answer was complete."
            )
        if not has_text:
            raise ProviderEmptyResponse("The AI provider returned an empty answer.")

    def _stream_chunk(self, payload: str) -> tuple[str, str | None]:
        """(text delta, ``finish_reason`` or None) of one ``chat.completion.chunk``."""
        try:
            chunk = json.loads(payload)
        except ValueError:
            log.debug("provider stream event is not JSON: %s", self._excerpt(payload))
            raise ProviderRequestFailed(
                "The AI provider's answer stream held an event that is not JSON."
            ) from None
        if not isinstance(chunk, dict) or "error" in chunk:
            log.debug("provider stream event is an error or not an object: %s", self._excerpt(payload))
            raise ProviderRequestFailed("The AI provider reported an error while streaming the answer.")
        choices = chunk.get("choices")
        # A chunk without choices (usage statistics, keep-alives) carries no text.
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return "", None
        delta = choices[0].get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        return (content if isinstance(content, str) else ""), _reason(choices[0].get("finish_reason"))

    # -- failures --------------------------------------------------------------------------------

    def _failure(self, doing: str, exc: OutboundError) -> ProviderRequestFailed:
        self._log_failure(doing, exc)
        if isinstance(exc, OutboundTimeout):
            return ProviderRequestFailed(
                f"The AI provider did not finish answering within {self.completion_timeout_seconds:g} s.",
                timed_out=True,
            )
        if isinstance(exc, OutboundBusy):
            return ProviderRequestFailed(
                "The server is answering as many questions as it can; try again in a moment.", busy=True
            )
        if isinstance(exc, OutboundHTTPError):
            # The status says what went wrong (401: a bad key, 404: an unknown model); the body
            # is the provider's own text, which stays in the debug log.
            return ProviderRequestFailed(f"The AI provider answered HTTP {exc.status}.")
        if isinstance(exc, OutboundTooLarge):
            return ProviderRequestFailed(
                f"The AI provider's answer was larger than {exc.limit_bytes} bytes and was cut off."
            )
        return ProviderRequestFailed("The AI provider could not be reached or sent an unreadable answer.")

    def _log_failure(self, doing: str, exc: OutboundError) -> None:
        # The outbound client has already logged the redacted target at warning level; here goes
        # what the provider said, for whoever debugs it, without the key.
        excerpt = exc.body_excerpt if isinstance(exc, OutboundHTTPError) else b""
        log.debug(
            "provider %s failed (%s: %s); body: %s",
            doing,
            type(exc).__name__,
            self.redactor.redact(exc.message),
            self._excerpt(excerpt),
        )

    def _excerpt(self, body: bytes | str) -> str:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        # Redact before cutting, so a key cut in half at the edge cannot survive in part.
        return self.redactor.redact(text)[:MAX_LOGGED_PROVIDER_TEXT_CHARS]


def _reason(value: Any) -> str | None:
    """A ``finish_reason``: None when absent; any other non-string still finishes the answer."""
    if value is None:
        return None
    return value if isinstance(value, str) else "unknown"


def _finish_reason(payload: Any) -> str | None:
    """``choices[0].finish_reason`` of a whole completion, or None."""
    choices = payload.get("choices") if isinstance(payload, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    return _reason(choices[0].get("finish_reason"))


def _message_content(payload: Any) -> str | None:
    """``choices[0].message.content`` when it is a string, else None."""
    if not isinstance(payload, Mapping):
        return None
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, str) else None
