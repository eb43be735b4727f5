"""The MCP tool catalog, generated from the typed REST routes (never written by hand per tool).

Each route's metadata (method, path, description, tags, parameter models) becomes one tool, or one
tool per variant when the parameters are a union (``users.info`` by ``userId`` or by ``username``).
The rules are the upstream's (upstream-mcp.md §8.7):

* base name: ``GET /api/v1/users.info`` → ``get_users_info`` (:func:`tool_name_for`);
* variants: ``oneOf``/``anyOf`` branches become ``<base>_by_<discriminator>`` tools, the
  discriminator being the branch's own ``required`` list (:func:`variants_for_schema`);
* names fit 64 characters and are unique (:func:`fit_tool_name`, :func:`unique_tool_names`);
* schemas lose what MCP clients mishandle (``nullable``, ``not``, combinators) and always have
  ``"type": "object"`` at the root (:func:`mcp_safe_schema`, :func:`ensure_object_schema`).

Two sets: the curated one (:data:`CURATED_ROUTES`, the default) and the extended one (curated plus
every documented route whose base name is in :data:`ALLOWED_TOOL_NAMES`), chosen by the
``mcp_expose_extended_api`` setting. The rest of the API is never exposed.

    >>> tool_name_for("/api/v1/custom-user-status.list", "GET")
    'get_custom_user_status_list'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..rest import ApiRoute, Method
from .limits import MAX_TOOL_NAME_CHARS
from .prompts import Prompt, encode_listing, list_prompts
from .revisions import REVISIONS, Revision

__all__ = [
    "ALLOWED_TOOL_NAMES",
    "CURATED_ROUTES",
    "Catalog",
    "CuratedRoute",
    "Tool",
    "Variant",
    "build_catalog",
    "ensure_object_schema",
    "fit_tool_name",
    "mcp_safe_schema",
    "route_schema",
    "tool_annotations",
    "tool_name_for",
    "tool_title",
    "unique_tool_names",
    "variants_for_schema",
]

_VERSION_PREFIX = re.compile(r"^/api/v\d+/")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_-]+")
_COMBINATORS = ("oneOf", "anyOf", "allOf")
_DROPPED_KEYS = frozenset({"nullable", "not"})
# A name that must be shortened keeps this many leading characters, then "_" and 8 hex digits of a
# sha256: 55 + 1 + 8 = 64, the cap (upstream fitToolName).
_HASHED_PREFIX_CHARS = 55
_HASH_HEX_CHARS = 8
# A base name keeps at least this many characters before a long variant suffix forces hashing.
_MIN_BASE_CHARS = 16
_MISSING_DOCS_TAG = "Missing Documentation"
_EXTENDED_METHODS = frozenset({"GET", "POST", "PUT", "DELETE"})


@dataclass(frozen=True, slots=True)
class CuratedRoute:
    method: Method
    path: str
    fallback_description: str | None = None


#: The default set: upstream's six routes, then our AI-search routes (included when registered).
CURATED_ROUTES: tuple[CuratedRoute, ...] = (
    CuratedRoute("POST", "/api/v1/chat.postMessage"),
    CuratedRoute("GET", "/api/v1/chat.getMessage"),
    CuratedRoute(
        "POST",
        "/api/v1/channels.create",
        "Create a public channel. Requires `name`; optional `members` (array of usernames).",
    ),
    CuratedRoute(
        "GET", "/api/v1/channels.list.joined", "List the public channels the authenticated user has joined."
    ),
    CuratedRoute(
        "GET",
        "/api/v1/rooms.get",
        "List rooms the authenticated user has access to (optionally updated since a timestamp).",
    ),
    CuratedRoute("GET", "/api/v1/users.info"),
    CuratedRoute(
        "GET",
        "/api/v1/ai.search",
        "Search the messages of the rooms the authenticated user can read (keyword and semantic). The query "
        "takes inline filters: in:#room, from:@user, after:/before:/on:/during: a date (2026-11-01, yesterday, "
        "-7d, last-week), has:link|file|image|reaction|thread, is:thread|dm|pinned, sort:new, -in:, -from:, "
        '-word, -"phrase", "exact phrase"; tz sets the time zone of the dates.',
    ),
    CuratedRoute(
        "POST",
        "/api/v1/ai.search.answer",
        "Answer a question from messages the authenticated user can read, citing them as [N].",
    ),
    # A hit read in its conversation, and a room read between two times: what an agent opens after a
    # search, before it cites (and what the prompts read).
    CuratedRoute("GET", "/api/v1/chat.getMessageContext"),
    CuratedRoute("GET", "/api/v1/chat.getThreadMessages"),
    CuratedRoute("GET", "/api/v1/channels.history"),
    CuratedRoute("GET", "/api/v1/groups.history"),
    CuratedRoute("GET", "/api/v1/im.history"),
)


def _expand(groups: Mapping[str, str]) -> frozenset[str]:
    return frozenset(prefix + name for prefix, names in groups.items() for name in names.split())


#: Base names the extended set may expose: upstream's 93, as data (§8.7). The destructive routes
#: (post_*_delete) and users.register are left out on purpose, as upstream does.
ALLOWED_TOOL_NAMES: frozenset[str] = _expand(
    {
        # read routes
        "get_chat_": "getDiscussions getMentionedMessages getMessage getPinnedMessages getStarredMessages "
        "getThreadMessages getThreadsList search syncMessages syncThreadMessages syncThreadsList",
        "get_custom_user_status_": "list",
        "get_dm_": "files history list list_everyone members messages messages_others",
        "get_": "me spotlight",
        "get_rooms_": "autocomplete_availableForTeams autocomplete_channelAndPrivate get getDiscussions info "
        "isMember membersOrderedByRole nameExists",
        "get_subscriptions_": "get getOne",
        "get_teams_": "autocomplete info list listAll listChildren listRooms listRoomsOfUser members",
        "get_users_": "autocomplete checkUsernameAvailability getPreferences getPresence getStatus info listTeams",
        # write routes
        "post_chat_": "followMessage pinMessage postMessage react reportMessage sendMessage starMessage "
        "unfollowMessage unPinMessage unStarMessage update",
        "post_custom_user_status_": "create update",
        "post_dm_": "close create open setTopic",
        "post_im_": "blockUser",
        "post_rooms_": "banUser changeArchivationState createDiscussion favorite hide invite join leave muteUser "
        "open saveRoomSettings unbanUser unmuteUser",
        "post_subscriptions_": "read unread",
        "post_teams_": "addMembers addRooms convertToChannel create leave removeMember removeRoom update "
        "updateMember updateRoom",
        "post_users_": "create setStatus update updateOwnBasicInfo",
    }
)


# -- names ---------------------------------------------------------------------------------------


def tool_name_for(path: str, method: str) -> str:
    """``<method>_<path>``: the version prefix stripped, each run of other characters made ``_``."""
    return f"{method.lower()}_{_NOT_ALNUM.sub('_', _VERSION_PREFIX.sub('', path))}"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_HEX_CHARS]


def fit_tool_name(base: str, discriminator: str | None = None) -> str:
    """``<base>`` or ``<base>_by_<discriminator>``, fitted to 64 characters.

    A long name keeps its whole suffix and a shortened base when the base keeps at least 16
    characters; otherwise it becomes 55 characters, ``_`` and 8 hex digits of its sha256.
    """
    suffix = "" if discriminator is None else "_by_" + _NOT_NAME_CHAR.sub("_", discriminator)
    full = base + suffix
    if len(full) <= MAX_TOOL_NAME_CHARS:
        return full
    if len(suffix) <= MAX_TOOL_NAME_CHARS - min(len(base), _MIN_BASE_CHARS):
        return base[: MAX_TOOL_NAME_CHARS - len(suffix)] + suffix
    return f"{full[:_HASHED_PREFIX_CHARS]}_{_short_hash(full)}"


def unique_tool_names(entries: Sequence[tuple[str, str, str, Mapping[str, Any]]]) -> list[str]:
    """Names made unique in list order: a later duplicate of ``(method, path, name, schema)`` becomes
    55 characters, ``_`` and 8 hex digits of ``method:path:name:JSON(schema):index:attempt``."""
    taken: set[str] = set()
    out: list[str] = []
    for index, (method, path, name, schema) in enumerate(entries):
        candidate, attempt = name, 0
        while candidate in taken:
            seed = f"{method}:{path}:{name}:{_compact_json(schema)}:{index}:{attempt}"
            candidate = f"{name[:_HASHED_PREFIX_CHARS]}_{_short_hash(seed)}"
            attempt += 1
        taken.add(candidate)
        out.append(candidate)
    return out


# -- schemas -------------------------------------------------------------------------------------


def mcp_safe_schema(node: Any) -> Any:
    """A schema MCP clients read the same way: ``nullable`` and ``not`` dropped at every level, and
    a node with a non-empty ``oneOf`` (else ``anyOf``, else ``allOf``) replaced by its first branch,
    the node's own other keys winning.

    Upstream quirk kept on purpose: a *property* named ``not`` or ``nullable`` is dropped too.
    """
    if isinstance(node, list):
        return [mcp_safe_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: mcp_safe_schema(value) for key, value in node.items() if key not in _DROPPED_KEYS}
    for key in _COMBINATORS:
        branches = out.get(key)
        if isinstance(branches, list) and branches:
            first = branches[0] if isinstance(branches[0], dict) else {}
            own = {k: v for k, v in out.items() if k not in _COMBINATORS}
            return {**first, **own}
    return out


def ensure_object_schema(schema: Any) -> dict[str, Any]:
    """A tool's ``inputSchema``: normalised, with ``"type": "object"`` at the root (MCP requires it)."""
    if not isinstance(schema, dict):
        return {"type": "object", "additionalProperties": True}
    safe: dict[str, Any] = mcp_safe_schema(schema)
    safe["type"] = "object"
    return safe


def route_schema(route: ApiRoute) -> dict[str, Any]:
    """The raw schema of a route's parameters, in the shape the upstream's typed routes have.

    Two adjustments to ``ApiRoute.input_schema()``: a single-model route carries the route's own
    description, and parameters every variant shares with the same schema (``text`` of
    ``chat.postMessage``) move to the root, so each branch keeps only what tells it apart and the
    tool names read ``post_chat_postMessage_by_roomId``, as upstream's.
    """
    schema = route.input_schema()
    branches = schema.get("oneOf")
    if not isinstance(branches, list) or len(branches) < 2:
        if route.description:
            schema["description"] = route.description
        return schema
    props = [b.get("properties", {}) for b in branches]
    required = [b.get("required", []) for b in branches]
    shared = [
        name
        for name, prop in props[0].items()
        if all(p.get(name) == prop for p in props[1:]) and all(name in r for r in required)
    ]
    if not shared:
        return schema
    schema["properties"] = {name: props[0][name] for name in shared}
    schema["required"] = shared
    schema["oneOf"] = [
        {
            **branch,
            "properties": {k: v for k, v in branch.get("properties", {}).items() if k not in shared},
            "required": [name for name in branch.get("required", []) if name not in shared],
        }
        for branch in branches
    ]
    return schema


@dataclass(frozen=True, slots=True)
class Variant:
    discriminator: str | None
    input_schema: dict[str, Any]
    description: str | None


def _merge_branch(root: Mapping[str, Any], branch: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**root, **branch}
    root_props, branch_props = root.get("properties"), branch.get("properties")
    if isinstance(root_props, dict) or isinstance(branch_props, dict):
        merged["properties"] = {**(root_props or {}), **(branch_props or {})}
    root_req, branch_req = root.get("required"), branch.get("required")
    if isinstance(root_req, list) or isinstance(branch_req, list):
        merged["required"] = list(dict.fromkeys([*(root_req or []), *(branch_req or [])]))
    return merged


def _discriminator(branch: Any) -> str | None:
    required = branch.get("required") if isinstance(branch, dict) else None
    if not isinstance(required, list) or not required:
        return None
    return "_".join(str(name) for name in required)


def _description(schema: Mapping[str, Any]) -> str | None:
    text = schema.get("description")
    return text if isinstance(text, str) and text else None


def variants_for_schema(raw: Mapping[str, Any]) -> list[Variant]:
    """One variant per branch of the root's ``oneOf`` (else ``anyOf``) when there are several, each
    with a distinct discriminator; otherwise one variant with the flattened schema."""
    key = next((k for k in ("oneOf", "anyOf") if isinstance(raw.get(k), list)), None)
    branches: list[Any] = raw[key] if key is not None else []
    if key is not None and len(branches) > 1:
        discriminators = [_discriminator(b) for b in branches]
        if all(discriminators) and len(set(discriminators)) == len(discriminators):
            root = {k: v for k, v in raw.items() if k != key}
            out = []
            for branch, disc in zip(branches, discriminators, strict=True):
                merged = _merge_branch(root, branch)
                out.append(
                    Variant(disc, ensure_object_schema(merged), _description(merged) or _description(raw))
                )
            return out
    return [Variant(None, ensure_object_schema(raw), _description(raw))]


# -- the catalog ---------------------------------------------------------------------------------


def tool_annotations(route: ApiRoute, title: str) -> dict[str, Any]:
    """The behaviour hints of a route's tool, from its declaration: a GET only reads (and so is
    idempotent and destroys nothing); a write destroys what it declares ``destructive`` and is
    idempotent only when it declares so; only a route that declares ``open_world`` reaches past the
    workspace. Every hint is written out, so no client falls back to the spec's pessimistic defaults."""
    read_only = route.method == "GET"
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": not read_only and route.destructive,
        "idempotentHint": read_only or route.idempotent,
        "openWorldHint": route.open_world,
    }


def tool_title(route: ApiRoute, discriminator: str | None) -> str:
    """The route's declared title (else its name), with the variant: ``Get a person's profile, by userId``."""
    title = route.title or route.name
    return title if discriminator is None else f"{title}, by {discriminator}"


@dataclass(frozen=True, slots=True)
class Tool:
    """One MCP tool: the route it calls, and its listing (name, title, description, inputSchema,
    annotations)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    route: ApiRoute
    title: str = ""
    annotations: Mapping[str, Any] = field(default_factory=dict)
    # The route's declared reply, as the tool's outputSchema (None: the tool answers text only).
    output_schema: dict[str, Any] | None = None

    def listing(self, revision: Revision) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it at ``revision`` (only the fields that revision has)."""
        out: dict[str, Any] = {"name": self.name}
        if revision.structured and self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if revision.structured and self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if revision.annotations and self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


@dataclass(frozen=True)
class Catalog:
    """An immutable tool set, with the ``tools/list`` result of each revision encoded once (it never
    changes)."""

    tools: tuple[Tool, ...]
    by_name: Mapping[str, Tool] = field(init=False)
    #: The prompts whose tools are all here (``prompts.py``).
    prompts: tuple[Prompt, ...] = field(init=False)
    _listings: Mapping[str, bytes] = field(init=False)
    _prompt_listings: Mapping[str, bytes] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {tool.name: tool for tool in self.tools})
        object.__setattr__(self, "prompts", list_prompts(self.by_name))
        listings = {
            r.version: _compact_json({"tools": [tool.listing(r) for tool in self.tools]}).encode()
            for r in REVISIONS
        }
        object.__setattr__(self, "_listings", listings)
        prompt_listings = {
            r.version: encode_listing(self.prompts, with_title=r.structured) for r in REVISIONS
        }
        object.__setattr__(self, "_prompt_listings", prompt_listings)

    def list_result_json(self, revision: Revision) -> bytes:
        """The encoded ``tools/list`` result at ``revision``."""
        return self._listings[revision.version]

    def prompts_result_json(self, revision: Revision) -> bytes:
        """The encoded ``prompts/list`` result at ``revision``."""
        return self._prompt_listings[revision.version]

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the server declares: tools, and prompts when there are any; no list changes while the
        server runs."""
        out: dict[str, Any] = {"tools": {"listChanged": False}}
        if self.prompts:
            out["prompts"] = {"listChanged": False}
        return out


def _tools_for(routes: Iterable[tuple[ApiRoute, str]]) -> list[Tool]:
    """Tools of ``(route, fallback description)`` pairs, in order, with unique fitted names."""
    drafts: list[tuple[ApiRoute, str, Variant, str]] = []
    for route, fallback in routes:
        base = tool_name_for(route.path, route.method)
        drafts += [
            (route, fit_tool_name(base, v.discriminator), v, v.description or fallback)
            for v in variants_for_schema(route_schema(route))
        ]
    names = unique_tool_names([(r.method, r.path, name, v.input_schema) for r, name, v, _ in drafts])
    tools = []
    for (route, _fitted, v, description), name in zip(drafts, names, strict=True):
        title = tool_title(route, v.discriminator)
        hints = tool_annotations(route, title)
        tools.append(Tool(name, description, v.input_schema, route, title, hints, route.reply_schema()))
    return tools


def _extended_fallback(route: ApiRoute) -> str:
    tags = f" ({', '.join(route.tags)})" if route.tags else ""
    return f"{route.method} {route.path}{tags}"


def build_catalog(routes: Sequence[ApiRoute], *, extended: bool = False) -> Catalog:
    """The curated tool set of ``routes``, or the extended one; build it once per app and setting."""
    by_key = {(route.method, route.path): route for route in routes}
    curated = [
        (by_key[(c.method, c.path)], c.fallback_description or f"{c.method} {c.path}")
        for c in CURATED_ROUTES
        if (c.method, c.path) in by_key
    ]
    tools = {tool.name: tool for tool in _tools_for(curated)}
    if extended:
        allowed = [
            (route, _extended_fallback(route))
            for route in routes
            if _MISSING_DOCS_TAG not in route.tags
            and route.method in _EXTENDED_METHODS
            and tool_name_for(route.path, route.method) in ALLOWED_TOOL_NAMES
        ]
        # Keyed by name: an extended tool replaces the curated tool of that name in its place.
        tools.update((tool.name, tool) for tool in _tools_for(allowed))
    return Catalog(tuple(tools.values()))


def _compact_json(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
