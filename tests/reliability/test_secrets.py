"""B5. The server's own secrets never reach a client, whatever an upstream hands back.

A hostile OpenAI-compatible provider (``FakeOpenAI`` with ``echo-auth``) quotes the ``Authorization``
header it was sent, and every other configured secret it was told, in its answer text (JSON, and
streamed three characters a chunk so that each key arrives split), in its model ids and in a 401 error
body. The app is the product's own wiring (``create_app`` builds the provider from the settings). Every
output a caller can get is scanned for each secret: the JSON answer, the raw event stream and its joined
deltas, the model list, the MCP tool result, and the server's debug log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from ai_search_server.app import create_app
from ai_search_server.mcp import MCP_PATH
from ai_search_server.redaction import REDACTED
from ai_search_server.store.base import Store
from tests.server._fake_openai import FakeOpenAI
from tests.server.conftest import Workspace

from ._apps import MCP_HEADERS, asgi
from .conftest import Figure, reliability_settings

SECRETS = {
    "llm_api_key": "sk-live-3f9a7c1e5b2d4f60",
    "pipeline_api_key": "pk-remote-77a1b2c3d4",
    "pipeline_api_key_secret": "ps-remote-secret-55e6f7",
    "embedding_api_key": "emb-key-0a1b2c3d4e5f",
    "embedded_pipeline_api_key": "served-key-9988776655",
    "embedded_pipeline_api_key_secret": "served-secret-1122334455",
}


@pytest.fixture
def hostile() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with fake.serve() as server:
        fake.behaviour = "echo-auth"
        fake.echo = " ".join(v for k, v in SECRETS.items() if k != "llm_api_key")
        yield fake, f"{server.url}/v1"


@pytest.mark.requirement("B5")
@pytest.mark.anyio
async def test_no_configured_secret_reaches_a_client_or_the_log(
    store: Store,
    workspace: Workspace,
    hostile: tuple[FakeOpenAI, str],
    caplog: pytest.LogCaptureFixture,
    figure: Figure,
) -> None:
    fake, url = hostile
    settings = reliability_settings(
        llm_base_url=url, llm_model="gpt-4o", outbound_allow_hosts=["127.0.0.1"], **SECRETS
    )
    app = create_app(settings, store, limiter=None)
    alice, carol = workspace["alice"], workspace["carol"]
    body = {"query": "what happened?", "messages": [{"_id": workspace.messages["ops-3"].id}]}
    caplog.set_level(logging.DEBUG)
    outbound = app.state.services.outbound  # no lifespan in-process: closed here
    async with outbound, asgi(app) as http:
        answer = await http.post("/api/v1/ai.search.answer", json=body, headers=alice.headers)
        streamed = await http.post(
            "/api/v1/ai.search.answer", json=body, headers={**alice.headers, "Accept": "text/event-stream"}
        )
        models = await http.get("/api/v1/ai.llm.models", headers=carol.headers)
        tool = {"name": "post_ai_search_answer", "arguments": body}
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": tool}
        mcp = await http.post(MCP_PATH, json=rpc, headers={**alice.pat_headers, **MCP_HEADERS})
        fake.behaviour = "401-echo"
        refused = await http.post("/api/v1/ai.search.answer", json=body, headers=alice.headers)
    assert fake.completions(), "the provider was asked"
    events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
    joined = "".join(e["text"] for e in events if "text" in e)
    done = next(e for e in events if "answer" in e)
    outputs = {
        "json answer": answer.text,
        "event stream": streamed.text,
        "joined deltas": joined,
        "model ids": models.text,
        "mcp tool result": mcp.text,
        "provider error": refused.text,
        "debug log": caplog.text,
    }
    leaks = [f"{where}: {name}" for where, text in outputs.items() for name, v in SECRETS.items() if v in text]
    figure(
        tried=len(outputs) * len(SECRETS),
        failed=len(leaks),
        outputs=len(outputs),
        secrets=len(SECRETS),
        redaction_marks=answer.text.count(REDACTED),
        statuses=[answer.status_code, streamed.status_code, models.status_code, mcp.status_code, refused.status_code],
    )
    assert leaks == []
    assert answer.status_code == 200 and REDACTED in answer.json()["answer"]
    assert joined == done["answer"], "the streamed deltas join to the answer"
    assert REDACTED in joined and models.status_code == 200 and REDACTED in models.text
    assert refused.status_code == 502
