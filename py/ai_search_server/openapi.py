"""The OpenAPI 3.1 document, generated from the route registry (never written by hand).

Each operation lists every status it can answer: 200 (its body's schema from the route's ``reply``
model where it declares one, the same schema its MCP tool gives as ``outputSchema``), and each refusal
of ``ApiRoute.refusals()`` (the common ones that apply to the route, then the route's own) with the
one error body."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .rest import ApiRoute

__all__ = ["build_openapi"]

# A streamed answer (docs/answers.md): `event: delta|done|error` lines, each with one JSON `data:` line.
_EVENT_STREAM = {"text/event-stream": {"schema": {"type": "string"}}}
_ERROR_SCHEMA = {
    "type": "object",
    "required": ["success", "error", "errorType"],
    "properties": {
        "success": {"const": False},
        "error": {"type": "string"},
        "errorType": {"type": "string"},
    },
}


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Query parameters of a GET route; variant parameters are listed once each, all optional, because
    OpenAPI cannot say "one of these parameter sets" (the route answers 400 naming the choices)."""
    variants = schema.get("oneOf", [schema])
    single = len(variants) == 1
    seen: dict[str, dict[str, Any]] = {}
    for variant in variants:
        required = set(variant.get("required", []))
        for name, prop in variant.get("properties", {}).items():
            if name in seen:
                continue
            param: dict[str, Any] = {"name": name, "in": "query", "required": single and name in required}
            prop_schema = {k: v for k, v in prop.items() if k != "description"}
            param["schema"] = prop_schema
            if "description" in prop:
                param["description"] = prop["description"]
            seen[name] = param
    return list(seen.values())


def build_openapi(routes: Sequence[ApiRoute], *, version: str, site_url: str = "") -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for route in routes:
        schema = route.input_schema()
        op: dict[str, Any] = {
            "operationId": route.name,
            "summary": route.description,
            "tags": list(route.tags),
            "responses": {
                "200": {
                    "description": "Success",
                    "content": {
                        "application/json": {"schema": route.reply_schema() or {"type": "object"}},
                        **(_EVENT_STREAM if route.event_stream else {}),
                    },
                },
                **{
                    str(status): {
                        "description": "; ".join(reasons),
                        "content": {"application/json": {"schema": _ERROR_SCHEMA}},
                    }
                    for status, reasons in route.refusals().items()
                },
            },
        }
        if route.auth:
            op["security"] = [{"userId": [], "authToken": []}]
        if route.reads_body:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        else:
            op["parameters"] = _query_parameters(schema)
        paths.setdefault(route.path, {})[route.method.lower()] = op
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "ai-search",
            "version": version,
            "description": "AI search for team-chat workspaces: Rocket.Chat-shaped REST API.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "userId": {"type": "apiKey", "in": "header", "name": "X-User-Id"},
                "authToken": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"},
            }
        },
    }
    if site_url:
        doc["servers"] = [{"url": site_url}]
    return doc
