"""Shared pieces of the routes' parameter models."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .. import errors
from ..api_limits import DEFAULT_PAGE_ITEMS, MAX_ID_CHARS, MAX_NAME_CHARS, MAX_PAGE_ITEMS, MAX_SELECTOR_CHARS
from ..rest import refuse_lone_surrogates
from ..store.base import InvalidValue
from ..store.rules import check_room_name

__all__ = [
    "NAME_PATTERN",
    "Count",
    "Id",
    "Name",
    "NameReference",
    "NoParams",
    "Offset",
    "Params",
    "RoomName",
    "Selector",
    "parse_selector",
]


class Params(BaseModel):
    """Unknown parameters are refused (400 naming them), as upstream's additionalProperties: false."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)


class NoParams(Params):
    pass


# A name (a room, a person, a token) is one line of text: no C0 control character and no DEL. The store
# refuses them too; checked here first, so the caller learns which parameter is wrong and the store's
# refusal stays what it is for, a bug. In the schema as a pattern, for OpenAPI and MCP clients.
NAME_PATTERN = r"^[^\x00-\x1f\x7f]*$"
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(value: str) -> str:
    if _CONTROL_CHARACTER.search(value):
        raise ValueError("must not hold control characters (U+0000 to U+001F, U+007F)")
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
# Every name parameter: those the store keeps (a room's, a token's) and those it looks up alike.
Name = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_CHARS, json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(_one_line),
]


def _room_name(value: str) -> str:
    try:
        return check_room_name(value)
    except InvalidValue as error:
        raise ValueError(str(error)) from None


# A new room's name: a Name the store will keep (its own rule, run here first so the 400 names the
# parameter): trimmed, no leading '#', no '"'.
RoomName = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_CHARS, json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(_one_line),
    AfterValidator(_room_name),
]
# A name with its sigil: `#room-name`, or `@username` for a direct room.
NameReference = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_CHARS + 1, json_schema_extra={"pattern": NAME_PATTERN}),
    AfterValidator(_one_line),
]
Offset = Annotated[int, Field(ge=0, le=1_000_000, description="Items to skip.")]
Count = Annotated[
    int, Field(ge=1, le=MAX_PAGE_ITEMS, description=f"Items per page (at most {MAX_PAGE_ITEMS}).")
]
Selector = Annotated[str, Field(min_length=2, max_length=MAX_SELECTOR_CHARS, description="A JSON object.")]

DEFAULT_COUNT = DEFAULT_PAGE_ITEMS


def parse_selector(raw: str, key: str) -> str:
    """The string under ``key`` in a JSON ``selector`` parameter (autocomplete routes).

    Raises:
        errors.InvalidParams: not a JSON object, or ``key`` is not a string in it.
    """
    try:
        data: Any = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.InvalidParams("Invalid parameters: 'selector' must be a JSON object") from None
    if not isinstance(data, dict):
        raise errors.InvalidParams("Invalid parameters: 'selector' must be a JSON object")
    refuse_lone_surrogates(data, "selector")
    value = data.get(key, "")
    if not isinstance(value, str):
        raise errors.InvalidParams(f"Invalid parameters: 'selector.{key}' must be a string")
    return value[:MAX_NAME_CHARS]
