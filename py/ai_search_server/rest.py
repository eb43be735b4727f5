"""Typed REST routes: declaration, validation, authentication and dispatch.

Each route is declared once, with its method, name, description, tags, the pydantic model(s) of
its parameters (several models mean one-of variants, e.g. ``users.info`` by ``userId`` or by
``username``) and the errors its own handler can raise (``refuses``). Everything else reads this
metadata: the Starlette routing table, the OpenAPI document, and the MCP tool catalog. No route is
hand-described twice. The refusals every route shares (bad parameters, credentials, the body cap, a
full rate limit...) come from one table, ``COMMON_REFUSALS``, not from each route.

A handler receives an ``ApiRequest`` (validated params, caller, services) and returns a dict; the
dispatcher adds ``success: true``. Errors are ``errors.ApiError`` subclasses.

Per request, in order: parameters parsed (query for GET/DELETE, JSON body for POST/PUT) → caller
authenticated (``X-User-Id`` + ``X-Auth-Token``) → rate limit (per route and caller) → permissions →
parameters validated → handler.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import errors
from .json_schema import inline_schema
from .ratelimit import RateLimit
from .services import Caller, Services
from .store.base import StorageFailure, StoreError
from .store.records import User

__all__ = [
    "API_PREFIX",
    "COMMON_REFUSALS",
    "RESOLVED_CALLER_SCOPE_KEY",
    "ApiRequest",
    "ApiRoute",
    "Method",
    "Refusal",
    "Router",
    "json_response",
    "lone_surrogate_at",
    "refuse_lone_surrogates",
]

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1/"
Method = Literal["GET", "POST", "PUT", "DELETE"]
P = TypeVar("P", bound=BaseModel)


# The ASGI scope key under which an in-process request carries a caller already resolved from the very
# credentials it sends (the MCP endpoint's tool calls, mcp/dispatch.py): ``(user_id, token, Caller)``.
# Only code in this process can put a Python object in a scope, and the scope lives for that one
# request, so a token revoked afterwards fails on the very next request, with no cache to invalidate.
RESOLVED_CALLER_SCOPE_KEY = "ai_search.resolved_caller"


@dataclass(slots=True)
class ApiRequest(Generic[P]):
    params: P
    caller: Caller | None
    services: Services
    http: Request
    client_host: str

    @property
    def user(self) -> User:
        """The authenticated user (routes with ``auth=True`` always have one)."""
        assert self.caller is not None, "route declared auth=False reads the user"
        return self.caller.user

    @property
    def caller_permissions(self) -> frozenset[str]:
        """What the authenticated caller may do: the permissions of their roles."""
        return frozenset() if self.caller is None else self.caller.permissions


Handler = Callable[[ApiRequest[Any]], Awaitable[Mapping[str, Any] | Response]]


@dataclass(frozen=True, slots=True)
class Refusal:
    """One way a call can be refused: its status, and why, as the OpenAPI document says it."""

    status: int
    reason: str

    @classmethod
    def of(cls, error: type[errors.ApiError]) -> Refusal:
        return cls(error.status, error.default_message)


def _always(_route: ApiRoute) -> bool:
    return True


def _needs_permissions(route: ApiRoute) -> bool:
    return bool(route.permissions)


def _reads_body(route: ApiRoute) -> bool:
    return route.reads_body


def _rate_limited(route: ApiRoute) -> bool:
    return route.rate_limit is not None


# The refusals a route gives without raising them itself, and which routes give each: the dispatcher
# below (parameters, credentials, permissions, rate limit, the store), the middleware in front of
# every route (origin_middleware.py: Host 421, Origin 403; body_limit.py: the body cap 413 and the
# body's reading time 408; ratelimit.py: the failed-authentication budget 429), and the HTTP server
# itself (serving.py: the request head's size 431 and reading time 408, in plain text). Statuses and
# reasons are the refusals' own (errors.py).
COMMON_REFUSALS: tuple[tuple[type[errors.ApiError], Callable[[ApiRoute], bool]], ...] = (
    (errors.InvalidParams, _always),
    (errors.Unauthorized, _always),
    (errors.OriginNotAllowed, _always),
    (errors.Forbidden, _needs_permissions),
    (errors.HeadTimeout, _always),
    (errors.RequestTimeout, _reads_body),
    (errors.RequestTooLarge, _always),
    (errors.HostNotAllowed, _always),
    (errors.TooManyRequests, _rate_limited),
    (errors.AuthFailuresSpent, _always),
    (errors.HeadTooLarge, _always),
    (errors.ServiceUnavailable, _always),
)


@dataclass(frozen=True)
class ApiRoute:
    method: Method
    name: str
    handler: Handler
    description: str
    params: tuple[type[BaseModel], ...]
    tags: tuple[str, ...] = ()
    auth: bool = True
    permissions: tuple[str, ...] = ()
    rate_limit: RateLimit | None = None
    #: Shown in the OpenAPI document and MCP descriptions of each variant, when there are several.
    variant_descriptions: tuple[str, ...] = field(default=())
    #: The errors the handler itself can raise, beyond ``COMMON_REFUSALS``.
    refuses: tuple[Refusal, ...] = field(default=())
    #: The route also answers ``text/event-stream`` when the caller's ``Accept`` asks for it.
    event_stream: bool = False
    #: Behaviour, for the MCP tool's title and hints: a short name for people; a write that changes or
    #: takes away what exists (an edit, a delete), not only adds; a write that changes nothing more when
    #: repeated (a GET always is); a route that reaches past the workspace (the LLM provider).
    title: str = ""
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    #: The model of the 200 JSON body (the OpenAPI document's and the MCP tool's output schema).
    reply: type[BaseModel] | None = None

    @property
    def path(self) -> str:
        return API_PREFIX + self.name

    @property
    def reads_body(self) -> bool:
        return self.method in ("POST", "PUT")

    def refusals(self) -> dict[int, tuple[str, ...]]:
        """Every error status the route can answer, in order, each with its reasons: the common
        ones that apply to it, then its own."""
        common = [
            Refusal(error.status, error.described()) for error, applies in COMMON_REFUSALS if applies(self)
        ]
        by_status: dict[int, dict[str, None]] = {}
        for refusal in sorted([*common, *self.refuses], key=lambda r: r.status):
            by_status.setdefault(refusal.status, {})[refusal.reason] = None
        return {status: tuple(reasons) for status, reasons in by_status.items()}

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the parameters, refs inlined; variants as ``oneOf``."""
        schemas = [inline_schema(model.model_json_schema()) for model in self.params]
        for schema, text in zip(schemas, self.variant_descriptions, strict=False):
            schema["description"] = text
        if len(schemas) == 1:
            return schemas[0]
        return {"type": "object", "description": self.description, "oneOf": schemas}

    def reply_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the 200 JSON body, standing on its own; None when it is not declared."""
        return None if self.reply is None else inline_schema(self.reply.model_json_schema(), defaults=False)


class Router:
    """Collects the routes of one module: ``router = Router(tags=("chat",))``, then
    ``@router.get("chat.getMessage", ChatGetMessage, description=...)`` on a handler."""

    def __init__(self, *, tags: Sequence[str] = ()) -> None:
        self.tags = tuple(tags)
        self.routes: list[ApiRoute] = []

    def route(
        self,
        method: Method,
        name: str,
        *params: type[BaseModel],
        description: str,
        auth: bool = True,
        permissions: Sequence[str] = (),
        rate_limit: RateLimit | None = None,
        tags: Sequence[str] = (),
        variant_descriptions: Sequence[str] = (),
        refuses: Sequence[Refusal | type[errors.ApiError]] = (),
        event_stream: bool = False,
        title: str = "",
        destructive: bool = False,
        idempotent: bool = False,
        open_world: bool = False,
        reply: type[BaseModel] | None = None,
    ) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.routes.append(
                ApiRoute(
                    method=method,
                    name=name,
                    handler=handler,
                    description=description,
                    params=tuple(params),
                    tags=tuple(tags) or self.tags,
                    auth=auth,
                    permissions=tuple(permissions),
                    rate_limit=rate_limit,
                    variant_descriptions=tuple(variant_descriptions),
                    refuses=tuple(r if isinstance(r, Refusal) else Refusal.of(r) for r in refuses),
                    event_stream=event_stream,
                    title=title,
                    destructive=destructive,
                    idempotent=idempotent,
                    open_world=open_world,
                    reply=reply,
                )
            )
            return handler

        return register

    def get(self, name: str, *params: type[BaseModel], **kw: Any) -> Callable[[Handler], Handler]:
        return self.route("GET", name, *params, **kw)

    def post(self, name: str, *params: type[BaseModel], **kw: Any) -> Callable[[Handler], Handler]:
        return self.route("POST", name, *params, **kw)


# -- parameters ----------------------------------------------------------------------------------


def describe_validation_error(exc: ValidationError) -> str:
    """One sentence per problem, naming the parameter: what an API caller needs to fix the call."""
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "body"
        kind = err["type"]
        if kind == "extra_forbidden":
            parts.append(f"unknown parameter '{loc}'")
        elif kind == "missing":
            parts.append(f"missing parameter '{loc}'")
        elif kind == "value_error":  # our own validators: their sentence, without pydantic's prefix
            parts.append(f"parameter '{loc}': {err['ctx']['error']}")
        else:
            parts.append(f"parameter '{loc}': {err['msg']}")
    return "Invalid parameters: " + "; ".join(dict.fromkeys(parts))


def validate_params(route: ApiRoute, raw: Mapping[str, Any]) -> BaseModel:
    """Validate against the route's model, or against exactly one of its variants.

    Raises:
        errors.InvalidParams: naming each unknown, missing or invalid parameter.
    """
    failures: list[ValidationError] = []
    for model in route.params:
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            failures.append(exc)
    if len(route.params) == 1:
        raise errors.InvalidParams(describe_validation_error(failures[0]))
    # Several variants: when exactly one variant's required parameters were given, its errors are
    # the useful ones; otherwise the caller must learn the choices.
    given = [
        failure
        for model, failure in zip(route.params, failures, strict=True)
        if all((f.alias or n) in raw for n, f in model.model_fields.items() if f.is_required())
    ]
    if len(given) == 1:
        raise errors.InvalidParams(describe_validation_error(given[0]))
    choices = " or ".join(
        "+".join((f.alias or n) for n, f in model.model_fields.items() if f.is_required())
        for model in route.params
    )
    unknown = sorted(set(raw) - {(f.alias or n) for m in route.params for n, f in m.model_fields.items()})
    extra = f"; unknown parameter(s) {', '.join(unknown)}" if unknown else ""
    raise errors.InvalidParams(f"Invalid parameters: provide exactly one of {choices}{extra}")


# -- dispatch ------------------------------------------------------------------------------------


def json_response(
    body: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return JSONResponse(dict(body), status_code=status, headers=dict(headers) if headers else None)


def error_response(exc: errors.ApiError, extra_headers: Mapping[str, str] | None = None) -> Response:
    """The REST answer of a refusal (``errors.refusal_response``), with the call's rate-limit headers."""
    return errors.refusal_response(exc, headers=extra_headers)


def lone_surrogate_at(value: Any, path: str = "") -> str | None:
    """The path (``selector.name``, ``messages.0._id``) of the first string in ``value``, key or item,
    that holds a lone surrogate, or None.

    JSON may spell one (``"\\ud800"``) and Python's parser lets it through, but it is no Unicode
    text: it has no UTF-8 form, so SQLite, the pipeline and every encoder refuse it mid-request. Every
    parameter is checked here, at the parsing boundary, so no route ever sees one.
    """
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and _has_lone_surrogate(item):
                return where or "body"
        elif isinstance(item, dict):
            for key, inner in item.items():
                inner_path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and not key.isascii() and _has_lone_surrogate(key):
                    return inner_path
                pending.append((inner_path, inner))
        elif isinstance(item, list):
            pending.extend(
                (f"{where}.{index}" if where else str(index), inner) for index, inner in enumerate(item)
            )
    return None


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refuse_lone_surrogates(value: Any, path: str = "") -> None:
    """Raises errors.InvalidParams naming the parameter when ``value`` holds a lone surrogate."""
    where = lone_surrogate_at(value, path)
    if where is not None:
        # A key may itself hold the surrogate: shown escaped (\\ud800), so the answer can be encoded.
        shown = where.encode("utf-8", "backslashreplace").decode("utf-8")
        raise errors.InvalidParams(
            f"Invalid parameters: parameter '{shown}' is not valid Unicode (it holds a lone surrogate)"
        )


def _query_params(raw: bytes) -> dict[str, str]:
    """The query string's parameters, each decoded as strict UTF-8 (Starlette's own parsing replaces
    undecodable bytes with U+FFFD, so a mangled value would be searched for instead of refused).

    Raises:
        errors.InvalidParams: a parameter given twice, or one that is not valid UTF-8.
    """
    params: dict[str, str] = {}
    for pair in raw.split(b"&"):
        if not pair:
            continue
        raw_name, _, raw_value = pair.partition(b"=")
        name_bytes = _unquote(raw_name)
        try:
            name = name_bytes.decode("utf-8")
            value = _unquote(raw_value).decode("utf-8")
        except UnicodeDecodeError:
            shown = name_bytes.decode("utf-8", "replace")
            raise errors.InvalidParams(
                f"Invalid parameters: parameter '{shown}' is not valid UTF-8 text"
            ) from None
        if name in params:
            raise errors.InvalidParams(f"Invalid parameters: '{name}' given more than once")
        params[name] = value
    return params


def _unquote(part: bytes) -> bytes:
    return unquote_to_bytes(part.replace(b"+", b" "))


async def read_raw_params(route: ApiRoute, request: Request) -> dict[str, Any]:
    """The call's parameters as sent: the query string (GET, DELETE) or the JSON body (POST, PUT).

    Raises:
        errors.InvalidParams: repeated or undecodable query parameters, a body that is not a JSON
            object, or any string (key or value, at any depth) that is no Unicode text.
    """
    if not route.reads_body:
        return _query_params(request.scope.get("query_string", b""))
    body = await request.body()
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError; nesting past the parser
        raise errors.InvalidParams(
            "Request body is not valid JSON", error_type="error-invalid-json"
        ) from None
    if not isinstance(data, dict):
        raise errors.InvalidParams("Request body must be a JSON object")
    refuse_lone_surrogates(data)
    return data


async def authenticate(services: Services, request: Request) -> Caller | None:
    """The caller named by ``X-User-Id`` + ``X-Auth-Token``, or None when neither header is sent.

    Raises:
        errors.Unauthorized: one header without the other, or a token that does not belong to the user.
    """
    user_id = request.headers.get("x-user-id")
    token = request.headers.get("x-auth-token")
    if not user_id and not token:
        return None
    if not user_id or not token:
        raise errors.Unauthorized()
    resolved = request.scope.get(RESOLVED_CALLER_SCOPE_KEY)
    if resolved is not None and resolved[0] == user_id and _same_secret(resolved[1], token):
        caller: Caller = resolved[2]
        return caller
    return await services.authenticate(user_id, token)


def _same_secret(known: str, sent: str) -> bool:
    return hmac.compare_digest(
        known.encode("utf-8", "surrogateescape"), sent.encode("utf-8", "surrogateescape")
    )


def make_endpoint(route: ApiRoute, services: Services) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        rate_headers: Mapping[str, str] = {}
        try:
            caller = await authenticate(services, request)
            if route.auth and caller is None:
                raise errors.Unauthorized()
            client_host = services.client_address(request)
            if route.rate_limit is not None:
                key = services.rate_limit_key(caller, client_host)
                rate_headers = await services.check_rate_limit(route.name, key, route.rate_limit)
            if route.permissions and (caller is None or not set(route.permissions) <= caller.permissions):
                raise errors.Forbidden()
            raw = await read_raw_params(route, request)
            params = validate_params(route, raw)
            result = await route.handler(
                ApiRequest(
                    params=params, caller=caller, services=services, http=request, client_host=client_host
                )
            )
        except errors.ApiError as exc:
            return error_response(exc, rate_headers)
        except StorageFailure:
            log.exception("storage failure on %s", route.name)
            return error_response(errors.ServiceUnavailable(), rate_headers)
        except StoreError as exc:  # a store error a handler did not translate: a bug, but say it plainly
            log.exception("unhandled store error on %s", route.name)
            return error_response(errors.InvalidParams(str(exc)), rate_headers)
        if isinstance(result, Response):
            result.headers.update(rate_headers)
            return result
        return json_response({**result, "success": True}, headers=rate_headers)

    endpoint.__name__ = route.name.replace(".", "_")
    return endpoint
