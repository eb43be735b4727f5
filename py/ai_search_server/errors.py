"""The API's one exception tree; each class carries its HTTP status and stable ``errorType``.

Handlers raise these; one handler in ``api.py`` turns them into Rocket.Chat-shaped bodies
``{"success": false, "error": <message>, "errorType": <type>}``. Messages are written for the
person calling the API; upstream error text (a provider's, a database's) never reaches them verbatim.

::

    ApiError                    500 error-internal
    ├── InvalidParams           400 error-invalid-params       a parameter is missing, unknown or out of range
    ├── Unauthorized            401 error-unauthorized         no or bad credentials
    ├── Forbidden               403 error-not-allowed          authenticated, but not permitted
    ├── NotFound                404 error-not-found            (or a narrower error-<thing>-not-found)
    ├── Conflict                400 error-duplicate            a name already taken
    ├── TooManyRequests         429 error-too-many-requests
    ├── FeatureUnavailable      400 error-ai-not-enabled and friends: a feature off or unconfigured
    ├── UpstreamFailure         502 error-ai-provider-request-failed and friends: an outside service failed
    └── ServiceUnavailable      503 error-service-unavailable  the database is full or locked
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ApiError",
    "Conflict",
    "FeatureUnavailable",
    "Forbidden",
    "InvalidParams",
    "NotFound",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "UpstreamFailure",
]


class ApiError(Exception):
    status: ClassVar[int] = 500
    default_type: ClassVar[str] = "error-internal"
    default_message: ClassVar[str] = "Internal server error"

    def __init__(
        self,
        message: str | None = None,
        *,
        error_type: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.error_type = error_type or self.default_type
        self.details = details
        self.headers = headers or {}
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"success": False, "error": self.message, "errorType": self.error_type}
        if self.details:
            body["details"] = self.details
        return body


class InvalidParams(ApiError):
    status = 400
    default_type = "error-invalid-params"
    default_message = "Invalid parameters"


class Unauthorized(ApiError):
    status = 401
    default_type = "error-unauthorized"
    default_message = "You must be logged in to do this."


class Forbidden(ApiError):
    status = 403
    default_type = "error-not-allowed"
    default_message = "You are not allowed to do this."


class NotFound(ApiError):
    status = 404
    default_type = "error-not-found"
    default_message = "Not found"


class Conflict(ApiError):
    status = 400
    default_type = "error-duplicate"
    default_message = "Already exists"


class TooManyRequests(ApiError):
    status = 429
    default_type = "error-too-many-requests"
    default_message = "Too many requests"


class FeatureUnavailable(ApiError):
    status = 400
    default_type = "error-ai-not-enabled"
    default_message = "AI search is not enabled"


class UpstreamFailure(ApiError):
    status = 502
    default_type = "error-ai-provider-request-failed"
    default_message = "The AI provider request failed"


class ServiceUnavailable(ApiError):
    status = 503
    default_type = "error-service-unavailable"
    default_message = "The workspace database is unavailable; try again shortly"
