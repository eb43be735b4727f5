"""The one secret redaction (redaction.py): whole texts, streams cut anywhere, and what is too short."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_search_server.redaction import MIN_SECRET_CHARS, REDACTED, SecretRedactor
from ai_search_server.settings import load_settings

KEY = "sk-live-0123456789"


@pytest.mark.parametrize(
    ("secrets", "text", "expected"),
    [
        pytest.param((KEY,), f"Bearer {KEY}!", f"Bearer {REDACTED}!", id="one-secret"),
        pytest.param((KEY,), f"{KEY}{KEY}", REDACTED * 2, id="twice-in-a-row"),
        pytest.param((KEY, KEY[:10]), f"a {KEY} b {KEY[:10]}", f"a {REDACTED} b {REDACTED}", id="longest-first"),
        pytest.param(("ollama",), "ollama answered", "ollama answered", id="too-short-to-redact"),
        pytest.param((), f"no secrets: {KEY}", f"no secrets: {KEY}", id="none-configured"),
    ],
)
def test_redact(secrets: tuple[str, ...], text: str, expected: str) -> None:
    assert SecretRedactor(secrets).redact(text) == expected


secret_text = st.text(alphabet="abk-0123", min_size=MIN_SECRET_CHARS, max_size=14)


@given(
    secrets=st.lists(secret_text, min_size=1, max_size=3),
    pieces=st.lists(st.one_of(st.text(alphabet="abk-0123 ", max_size=6), secret_text), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=10),
)
def test_a_stream_cut_anywhere_gives_the_whole_texts_redaction(
    secrets: list[str], pieces: list[str], cuts: list[int]
) -> None:
    redactor = SecretRedactor(secrets)
    text = "".join(pieces)
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    stream = redactor.stream()
    out = "".join(stream.feed(text[a:b]) for a, b in itertools.pairwise(bounds)) + stream.flush()
    assert out == redactor.redact(text)
    for secret in redactor.secrets:
        assert secret not in out


def test_one_character_chunks_never_let_a_key_out_in_pieces() -> None:
    stream = SecretRedactor((KEY,)).stream()
    emitted = [stream.feed(ch) for ch in f"key: {KEY} end"]
    assert "".join(emitted) + stream.flush() == f"key: {REDACTED} end"
    assert KEY[:4] not in "".join(emitted), "no piece of the key left before it was known whole"


def test_the_settings_secrets_are_the_redacted_ones() -> None:
    settings = load_settings(environ={}, overrides={"llm_api_key": KEY, "pipeline_api_key_secret": "ps-1234567890"})
    assert set(SecretRedactor.from_settings(settings).secrets) == {KEY, "ps-1234567890"}
