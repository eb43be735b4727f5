"""Settings: one table, read from a config file, the environment and overrides, with clear errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ai_search_server.settings import (
    ENV_PREFIX,
    Settings,
    SettingsError,
    load_settings,
)
from ai_search_server.settings_docs import settings_markdown, settings_table

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_need_no_configuration() -> None:
    s = load_settings(environ={})
    assert s == Settings()
    assert s.search_semantic_weight == 50
    assert s.rate_limit_storage == "memory://"
    assert s.mcp_enabled is False


@pytest.mark.parametrize(
    ("env", "name", "expected"),
    [
        pytest.param({"AI_SEARCH_MCP_ENABLED": "yes"}, "mcp_enabled", True, id="bool-yes"),
        pytest.param({"AI_SEARCH_MCP_ENABLED": "0"}, "mcp_enabled", False, id="bool-zero"),
        pytest.param(
            {"AI_SEARCH_SEARCH_SEMANTIC_WEIGHT": " 70 "}, "search_semantic_weight", 70, id="int-trimmed"
        ),
        pytest.param(
            {"AI_SEARCH_CORS_ALLOWED_ORIGINS": "https://a.example, https://b.example,"},
            "cors_allowed_origins",
            ["https://a.example", "https://b.example"],
            id="list-comma-separated",
        ),
        pytest.param({"AI_SEARCH_LLM_MODEL": " gpt-4o "}, "llm_model", "gpt-4o", id="string-trimmed"),
    ],
)
def test_environment_values_are_converted(env: dict[str, str], name: str, expected: object) -> None:
    assert getattr(load_settings(environ=env), name) == expected


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        pytest.param(
            {"AI_SEARCH_SEARCH_SEMANTIC_WEIGHT": "lots"}, "'search_semantic_weight'", id="not-an-int"
        ),
        pytest.param({"AI_SEARCH_SEARCH_SEMANTIC_WEIGHT": "101"}, "from 0 to 100", id="out-of-range"),
        pytest.param({"AI_SEARCH_MCP_ENABLED": "maybe"}, "true or false", id="not-a-bool"),
        pytest.param({"AI_SEARCH_EMBEDDER": "gpu"}, "'embedder'", id="unknown-choice"),
        pytest.param({"AI_SEARCH_LOG_LEVEL": "loud"}, "'log_level'", id="unknown-log-level"),
        pytest.param(
            {"AI_SEARCH_LLM_BASE_URL": "https://llm.example/v1"},
            r"answers from an LLM needs llm_model \(env AI_SEARCH_LLM_MODEL\)",
            id="llm-without-a-model",
        ),
        pytest.param(
            {"AI_SEARCH_PIPELINE_BASE_URL": "https://pipeline.example"},
            r"remote pipeline needs pipeline_id \(env AI_SEARCH_PIPELINE_ID\)",
            id="remote-pipeline-without-an-id",
        ),
        pytest.param(
            {"AI_SEARCH_EMBEDDER": "openai", "AI_SEARCH_EMBEDDING_MODEL": "text-embedding-3-small"},
            r"embedder = openai needs embedding_base_url \(env AI_SEARCH_EMBEDDING_BASE_URL\): set it",
            id="openai-embedder-without-a-url",
        ),
        pytest.param(
            {"AI_SEARCH_EMBEDDER": "openai"},
            "needs embedding_base_url .* and embedding_model .*: set them",
            id="openai-embedder-with-nothing",
        ),
    ],
)
def test_bad_values_fail_naming_the_setting(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(SettingsError, match=fragment):
        load_settings(environ=env)


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        pytest.param(
            {"search_semantic_weight": 500},
            r"'search_semantic_weight': expected an integer from 0 to 100",
            id="range",
        ),
        pytest.param({"mcp_enabled": "yes"}, r"'mcp_enabled': expected true or false, got 'yes'", id="type"),
        pytest.param({"cors_allowed_origins": "https://a.example"}, "expected a list of strings", id="list"),
        pytest.param({"embedder": "gpu"}, r"'embedder': expected local, openai or none", id="choice"),
        pytest.param({"session_idle_days": 100}, "is longer than session_max_age_days", id="across-fields"),
        pytest.param({"embedder": "openai"}, r"embedder = openai needs embedding_base_url", id="incomplete"),
        pytest.param({"site_url": "example.com"}, "'site_url': 'example.com' is not an http", id="origin"),
        pytest.param(
            {"llm_base_url": "file:///etc/passwd", "llm_model": "m"},
            "'llm_base_url': .*scheme 'file'",
            id="url",
        ),
        pytest.param({"outbound_allow_hosts": ["*.internal"]}, "'outbound_allow_hosts'", id="allow-list"),
    ],
)
def test_settings_built_in_code_are_checked_as_loaded_ones_are(
    changes: dict[str, object], fragment: str
) -> None:
    """Not only load_settings: ``Settings(...)`` and ``dataclasses.replace`` run the same checks."""
    with pytest.raises(SettingsError, match=fragment):
        Settings(**changes)  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match=fragment):
        dataclasses.replace(Settings(), **changes)  # type: ignore[arg-type]


def test_priority_is_file_then_environment_then_overrides(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('llm_model = "from-file"\nsearch_recency_weight = 10\nmcp_enabled = true\n')
    s = load_settings(
        config_file=config,
        environ={"AI_SEARCH_LLM_MODEL": "from-env", "AI_SEARCH_SEARCH_RECENCY_WEIGHT": "20"},
        overrides={"search_recency_weight": 30},
    )
    assert (s.llm_model, s.search_recency_weight, s.mcp_enabled) == ("from-env", 30, True)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("no_such_setting = 1\n", "no_such_setting", id="unknown-key"),
        pytest.param("llm_model = [\n", "config file", id="invalid-toml"),
        pytest.param("search_semantic_weight = true\n", "'search_semantic_weight'", id="wrong-type"),
    ],
)
def test_config_file_errors_name_the_file_and_key(tmp_path: Path, text: str, fragment: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    with pytest.raises(SettingsError, match=fragment):
        load_settings(config_file=config, environ={})


def test_public_view_never_shows_secrets() -> None:
    s = load_settings(environ={"AI_SEARCH_LLM_API_KEY": "sk-secret-123", "AI_SEARCH_PIPELINE_API_KEY": ""})
    view = s.public_view()
    assert view["llm_api_key"] is True
    assert view["pipeline_api_key"] is False
    assert "sk-secret-123" not in repr(view)


def test_readme_settings_table_is_the_one_the_code_prints() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- settings:start -->\n", 1)[1].split("<!-- settings:end -->", 1)[0]
    assert block == settings_markdown(), (
        "README settings table is stale: python -m ai_search_server.settings_docs"
    )
    for name, _type, _default, _help in settings_table():
        assert f"`{ENV_PREFIX}{name.upper()}`" in block
