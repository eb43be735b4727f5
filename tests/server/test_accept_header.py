"""The one reading of ``Accept`` (accept_header.py): the MCP endpoint's and the answer route's."""

from __future__ import annotations

import pytest

from ai_search_server.accept_header import accepts


@pytest.mark.parametrize(
    ("accept", "media_type", "wildcards", "admitted"),
    [
        pytest.param(None, "application/json", True, False, id="absent-admits-nothing"),
        pytest.param("application/json", "application/json", True, True, id="named"),
        pytest.param("Application/JSON", "application/json", True, True, id="case-insensitive"),
        pytest.param("application/*", "application/json", True, True, id="type-wildcard"),
        pytest.param("*/*", "application/json", True, True, id="any-wildcard"),
        pytest.param("*/*", "text/event-stream", False, False, id="wildcard-not-counted"),
        pytest.param("text/html, text/event-stream", "text/event-stream", False, True, id="in-a-list"),
        pytest.param("text/event-stream;q=0.5", "text/event-stream", False, True, id="weighted"),
        pytest.param("text/event-stream; Q = 0", "text/event-stream", False, False, id="zero-refuses"),
        pytest.param("application/json;q=0.000", "application/json", True, False, id="zero-decimals"),
        pytest.param("application/json;q=-1", "application/json", True, False, id="below-zero-refuses"),
        pytest.param("text/event-stream;q=high", "text/event-stream", False, True, id="no-number-counts-1"),
        pytest.param("text/plain", "application/json", True, False, id="another-type"),
    ],
)
def test_accepts(accept: str | None, media_type: str, wildcards: bool, admitted: bool) -> None:
    assert accepts(accept, media_type, wildcards=wildcards) is admitted
