"""The OAuth access a person gave MCP clients (oauth/): listed and removed like personal access tokens.

One entry per consent: the client's name, when its current tokens were issued and last used, and
until when it may refresh. Removing one ends its access token and refresh token at once; the client
must ask the person again. Like the PAT routes, these need the person's own credentials: an OAuth
token itself never reaches a REST route (it is valid at the MCP endpoint only).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ai_search import to_iso_timestamp

from .. import errors
from ..rest import ApiRequest, Refusal, Router
from ..store.records import OAuthGrant
from .params import Id, NoParams, Params
from .users import READ_RATE_LIMIT, TOKEN_RATE_LIMIT

router = Router(tags=("Users",))

NO_SUCH_GRANT = "No OAuth access with this id"


def _grant_json(grant: OAuthGrant) -> dict[str, Any]:
    return {
        "id": grant.id,
        "clientId": grant.client_id,
        "clientName": grant.client_name,
        "scope": grant.scope,
        "resource": grant.resource,
        "issuedAt": to_iso_timestamp(grant.created_at),
        "lastUsedAt": to_iso_timestamp(grant.last_used_at) if grant.last_used_at else None,
        "accessExpiresAt": to_iso_timestamp(grant.access_expires_at),
        "refreshExpiresAt": to_iso_timestamp(grant.refresh_expires_at) if grant.refresh_expires_at else None,
    }


@router.get(
    "users.getOAuthTokens",
    NoParams,
    title="List the OAuth access I gave",
    description="The MCP clients the authenticated user allowed with OAuth: one entry per consent, with "
    "the client's name and dates (never the tokens).",
    rate_limit=READ_RATE_LIMIT,
)
async def list_grants(req: ApiRequest[NoParams]) -> dict[str, Any]:
    return {"tokens": [_grant_json(grant) for grant in req.services.store.list_oauth_grants(req.user.id)]}


class RemoveGrantParams(Params):
    tokenId: Id = Field(description="The id of the entry, as users.getOAuthTokens lists it.")


@router.post(
    "users.removeOAuthToken",
    RemoveGrantParams,
    title="Remove an OAuth access I gave",
    destructive=True,
    idempotent=True,
    description="End an MCP client's OAuth access: its access and refresh tokens stop working at once.",
    rate_limit=TOKEN_RATE_LIMIT,
    refuses=(Refusal(errors.NotFound.status, NO_SUCH_GRANT),),
)
async def remove_grant(req: ApiRequest[RemoveGrantParams]) -> dict[str, Any]:
    if not req.services.store.revoke_oauth_grant(req.params.tokenId, req.user.id):
        raise errors.NotFound(NO_SUCH_GRANT, error_type="error-token-does-not-exists")
    return {}
