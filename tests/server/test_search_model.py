"""The local embedding model's parts: WordPiece, the safetensors reader, and (slow) the model itself."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from ai_search_server.retrieval.embedder import EmbedderUnavailable
from ai_search_server.retrieval.minilm import MINILM_DIMENSIONS, MiniLMEmbedder, read_safetensors
from ai_search_server.retrieval.wordpiece import MAX_CHARS_PER_WORD, WordPieceTokenizer

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
VOCAB = {
    "[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "deploy": 4, "##ed": 5, "##ment": 6, "!": 7,
    "cafe": 8, "日": 9, "本": 10, "$": 11, "un": 12, "##known": 13,
}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        pytest.param("deploy", [2, 4, 3], id="whole-word-in-vocab"),
        pytest.param("Deployed!", [2, 4, 5, 7, 3], id="lower-cased-split-into-pieces-and-punctuation"),
        pytest.param("deployment", [2, 4, 6, 3], id="longest-piece-first"),
        pytest.param("Café", [2, 8, 3], id="accents-stripped"),
        pytest.param("日本", [2, 9, 10, 3], id="each-cjk-ideograph-a-word"),
        pytest.param("$deploy", [2, 11, 4, 3], id="ascii-symbol-split-like-punctuation"),
        pytest.param("deployx", [2, 1, 3], id="unmatched-piece-makes-the-word-unknown"),
        pytest.param(
            "deploy\x00\u200b\tdeploy", [2, 4, 4, 3], id="control-and-format-chars-dropped-tab-is-space"
        ),
        pytest.param("d" * (MAX_CHARS_PER_WORD + 1), [2, 1, 3], id="over-long-word-unknown"),
        pytest.param("", [2, 3], id="empty-text-is-cls-sep"),
    ],
)
def test_wordpiece(text: str, ids: list[int]) -> None:
    assert WordPieceTokenizer(VOCAB).encode(text) == ids


def test_wordpiece_cuts_to_max_tokens_keeping_sep() -> None:
    ids = WordPieceTokenizer(VOCAB, max_tokens=5).encode("deploy " * 10)
    assert ids == [2, 4, 4, 4, 3]


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def test_safetensors_reader_maps_each_tensor(tmp_path: Path) -> None:
    weights = np.arange(6, dtype="<f4").reshape(2, 3)
    ids = np.array([7, 8], dtype="<i8")
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"w": ("F32", [2, 3], weights.tobytes()), "ids": ("I64", [2], ids.tobytes())})
    tensors = read_safetensors(path)
    assert tensors["w"].tolist() == weights.tolist()
    assert tensors["ids"].tolist() == [7, 8]


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        pytest.param({"w": ("BF16", [1], b"\x00\x00")}, "unsupported dtype", id="unknown-dtype"),
        pytest.param(
            {"w": ("F32", [2], b"\x00" * 4)}, "inconsistent byte range", id="shape-and-bytes-disagree"
        ),
    ],
)
def test_safetensors_reader_refuses_damaged_files(tmp_path: Path, tensors: dict, message: str) -> None:
    path = tmp_path / "bad.safetensors"
    write_safetensors(path, tensors)
    with pytest.raises(ValueError, match=message):
        read_safetensors(path)


def test_safetensors_reader_refuses_a_header_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ValueError, match="runs past the end"):
        read_safetensors(path)


def test_missing_model_files_make_the_embedder_unavailable(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="cannot be loaded"):
        MiniLMEmbedder.load(tmp_path)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    try:
        return MiniLMEmbedder.load()
    except EmbedderUnavailable as exc:  # the model is an optional install
        pytest.skip(str(exc))


@pytest.mark.slow
def test_minilm_matches_the_sentence_transformers_reference(minilm: MiniLMEmbedder) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    ours = minilm.embed(reference["texts"])
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert ours.shape == (len(reference["texts"]), MINILM_DIMENSIONS)
    assert np.abs(ours - expected).max() < 1e-4
    assert (ours * expected).sum(axis=1).min() > 0.9999


@pytest.mark.slow
def test_minilm_ranks_a_paraphrase_above_an_unrelated_sentence(minilm: MiniLMEmbedder) -> None:
    query, paraphrase, unrelated = minilm.embed(
        ["the deploy failed", "the release did not go out, rollout broke", "lunch at noon on friday?"]
    )
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2
