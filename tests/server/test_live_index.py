"""The index follows the store across processes: ``ai-search import`` beside a running ``ai-search serve``.

Importing while the server runs is the normal way in. Both processes share the data dir; the server
hears nothing from the import's process, yet within seconds it finds the new messages by keyword and by
meaning (the packaged model, a paraphrase that shares no word with the message), with no restart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ._live import running_server

pytestmark = pytest.mark.slow

# How long after the import command returns the server may take to find its messages (seconds).
FIND_WITHIN_SECONDS = 10.0
ANSWER = "the primary database crashed at noon so we promoted the replica"
# Shares no word with ANSWER: only the semantic branch can find it.
PARAPHRASE = "why did our db go down"
DISTRACTORS = (
    "lunch order for friday is pizza again",
    "please review my pull request for the login form",
    "marketing wants new banners for the spring campaign",
    "the office printer is out of toner",
)


def cli(data: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ai_search_server", *args, "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_history_imported_beside_a_running_server_is_found_by_meaning_without_a_restart(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    cli(data, "users", "create", "alice", "--password", "pw-alice-123")
    header_lines = cli(data, "tokens", "create", "alice").splitlines()
    headers = dict(line.split(": ", 1) for line in header_lines)
    history = tmp_path / "history.jsonl"
    lines = [
        {"room": "ops", "room_type": "c", "user": "alice", "ts": f"2026-11-0{n + 1}T10:00:00Z", "text": text}
        for n, text in enumerate((ANSWER, *DISTRACTORS))
    ]
    lines[0]["members"] = ["alice"]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with running_server(data, env={"AI_SEARCH_EMBEDDER": "local"}) as base:
        before = httpx.get(f"{base}/api/v1/ai.search", params={"query": PARAPHRASE}, headers=headers)
        assert before.status_code == 200 and before.json()["intelligent"] == []
        cli(data, "import", str(history), "--quiet")
        deadline = time.monotonic() + FIND_WITHIN_SECONDS
        while True:
            found = httpx.get(
                f"{base}/api/v1/ai.search",
                params={"query": PARAPHRASE, "intelligentCount": "3"},
                headers=headers,
            ).json()["intelligent"]
            if found and found[0]["text"] == ANSWER:
                break
            assert time.monotonic() < deadline, f"not found {FIND_WITHIN_SECONDS} s after the import: {found}"
            time.sleep(0.2)
        assert found[0]["matchReason"] == "semantic"
        keyword = httpx.get(
            f"{base}/api/v1/ai.search", params={"query": "printer toner"}, headers=headers
        ).json()["intelligent"]
        assert keyword[0]["text"] == DISTRACTORS[-1]


def test_the_second_stage_fills_its_vectors_in_the_background_and_re_ranks(tmp_path: Path) -> None:
    """The default server: the packaged all-mpnet-base-v2 fills its vectors after the first stage's,
    the status route counts them, and a search says it was re-ranked and in which band each result is."""
    data = tmp_path / "data"
    cli(data, "users", "create", "alice", "--password", "pw-alice-123")
    headers = dict(line.split(": ", 1) for line in cli(data, "tokens", "create", "alice").splitlines())
    history = tmp_path / "history.jsonl"
    lines = [
        {"room": "ops", "room_type": "c", "user": "alice", "ts": f"2026-11-0{n + 1}T10:00:00Z", "text": text}
        for n, text in enumerate((ANSWER, *DISTRACTORS))
    ]
    lines[0]["members"] = ["alice"]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    cli(data, "import", str(history), "--quiet")
    with running_server(data, env={"AI_SEARCH_EMBEDDER": "local"}) as base:
        deadline = time.monotonic() + FIND_WITHIN_SECONDS * 6
        while True:
            status = httpx.get(f"{base}/api/v1/ai.search.status", headers=headers).json()
            stage = status.get("secondStage")
            if stage is not None and stage["coverage"] == 1:
                break
            assert time.monotonic() < deadline, f"the second stage did not cover the messages: {status}"
            time.sleep(0.2)
        assert stage["kind"] == "local" and stage["model"].startswith("local:all-mpnet-base-v2:")
        assert stage["scored"] == stage["total"] == len(lines)
        body = httpx.get(f"{base}/api/v1/ai.search", params={"query": PARAPHRASE}, headers=headers).json()
        retrieval = body["meta"]["retrieval"]
        assert retrieval["secondStage"]["state"] == "ok" and retrieval["secondStage"]["coverage"] == 1
        assert body["intelligent"][0]["text"] == ANSWER
        assert retrieval["bands"]["strong"] + retrieval["bands"]["related"] == len(body["intelligent"])
        nonsense = httpx.get(
            f"{base}/api/v1/ai.search", params={"query": "xyzzyplugh qwertzuiop"}, headers=headers
        ).json()
        assert nonsense["intelligent"] == []
