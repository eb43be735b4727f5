"""Search knows conversations: a reply found says its thread, and files are found by their names.

The real embedded pipeline (FTS5 and the test embedder) over the conftest workspace, plus a thread in
#ops and a message with a file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_search_server.retrieval.search_service import THREAD_TITLE_CHARS, SearchRequest, thread_title
from ai_search_server.store import Attachment

from ._search_support import EMBED_WAIT_SECONDS, hits_json, search_stack
from .conftest import Workspace

pytestmark = pytest.mark.anyio


async def test_a_reply_carries_its_thread_and_a_file_is_found_by_its_name(
    workspace: Workspace, data_dir: Path
) -> None:
    store, ops = workspace.store, workspace.rooms["ops"].id
    alice, carol = workspace["alice"].user.id, workspace["carol"].user.id
    parent = store.post_message(ops, alice, "Why did checkout get slow on Tuesday?\nsee the graphs")
    reply = store.post_message(ops, carol, "the zookeeper quorum flapped", tmid=parent.id)
    config = store.post_message(
        ops, carol, "the config we run", attachments=(Attachment("pgbouncer.ini", title="pool settings"),)
    )
    service, index = search_stack(store, data_dir)
    try:
        assert index.wait_until_embedded(EMBED_WAIT_SECONDS)
        user = workspace["alice"].user
        found = hits_json(
            await service.search(user, SearchRequest(text="zookeeper", limit=5, search_type="keyword"))
        )
        (hit,) = found
        assert hit["msgId"] == reply.id and hit["tmid"] == parent.id
        assert hit["thread"] == {
            "_id": parent.id,
            "title": "Why did checkout get slow on Tuesday?",
            "replies": 1,
        }
        first = hits_json(
            await service.search(user, SearchRequest(text="checkout", limit=5, search_type="keyword"))
        )
        assert first[0]["msgId"] == parent.id and "tmid" not in first[0]
        assert first[0]["thread"]["replies"] == 1
        files = hits_json(
            await service.search(user, SearchRequest(text="pgbouncer", limit=5, search_type="keyword"))
        )
        assert [r["msgId"] for r in files] == [config.id]
        assert files[0]["files"] == [{"name": "pgbouncer.ini", "title": "pool settings", "type": ""}]
        plain = hits_json(
            await service.search(user, SearchRequest(text="rolling", limit=5, search_type="keyword"))
        )
        assert "thread" not in plain[0]  # neither a reply nor a thread's first message
    finally:
        await service.aclose()
        index.close()


@pytest.mark.parametrize(
    ("text", "title"),
    [
        pytest.param("short question?", "short question?", id="short"),
        pytest.param("first line\nsecond line", "first line", id="first-line-only"),
        pytest.param("word " * 40, ("word " * 24).strip() + "…", id="cut-at-a-word"),
        pytest.param("x" * 200, "x" * THREAD_TITLE_CHARS + "…", id="one-long-word"),
        pytest.param("   ", "", id="blank"),
    ],
)
def test_thread_titles(text: str, title: str) -> None:
    assert thread_title(text) == title
