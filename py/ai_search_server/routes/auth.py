"""Login, logout and the current user: ``login`` is the only data route that takes no token."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .. import errors
from ..api import ApiRequest, RateLimitRule, Refusal, Router
from ..limits import MAX_PASSWORD_CHARS
from .params import Name, NoParams, Params
from .shapes import user_json

router = Router(tags=("Authentication",))

# Login attempts per client address (or user) and minute: enough for people, too few for guessing.
LOGIN_RATE_LIMIT = RateLimitRule(count=10, period_seconds=60)
LOGIN_FAILED = "Incorrect username or password"


class LoginParams(Params):
    user: Name = Field(description="Username (a leading @ is ignored).")
    password: Annotated[str, Field(min_length=1, max_length=MAX_PASSWORD_CHARS)]


@router.post(
    "login",
    LoginParams,
    description="Log in with username and password; answers a session token for the X-Auth-Token header.",
    auth=False,
    rate_limit=LOGIN_RATE_LIMIT,
    refuses=(Refusal(errors.Unauthorized.status, LOGIN_FAILED),),
)
async def login(req: ApiRequest[LoginParams]) -> dict[str, Any]:
    store = req.services.store
    user = store.verify_password(req.params.user, req.params.password)
    if user is None or not user.active:
        raise errors.Unauthorized(LOGIN_FAILED, error_type="error-login-failed")
    _token, plain = store.create_token(user.id, "session", label="login")
    return {
        "status": "success",
        "data": {"userId": user.id, "authToken": plain, "me": user_json(user, full=True)},
    }


@router.post("logout", NoParams, description="End the session of the token used for this call.")
async def logout(req: ApiRequest[NoParams]) -> dict[str, Any]:
    caller = req.caller
    assert caller is not None
    if caller.token.kind == "session":
        req.services.store.delete_token(caller.user.id, caller.token.id)
    return {"status": "success", "data": {"message": "You've been logged out!"}}


@router.get("me", NoParams, description="The authenticated user.")
async def me(req: ApiRequest[NoParams]) -> dict[str, Any]:
    caller = req.caller
    assert caller is not None
    return {**user_json(caller.user, full=True), "permissions": sorted(caller.permissions)}
