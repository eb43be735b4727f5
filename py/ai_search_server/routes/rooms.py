"""Rooms and subscriptions: create a channel, list what the caller has joined, autocomplete."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from ai_search import AI_SEARCH_ROOM_LOOKUP_LIMIT

from .. import errors
from ..api_limits import MAX_CREATE_MEMBERS
from ..ratelimit import RateLimit
from ..rest import ApiRequest, Refusal, Router
from ..store import base as store_base
from ..store.records import Room
from .access import ROOM_REFUSAL, readable_room, room_by_reference
from .params import DEFAULT_COUNT, Count, Id, Name, Offset, Params, RoomName, Selector, parse_selector
from .replies import ChannelsReply, RoomReply, RoomsReply
from .shapes import room_json, subscription_json, user_json

router = Router(tags=("Rooms",))

CREATE_RATE_LIMIT = RateLimit(count=10, period_seconds=60)
LIST_RATE_LIMIT = RateLimit(count=120, period_seconds=60)
# Autocomplete runs on every keystroke of the search box.
AUTOCOMPLETE_RATE_LIMIT = RateLimit(count=600, period_seconds=60)


# Subscribing someone puts a room's messages into their search results and answers, so only people
# trusted to do that for anyone may add others at creation: upstream's permission of that name
# (admins). Everyone else creates the channel with themselves in it.
ADD_MEMBERS_PERMISSION = "add-user-to-any-c-room"
MEMBERS_NEED_PERMISSION = (
    "Adding other people to a new channel needs the add-user-to-any-c-room permission: a room's "
    "messages join its members' search results, so nobody is subscribed without their say"
)


class CreateChannelParams(Params):
    name: RoomName = Field(description="Name of the new public channel.")
    members: Annotated[list[Name], Field(max_length=MAX_CREATE_MEMBERS)] = Field(
        default_factory=list,
        description="Usernames to subscribe as members; naming anyone but yourself needs the "
        "add-user-to-any-c-room permission (admins).",
    )
    readOnly: bool = Field(default=False, description="Accepted for compatibility; ignored.")


@router.post(
    "channels.create",
    CreateChannelParams,
    title="Create a channel",
    description="Create a public channel. Requires `name`; optional `members` (array of usernames). "
    "The name may not be any room's name (direct rooms included) nor look like one, nor be shaped like "
    "a direct room's name (people's usernames joined by `__`, such as `alice__bob`).",
    permissions=("create-c",),
    rate_limit=CREATE_RATE_LIMIT,
    refuses=(
        Refusal(
            errors.Conflict.status,
            "A room with this name already exists, or one that looks like it, or the name is shaped "
            "like a direct room's (usernames joined by '__')",
        ),
        Refusal(errors.Forbidden.status, MEMBERS_NEED_PERMISSION),
    ),
)
async def create_channel(req: ApiRequest[CreateChannelParams]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    name = params.name.strip().lstrip("#")
    if not name or any(ch.isspace() for ch in name):
        raise errors.InvalidParams(
            "Invalid parameters: 'name' must be a non-empty name without spaces",
            error_type="error-invalid-room-name",
        )
    others = [
        u for u in dict.fromkeys(params.members) if u.removeprefix("@").lower() != req.user.username.lower()
    ]
    assert req.caller is not None
    if others and ADD_MEMBERS_PERMISSION not in req.caller.permissions:
        raise errors.Forbidden(MEMBERS_NEED_PERMISSION, error_type="error-not-allowed")
    member_ids = []
    for username in others:
        user = store.get_user_by_username(username)
        if user is None:
            raise errors.InvalidParams(
                f"Invalid parameters: no user named {username!r}", error_type="error-invalid-user"
            )
        member_ids.append(user.id)
    try:
        room = store.create_room("c", name, creator_id=req.user.id, members=member_ids)
    except store_base.AlreadyTaken as exc:
        # The store's sentence: the name is taken, or looks like one that is (never which room).
        raise errors.Conflict(
            f"{str(exc)[:1].upper()}{str(exc)[1:]}", error_type="error-duplicate-channel-name"
        ) from None
    return {"channel": room_json(room)}


class ListJoinedParams(Params):
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "channels.list.joined",
    ListJoinedParams,
    title="List my channels",
    reply=ChannelsReply,
    description="List the public channels the authenticated user has joined.",
    rate_limit=LIST_RATE_LIMIT,
)
async def list_joined(req: ApiRequest[ListJoinedParams]) -> dict[str, Any]:
    store = req.services.store
    room_ids = [s.room_id for s in store.subscriptions_of(req.user.id)]
    rooms = store.get_rooms(room_ids)
    channels = sorted((r for r in rooms.values() if r.type == "c"), key=lambda r: r.name.lower())
    page = channels[req.params.offset : req.params.offset + req.params.count]
    return {
        "channels": [room_json(r) for r in page],
        "offset": req.params.offset,
        "count": len(page),
        "total": len(channels),
    }


class UpdatedSinceParams(Params):
    updatedSince: datetime | None = Field(default=None, description="ISO 8601 date: only newer entries.")


@router.get(
    "rooms.get",
    UpdatedSinceParams,
    title="List my rooms",
    reply=RoomsReply,
    description="List rooms the authenticated user has access to (optionally updated since a timestamp).",
    rate_limit=LIST_RATE_LIMIT,
)
async def rooms_get(req: ApiRequest[UpdatedSinceParams]) -> dict[str, Any]:
    store = req.services.store
    rooms = store.get_rooms(store.readable_room_ids(req.user.id))
    since = req.params.updatedSince
    update = []
    for room in sorted(rooms.values(), key=lambda r: (r.type, r.name.lower())):
        if since is not None and room.created_at <= _aware(since):
            continue
        usernames = _usernames(store, room.id) if room.type == "d" else None
        update.append(room_json(room, usernames=usernames))
    return {"update": update, "remove": []}


@router.get(
    "subscriptions.get",
    UpdatedSinceParams,
    title="List my subscriptions",
    description="List the authenticated user's subscriptions (optionally updated since a timestamp).",
    rate_limit=LIST_RATE_LIMIT,
)
async def subscriptions_get(req: ApiRequest[UpdatedSinceParams]) -> dict[str, Any]:
    store = req.services.store
    subs = store.subscriptions_of(req.user.id)
    rooms = store.get_rooms(s.room_id for s in subs)
    since = req.params.updatedSince
    update = [
        subscription_json(s, rooms[s.room_id])
        for s in subs
        if s.room_id in rooms and (since is None or s.created_at > _aware(since))
    ]
    return {"update": update, "remove": []}


class AutocompleteRoomsParams(Params):
    selector: Selector = Field(description='JSON object {"name": "<text>"}: rooms whose name contains it.')


@router.get(
    "rooms.autocomplete.channelAndPrivate",
    AutocompleteRoomsParams,
    title="Find rooms by name",
    description=f"Channels and private groups the user can read whose name contains the text "
    f"(at most {AI_SEARCH_ROOM_LOOKUP_LIMIT}).",
    rate_limit=AUTOCOMPLETE_RATE_LIMIT,
)
async def autocomplete_rooms(req: ApiRequest[AutocompleteRoomsParams]) -> dict[str, Any]:
    store = req.services.store
    text = parse_selector(req.params.selector, "name").lstrip("#")
    rooms = store.find_rooms(
        text,
        room_ids=store.readable_room_ids(req.user.id),
        types=("c", "p"),
        limit=AI_SEARCH_ROOM_LOOKUP_LIMIT,
    )
    return {"items": [{"_id": r.id, "name": r.name, "fname": r.fname, "t": r.type} for r in rooms]}


class RoomInfoById(Params):
    roomId: Id = Field(description="Id of the room.")


class RoomInfoByName(Params):
    roomName: Name = Field(description="Name of the room (a channel or private group).")


def _room_of(req: ApiRequest[Any]) -> Room:
    params, store = req.params, req.services.store
    if hasattr(params, "roomId"):
        return readable_room(store, req.user, params.roomId)
    return room_by_reference(store, req.user, "#" + params.roomName.lstrip("#"))


@router.get(
    "rooms.info",
    RoomInfoById,
    RoomInfoByName,
    title="Get a room",
    reply=RoomReply,
    description="A room you are in, by id or by name.",
    variant_descriptions=("A room you are in, given its id.", "A room you are in, given its name."),
    rate_limit=LIST_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def room_info(req: ApiRequest[RoomInfoById | RoomInfoByName]) -> dict[str, Any]:
    room = _room_of(req)
    usernames = _usernames(req.services.store, room.id) if room.type == "d" else None
    return {"room": room_json(room, usernames=usernames)}


class MembersById(RoomInfoById):
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


class MembersByName(RoomInfoByName):
    offset: Offset = 0
    count: Count = DEFAULT_COUNT


@router.get(
    "channels.members",
    MembersById,
    MembersByName,
    title="List a room's members",
    description="The members of a room you are in, by username (as upstream sorts them).",
    variant_descriptions=("Members of a room, given its id.", "Members of a room, given its name."),
    rate_limit=LIST_RATE_LIMIT,
    refuses=(ROOM_REFUSAL,),
)
async def members(req: ApiRequest[MembersById | MembersByName]) -> dict[str, Any]:
    store, params = req.services.store, req.params
    room = _room_of(req)
    users = store.get_users(store.members_of(room.id))
    ordered = sorted(users.values(), key=lambda user: (user.username.lower(), user.id))
    page = [user_json(user) for user in ordered[params.offset : params.offset + params.count]]
    return {"members": page, "count": len(page), "offset": params.offset, "total": len(ordered)}


def _usernames(store: store_base.Store, room_id: str) -> list[str]:
    users = store.get_users(store.members_of(room_id))
    return sorted(u.username for u in users.values())


def _aware(ts: datetime) -> datetime:
    from datetime import UTC

    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
