"""A5. Text that is not Unicode: a lone surrogate in any parameter of any route is a 400, never a 500.

JSON can spell a lone surrogate (``"\\ud800"``) and Python's parser lets it through, but it has no UTF-8
form: SQLite, the pipeline and the JSON encoders refuse it mid-request, which was a 500 (REST) or a
-32603 with a traceback in the log (MCP). The check is at the parsing boundary, so the table covers every
route and every parameter it declares, the parameter names themselves, nested values, the JSON selectors
inside query parameters, percent-encoded surrogate bytes in a query string, and every MCP tool argument.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.applications import Starlette

from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.mcp.catalog import build_catalog
from ai_search_server.rest import ApiRoute
from ai_search_server.routes import all_routes
from ai_search_server.store.base import Store
from tests.server.conftest import BASE_URL, Workspace

from .conftest import Figure, reliability_settings

SURROGATE = "\ud800"
# The bytes a lone surrogate becomes when an encoder lets it through (CESU-8): never valid UTF-8.
SURROGATE_BYTES = quote(SURROGATE.encode("utf-8", "surrogatepass"))
MCP_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
# Parameters whose value is JSON inside a query string, with the key the route reads from it.
SELECTORS = {"rooms.autocomplete.channelAndPrivate": "name", "users.autocomplete": "term"}


def _properties(route: ApiRoute) -> list[str]:
    names: dict[str, None] = {}
    for model in route.params:
        for name, info in model.model_fields.items():
            names[info.alias or name] = None
    return list(names)


def rest_cases() -> Iterator[tuple[str, ApiRoute, dict[str, Any] | str]]:
    """(case id, route, JSON body or raw query string) for every route."""
    for route in all_routes():
        if route.reads_body:
            for name in _properties(route):
                yield f"{route.name} {name}", route, {name: SURROGATE}
            yield f"{route.name} as a key", route, {SURROGATE: "x"}
        else:
            for name in _properties(route):
                yield f"{route.name} {name}", route, f"{name}={SURROGATE_BYTES}"
            yield f"{route.name} as a key", route, f"{SURROGATE_BYTES}=x"
        if route.name in SELECTORS:
            selector = json.dumps({SELECTORS[route.name]: SURROGATE})  # ASCII: the escape travels as text
            yield f"{route.name} selector", route, f"selector={quote(selector)}"
    answer = next(r for r in all_routes() if r.name == "ai.search.answer")
    yield "ai.search.answer nested", answer, {"query": "x", "messages": [{"_id": SURROGATE}]}


def _app(store: Store) -> Starlette:
    # No rate limiter: every case must reach the parameter check, not a spent budget.
    return create_app(reliability_settings(mcp_expose_extended_api=True), store, limiter=None)


def _client(app: Starlette) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 50000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


@pytest.mark.requirement("A5")
@pytest.mark.anyio
async def test_a_lone_surrogate_in_any_rest_parameter_is_refused_as_invalid(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    alice = workspace["alice"]
    wrong: list[str] = []
    tried = server_errors = 0
    async with _client(_app(store)) as http:
        for case, route, params in rest_cases():
            tried += 1
            if isinstance(params, dict):
                body = json.dumps(params).encode()  # json.dumps escapes the surrogate: valid JSON text
                response = await http.post(
                    route.path, content=body, headers={**alice.headers, "Content-Type": "application/json"}
                )
            else:
                response = await http.get(f"{route.path}?{params}", headers=alice.headers)
            server_errors += response.status_code >= 500
            kind = response.json().get("errorType") if response.status_code < 500 else None
            if response.status_code != 400 or kind != "error-invalid-params" or "Traceback" in response.text:
                wrong.append(f"{case}: {response.status_code} {response.text[:120]}")
    figure(tried=tried, failed=len(wrong), routes=len(all_routes()), server_errors=server_errors)
    assert wrong == []


@pytest.mark.requirement("A5")
@pytest.mark.anyio
async def test_a_lone_surrogate_in_any_mcp_tool_argument_is_an_error_result(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    alice = workspace["alice"]
    catalog = build_catalog(all_routes(), extended=True)
    wrong: list[str] = []
    tried = internal_errors = 0
    async with _client(_app(store)) as http:
        for tool in catalog.tools:
            names = list(tool.input_schema.get("properties", {})) or ["unknown"]
            for name in [*names, SURROGATE]:
                tried += 1
                call = {"name": tool.name, "arguments": {name: SURROGATE} if name != SURROGATE else {name: 1}}
                payload = {"jsonrpc": "2.0", "id": tried, "method": "tools/call", "params": call}
                response = await http.post(
                    MCP_PATH, content=json.dumps(payload).encode(), headers={**alice.pat_headers, **MCP_HEADERS}
                )
                answer = response.json() if response.status_code == 200 else {}
                internal_errors += "error" in answer
                result = answer.get("result", {})
                text = result.get("content", [{}])[0].get("text", "") if result else ""
                refused = result.get("isError") is True and '"errorType":"error-invalid-params"' in text
                if response.status_code != 200 or not refused:
                    wrong.append(f"{tool.name} {name!r}: {response.status_code} {response.text[:160]}")
    figure(tried=tried, failed=len(wrong), tools=len(catalog.tools), jsonrpc_internal_errors=internal_errors)
    assert wrong == []
