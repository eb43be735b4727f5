"""schemathesis against the served OpenAPI document: generated calls to every operation, valid and
schema-violating, as a logged-in user, must never produce a server error.

schemathesis's own pytest plugin does not run under pytest 9, so each operation's hypothesis
strategy is driven here directly, one test per operation.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation import GenerationMode
from starlette.applications import Starlette

from ai_search_server.routes import all_routes

from .conftest import Workspace

# Generated calls per operation and mode; enough to reach every parameter's edges, quick on 2 cores.
EXAMPLES_PER_OPERATION = 30
OPERATIONS = [(r.method, r.path) for r in all_routes()]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_operation_answers_5xx(
    app: Starlette, workspace: Workspace, method: str, path: str, mode: GenerationMode
) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operation = schema[path][method.lower()]
    headers = workspace["alice"].pat_headers
    statuses: list[int] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def call(case: schemathesis.Case) -> None:
        response = case.call(headers=headers)
        statuses.append(response.status_code)
        assert response.status_code < 500, (
            f"{case.as_curl_command()} -> {response.status_code} {response.text[:500]}"
        )

    call()
    assert statuses, "no case was generated"
