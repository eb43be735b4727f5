"""Settings: one table, read once at start-up and passed into constructors.

The table is the ``Settings`` dataclass below: each field is a setting with its type, default and
help text (``metadata["help"]``). Values come from, in increasing priority: the defaults, an optional
TOML config file, environment variables ``AI_SEARCH_<NAME>`` (upper case), and the command line.
No module reads the environment on import; ``load_settings`` is called once by the CLI.

Every ``Settings`` is checked when it is built, however it is built (``load_settings``, a test's
``Settings(...)`` or ``dataclasses.replace``): each value's type, range and choices, the groups that
only work together, the browser origins, and the upstream URLs as far as no outbound policy is needed
to judge them (``create_app`` checks the rest against the policy).

A bad value fails at start-up with a message naming the setting, for example::

    SettingsError: setting 'search_semantic_weight' (env AI_SEARCH_SEARCH_SEMANTIC_WEIGHT):
    expected an integer from 0 to 100, got 'lots'
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ai_search import (
    DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS,
    DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT,
)

from .body_limit import DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS
from .login_throttle import MIN_DEVICE_SECRET_CHARS
from .origins import normalize_origin
from .outbound import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_QUEUE_WAIT_SECONDS,
    OutboundPolicy,
    OutboundRefused,
    check_url_shape,
)
from .ratelimit import DEFAULT_RATE_LIMIT_STORAGE
from .store.rules import DEFAULT_DATABASE_POOL_SIZE

__all__ = [
    "DATABASE_URL_SCHEMES",
    "DEFAULT_SECOND_STAGE_CANDIDATES",
    "DEFAULT_SECOND_STAGE_TIMEOUT_SECONDS",
    "ENV_PREFIX",
    "IGNORED_WILDCARD_SETTINGS",
    "MAX_SECOND_STAGE_CANDIDATES",
    "OPTIONAL_FLOAT",
    "ORIGIN_LIST_SETTINGS",
    "SECOND_STAGE_CHOICES",
    "SECRET_SETTINGS",
    "UPSTREAM_URL_SETTINGS",
    "Settings",
    "SettingsError",
    "check_complete",
    "check_settings",
    "load_settings",
]

ENV_PREFIX = "AI_SEARCH_"
# What a database_url may start with: the two spellings libpq accepts.
DATABASE_URL_SCHEMES = ("postgresql://", "postgres://")
# second_stage: what may re-score the first stage's candidates (retrieval/second_stage).
SECOND_STAGE_CHOICES = ("auto", "local", "rerank", "embeddings", "off")
# Deadline of one re-scoring by a remote second stage (seconds): a reranker on a GPU answers 50
# passages in well under a second, a CPU-only TEI in one to three; past it the first stage's order stands.
DEFAULT_SECOND_STAGE_TIMEOUT_SECONDS = 3.0
# First-stage candidates re-scored per search (passages): as many as a search may ask results for
# (intelligentCount is clamped to 1..50), so a result shown is never one the second stage did not read.
DEFAULT_SECOND_STAGE_CANDIDATES = 50
# Upper bound of second_stage_candidates (passages): each is a forward pass of the stronger model.
MAX_SECOND_STAGE_CANDIDATES = 200


# The type of a number setting that may be left unset (None: "use what is calibrated").
OPTIONAL_FLOAT: Any = float | None


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the setting and its source."""


def _s(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[str] | None = None,
) -> Any:
    meta: dict[str, Any] = {"help": help}
    if low is not None:
        meta["low"] = low
    if high is not None:
        meta["high"] = high
    if choices is not None:
        meta["choices"] = tuple(choices)
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    # -- server ----------------------------------------------------------------------------------
    site_url: str = _s(
        "",
        "Public URL of the site (scheme://host[:port]); browser Origins equal to it are "
        "allowed. Empty: derived from --host/--port.",
    )
    cors_allowed_origins: list[str] = _s(
        [],
        "Extra browser origins allowed to call the API (comma-separated). "
        "'*' never authorises a browser origin.",
    )
    embed_allowed_origins: list[str] = _s(
        [],
        "Origins whose pages may embed the search widget; they are also "
        "allowed API origins (frame-ancestors + Origin checks).",
    )
    allowed_hosts: list[str] = _s(
        [],
        "Host names accepted besides the site URL's and the loopback names, on any port "
        "(DNS-rebinding guard; a port given is ignored).",
    )
    trusted_proxy_hops: int = _s(
        0,
        "Reverse proxies in front of the server whose X-Forwarded-For entries are "
        "trusted for rate limiting (0: the header is ignored).",
        low=0,
        high=10,
    )
    rate_limit_storage: str = _s(
        DEFAULT_RATE_LIMIT_STORAGE,
        "Where rate-limit counters and OAuth consent tickets live: memory:// (one process) or "
        "redis://host:port/db (shared by several processes; serve --workers N > 1 requires it).",
    )
    database_url: str = _s(
        "",
        "The workspace on PostgreSQL: postgresql://user[:password]@host[:port]/db (secret: it may hold a "
        "password). Empty: SQLite, workspace.db in the data dir.",
    )
    database_pool_size: int = _s(
        DEFAULT_DATABASE_POOL_SIZE,
        "Connections to PostgreSQL one server process keeps open at most (database_url).",
        low=1,
        high=100,
    )
    max_request_body_bytes: int = _s(
        DEFAULT_MAX_REQUEST_BODY_BYTES,
        "Largest request body accepted (bytes).",
        low=1024,
        high=64 * 1024 * 1024,
    )
    request_body_timeout_seconds: int = _s(
        int(DEFAULT_REQUEST_BODY_TIMEOUT_SECONDS),
        "Longest time reading one request body may take (seconds); a slower upload is answered 408.",
        low=1,
        high=600,
    )
    max_connections: int = _s(
        0,
        "Client connections open at once (connections); past it the longest-idle one is closed, or "
        "the newcomer answered 503 when all are busy. 0: 1000, or what the descriptor limit allows.",
        low=0,
        high=100_000,
    )
    session_idle_days: int = _s(
        14,
        "A login session ends after this many days without a request (days); personal access tokens "
        "do not expire, they are removed.",
        low=1,
        high=365,
    )
    session_max_age_days: int = _s(
        90,
        "A login session ends this many days after the login, however much it is used (days).",
        low=1,
        high=3650,
    )
    login_device_secret: str = _s(
        "",
        "The key that signs device cookies, which let a person's own devices skip the wait after "
        "failed sign-ins for their account (secret; at least 32 characters). Empty: a key made in "
        "the data dir (login-device.key); set the same value on every machine of a deployment.",
    )
    log_level: str = _s(
        "info", "Log level: debug, info, warning, error.", choices=("debug", "info", "warning", "error")
    )
    page_python: str = _s(
        "micropython",
        "The interpreter the page's and the widget's Python runs on: micropython (about 0.3 MB on a "
        "first visit) or pyodide (CPython in the browser, about 6.7 MB; docs/page.md, \"Which Python "
        "runs the page\"). micropython falls back to pyodide by itself when the page cannot start on it.",
        choices=("micropython", "pyodide"),
    )
    # -- search ----------------------------------------------------------------------------------
    search_enabled: bool = _s(True, "AI search on or off.")
    pipeline_base_url: str = _s(
        "", "Base URL of a remote Intelligent-Search pipeline. Empty: the embedded pipeline runs in-process."
    )
    pipeline_id: str = _s("", "Pipeline id of the remote pipeline.")
    pipeline_api_key: str = _s("", "X-API-KEY of the remote pipeline (secret).")
    pipeline_api_key_secret: str = _s("", "X-API-KEY-SECRET of the remote pipeline (secret).")
    search_query_template: str = _s("", "Template for the pipeline query; the first {query} is replaced.")
    pipeline_conditions: bool = _s(
        True,
        "Send a search's has:, is:, -from:, excluded words and quoted phrases to the remote pipeline in "
        "our ai_search_conditions request field (docs/retrieval.md). Off for a pipeline that refuses "
        "unknown fields: they are then checked on its candidates only, and the receipt says so.",
    )
    search_min_similarity_percent: int = _s(
        0, "Semantic hits below this similarity are dropped (percent).", low=0, high=100
    )
    search_semantic_floor_percent: int = _s(
        -1,
        "Similarity a message found only by meaning needs to be a result (percent); -1: the floor "
        "calibrated for the embedder (the local model's), none for an uncalibrated one.",
        low=-1,
        high=100,
    )
    search_semantic_weight: int = _s(
        DEFAULT_INTELLIGENT_SEARCH_SEMANTIC_WEIGHT,
        "Share of the semantic branch in fusion (percent; 0 = keyword only, 100 = semantic only).",
        low=0,
        high=100,
    )
    search_recency_weight: int = _s(0, "Boost for recent messages (percent; 0 = off).", low=0, high=100)
    search_recency_half_life_days: int = _s(
        DEFAULT_INTELLIGENT_SEARCH_RECENCY_HALF_LIFE_DAYS,
        "Age at which the recency boost halves (days).",
        low=1,
        high=3650,
    )
    embedded_pipeline_http: bool = _s(
        False,
        "Serve the embedded pipeline over HTTP at /pipeline/v1/pipelines/embedded/search (the remote "
        "pipeline contract), so another proxy can use this index.",
    )
    embedded_pipeline_api_key: str = _s("", "X-API-KEY that the served embedded pipeline requires (secret).")
    embedded_pipeline_api_key_secret: str = _s(
        "", "X-API-KEY-SECRET that the served embedded pipeline requires (secret)."
    )
    keyword_index: str = _s(
        "index",
        "Where the embedded pipeline's keyword branch searches: index (FTS5 in each process's index.db) "
        "or postgres (full-text search in the workspace's PostgreSQL, shared by every process; needs "
        "database_url).",
        choices=("index", "postgres"),
    )
    embedder: str = _s(
        "local",
        "Embeddings for the semantic branch: local (packaged all-MiniLM-L6-v2, "
        "offline), openai (an OpenAI-compatible /embeddings endpoint), or none (keyword only).",
        choices=("local", "openai", "none"),
    )
    embedder_runtime: str = _s(
        "auto",
        "How the local model runs: auto (the fastest available, said in the log at start-up), "
        "onnx-int8 (ONNX Runtime, int8), onnx (ONNX Runtime, float32) or numpy (no extra dependency).",
        choices=("auto", "onnx-int8", "onnx", "numpy"),
    )
    embedder_threads: int = _s(
        0, "Threads the local ONNX embedder spreads a batch over; 0: one per core.", low=0, high=16
    )
    embedding_base_url: str = _s("", "Base URL of an OpenAI-compatible embeddings endpoint.")
    embedding_api_key: str = _s("", "API key of the embeddings endpoint (secret).")
    embedding_model: str = _s("", "Embedding model name at that endpoint.")
    # -- second stage: a stronger model re-scores the first stage's candidates ---------------------
    second_stage: str = _s(
        "auto",
        "The model that re-scores the first stage's candidates and decides their order and bands: auto "
        "(the server picks), local (all-mpnet-base-v2, offline), rerank (a remote POST /rerank endpoint: "
        "TEI, vLLM, Jina- or Cohere-compatible), embeddings (a remote OpenAI-compatible /embeddings "
        "model, cosine) or off (the first stage alone).",
        choices=SECOND_STAGE_CHOICES,
    )
    second_stage_url: str = _s(
        "",
        "Base URL of the remote second stage (rerank: {url}/rerank; embeddings: {url}/embeddings), "
        "such as http://127.0.0.1:8080 for TEI or https://api.cohere.com/v2.",
    )
    second_stage_api_key: str = _s("", "Bearer key of the remote second stage (secret).")
    second_stage_model: str = _s(
        "",
        "Model name sent to the remote second stage (Cohere, Jina and embeddings need one; TEI serves "
        "one model and ignores it).",
    )
    second_stage_rerank_format: str = _s(
        "tei",
        "The /rerank dialect of second_stage = rerank: tei (Text Embeddings Inference) or cohere "
        "(Cohere, and Jina and vLLM, which accept its shape).",
        choices=("tei", "cohere"),
    )
    second_stage_timeout_seconds: float = _s(
        DEFAULT_SECOND_STAGE_TIMEOUT_SECONDS,
        "Longest one re-scoring of a search's candidates by the remote second stage may take (seconds); "
        "past it the search keeps the first stage's order and says so.",
        low=0.1,
        high=60.0,
    )
    second_stage_candidates: int = _s(
        DEFAULT_SECOND_STAGE_CANDIDATES,
        "First-stage candidates the second stage re-scores per search (passages).",
        low=1,
        high=MAX_SECOND_STAGE_CANDIDATES,
    )
    second_stage_strong_score: float | None = _s(
        None,
        "Second-stage score from which a result is strong, on the stage's own scale. Empty: the bands "
        "calibrated for the model (a remote model has none: the first stage's bands are used). Set "
        "with second_stage_related_score.",
    )
    second_stage_related_score: float | None = _s(
        None,
        "Second-stage score from which a result is related (below it: dropped), on the stage's own "
        "scale; at most second_stage_strong_score. Empty: as second_stage_strong_score.",
    )
    # -- answers ---------------------------------------------------------------------------------
    answer_enabled: bool = _s(True, "AI answers on or off.")
    llm_base_url: str = _s(
        "",
        "Base URL of an OpenAI-compatible API (https://api.openai.com/v1, "
        "http://127.0.0.1:11434/v1 for Ollama...). Empty: extractive answers, no LLM.",
    )
    llm_api_key: str = _s("", "API key of the LLM provider (secret).")
    llm_model: str = _s("", "Model used for answers.")
    answer_system_prompt: str = _s("", "System prompt for answers. Empty: the built-in evidence rules.")
    outbound_allow_hosts: list[str] = _s(
        [],
        "Hosts or CIDRs that outbound calls (pipeline, LLM, embeddings) "
        "may reach even though they are private or loopback.",
    )
    outbound_max_concurrent_calls: int = _s(
        DEFAULT_MAX_CONCURRENT_CALLS,
        "Outbound calls (pipeline, LLM, embeddings) running at once in the process; one more waits "
        f"up to {DEFAULT_QUEUE_WAIT_SECONDS:g} s for a slot, then fails with 503 (a search degrades "
        "instead).",
        low=1,
        high=1024,
    )
    # -- Rocket.Chat -----------------------------------------------------------------------------
    rocketchat_url: str = _s(
        "",
        "A Rocket.Chat server to mirror with `ai-search sync rocketchat` (https://chat.example.com); "
        "its host may be reached whatever outbound_allow_hosts says.",
    )
    rocketchat_user_id: str = _s(
        "", "X-User-Id of the Rocket.Chat admin whose personal access token the sync uses."
    )
    rocketchat_token: str = _s("", "That admin's personal access token, X-Auth-Token (secret).")
    rocketchat_sync_interval_seconds: int = _s(
        60, "Seconds between two runs of `ai-search sync rocketchat --watch`.", low=5, high=86400
    )
    rocketchat_sign_in: bool = _s(
        False,
        "People sign in with their Rocket.Chat username and password, or call with their Rocket.Chat "
        "personal access token, checked against rocketchat_url (who they are and what they read: the sync).",
    )
    rocketchat_sign_in_cache_seconds: int = _s(
        60,
        "How long a Rocket.Chat token, once checked, is believed without asking again (seconds).",
        low=1,
        high=3600,
    )
    # -- MCP -------------------------------------------------------------------------------------
    mcp_enabled: bool = _s(False, "The MCP endpoint at /api/v1/mcp (on with --demo).")
    mcp_expose_extended_api: bool = _s(False, "Expose the extended, allow-listed tool set over MCP.")
    mcp_oauth_enabled: bool = _s(
        True,
        "OAuth 2.1 for MCP clients (with mcp_enabled): an MCP client registers itself, the person signs "
        "in and consents on this site, and the client calls /api/v1/mcp with a bearer token. Needs https "
        "(site_url) unless served on loopback.",
    )
    oauth_access_token_minutes: int = _s(
        60,
        "How long an OAuth access token works (minutes); the client then refreshes it.",
        low=1,
        high=24 * 60,
    )
    oauth_refresh_token_days: int = _s(
        30,
        "How long an OAuth refresh token works unused (days): each refresh issues a new one and ends the "
        "old one; a person revokes the access with users.removeOAuthToken.",
        low=1,
        high=365,
    )
    oauth_max_clients: int = _s(
        1000,
        "Most OAuth clients registered at once (dynamic registration is open to anyone); clients "
        "nobody signed in to within a day make room.",
        low=1,
        high=1_000_000,
    )

    def __post_init__(self) -> None:
        check_settings(self)

    def public_view(self) -> dict[str, Any]:
        """Every setting with secrets replaced by whether they are set: safe to log or show."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = bool(value) if f.name in SECRET_SETTINGS else value
        return out


SECRET_SETTINGS = frozenset(
    {
        "database_url",
        "pipeline_api_key",
        "pipeline_api_key_secret",
        "embedded_pipeline_api_key",
        "embedded_pipeline_api_key_secret",
        "embedding_api_key",
        "llm_api_key",
        "login_device_secret",
        "rocketchat_token",
        "second_stage_api_key",
    }
)
_BOOL_WORDS = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
}


def _convert(name: str, source: str, tp: Any, raw: Any, meta: Mapping[str, Any]) -> Any:
    """``raw`` (text from the environment or the command line, or a TOML value) as the field's type.

    Raises:
        SettingsError: naming the setting and ``source``, when the value does not fit the field.
    """
    value: Any = raw
    if tp is bool and not isinstance(raw, bool):
        value = _BOOL_WORDS.get(str(raw).strip().lower(), raw)
    elif tp is int and isinstance(raw, str):
        with contextlib.suppress(ValueError):
            value = int(raw.strip())
    elif tp in (float, OPTIONAL_FLOAT):
        value = _to_float(raw, optional=tp == OPTIONAL_FLOAT)
    elif isinstance(tp, types.GenericAlias):  # list[str]: a TOML list, or comma-separated text
        items = [str(x).strip() for x in raw] if isinstance(raw, list) else str(raw).split(",")
        value = [item.strip() for item in items if item.strip()]
    elif isinstance(raw, str):
        value = raw.strip()
    _check_value(name, tp, value, meta, source=source, shown=raw)
    return value


def _to_float(raw: Any, *, optional: bool) -> Any:
    """A TOML integer or a text as a float; empty text unsets an ``optional`` one (in TOML: leave the
    key out). Anything else is left as it is, for ``_check_value`` to name."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        return float(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if not text and optional:
            return None
        with contextlib.suppress(ValueError):
            return float(text)
    return raw


def load_settings(
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings from the config file, the environment and explicit overrides.

    Raises:
        SettingsError: an unknown key in the config file, a value of the wrong type or range (naming
            where it came from), or any refusal of ``check_settings``.
    """
    environ = os.environ if environ is None else environ
    hints = typing.get_type_hints(Settings)
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    values: dict[str, Any] = {}

    if config_file is not None:
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"config file {config_file}: {exc}") from None
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise SettingsError(f"config file {config_file}: unknown setting(s) {', '.join(unknown)}")
        for name, raw in data.items():
            values[name] = _convert(
                name, f"config file {config_file}", hints[name], raw, fields[name].metadata
            )

    for name, f in fields.items():
        env_name = ENV_PREFIX + name.upper()
        if env_name in environ:
            values[name] = _convert(name, f"env {env_name}", hints[name], environ[env_name], f.metadata)

    for name, raw in (overrides or {}).items():
        if name not in fields:
            raise SettingsError(f"unknown setting {name!r}")
        values[name] = _convert(name, "command line", hints[name], raw, fields[name].metadata)

    return Settings(**values)


@dataclass(frozen=True)
class _Together:
    """Settings that only work together: what they turn on, when it is asked for, how to turn it off."""

    feature: str
    names: tuple[str, ...]
    wanted: Callable[[Settings], bool]
    instead: str


# Half of such a group set is a mistake that would only show when a user hits it (answers offered by
# the page that can only fail), so start-up refuses it and names what is missing.
_REQUIRED_TOGETHER = (
    _Together(
        "answers from an LLM",
        ("llm_base_url", "llm_model"),
        lambda s: bool(s.llm_base_url),
        "clear llm_base_url for extractive answers",
    ),
    _Together(
        "the remote pipeline",
        ("pipeline_base_url", "pipeline_id"),
        lambda s: bool(s.pipeline_base_url),
        "clear pipeline_base_url for the embedded pipeline",
    ),
    _Together(
        "Rocket.Chat sign-in",
        ("rocketchat_url",),
        lambda s: s.rocketchat_sign_in,
        "turn rocketchat_sign_in off",
    ),
    _Together(
        "embedder = openai",
        ("embedding_base_url", "embedding_model"),
        lambda s: s.embedder == "openai",
        "choose embedder local or none",
    ),
    _Together(
        "second_stage = rerank",
        ("second_stage_url",),
        lambda s: s.second_stage == "rerank",
        "choose second_stage auto, local or off",
    ),
    _Together(
        "second_stage = embeddings",
        ("second_stage_url", "second_stage_model"),
        lambda s: s.second_stage == "embeddings",
        "choose second_stage auto, local or off",
    ),
)


def check_complete(settings: Settings) -> None:
    """Raises SettingsError naming the missing part of a group of settings that only work together."""
    for group in _REQUIRED_TOGETHER:
        missing = [name for name in group.names if not getattr(settings, name)]
        if missing and group.wanted(settings):
            needed = " and ".join(f"{name} (env {ENV_PREFIX}{name.upper()})" for name in missing)
            them = "them" if len(missing) > 1 else "it"
            raise SettingsError(f"{group.feature} needs {needed}: set {them}, or {group.instead}")


# Settings that name an upstream the server calls: a typo or a planted value (file:, credentials in the
# URL, a disguised numeric host) stops the server instead of a user. What only the outbound policy can
# judge (a literal metadata or link-local address, unless allow-listed) create_app checks.
UPSTREAM_URL_SETTINGS = (
    "llm_base_url",
    "pipeline_base_url",
    "embedding_base_url",
    "rocketchat_url",
    "second_stage_url",
)
# Settings that list browser origins: every entry must be an http(s) origin a browser could send, so a
# typo stops the server at start-up (naming the setting) instead of failing every request or silently
# authorising nothing. A '*' in cors_allowed_origins is the documented exception: it never authorises
# a browser origin and is ignored (create_app says so). The widget's frame-ancestors have no such
# wildcard: each embedding site is named.
ORIGIN_LIST_SETTINGS = ("cors_allowed_origins", "embed_allowed_origins")
IGNORED_WILDCARD_SETTINGS = frozenset({"cors_allowed_origins"})


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def check_settings(settings: Settings) -> None:
    """The checks every ``Settings`` passes, however it was built.

    Raises:
        SettingsError: naming the first setting whose value cannot work.
    """
    hints = _hints()
    for f in dataclasses.fields(settings):
        _check_value(f.name, hints[f.name], getattr(settings, f.name), f.metadata)
    if settings.session_idle_days > settings.session_max_age_days:
        raise SettingsError(
            f"setting 'session_idle_days': {settings.session_idle_days} is longer than "
            f"session_max_age_days ({settings.session_max_age_days})"
        )
    if settings.login_device_secret and len(settings.login_device_secret) < MIN_DEVICE_SECRET_CHARS:
        raise SettingsError(
            f"setting 'login_device_secret': at least {MIN_DEVICE_SECRET_CHARS} characters (with it, "
            "device cookies could be forged for any account), or empty for a key made in the data dir"
        )
    check_complete(settings)
    _check_second_stage_bands(settings)
    _check_origins(settings)
    if settings.database_url and not settings.database_url.startswith(DATABASE_URL_SCHEMES):
        raise SettingsError(
            "setting 'database_url': expected a PostgreSQL URL (postgresql://user@host/db), got another "
            "scheme; leave it empty for the embedded SQLite store"
        )
    if settings.keyword_index == "postgres" and not settings.database_url:
        raise SettingsError(
            "setting 'keyword_index': postgres searches the workspace's PostgreSQL, and database_url is "
            "empty; set database_url (--database) or keyword_index = index"
        )
    for name in UPSTREAM_URL_SETTINGS:
        url = getattr(settings, name)
        try:
            if url:
                check_url_shape(url)
        except OutboundRefused as exc:
            raise SettingsError(f"setting {name!r}: {exc}") from None
    try:
        OutboundPolicy(
            allow_hosts=tuple(settings.outbound_allow_hosts),
            max_concurrent_calls=settings.outbound_max_concurrent_calls,
        )
    except ValueError as exc:
        raise SettingsError(f"setting 'outbound_allow_hosts': {exc}") from None


def _check_value(
    name: str, tp: Any, value: Any, meta: Mapping[str, Any], *, source: str = "", shown: Any = None
) -> None:
    """The value meets its field's type, range and choices (``source``: where it came from)."""
    low, high, choices = meta.get("low"), meta.get("high"), meta.get("choices")
    if tp is bool:
        ok, expected = isinstance(value, bool), "true or false"
    elif tp is int:
        expected = f"an integer from {low} to {high}" if low is not None else "an integer"
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok and (low is None or value >= low) and (high is None or value <= high)
    elif tp in (float, OPTIONAL_FLOAT):
        expected = f"a number from {low:g} to {high:g}" if low is not None else "a finite number"
        if tp == OPTIONAL_FLOAT:
            expected += " (or empty)"
        ok = (value is None and tp == OPTIONAL_FLOAT) or (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (low is None or value >= low)
            and (high is None or value <= high)
        )
    elif isinstance(tp, types.GenericAlias):  # list[str]
        ok, expected = isinstance(value, list) and all(isinstance(v, str) for v in value), "a list of strings"
    elif choices is not None:
        ok, expected = value in choices, ", ".join(choices[:-1]) + f" or {choices[-1]}"
    else:
        ok, expected = isinstance(value, str), "a string"
    if not ok:
        where = f" ({source})" if source else ""
        got = value if shown is None else shown
        raise SettingsError(f"setting {name!r}{where}: expected {expected}, got {got!r}")


def _check_second_stage_bands(settings: Settings) -> None:
    """The two second-stage thresholds come as a pair on one scale, strong at or above related: one
    alone would be read against another model's calibrated band, a scale it was not chosen on."""
    strong, related = settings.second_stage_strong_score, settings.second_stage_related_score
    if (strong is None) != (related is None):
        given, missing = (
            ("second_stage_strong_score", "second_stage_related_score")
            if related is None
            else ("second_stage_related_score", "second_stage_strong_score")
        )
        raise SettingsError(
            f"setting {given!r} needs {missing} (env {ENV_PREFIX}{missing.upper()}): set both on the "
            "second stage's scale, or neither for the calibrated bands"
        )
    if strong is not None and related is not None and strong < related:
        raise SettingsError(
            f"setting 'second_stage_strong_score': {strong:g} is below second_stage_related_score "
            f"({related:g}); a strong result must score at least what a related one does"
        )


def _check_origins(settings: Settings) -> None:
    if settings.site_url and normalize_origin(settings.site_url) is None:
        raise SettingsError(
            f"setting 'site_url': {settings.site_url!r} is not an http or https URL (scheme://host[:port])"
        )
    for name in ORIGIN_LIST_SETTINGS:
        for entry in getattr(settings, name):
            if entry == "*" and name in IGNORED_WILDCARD_SETTINGS:
                continue
            if normalize_origin(entry) is None:
                hint = (
                    "a wildcard is not allowed: name each site as scheme://host[:port]"
                    if "*" in entry
                    else "expected an origin such as https://docs.example.com (scheme://host[:port])"
                )
                raise SettingsError(f"setting {name!r}: {entry!r} is not an http or https origin; {hint}")
