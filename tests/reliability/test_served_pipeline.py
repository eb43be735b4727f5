"""F5 for the served embedded pipeline: guessing its X-API-KEY pair spends the API's failed-key budget.

The pipeline at ``/pipeline/v1/pipelines/embedded/search`` answered every wrong ``X-API-KEY-SECRET`` 401,
as often as it was asked. It now shares the failed-authentication budget of the API (10 a minute per
address): the 11th wrong guess and everything after it, the right key included, get 429 with
``Retry-After`` until the window frees, while another address still gets through.
"""

from __future__ import annotations

import httpx
import pytest

from ai_search_server.app import create_app
from ai_search_server.ratelimit import AUTH_FAILURE_RATE_LIMIT, RateLimiter
from ai_search_server.store.base import Store
from tests.server.conftest import BASE_URL, Workspace

from .conftest import Figure, reliability_settings

PIPELINE_SEARCH = "/pipeline/v1/pipelines/embedded/search"
KEYS = {"X-API-KEY": "pk-right", "X-API-KEY-SECRET": "ps-right"}
BODY = {"query": "deploy", "type": "search", "params": {"k": 5}, "filters": {"room_id": {"$eq": "r1"}}}
GUESSES = 40


def _client(app: object, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL)


@pytest.mark.requirement("F5")
@pytest.mark.anyio
async def test_wrong_pipeline_keys_spend_the_failed_authentication_budget(
    store: Store, workspace: Workspace, figure: Figure
) -> None:
    settings = reliability_settings(
        embedded_pipeline_http=True,
        embedded_pipeline_api_key=KEYS["X-API-KEY"],
        embedded_pipeline_api_key_secret=KEYS["X-API-KEY-SECRET"],
    )
    app = create_app(settings, store, limiter=RateLimiter("memory://"))
    statuses: list[int] = []
    async with _client(app, "198.51.100.20") as guesser, _client(app, "198.51.100.21") as other:
        for n in range(GUESSES):
            wrong = {**KEYS, "X-API-KEY-SECRET": f"ps-guess-{n}"}
            statuses.append((await guesser.post(PIPELINE_SEARCH, json=BODY, headers=wrong)).status_code)
        refused = await guesser.post(PIPELINE_SEARCH, json=BODY, headers=wrong)
        right_after_guessing = await guesser.post(PIPELINE_SEARCH, json=BODY, headers=KEYS)
        right_elsewhere = await other.post(PIPELINE_SEARCH, json=BODY, headers=KEYS)
    budget = AUTH_FAILURE_RATE_LIMIT.count
    checked = statuses.count(401)
    expected = [401] * budget + [429] * (GUESSES - budget)
    figure(
        tried=GUESSES + 2,
        failed=int(statuses != expected) + int(right_after_guessing.status_code != 429),
        wrong_keys=GUESSES,
        wrong_keys_checked=checked,
        refused_429=statuses.count(429),
        retry_after=refused.headers.get("retry-after"),
        right_key_after_guessing=right_after_guessing.status_code,
        right_key_from_another_address=right_elsewhere.status_code,
    )
    assert statuses == expected
    assert refused.headers.get("retry-after")
    assert right_after_guessing.status_code == 429, "a correct guess is not told apart from a wrong one"
    assert right_elsewhere.status_code == 200, right_elsewhere.text
