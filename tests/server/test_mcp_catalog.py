"""The MCP tool catalog: names, variants, schemas and the two tool sets, from route metadata."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ai_search_server.mcp.catalog import (
    ALLOWED_TOOL_NAMES,
    build_catalog,
    ensure_object_schema,
    fit_tool_name,
    mcp_safe_schema,
    tool_name_for,
    unique_tool_names,
    variants_for_schema,
)
from ai_search_server.mcp.revisions import revision
from ai_search_server.rest import ApiRequest, ApiRoute, Method
from ai_search_server.routes import all_routes
from ai_search_server.routes.params import NoParams

from ._mcp_fixtures import MODERN, REVISIONS, schema_errors

NAME_RULE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CURATED_NAMES = [
    "post_chat_postMessage_by_roomId",
    "post_chat_postMessage_by_channel",
    "get_chat_getMessage",
    "post_channels_create",
    "get_channels_list_joined",
    "get_rooms_get",
    "get_users_info_by_userId",
    "get_users_info_by_username",
]
# Our AI-search routes, curated whenever they are registered, in this order: search, answer, and the
# conversation a hit is read in.
AI_ROUTES = (
    ("GET", "ai.search"),
    ("POST", "ai.search.answer"),
    ("GET", "chat.getMessageContext"),
    ("GET", "chat.getThreadMessages"),
    ("GET", "channels.history"),
    ("GET", "groups.history"),
    ("GET", "im.history"),
)


async def _handler(_req: ApiRequest[Any]) -> dict[str, Any]:
    return {}


def fake_route(method: Method, name: str, *, description: str = "", tags: tuple[str, ...] = ()) -> ApiRoute:
    return ApiRoute(
        method=method, name=name, handler=_handler, description=description, params=(NoParams,), tags=tags
    )


def null_paths(node: Any, path: str = "") -> list[str]:
    """Where a JSON value holds null, except schema defaults (``"default": null`` is a real default)."""
    if node is None:
        return [path]
    if isinstance(node, dict):
        return [p for k, v in node.items() if k != "default" for p in null_paths(v, f"{path}/{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in null_paths(v, f"{path}/{i}")]
    return []


# -- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "name"),
    [
        pytest.param("GET", "/api/v1/users.info", "get_users_info", id="dots-become-underscores"),
        pytest.param(
            "GET", "/api/v1/channels.list.joined", "get_channels_list_joined", id="every-dot-replaced"
        ),
        pytest.param(
            "GET", "/api/v1/custom-user-status.list", "get_custom_user_status_list", id="dashes-too"
        ),
        pytest.param("POST", "/api/v1/chat.postMessage", "post_chat_postMessage", id="case-of-the-path-kept"),
        pytest.param("DELETE", "/api/v22/a..b", "delete_a_b", id="any-version-prefix-and-runs-collapse"),
        pytest.param("GET", "/other/x.y", "get__other_x_y", id="non-api-path-kept-whole"),
    ],
)
def test_tool_name_for_prefixes_the_method_and_flattens_the_path(method: str, path: str, name: str) -> None:
    assert tool_name_for(path, method) == name


@pytest.mark.parametrize(
    ("base", "discriminator", "expected"),
    [
        pytest.param("get_users_info", None, "get_users_info", id="short-name-unchanged"),
        pytest.param("get_users_info", "userId", "get_users_info_by_userId", id="variant-suffix-added"),
        pytest.param("post_x", "a b.c", "post_x_by_a_b_c", id="suffix-characters-outside-the-rule-replaced"),
        pytest.param("b" * 60, "id", "b" * 58 + "_by_id", id="long-base-cut-to-keep-the-whole-suffix"),
        pytest.param("b" * 64, None, "b" * 64, id="exactly-64-kept"),
    ],
)
def test_fit_tool_name(base: str, discriminator: str | None, expected: str) -> None:
    assert fit_tool_name(base, discriminator) == expected


def test_fit_tool_name_hashes_when_the_suffix_leaves_too_little_base() -> None:
    name = fit_tool_name("get_" + "x" * 20, "d" * 50)
    assert len(name) == 64
    assert name.startswith(("get_" + "x" * 20 + "_by_" + "d" * 50)[:55] + "_")
    assert re.fullmatch(r"[0-9a-f]{8}", name[56:])


@given(st.text(max_size=200), st.one_of(st.none(), st.text(max_size=200)))
def test_fitted_names_always_fit_the_length_cap(base: str, discriminator: str | None) -> None:
    safe_base = tool_name_for("/api/v1/" + base, "GET")
    assert len(fit_tool_name(safe_base, discriminator)) <= 64


@given(st.lists(st.sampled_from(["a", "b", "c" * 70]), max_size=12))
def test_unique_tool_names_are_unique_and_keep_the_first_of_each(names: list[str]) -> None:
    out = unique_tool_names([("GET", "/p", n, {}) for n in names])
    assert len(set(out)) == len(out)
    for i, name in enumerate(names):
        if name not in names[:i]:
            assert out[i] == name
        else:
            assert re.fullmatch(re.escape(name[:55]) + "_[0-9a-f]{8}", out[i])


# -- schemas -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"type": "string", "nullable": True}, {"type": "string"}, id="nullable-dropped"),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "string", "not": {"const": ""}}}},
            {"type": "object", "properties": {"a": {"type": "string"}}},
            id="not-dropped-at-depth",
        ),
        pytest.param(
            {"type": "object", "properties": {"not": {"type": "string"}, "b": {"type": "integer"}}},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
            id="upstream-quirk-a-property-named-not-is-dropped-too",
        ),
        pytest.param(
            {"description": "root", "oneOf": [{"type": "string", "description": "branch"}, {"type": "null"}]},
            {"type": "string", "description": "root"},
            id="oneOf-adopts-first-branch-own-keys-win",
        ),
        pytest.param(
            {"oneOf": [], "anyOf": [{"type": "integer"}], "allOf": [{"type": "string"}]},
            {"type": "integer"},
            id="empty-oneOf-falls-to-anyOf-and-all-combinators-go",
        ),
        pytest.param({"allOf": [{"minimum": 1}]}, {"minimum": 1}, id="allOf-adopts-first-branch"),
        pytest.param(
            {"oneOf": [], "type": "object"}, {"oneOf": [], "type": "object"}, id="empty-combinator-kept"
        ),
        pytest.param(
            {"items": [{"anyOf": [{"type": "string", "nullable": True}, {"type": "null"}]}]},
            {"items": [{"type": "string"}]},
            id="branches-are-normalised-inside-arrays",
        ),
    ],
)
def test_mcp_safe_schema(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert mcp_safe_schema(schema) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            None, {"type": "object", "additionalProperties": True}, id="missing-schema-accepts-anything"
        ),
        pytest.param(
            [{"type": "object"}], {"type": "object", "additionalProperties": True}, id="array-replaced"
        ),
        pytest.param("object", {"type": "object", "additionalProperties": True}, id="non-object-replaced"),
        pytest.param({"type": "string", "nullable": True}, {"type": "object"}, id="type-forced-to-object"),
        pytest.param({"properties": {}}, {"properties": {}, "type": "object"}, id="type-added"),
    ],
)
def test_ensure_object_schema(schema: Any, expected: dict[str, Any]) -> None:
    assert ensure_object_schema(schema) == expected


USERS_INFO_LIKE = {
    "type": "object",
    "description": "root text",
    "properties": {"fields": {"type": "string"}},
    "required": ["fields"],
    "oneOf": [
        {"properties": {"userId": {"type": "string"}}, "required": ["userId"], "description": "by id"},
        {
            "properties": {"username": {"type": "string"}, "fields": {"type": "integer"}},
            "required": ["username"],
        },
    ],
}


def test_variants_split_on_distinct_discriminators_from_the_raw_branch() -> None:
    by_id, by_name = variants_for_schema(USERS_INFO_LIKE)
    assert (by_id.discriminator, by_name.discriminator) == ("userId", "username")
    assert by_id.input_schema["required"] == ["fields", "userId"]  # root first, shared root not in the name
    assert by_name.input_schema["properties"]["fields"] == {"type": "integer"}  # the branch wins
    assert (by_id.description, by_name.description) == ("by id", "root text")
    assert all("oneOf" not in v.input_schema and v.input_schema["type"] == "object" for v in (by_id, by_name))


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"oneOf": [{"required": ["a"]}, {"required": ["a"]}]}, id="same-discriminators"),
        pytest.param({"oneOf": [{"required": ["a"]}, {"properties": {}}]}, id="a-branch-without-required"),
        pytest.param({"oneOf": [{"required": ["a"]}]}, id="a-single-branch"),
        pytest.param({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}, id="allOf-is-never-split"),
    ],
)
def test_variants_stay_one_flattened_tool(schema: dict[str, Any]) -> None:
    (variant,) = variants_for_schema(schema)
    assert variant.discriminator is None
    assert not {"oneOf", "anyOf", "allOf"} & variant.input_schema.keys()


def test_anyOf_splits_when_there_is_no_oneOf() -> None:
    variants = variants_for_schema({"anyOf": [{"required": ["a", "b"]}, {"required": ["c"]}]})
    assert [v.discriminator for v in variants] == ["a_b", "c"]


# -- the catalog of the real registry ------------------------------------------------------------


def test_curated_set_is_the_upstream_routes_with_variants_expanded() -> None:
    routes = all_routes()
    catalog = build_catalog(routes)
    assert [t.name for t in catalog.tools[: len(CURATED_NAMES)]] == CURATED_NAMES
    assert "post_chat_postMessage" not in catalog.by_name
    assert catalog.by_name["post_chat_postMessage_by_roomId"].input_schema["required"] == ["text", "roomId"]
    # then our AI-search routes, each with its variants, when they are registered
    registered_ai = [(r.method, r.name) for r in routes if (r.method, r.name) in AI_ROUTES]
    tail = catalog.tools[len(CURATED_NAMES) :]
    assert [key for key in AI_ROUTES if key in registered_ai] == list(
        dict.fromkeys((t.route.method, t.route.name) for t in tail)
    )


def test_extended_set_adds_only_allow_listed_documented_routes() -> None:
    curated = build_catalog(all_routes())
    extended = build_catalog(all_routes(), extended=True)
    names = [t.name for t in extended.tools]
    assert names[: len(CURATED_NAMES)] == CURATED_NAMES
    assert {"get_me", "get_subscriptions_get", "get_users_autocomplete"} <= set(names)
    assert {"post_login", "post_logout", "post_users_generatePersonalAccessToken"}.isdisjoint(names)
    assert len(names) > len(curated.tools)
    # The conversation routes upstream allow-lists, under upstream's tool names; deletes never.
    conversations = {
        "get_chat_getThreadMessages",
        "get_chat_getThreadsList",
        "get_chat_getPinnedMessages",
        "get_chat_search",
        "get_rooms_info_by_roomId",
        "get_rooms_info_by_roomName",
        "post_chat_update",
        "post_chat_react",
        "post_chat_pinMessage",
        "post_chat_unPinMessage",
    }
    assert conversations <= set(names)
    assert "post_chat_delete" not in names


def test_allowed_tool_names_are_upstreams_93_without_deletes() -> None:
    assert len(ALLOWED_TOOL_NAMES) == 93
    assert not any(name.endswith("_delete") for name in ALLOWED_TOOL_NAMES)
    assert {"get_chat_getMessage", "post_im_blockUser", "get_dm_messages_others"} <= ALLOWED_TOOL_NAMES


def test_descriptions_fall_back_per_set() -> None:
    undocumented = [fake_route("GET", "rooms.get", tags=("Rooms",)), fake_route("GET", "users.info")]
    curated = build_catalog(undocumented)
    extended = build_catalog(undocumented, extended=True)
    assert curated.by_name["get_rooms_get"].description.startswith("List rooms the authenticated user")
    assert curated.by_name["get_users_info"].description == "GET /api/v1/users.info"
    # the extended entry replaces the curated one of the same name, in its place
    assert [t.name for t in extended.tools] == ["get_rooms_get", "get_users_info"]
    assert extended.by_name["get_rooms_get"].description == "GET /api/v1/rooms.get (Rooms)"
    assert extended.by_name["get_users_info"].description == "GET /api/v1/users.info"


@pytest.mark.parametrize(
    ("routes", "present", "absent"),
    [
        pytest.param(
            [fake_route("GET", "ai.search", description="Search.")],
            {"get_ai_search"},
            set(),
            id="ai-search-curated-when-registered",
        ),
        pytest.param(
            [fake_route("POST", "ai.search")], set(), {"post_ai_search"}, id="curated-route-matches-method"
        ),
        pytest.param(
            [fake_route("GET", "chat.getMessage", tags=("Missing Documentation",))],
            {"get_chat_getMessage"},
            set(),
            id="curated-keeps-undocumented-routes",
        ),
        pytest.param(
            [fake_route("GET", "spotlight", tags=("Missing Documentation",))],
            set(),
            {"get_spotlight"},
            id="extended-drops-undocumented-routes",
        ),
        pytest.param(
            [fake_route("PUT", "dm.close")], set(), {"put_dm_close"}, id="extended-needs-allow-listed-name"
        ),
    ],
)
def test_extended_membership(routes: list[ApiRoute], present: set[str], absent: set[str]) -> None:
    names = set(build_catalog(routes, extended=True).by_name)
    assert present <= names
    assert not absent & names


@pytest.mark.parametrize("extended", [False, True], ids=["curated", "extended"])
def test_every_tool_is_valid_for_mcp_clients(extended: bool) -> None:
    catalog = build_catalog(all_routes(), extended=extended)
    names = [t.name for t in catalog.tools]
    assert len(set(names)) == len(names)
    for tool in catalog.tools:
        assert NAME_RULE.match(tool.name), tool.name
        assert tool.description
        assert tool.input_schema["type"] == "object"
        Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:  # root object: 2025-06-18 and 2025-11-25 require it
            assert tool.output_schema["type"] == "object" and "$ref" not in json.dumps(tool.output_schema)
            Draft202012Validator.check_schema(tool.output_schema)
    for version in (*REVISIONS, MODERN):
        listing = json.loads(catalog.list_result_json(revision(version)))
        assert null_paths(listing) == []
        for tool in listing["tools"]:
            assert schema_errors(version, "Tool", tool) == [], (version, tool["name"])


# -- titles and behaviour hints, from the route declarations -----------------------------------------

_READS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_ADDS = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}


@pytest.mark.parametrize(
    ("name", "title", "hints"),
    [
        pytest.param("get_rooms_get", "List my rooms", _READS, id="a-get-only-reads"),
        pytest.param(
            "get_ai_search_by_q", "Search messages, by q", _READS, id="search-reads-the-workspace-only"
        ),
        pytest.param(
            "post_chat_postMessage_by_channel",
            "Post a message, by channel",
            _ADDS,
            id="a-post-adds-once-per-call",
        ),
        pytest.param("post_channels_create", "Create a channel", _ADDS, id="creating-is-additive"),
        pytest.param(
            "post_ai_search_answer",
            "Answer a question, citing messages",
            {**_ADDS, "openWorldHint": True},
            id="answers-reach-the-llm-provider",
        ),
        pytest.param(
            "post_chat_update",
            "Edit a message",
            {**_ADDS, "destructiveHint": True, "idempotentHint": True},
            id="an-edit-overwrites-and-repeats-harmlessly",
        ),
        pytest.param(
            "post_chat_react",
            "React to a message",
            {**_ADDS, "destructiveHint": True},
            id="a-toggle-may-take-back-and-is-not-idempotent",
        ),
        pytest.param(
            "post_chat_pinMessage",
            "Pin a message",
            {**_ADDS, "idempotentHint": True},
            id="pinning-twice-is-pinning",
        ),
        pytest.param("get_chat_getThreadMessages", "Read a thread", _READS, id="extended-reads-too"),
    ],
)
def test_annotations_come_from_the_declarations(name: str, title: str, hints: dict[str, bool]) -> None:
    tool = build_catalog(all_routes(), extended=True).by_name[name]
    assert tool.title == title
    assert dict(tool.annotations) == {"title": title, **hints}


@pytest.mark.parametrize("extended", [False, True], ids=["curated", "extended"])
def test_every_tool_is_annotated_by_its_method(extended: bool) -> None:
    for tool in build_catalog(all_routes(), extended=extended).tools:
        hints = tool.annotations
        assert hints["readOnlyHint"] is (tool.route.method == "GET"), tool.name
        if tool.route.method == "POST":
            assert hints["idempotentHint"] is tool.route.idempotent, tool.name
        assert hints["title"] == tool.title and tool.title, tool.name


@pytest.mark.parametrize(
    ("version", "has_title"),
    [
        pytest.param("2025-03-26", False, id="2025-03-26-annotations-only"),
        pytest.param("2025-06-18", True, id="2025-06-18-adds-title"),
        pytest.param("2025-11-25", True, id="2025-11-25"),
        pytest.param("2026-07-28", True, id="2026-07-28"),
    ],
)
def test_each_revision_lists_the_fields_it_has(version: str, has_title: bool) -> None:
    listing = json.loads(build_catalog(all_routes()).list_result_json(revision(version)))
    for tool in listing["tools"]:
        assert set(tool["annotations"]) == {
            "title",
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        }
        assert ("title" in tool) is has_title
        assert schema_errors(version, "Tool", tool) == []


def test_the_docs_list_the_allow_list_as_it_is() -> None:
    """docs/mcp.md says which of upstream's allow-listed names this server has and which it does not."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = text.split("### The extended catalog and upstream's allow-list", 1)[1].split("\n### ", 1)[0]
    present_text, absent_text = section.split("\nAbsent (", 1)
    bases = {
        tool_name_for(t.route.path, t.route.method) for t in build_catalog(all_routes(), extended=True).tools
    }
    present, absent = ALLOWED_TOOL_NAMES & bases, ALLOWED_TOOL_NAMES - bases
    assert _listed_names(present_text) == present
    assert _listed_names(absent_text) == absent
    assert f"Present ({len(present)})" in present_text and absent_text.startswith(f"{len(absent)},")


def _listed_names(part: str) -> set[str]:
    """The `names` of a Markdown list's items."""
    lines = re.findall(r"^- (.+)$", part, flags=re.MULTILINE)
    return {name for line in lines for name in re.findall(r"`([A-Za-z_]+)`", line)}
