"""The ``ai-search`` command line, run in-process against a real data dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ai_search_server.cli import main
from ai_search_server.store import Store, open_store
from ai_search_server.workers import MAX_WORKERS


def open_workspace(data: Path) -> Store:
    """The workspace the commands wrote: the data dir's, or the environment's database."""
    return open_store(data, database_url=os.environ.get("AI_SEARCH_DATABASE_URL", ""))


@pytest.fixture(autouse=True)
def _database_in_the_environment(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``--store=postgres`` the commands find the test's database as an operator's would: in
    AI_SEARCH_DATABASE_URL."""
    if database_url:
        monkeypatch.setenv("AI_SEARCH_DATABASE_URL", database_url)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_users_create_then_tokens_create_prints_exactly_two_header_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    status, out, _ = run(capsys, "users", "create", "alice", "--password", "pw-123456", "--data", data)
    assert status == 0 and "alice" in out
    status, out, _ = run(capsys, "tokens", "create", "alice", "--data", data)
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("X-User-Id: ") and lines[1].startswith("X-Auth-Token: ")
    user_id, token = lines[0].split(": ", 1)[1], lines[1].split(": ", 1)[1]
    store = open_workspace(Path(data))
    try:
        resolved = store.resolve_token(user_id, token)
        assert resolved is not None and resolved.kind == "pat"
    finally:
        store.close()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(("tokens", "create", "nobody"), "no user named 'nobody'", id="token-for-unknown-user"),
        pytest.param(("import", "missing.jsonl"), "no such file", id="import-missing-file"),
        pytest.param(
            ("users", "password", "nobody", "--password", "pw-123456"), "no user named", id="password-unknown"
        ),
    ],
)
def test_mistakes_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    status, _, err = run(capsys, *args, "--data", str(tmp_path / "data"))
    assert status == 2
    assert fragment in err


def test_someone_an_import_brought_in_gets_a_password_and_signs_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    line = {"room": "ops", "room_type": "c", "user": "alice", "ts": "2026-11-01T10:00:00Z", "text": "hi"}
    (tmp_path / "h.jsonl").write_text(json.dumps(line) + "\n")
    assert run(capsys, "import", str(tmp_path / "h.jsonl"), "--quiet", "--data", str(data))[0] == 0
    status, out, _ = run(
        capsys, "users", "password", "alice", "--password", "a-long-passphrase", "--data", str(data)
    )
    assert status == 0 and "set the password of alice" in out
    with open_workspace(data) as store:  # type: ignore[attr-defined]
        assert store.verify_password("alice", "a-long-passphrase") is not None


def test_creating_a_user_twice_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    assert run(capsys, "users", "create", "bob", "--password", "pw-123456", "--data", data)[0] == 0
    status, _, err = run(capsys, "users", "create", "BOB", "--password", "pw-123456", "--data", data)
    assert status == 2 and "already exists" in err


def test_import_reports_bad_lines_by_number_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {
            "room": "ops",
            "room_type": "c",
            "user": "alice",
            "ts": "2026-11-01T10:00:00Z",
            "text": "deploy",
            "members": ["alice", "bob"],
        },
        "this is not json",
        {"room": "ops", "room_type": "x", "user": "alice", "ts": "2026-11-01T10:01:00Z", "text": "bad type"},
        {"room": "ops", "room_type": "c", "user": "bob", "ts": "2026-11-01T10:02:00Z", "text": "rollback"},
    ]
    path = tmp_path / "messages.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    data = str(tmp_path / "data")
    status, out, _ = run(capsys, "import", str(path), "--quiet", "--data", data)
    assert status == 0
    assert "line 2" in out and "line 3" in out
    store = open_workspace(Path(data))
    try:
        assert store.count_messages() == 2
    finally:
        store.close()
    status, _, _ = run(capsys, "import", str(path), "--quiet", "--data", data)
    assert status == 0
    store = open_workspace(Path(data))
    try:
        assert store.count_messages() == 2
    finally:
        store.close()


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        pytest.param(
            {"AI_SEARCH_LLM_BASE_URL": "https://llm.example/v1"},
            "answers from an LLM needs llm_model (env AI_SEARCH_LLM_MODEL)",
            id="llm-base-url-without-a-model",
        ),
        pytest.param(
            {"AI_SEARCH_SEARCH_SEMANTIC_WEIGHT": "lots"}, "'search_semantic_weight'", id="a-bad-value"
        ),
    ],
)
def test_serve_stops_before_serving_on_a_setting_that_cannot_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    fragment: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    status, _, err = run(capsys, "serve", "--data", str(tmp_path / "data"), "--port", "0")
    assert status == 2
    assert fragment in err
    assert "serving" not in err


@pytest.mark.parametrize(
    ("workers", "env", "fragment"),
    [
        pytest.param("0", {}, f"from 1 to {MAX_WORKERS}, not 0", id="zero"),
        pytest.param("-3", {}, f"from 1 to {MAX_WORKERS}, not -3", id="negative"),
        pytest.param(str(MAX_WORKERS + 1), {}, f"not {MAX_WORKERS + 1}", id="over-the-maximum"),
        pytest.param("2", {}, "set rate_limit_storage to a Redis", id="memory-limits-default"),
        pytest.param(
            "4", {"AI_SEARCH_RATE_LIMIT_STORAGE": "memory://"}, "admit 4 times every limit", id="memory-limits-set"
        ),
    ],
)
def test_serve_refuses_workers_it_cannot_run_as_one_service(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
    env: dict[str, str],
    fragment: str,
) -> None:
    """A worker count out of range, or several workers counting their rate limits each on its own."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    status, _, err = run(capsys, "serve", "--data", str(tmp_path / "data"), "--port", "0", "--workers", workers)
    assert status == 2
    assert fragment in err and "Traceback" not in err
    assert "serving" not in err
