"""Login, logout and the current user: ``login`` is the only data route that takes no token.

Guessing is slowed twice: per client address (``LOGIN_RATE_LIMIT``, the route's budget) and per
account (``login_throttle.py``: a wait that grows after five failures). A successful login also
answers a device cookie (``Set-Cookie``, path ``/api/v1/login`` only), with which the same client's
later logins skip the account's wait; the JSON body is the same with or without it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.responses import Response

from .. import errors
from ..api_limits import MAX_PASSWORD_CHARS
from ..login_throttle import DEVICE_COOKIE_MAX_AGE_SECONDS, DEVICE_COOKIE_NAME, DEVICE_COOKIE_PATH
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router, json_response
from .params import Name, NoParams, Params
from .shapes import user_json

router = Router(tags=("Authentication",))

# Login attempts per client address (or user) and minute: enough for people, too few for guessing.
LOGIN_RATE_LIMIT = RateLimit(count=10, period_seconds=60)
LOGIN_FAILED = "Incorrect username or password"


class LoginParams(Params):
    user: Name = Field(description="Username (a leading @ is ignored).")
    password: Annotated[str, Field(min_length=1, max_length=MAX_PASSWORD_CHARS)]


@router.post(
    "login",
    LoginParams,
    title="Log in",
    description="Log in with username and password (or, with Rocket.Chat sign-in on, a Rocket.Chat "
    "username and password); answers a session token for the X-Auth-Token header, and sets a device "
    "cookie with which this client's later logins skip the wait that failed sign-ins for the account "
    "start (5 free failures, then 1 s doubling to 60 s, answered 429 with Retry-After).",
    auth=False,
    rate_limit=LOGIN_RATE_LIMIT,
    refuses=(Refusal(errors.Unauthorized.status, LOGIN_FAILED), Refusal.of(errors.SignInsSlowed)),
)
async def login(req: ApiRequest[LoginParams]) -> Response:
    services = req.services
    store = services.store
    # A password of ours or, with Rocket.Chat sign-in on, the person's Rocket.Chat one; refused
    # unchecked while the account waits, unless this client's device cookie names this account.
    user = await services.sign_in(
        req.params.user, req.params.password, device_cookie=req.http.cookies.get(DEVICE_COOKIE_NAME)
    )
    if user is None:
        raise errors.Unauthorized(LOGIN_FAILED, error_type="error-login-failed")
    # Sessions this user let expire are cleared here, so the table does not keep every old login.
    store.delete_expired_sessions(user.id, services.session_lifetime)
    _token, plain = store.create_token(user.id, "session", label="login")
    response = json_response(
        {
            "status": "success",
            "data": {"userId": user.id, "authToken": plain, "me": user_json(user, full=True)},
            "success": True,
        }
    )
    # A fresh cookie at every login (a new nonce, a new 90 days), for the name as the person typed it.
    response.set_cookie(
        DEVICE_COOKIE_NAME,
        services.login_throttle.device_cookie(req.params.user),
        max_age=DEVICE_COOKIE_MAX_AGE_SECONDS,
        path=DEVICE_COOKIE_PATH,
        secure=req.http.url.scheme == "https" or services.settings.site_url.startswith("https://"),
        httponly=True,
        samesite="strict",
    )
    return response


LOGOUT_NEEDS_SESSION = (
    "logout ends a login session, and this call used a personal access token: it stays valid. "
    "Remove it with users.removePersonalAccessToken"
)


@router.post(
    "logout",
    NoParams,
    title="Log out",
    destructive=True,
    idempotent=True,
    description="End the login session of the token used for this call. A personal access token is "
    "refused (it stays valid): remove it with users.removePersonalAccessToken.",
    refuses=(Refusal(errors.InvalidParams.status, LOGOUT_NEEDS_SESSION),),
)
async def logout(req: ApiRequest[NoParams]) -> dict[str, Any]:
    caller = req.caller
    assert caller is not None
    # Saying "logged out" to a PAT would leave the caller believing a credential is dead that is not.
    if not caller.is_session:
        raise errors.InvalidParams(LOGOUT_NEEDS_SESSION, error_type="error-logout-needs-a-session")
    req.services.store.delete_token(caller.user.id, caller.token.id)
    return {"status": "success", "data": {"message": "You've been logged out!"}}


@router.get("me", NoParams, title="Who am I", description="The authenticated user.")
async def me(req: ApiRequest[NoParams]) -> dict[str, Any]:
    caller = req.caller
    assert caller is not None
    return {**user_json(caller.user, full=True), "permissions": sorted(caller.permissions)}
