"""What ``ai-search import PATH`` makes of a path: the format by content, archives read safely, damage
reported, and the command's own words."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ai_search_server.cli import main
from ai_search_server.import_dispatch import ImportFailed, import_path
from ai_search_server.imports import bundle as bundle_module
from ai_search_server.imports.bundle import BundleError, open_bundle
from ai_search_server.imports.detect import UnknownFormat, detect_format
from ai_search_server.store import open_store
from ai_search_server.store.base import Store

from ._exports import FIXTURES, copy_fixture, pack


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda tmp: copy_fixture("slack", tmp), "slack", id="slack-folder"),
        pytest.param(lambda tmp: pack(copy_fixture("slack", tmp), "zip", tmp), "slack", id="slack-zip"),
        pytest.param(
            lambda tmp: _write(tmp / "export.json", (FIXTURES / "mattermost" / "export.jsonl").read_bytes()),
            "mattermost",
            id="mattermost-jsonl-named-json",
        ),
        pytest.param(
            lambda tmp: pack(copy_fixture("mattermost", tmp), "zip", tmp), "mattermost", id="mattermost-zip"
        ),
        pytest.param(lambda tmp: copy_fixture("zulip", tmp), "zulip", id="zulip-folder-with-its-folder"),
        pytest.param(
            lambda tmp: (pack(copy_fixture("zulip", tmp) / "zulip-export-acme", "tar.gz", tmp)).rename(
                tmp / "x.zip"
            ),
            "zulip",
            id="zulip-tar-gz-named-zip",
        ),
        pytest.param(
            lambda tmp: _write(
                tmp / "h.txt",
                b'{"room": "ops", "room_type": "c", "user": "a", "ts": "2026-11-01", "text": "x"}\n',
            ),
            "jsonl",
            id="our-jsonl-named-txt",
        ),
    ],
)
def test_the_format_is_told_by_content(tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    assert detect_format(path if isinstance(path, Path) else Path(path)) == expected


@pytest.mark.parametrize(
    ("name", "data", "fragment"),
    [
        pytest.param("notes.txt", b"just some text\n", "not a format ai-search reads", id="text"),
        pytest.param("image.png", b"\x89PNG\r\n\x1a\n\x00\x00", "not a format ai-search reads", id="binary"),
        pytest.param("empty.jsonl", b"", "not a format ai-search reads", id="empty"),
    ],
)
def test_anything_else_is_refused_naming_what_is_understood(
    tmp_path: Path, name: str, data: bytes, fragment: str
) -> None:
    with pytest.raises(UnknownFormat) as caught:
        detect_format(_write(tmp_path / name, data))
    assert fragment in str(caught.value) and "Slack workspace export" in str(caught.value)


def test_a_zip_of_something_else_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("holiday.jpg", b"\xff\xd8")
    with pytest.raises(ImportFailed, match="neither a Slack export nor a Mattermost"):
        import_path(open_store(tmp_path / "data"), archive, progress=False)


def test_a_member_larger_than_the_cap_stops_at_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("users.json", b"[" + b" " * 5_000_000 + b"]")
    monkeypatch.setattr(bundle_module, "MAX_JSON_MEMBER_BYTES", 1_000_000)
    with open_bundle(archive) as opened, pytest.raises(BundleError, match="larger than 1,000,000 bytes"):
        opened.read_json("users.json")


def test_a_tar_member_cannot_write_outside_its_temporary_folder(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as out:
        for name, data in (("../escaped.json", b"{}"), ("export/realm.json", b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    with open_bundle(archive) as opened:
        assert opened.names() == ["realm.json"]
        assert opened.damage is not None and "../escaped.json" in opened.damage
    assert not (tmp_path / "escaped.json").exists()


def test_a_cut_tar_gz_imports_what_came_before_the_cut(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> None:
    folder = FIXTURES / "zulip" / "zulip-export-acme"
    whole = tmp_path / "whole.tar.gz"
    with tarfile.open(whole, "w:gz") as out:  # realm.json first, the big messages file last
        for name in ("realm.json", "messages-000001.json", "messages-000002.json"):
            out.add(folder / name, arcname=f"zulip-export-acme/{name}")
    data = whole.read_bytes()
    cut = _write(tmp_path / "cut.tar.gz", data[: len(data) * 3 // 4])
    with open_workspace(tmp_path / "data") as store:  # type: ignore[attr-defined]
        report = import_path(store, cut, progress=False)
        assert report.imported == 11  # messages-000001.json whole, messages-000002.json dropped
        assert any("damaged" in reason for _, reason in report.skipped)


@pytest.mark.parametrize(
    ("fixture", "pack_as", "messages"),
    [
        pytest.param("slack", "zip", 20, id="slack"),
        pytest.param("mattermost", "zip", 12, id="mattermost"),
        pytest.param("zulip", "tar.gz", 161, id="zulip"),
    ],
)
def test_the_command_imports_each_format_and_says_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture: str, pack_as: str, messages: int, database_url: str) -> None:
    folder = copy_fixture(fixture, tmp_path / "src")
    if fixture == "zulip":
        folder = folder / "zulip-export-acme"
    path = pack(folder, pack_as, tmp_path)
    data = tmp_path / "data"
    (tmp_path / "config.toml").write_text('embedder = "none"\n')
    data.mkdir()
    (data / "config.toml").write_text('embedder = "none"\n')
    status = main(
        ["import", str(path), "--quiet", "--data", str(data), *(["--database", database_url] if database_url else []), "--source-url", "https://chat.example.com/"]
    )
    out = capsys.readouterr().out
    assert status == 0 and f"{messages:,} messages imported" in out and "skipped" in out
    with open_store(data, database_url=database_url) as store:  # type: ignore[attr-defined]
        assert store.count_messages() == messages


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        pytest.param(["import", "nowhere.zip"], "no such file or folder", id="missing"),
        pytest.param(
            ["import", "{fixture}", "--source-url", "javascript:alert(1)"],
            "--source-url must be",
            id="bad-url",
        ),
        pytest.param(["import", "{text}"], "not a format ai-search reads", id="unknown-format"),
    ],
)
def test_the_command_refuses_with_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    text = _write(tmp_path / "notes.txt", b"hello\n")
    argv = [a.format(fixture=FIXTURES / "slack", text=text) for a in argv]
    assert main([*argv, "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_the_report_keeps_the_invariant_and_names_records(tmp_path: Path, open_workspace: Callable[[Path], Store]) -> None:
    store = open_workspace(tmp_path / "data")
    report = import_path(store, FIXTURES / "mattermost" / "export.jsonl", progress=False)
    assert (
        report.lines_read
        == report.imported + report.updated + report.unchanged + report.skipped_count + report.ignored
    )
    summary = report.summary()
    assert summary.splitlines()[0].startswith(f"{FIXTURES / 'mattermost' / 'export.jsonl'}: 35 records read")
    assert "export.jsonl line 15: invalid JSON" in summary
    assert json.dumps(report.skipped)  # positions and reasons are plain strings
    store.close()
