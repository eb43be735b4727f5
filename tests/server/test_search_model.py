"""The local embedding model's parts: WordPiece, the safetensors reader, batching by length, and (slow)
the model itself on each runtime: numpy, ONNX Runtime float32 and int8."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ai_search_server.demo import generate_demo_messages
from ai_search_server.retrieval.batching import length_batches, padded
from ai_search_server.retrieval.embedder import EmbedderUnavailable
from ai_search_server.retrieval.minilm import MINILM_DIMENSIONS, MiniLMEmbedder, read_safetensors
from ai_search_server.retrieval.minilm_int8 import RANGES_FILE, load_ranges
from ai_search_server.retrieval.minilm_onnx import OnnxMiniLMEmbedder, Precision
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


@pytest.mark.parametrize(
    ("lengths", "max_texts", "max_tokens", "batches"),
    [
        pytest.param([5, 3, 9, 3], 8, 100, [[1, 3, 0, 2]], id="shortest-first-in-one-batch"),
        pytest.param([5, 3, 9, 3], 2, 100, [[1, 3], [0, 2]], id="cut-at-max-texts"),
        pytest.param([4, 4, 4, 10], 8, 12, [[0, 1, 2], [3]], id="cut-when-padded-size-would-pass-max-tokens"),
        pytest.param([50, 2], 8, 10, [[1], [0]], id="a-text-longer-than-the-budget-is-its-own-batch"),
        pytest.param([], 8, 10, [], id="nothing"),
    ],
)
def test_length_batches(lengths: list[int], max_texts: int, max_tokens: int, batches: list[list[int]]) -> None:
    assert list(length_batches(lengths, max_texts=max_texts, max_tokens=max_tokens)) == batches


def test_padded_marks_real_tokens() -> None:
    ids, mask = padded([[2, 7, 3], [2, 3]])
    assert ids.tolist() == [[2, 7, 3], [2, 3, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 1, 0]]


def test_int8_ranges_of_other_weights_are_refused(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"not the weights the ranges were measured on")
    with pytest.raises(EmbedderUnavailable, match="measured on other weights"):
        load_ranges(weights, ranges_file=RANGES_FILE)
    with pytest.raises(EmbedderUnavailable, match="cannot be read"):
        load_ranges(weights, ranges_file=tmp_path / "missing.npz")


def _onnx(precision: Precision) -> OnnxMiniLMEmbedder:
    try:
        return OnnxMiniLMEmbedder.load(precision=precision, threads=2)
    except EmbedderUnavailable as exc:  # onnxruntime is part of the server install; the model is optional
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def onnx_float32() -> Iterator[OnnxMiniLMEmbedder]:
    embedder = _onnx("float32")
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def onnx_int8() -> Iterator[OnnxMiniLMEmbedder]:
    embedder = _onnx("int8")
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def chat_texts() -> list[str]:
    """Distinct demo messages of every length (1 to 90+ tokens), more than one batch's worth."""
    texts = sorted({row["text"] for row in generate_demo_messages()})
    return texts[::9]


@pytest.mark.slow
def test_onnx_float32_gives_the_numpy_models_vectors(
    minilm: MiniLMEmbedder, onnx_float32: OnnxMiniLMEmbedder, chat_texts: list[str]
) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    texts = [*reference["texts"], *chat_texts]
    ours, theirs = onnx_float32.embed(texts), minilm.embed(texts)
    assert np.abs(ours - theirs).max() < 1e-5
    assert (ours * theirs).sum(axis=1).min() > 0.99999
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert (ours[: len(expected)] * expected).sum(axis=1).min() > 0.99999
    assert onnx_float32.model_id == minilm.model_id  # same vectors: a switch re-embeds nothing


@pytest.mark.slow
def test_onnx_int8_stays_close_to_float32_under_its_own_model_id(
    minilm: MiniLMEmbedder, onnx_int8: OnnxMiniLMEmbedder, chat_texts: list[str]
) -> None:
    cosines = (onnx_int8.embed(chat_texts) * minilm.embed(chat_texts)).sum(axis=1)
    # Measured on all 2,110 demo texts: mean 0.9984, 1st percentile 0.9955, minimum 0.985.
    assert cosines.mean() > 0.997
    assert cosines.min() > 0.98
    assert onnx_int8.model_id != minilm.model_id  # other vectors: a switch re-embeds everything


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["numpy", "onnx", "onnx-int8"])
def test_batching_by_length_gives_the_vectors_of_one_text_at_a_time(
    runtime: str,
    minilm: MiniLMEmbedder,
    onnx_float32: OnnxMiniLMEmbedder,
    onnx_int8: OnnxMiniLMEmbedder,
    chat_texts: list[str],
) -> None:
    embedder = {"numpy": minilm, "onnx": onnx_float32, "onnx-int8": onnx_int8}[runtime]
    texts = chat_texts[:120]  # several batches, spread over two workers for the ONNX runtimes
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts])
    assert together.shape == (len(texts), MINILM_DIMENSIONS)
    # int8 too: its activation ranges are fixed, so a text's neighbours in a batch do not change it.
    assert np.abs(together - alone).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
