"""What the page says when something goes wrong: one readable sentence per ``errorType``.

The server's own ``error`` text is written for API callers; the page shows these sentences instead,
so every failure reads the same whatever produced it. Types the table does not know fall back to a
sentence by HTTP status class, never to the raw server text. Pure and portable (the keystroke stage's boundary imports it on MicroPython): CPython tests cover it.

    >>> error_message("error-too-many-requests", 429)
    'Too many requests in a short time. Wait a few seconds and try again.'
    >>> error_message("error-too-many-requests", 429, retry_after=42)
    'Too many requests in a short time. Try again in 42 seconds.'
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "BAD_RESPONSE_ERROR_TYPE",
    "ERROR_MESSAGES",
    "NETWORK_ERROR_TYPE",
    "TOO_MANY_REQUESTS_ERROR_TYPE",
    "TRUNCATED_ANSWER_NOTICE",
    "UNEXPECTED_ERROR",
    "error_message",
    "wait_words",
]

# The errorType the client uses when no HTTP answer arrived at all (offline, server down, aborted).
NETWORK_ERROR_TYPE = "error-network"
# The errorType the client uses for a 2xx answer that is not the JSON the route promises.
BAD_RESPONSE_ERROR_TYPE = "error-bad-response"
# The server's errorType of a 429, whose Retry-After says how long to wait.
TOO_MANY_REQUESTS_ERROR_TYPE = "error-too-many-requests"

ERROR_MESSAGES: "Mapping[str, str]" = {
    NETWORK_ERROR_TYPE: "The server could not be reached. Check the connection and try again.",
    BAD_RESPONSE_ERROR_TYPE: "The server sent an answer the page could not read. Try again.",
    "error-unauthorized": "Your session has ended. Sign in again.",
    "error-login-failed": "That username and password do not match.",
    "error-not-allowed": "Your account is not allowed to do this.",
    "error-too-many-requests": "Too many requests in a short time. Wait a few seconds and try again.",
    "error-invalid-params": "The search could not be read. Check the filters and the words.",
    "error-invalid-json": "The page sent a request the server could not read. Reload the page.",
    "error-request-too-large": "The request is too large. Shorten the query.",
    "error-origin-not-allowed": "This page is not allowed to call the server from where it is open.",
    "error-host-not-allowed": "The server does not answer under this address.",
    "error-service-unavailable": "The server is busy or out of space. Try again in a moment.",
    "error-internal": "The server hit an unexpected problem. Try again.",
    "error-ai-not-enabled": "AI answers are turned off on this server.",
    "error-ai-provider-not-configured": "No language model is set up on this server, so it cannot write answers.",
    "error-ai-provider-request-failed": "The language model did not answer in time or failed. Try again.",
    "error-ai-provider-empty-response": "The language model returned an empty answer. Try again or rephrase.",
    "error-invalid-search-answer-sources": (
        "Some of these results are no longer readable for you. Search again, then ask."
    ),
    "error-room-not-found": "That room does not exist or you cannot read it.",
    "error-user-not-found": "That person does not exist.",
    "error-message-not-found": "This message does not exist, or you cannot read it.",
    "error-answer-not-found": "This answer does not exist, or it was not shared with you.",
}

# The status line when something in the page itself failed (the details go to the console).
UNEXPECTED_ERROR = "Something went wrong on this page. Try again; if it keeps happening, reload the page."

# Shown under an answer the server marks `truncated` (the model stopped before finishing it).
TRUNCATED_ANSWER_NOTICE = "This answer was cut short: the language model stopped before finishing it."

_BY_STATUS_CLASS: "Mapping[int, str]" = {
    4: "The server refused the request. Check the query and try again.",
    5: "The server hit a problem. Try again in a moment.",
}


# Seconds at and above which a wait is said in minutes.
_MINUTE_SECONDS = 60


def wait_words(seconds: int) -> str:
    """``42 seconds``, ``1 second``, ``2 minutes``: a wait as people say it (rounded up)."""
    if seconds >= _MINUTE_SECONDS:
        minutes = -(-seconds // _MINUTE_SECONDS)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def error_message(
    error_type: str | None, status: int | None = None, *, retry_after: int | None = None
) -> str:
    """The sentence for ``error_type``, else for the status class, else the network sentence.

    A refusal for too many requests says the server's real wait (its ``Retry-After``) when it sent one.
    """
    if (
        retry_after is not None
        and retry_after > 0
        and (error_type == TOO_MANY_REQUESTS_ERROR_TYPE or status == 429)
    ):
        return f"Too many requests in a short time. Try again in {wait_words(retry_after)}."
    if error_type and error_type in ERROR_MESSAGES:
        return ERROR_MESSAGES[error_type]
    if status is not None and status // 100 in _BY_STATUS_CLASS:
        return _BY_STATUS_CLASS[status // 100]
    return ERROR_MESSAGES[NETWORK_ERROR_TYPE]
