"""D4. Settings: a value that can never work stops start-up with a message naming the setting.

A bad origin in ``embed_allowed_origins`` once let the server say "serving" and then answer every
request 500 (the widget's frame-ancestors were built on the first request); a malformed ``xn--`` host
in a base URL once stopped start-up with a raw ``idna.core.IDNAError``. Each value below must be
refused by ``create_app`` with a ``SettingsError`` whose message names the setting, and the real
``ai-search serve`` must exit 2 with that message and no traceback, before it says "serving".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_search_server.app import create_app
from ai_search_server.settings import SettingsError
from ai_search_server.store.base import Store

from ._processes import ROOT, child_env
from .conftest import Figure, reliability_settings

BAD_IDNA_URL = "http://xn--localhost-.com/v1"
# (setting, the other settings it needs to be read at all, the bad value).
BAD_VALUES = [
    pytest.param("embed_allowed_origins", {}, "*", id="embed-wildcard"),
    pytest.param("embed_allowed_origins", {}, "docs.example.com", id="embed-without-scheme"),
    pytest.param("embed_allowed_origins", {}, "https://*.example.com", id="embed-wildcard-host"),
    pytest.param("cors_allowed_origins", {}, "docs.example.com", id="cors-without-scheme"),
    pytest.param("site_url", {}, "example.com:8000", id="site-url-without-scheme"),
    pytest.param("llm_base_url", {"llm_model": "m"}, BAD_IDNA_URL, id="llm-bad-idna"),
    pytest.param(
        "pipeline_base_url",
        {"pipeline_id": "p", "pipeline_api_key": "k", "pipeline_api_key_secret": "s"},
        BAD_IDNA_URL,
        id="pipeline-bad-idna",
    ),
    pytest.param("embedding_base_url", {"embedding_model": "m"}, BAD_IDNA_URL, id="embedding-bad-idna"),
    pytest.param("outbound_allow_hosts", {}, "http://ollama:11434", id="allow-list-with-scheme"),
    pytest.param("login_device_secret", {}, "short-guessable", id="device-secret-too-short"),
]


@pytest.mark.requirement("D4")
@pytest.mark.parametrize(("name", "needs", "value"), BAD_VALUES)
def test_a_bad_setting_stops_start_up_naming_the_setting(
    store: Store, name: str, needs: dict[str, Any], value: str, figure: Figure
) -> None:
    outcome = "accepted"
    try:
        create_app(reliability_settings(**needs, **{name: value}), store)
    except SettingsError as exc:
        outcome = str(exc)
    except Exception as exc:  # refused, but not the way an operator can read
        outcome = f"{type(exc).__name__}: {exc}"
    named = outcome.startswith(f"setting {name!r}")
    figure(tried=1, failed=int(not named), setting=name, message=outcome[:160])
    assert named, outcome


def test_a_wildcard_cors_origin_is_ignored_as_documented(store: Store) -> None:
    """``*`` in cors_allowed_origins never authorises an origin (README), so it is no start-up error."""
    create_app(reliability_settings(cors_allowed_origins="*"), store)


CLI_CASES = [
    pytest.param({"AI_SEARCH_EMBED_ALLOWED_ORIGINS": "*"}, "embed_allowed_origins", id="embed-wildcard"),
    pytest.param(
        {"AI_SEARCH_LLM_BASE_URL": BAD_IDNA_URL, "AI_SEARCH_LLM_MODEL": "m"}, "llm_base_url", id="bad-idna"
    ),
    pytest.param({"AI_SEARCH_LOGIN_DEVICE_SECRET": "short"}, "login_device_secret", id="device-secret-too-short"),
]


@pytest.mark.requirement("D4")
@pytest.mark.parametrize(("env", "name"), CLI_CASES)
def test_serve_exits_with_the_setting_named_and_no_traceback(
    tmp_path: Path, env: dict[str, str], name: str, figure: Figure
) -> None:
    command = [sys.executable, "-m", "ai_search_server", "serve", "--data", str(tmp_path), "--port", "1"]
    done = subprocess.run(
        command, env={**child_env(), **env}, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    clean = done.returncode == 2 and f"setting {name!r}" in done.stderr
    clean = clean and "Traceback" not in done.stderr and "serving" not in done.stderr
    figure(tried=1, failed=int(not clean), exit_status=done.returncode, stderr_tail=done.stderr[-200:])
    assert clean, done.stderr
