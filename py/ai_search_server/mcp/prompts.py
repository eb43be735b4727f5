"""MCP prompts for the common jobs, each filled by calling the server's own tools as the caller.

``prompts/get`` runs the tools the prompt names through the same path as ``tools/call`` (the REST
stack: validation, authentication, permissions, rate limits), so a prompt holds only what the caller
may read, and hands the agent the messages with the task:

==================  =====================  ======================================================
prompt              arguments              tools it calls
==================  =====================  ======================================================
``summarise_room``  ``room``, ``since``    get_rooms_get, then the room's history tool
``find_decision``   ``topic``              get_ai_search_by_q
``what_did_i_miss`` ``since`` (optional)   get_rooms_get, then each room's history tool
==================  =====================  ======================================================

A refused tool call (a room the caller cannot read, a rate limit) refuses the prompt with -32602 and
the route's own sentence. A prompt whose tools are not in the catalog is not offered.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from . import rpc_errors

__all__ = [
    "MAX_MISSED_ROOMS",
    "MAX_MISSED_ROOMS_READ",
    "MAX_PROMPT_MESSAGES",
    "PROMPTS",
    "Prompt",
    "ToolRunner",
    "encode_listing",
    "list_prompts",
]

# Messages of one room a prompt carries (the history page's own cap): enough to summarise a busy
# week of a room, and at about 100 tokens a message, well inside an agent's context.
MAX_PROMPT_MESSAGES = 100
# Rooms "what did I miss" shows, the busiest first, with at most MISSED_MESSAGES_PER_ROOM each.
MAX_MISSED_ROOMS = 8
# Rooms it reads at most: one history call each, so one prompt stays well inside the history route's
# 120 calls a minute (and a person in hundreds of rooms gets an answer, with the rest said left out).
MAX_MISSED_ROOMS_READ = 30
MISSED_MESSAGES_PER_ROOM = 20
# Hits "find the decision" carries: ai.search's own cap of one page.
DECISION_HITS = 20
# "What did I miss" without a date looks back this far.
DEFAULT_MISSED_DAYS = 7
_HISTORY_TOOL = {"c": "get_channels_history", "p": "get_groups_history", "d": "get_im_history"}

#: Calls one tool by name as the caller: ``(name, arguments) -> the route's parsed JSON body``.
#: Raises rpc_errors.RpcInvalidParams with the route's sentence when the call is refused.
ToolRunner = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Argument:
    name: str
    description: str
    required: bool = True

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    tools: frozenset[str]  # the tools it calls: offered only when all are in the catalog
    fill: Callable[[Mapping[str, str], ToolRunner], Awaitable[tuple[str, str]]]  # -> (task, material)

    def listing(self, *, with_title: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if with_title:
            out["title"] = self.title
        out["description"] = self.description
        out["arguments"] = [a.listing() for a in self.arguments]
        return out

    async def get(self, arguments: Mapping[str, Any], run: ToolRunner) -> dict[str, Any]:
        """The ``prompts/get`` result: the task and the material, as two user messages."""
        if not all(isinstance(value, str) for value in arguments.values()):
            raise rpc_errors.RpcInvalidParams("Invalid params: prompt arguments are strings")
        given: dict[str, str] = dict(arguments)
        missing = [a.name for a in self.arguments if a.required and not given.get(a.name, "").strip()]
        if missing:
            raise rpc_errors.RpcInvalidParams(f"Invalid params: {self.name} needs {', '.join(missing)}")
        task, material = await self.fill(given, run)
        return {
            "description": self.description,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": task}},
                {"role": "user", "content": {"type": "text", "text": material}},
            ],
        }


def _day(text: str, name: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise rpc_errors.RpcInvalidParams(f"Invalid params: {name} must be a date, YYYY-MM-DD") from None


def _line(message: Mapping[str, Any], room: str) -> str:
    """One message as the agent reads it: ``[id] time #room @author: text`` (a reply marks its thread)."""
    thread = f" (reply in thread {message['tmid']})" if message.get("tmid") else ""
    author = message.get("u", {}).get("username", "?")
    return f"[{message['_id']}] {message['ts']} #{room} @{author}{thread}: {message.get('msg', message.get('text', ''))}"


_CITE = (
    "Cite every point by the message's id in brackets, as given ([abc123]); open a message in its "
    "conversation with get_chat_getMessageContext when a line is not enough. Say plainly when the "
    "messages do not answer."
)


async def _room_named(name: str, run: ToolRunner) -> Mapping[str, Any]:
    wanted = name.strip().lstrip("#").casefold()
    for room in (await run("get_rooms_get", {}))["update"]:
        if room["name"].casefold() == wanted or room["fname"].casefold() == wanted:
            return dict(room)
    raise rpc_errors.RpcInvalidParams(f"Invalid params: no room named {name!r} that you can read")


async def _history(room: Mapping[str, Any], since: date, count: int, run: ToolRunner) -> list[dict[str, Any]]:
    oldest = datetime.combine(since, datetime.min.time(), UTC).isoformat()
    body = await run(_HISTORY_TOOL[room["t"]], {"roomId": room["_id"], "oldest": oldest, "count": count})
    return list(reversed(body["messages"]))  # the route answers newest first; read oldest first


async def _summarise_room(args: Mapping[str, str], run: ToolRunner) -> tuple[str, str]:
    since = _day(args["since"], "since")
    room = await _room_named(args["room"], run)
    messages = await _history(room, since, MAX_PROMPT_MESSAGES, run)
    task = (
        f"Summarise what was discussed in #{room['name']} since {since.isoformat()}: the topics, what "
        f"was decided, and what is still open, each with who said it. {_CITE}"
    )
    if not messages:
        return task, f"No messages in #{room['name']} since {since.isoformat()}."
    shown = f"the {len(messages)} most recent" if len(messages) == MAX_PROMPT_MESSAGES else f"{len(messages)}"
    lines = "\n".join(_line(m, room["name"]) for m in messages)
    return task, f"Messages of #{room['name']} since {since.isoformat()} ({shown}, oldest first):\n{lines}"


async def _find_decision(args: Mapping[str, str], run: ToolRunner) -> tuple[str, str]:
    topic = args["topic"].strip()
    body = await run("get_ai_search_by_q", {"q": topic, "intelligentCount": DECISION_HITS})
    task = (
        f"Find the decision that was made about {topic!r}: what was decided, by whom, when, and whether "
        f"it was revisited later. Search again with get_ai_search_by_q (narrow with in:#room, from:@user, "
        f"after:, before:) if these results do not settle it. {_CITE}"
    )
    hits = body["intelligent"]
    if not hits:
        return task, f"A search for {topic!r} found nothing you can read."
    lines = "\n".join(_line(hit, hit["room"]["name"]) for hit in hits)
    return task, f"Search results for {topic!r}, best first:\n{lines}"


async def _what_did_i_miss(args: Mapping[str, str], run: ToolRunner) -> tuple[str, str]:
    given = args.get("since", "").strip()
    since = _day(given, "since") if given else datetime.now(UTC).date() - timedelta(days=DEFAULT_MISSED_DAYS)
    rooms = (await run("get_rooms_get", {}))["update"]
    unread = len(rooms) - MAX_MISSED_ROOMS_READ
    rooms = rooms[:MAX_MISSED_ROOMS_READ]
    by_room = [(room, await _history(room, since, MISSED_MESSAGES_PER_ROOM, run)) for room in rooms]
    busy = sorted((pair for pair in by_room if pair[1]), key=lambda pair: -len(pair[1]))[:MAX_MISSED_ROOMS]
    task = (
        f"Tell me what I missed since {since.isoformat()}: per room, what happened, what needs my attention "
        f"(questions to me, mentions of me, decisions; leave out what I wrote myself), busiest rooms first. {_CITE}"
    )
    if not busy:
        return task, f"No messages since {since.isoformat()} in the rooms you can read."
    sections = [
        f"#{room['name']} (the latest {len(messages)}):\n"
        + "\n".join(_line(m, room["name"]) for m in messages)
        for room, messages in busy
    ]
    left_out = len([pair for pair in by_room if pair[1]]) - len(busy)
    more = f"\n\n{left_out} quieter room(s) left out." if left_out else ""
    if unread > 0:
        more += f"\n\n{unread} more room(s) not read: ask about them by name (summarise_room)."
    return task, f"Messages since {since.isoformat()}, by room:\n\n" + "\n\n".join(sections) + more


_SINCE = "A date, YYYY-MM-DD (UTC)."
PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "summarise_room",
        "Summarise a room since a date",
        "Summarise a room's messages since a date, citing them.",
        (Argument("room", "The room's name, as #ops or ops."), Argument("since", _SINCE)),
        frozenset({"get_rooms_get", *_HISTORY_TOOL.values()}),
        _summarise_room,
    ),
    Prompt(
        "find_decision",
        "Find the decision about something",
        "Find what was decided about a topic, by whom and when, citing the messages.",
        (Argument("topic", "What the decision was about, in a few words."),),
        frozenset({"get_ai_search_by_q"}),
        _find_decision,
    ),
    Prompt(
        "what_did_i_miss",
        "What did I miss",
        "What happened in your rooms since a date (a week ago when none is given), busiest first.",
        (Argument("since", _SINCE + " Default: seven days ago.", required=False),),
        frozenset({"get_rooms_get", *_HISTORY_TOOL.values()}),
        _what_did_i_miss,
    ),
)


def list_prompts(tool_names: Iterable[str]) -> tuple[Prompt, ...]:
    """The prompts whose tools are all among ``tool_names``."""
    names = set(tool_names)
    return tuple(p for p in PROMPTS if p.tools <= names)


def encode_listing(prompts: tuple[Prompt, ...], *, with_title: bool) -> bytes:
    """The encoded ``prompts/list`` result (``title`` exists from 2025-06-18 on)."""
    listing = {"prompts": [p.listing(with_title=with_title) for p in prompts]}
    return json.dumps(listing, ensure_ascii=False, separators=(",", ":")).encode()
