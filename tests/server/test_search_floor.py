"""The relevance floor's configuration (retrieval/floor.py): per embedder, the setting, CJK queries."""

from __future__ import annotations

import pytest

from ai_search_server.retrieval.floor import CALIBRATED_FLOORS, KEYWORD_MIN_COVERAGE, floor_for, is_cjk_query
from ai_search_server.retrieval.minilm import MINILM_MODEL_ID
from ai_search_server.retrieval.minilm_int8 import MINILM_INT8_MODEL_ID
from ai_search_server.retrieval.wiring import search_options
from ai_search_server.settings import load_settings


def test_the_local_model_has_a_calibrated_floor() -> None:
    floor = floor_for(MINILM_MODEL_ID)
    assert floor == CALIBRATED_FLOORS[MINILM_MODEL_ID]
    assert 0 < floor.semantic <= floor.semantic_query < floor.semantic_cjk


def test_an_uncalibrated_embedder_gets_the_keyword_floor_only() -> None:
    floor = floor_for("openai:text-embedding-3-small")
    assert (floor.semantic, floor.semantic_query, floor.keyword_coverage) == (0, 0, KEYWORD_MIN_COVERAGE)
    assert floor_for(None) == floor


@pytest.mark.parametrize(
    ("model_id", "percent", "semantic", "cjk"),
    [
        pytest.param(
            MINILM_MODEL_ID, 30, 0.3, CALIBRATED_FLOORS[MINILM_MODEL_ID].semantic_cjk, id="local-model"
        ),
        pytest.param("openai:text-embedding-3-small", 42, 0.42, 0.0, id="uncalibrated"),
        pytest.param(None, 250, 1.0, 0.0, id="clamped"),
    ],
)
def test_the_setting_replaces_the_semantic_floor(
    model_id: str | None, percent: int, semantic: float, cjk: float
) -> None:
    floor = floor_for(model_id, percent)
    assert (floor.semantic, floor.semantic_query, floor.semantic_cjk) == (semantic, semantic, cjk)


@pytest.mark.parametrize(
    ("percent", "expected"),
    [
        pytest.param(-1, CALIBRATED_FLOORS[MINILM_MODEL_ID], id="default-is-the-calibrated-floor"),
        pytest.param(0, floor_for(MINILM_MODEL_ID, 0), id="zero-turns-the-semantic-floor-off"),
    ],
)
def test_search_options_take_the_floor_of_the_embedder(percent: int, expected: object) -> None:
    settings = load_settings(environ={}, overrides={"search_semantic_floor_percent": percent})
    assert search_options(settings, MINILM_MODEL_ID).floor == expected


@pytest.mark.parametrize(
    ("query", "cjk"),
    [
        pytest.param("老化测试", True, id="chinese"),
        pytest.param("省エネモード", True, id="japanese"),
        pytest.param("DHCPの不具合", True, id="mostly-japanese"),
        pytest.param("ESP32 模组", False, id="half-and-half-is-not-mostly"),
        pytest.param("burn-in test", False, id="english"),
        pytest.param("?? !!", False, id="no-words"),
    ],
)
def test_a_query_is_cjk_when_most_of_its_letters_are(query: str, cjk: bool) -> None:
    assert is_cjk_query(query) is cjk


@pytest.mark.parametrize(
    "model_id",
    [pytest.param(MINILM_MODEL_ID, id="numpy-and-onnx"), pytest.param(MINILM_INT8_MODEL_ID, id="onnx-int8")],
)
def test_every_local_runtime_has_a_calibrated_floor(model_id: str) -> None:
    """A local runtime whose vectors get a new model id must be calibrated (bench/calibrate_floor.py)."""
    assert floor_for(model_id).semantic_query > 0
