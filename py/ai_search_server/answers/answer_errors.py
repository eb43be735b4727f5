"""The answers' own exception tree: why an answer cannot be given, in the answers' words.

The service raises these (and the provider's ``ProviderError``); the routes turn them into the
server's refusals (``routes/answers.py``), so the answer service knows nothing of HTTP. Each carries
the stable ``error_type`` a caller of the REST API reads::

    AnswerError
    ├── AnswersOff              error-ai-not-enabled                  search or answers switched off
    ├── ProviderNotConfigured   error-ai-provider-not-configured      llm_base_url without llm_model
    ├── SourcesRefused          error-invalid-search-answer-sources   an id the caller cannot read
    ├── UnknownModel            error-invalid-model                   a model the provider does not offer
    └── AnswerNotFound          error-answer-not-found                a kept answer the reader may not open
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AnswerError",
    "AnswerNotFound",
    "AnswersOff",
    "ProviderNotConfigured",
    "SourcesRefused",
    "UnknownModel",
]


class AnswerError(Exception):
    """Base of the answers' errors; ``message`` is written for the person asking."""

    error_type: ClassVar[str] = "error-internal"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class AnswersOff(AnswerError):
    error_type = "error-ai-not-enabled"


class ProviderNotConfigured(AnswerError):
    error_type = "error-ai-provider-not-configured"


class SourcesRefused(AnswerError):
    """The same whether a message is missing or just not the caller's, so it confirms nothing."""

    error_type = "error-invalid-search-answer-sources"


class UnknownModel(AnswerError):
    error_type = "error-invalid-model"


class AnswerNotFound(AnswerError):
    """The same whether the answer is missing or just not the reader's to open."""

    error_type = "error-answer-not-found"
