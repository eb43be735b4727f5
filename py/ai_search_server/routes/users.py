"""Users and personal access tokens."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ai_search import to_iso_timestamp

from .. import errors
from ..api_limits import USER_AUTOCOMPLETE_LIMIT
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from ..store import base as store_base
from .access import visible_user, visible_user_ids
from .params import Id, Name, NoParams, Params, Selector, parse_selector
from .shapes import user_json

router = Router(tags=("Users",))

READ_RATE_LIMIT = RateLimit(count=600, period_seconds=60)
TOKEN_RATE_LIMIT = RateLimit(count=10, period_seconds=60)
USER_NOT_FOUND = "User not found"
TOKEN_EXISTS = "A token with this name already exists"
NO_SUCH_TOKEN = "No token with this name"
TOKEN_NEEDS_SESSION = (
    "Creating a personal access token needs a login session (the token from /api/v1/login), "
    "not a personal access token"
)


class InfoByUserId(Params):
    userId: Id = Field(description="Id of the user.")


class InfoByUsername(Params):
    username: Name = Field(description="Username of the user (a leading @ is ignored).")


@router.get(
    "users.info",
    InfoByUserId,
    InfoByUsername,
    title="Get a person's profile",
    description="Get the public profile of yourself or of someone who shares a room with you, by id or "
    "by username (anyone else answers as an unknown user).",
    variant_descriptions=(
        "Get a user's public profile by user id.",
        "Get a user's public profile by username.",
    ),
    rate_limit=READ_RATE_LIMIT,
    refuses=(Refusal(errors.NotFound.status, USER_NOT_FOUND),),
)
async def users_info(req: ApiRequest[InfoByUserId | InfoByUsername]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    user = (
        store.get_user(params.userId)
        if isinstance(params, InfoByUserId)
        else store.get_user_by_username(params.username)
    )
    # Unknown and not visible answer alike: the same rule as users.autocomplete (routes/access.py).
    user = visible_user(store, req.user, user)
    if user is None:
        raise errors.NotFound(USER_NOT_FOUND, error_type="error-user-not-found")
    return {"user": user_json(user, full=True)}


class AutocompleteUsersParams(Params):
    selector: Selector = Field(description='JSON object {"term": "<text>"}: users whose name contains it.')


@router.get(
    "users.autocomplete",
    AutocompleteUsersParams,
    title="Find people",
    description=f"People who share a room with the authenticated user and whose username or name contains the "
    f"term (at most {USER_AUTOCOMPLETE_LIMIT}).",
    rate_limit=READ_RATE_LIMIT,
)
async def users_autocomplete(req: ApiRequest[AutocompleteUsersParams]) -> dict[str, Any]:
    store = req.services.store
    term = parse_selector(req.params.selector, "term").lstrip("@")
    # Only people the caller can already see in their rooms: the directory is not an oracle.
    visible = visible_user_ids(store, req.user)
    candidates = store.find_users(term, limit=USER_AUTOCOMPLETE_LIMIT, user_ids=visible)
    items = [user_json(u) for u in candidates]
    return {"items": items}


class GenerateTokenParams(Params):
    tokenName: Name = Field(description="A label for the token, unique per user.")
    bypassTwoFactor: bool = Field(default=False, description="Accepted for compatibility; ignored.")


@router.post(
    "users.generatePersonalAccessToken",
    GenerateTokenParams,
    title="Create a personal access token",
    description="Create a personal access token for the authenticated user (shown once). Needs a login "
    "session: a personal access token cannot create more.",
    permissions=("create-personal-access-tokens",),
    rate_limit=TOKEN_RATE_LIMIT,
    refuses=(
        Refusal(errors.Conflict.status, TOKEN_EXISTS),
        Refusal(errors.Forbidden.status, TOKEN_NEEDS_SESSION),
    ),
)
async def generate_token(req: ApiRequest[GenerateTokenParams]) -> dict[str, Any]:
    # A PAT that could mint PATs would outlive its own revocation: whoever leaked it mints another
    # first. Minting needs what only the person has: their password, through a login session.
    assert req.caller is not None
    if not req.caller.is_session:
        raise errors.Forbidden(TOKEN_NEEDS_SESSION, error_type="error-login-session-required")
    try:
        _token, plain = req.services.store.create_token(req.user.id, "pat", label=req.params.tokenName)
    except store_base.AlreadyTaken:
        raise errors.Conflict(TOKEN_EXISTS, error_type="error-token-already-exists") from None
    return {"token": plain}


@router.get(
    "users.getPersonalAccessTokens",
    NoParams,
    title="List my personal access tokens",
    description="List the authenticated user's personal access tokens (names and dates, never the tokens).",
    rate_limit=READ_RATE_LIMIT,
)
async def list_tokens(req: ApiRequest[NoParams]) -> dict[str, Any]:
    tokens = req.services.store.list_tokens(req.user.id, "pat")
    return {
        "tokens": [
            {
                "name": t.label,
                "createdAt": to_iso_timestamp(t.created_at),
                "lastUsedAt": to_iso_timestamp(t.last_used_at) if t.last_used_at else None,
            }
            for t in tokens
        ]
    }


class RemoveTokenParams(Params):
    tokenName: Name = Field(description="The label of the token to remove.")


@router.post(
    "users.removePersonalAccessToken",
    RemoveTokenParams,
    title="Remove a personal access token",
    destructive=True,
    idempotent=True,
    description="Remove one of the authenticated user's personal access tokens.",
    rate_limit=TOKEN_RATE_LIMIT,
    refuses=(Refusal(errors.NotFound.status, NO_SUCH_TOKEN),),
)
async def remove_token(req: ApiRequest[RemoveTokenParams]) -> dict[str, Any]:
    if not req.services.store.delete_token_by_label(req.user.id, req.params.tokenName, "pat"):
        raise errors.NotFound(NO_SUCH_TOKEN, error_type="error-token-does-not-exists")
    return {}
