"""JSON Schemas of pydantic models that stand on their own: what the OpenAPI document and the MCP
tools show of the routes' parameter and reply models (``rest.ApiRoute``).

MCP clients do not resolve ``$ref`` (and 2026-07-28 forbids fetching one from the network), so every
reference to ``$defs`` is replaced by its definition; pydantic's generated titles are dropped, as
they only repeat the field names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["inline_schema"]


def inline_schema(schema: dict[str, Any], *, defaults: bool = True) -> dict[str, Any]:
    """``schema`` with its ``$defs`` references inlined and pydantic's titles dropped.

    ``defaults=False`` also drops ``"default": null``: in a reply's schema it only marks a field that
    may be left out, which ``required`` already says (a reply never holds the null).
    """
    defs = schema.get("$defs", {})

    def dropped(key: str, value: Any) -> bool:
        if key == "$defs":
            return True
        if key == "title":  # a property named "title" has a schema (a dict) as its value
            return isinstance(value, str)
        return key == "default" and value is None and not defaults

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node and isinstance(node["$ref"], str) and node["$ref"].startswith("#/$defs/"):
                target = defs[node["$ref"].removeprefix("#/$defs/")]
                return {**walk(target), **{k: walk(v) for k, v in node.items() if k != "$ref"}}
            return {k: walk(v) for k, v in node.items() if not dropped(k, v)}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    out = walk(schema)
    assert isinstance(out, dict)
    return out
