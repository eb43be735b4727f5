"""F8. An export archive is bounded in total: a bomb costs what a small export costs, and keeps what came before.

The third review's bombs, rebuilt small on disk (``_bombs.py``): a 262 KB zip whose day file is 256 MiB
(one message's text, or padding), 160 MiB spread over forty 4 MiB day files (each far under the
per-member cap), a 2 MB tar.gz whose messages file is 2 GiB, and zips whose member or directory is
damaged. Each is imported by the real command, ``ai-search import BOMB``, in a process of its own whose
peak resident memory (its own ``VmHWM``) and temporary folder (``TMPDIR``, polled) are measured.
Each run must end without a traceback, keep the honest messages that came before the bomb (and say in
its report why the rest is missing), and stay within PEAK_RSS_MIB of memory and PEAK_TEMP_MIB of temp
disk. Before the fix the same runs took 818 to 1,122 MiB, wrote 2 GiB to the temporary folder, and
the damaged deflate stream ended in a ``zlib.error`` traceback after the people and rooms were written.

The member-count limit and the total budget are checked in process through ``import_path`` with small
``ArchiveLimits`` (the product's own parameter), so that a thousand members stand for a million; the
defaults are pinned by ``test_the_archive_limits_in_force_are_the_documented_ones``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ai_search_server.import_dispatch import ImportFailed, import_path
from ai_search_server.imports import archive_limits, json_stream
from ai_search_server.store import open_store

from ._bombs import (
    BOMBS,
    HONEST_MESSAGES,
    MIB,
    damaged_mattermost,
    many_members,
    run_import,
    slack_bomb,
    zulip_bomb,
)
from .conftest import Figure

# Megabytes of memory one `ai-search import` may peak at on a bomb: the interpreter and the store
# take about 90, the longest JSON item the reader holds (MAX_JSON_ITEM_CHARS, 16 Mi) about 100 more.
PEAK_RSS_MIB = 256
# Megabytes the import's temporary folder may hold: the honest members of a tar.gz, copied out.
PEAK_TEMP_MIB = 8
# Messages of the random channel (after general in the Slack bombs): read unless the archive stopped.
RANDOM_MESSAGES = 5
STOPPED = "the rest of the archive is not imported"

# (bomb, messages the import keeps, what its report says, exit status)
CASES = [
    pytest.param("zip-string", HONEST_MESSAGES + RANDOM_MESSAGES, "an item longer than 16,777,216 characters", 0, id="zip-256mib-string"),
    pytest.param("zip-whitespace", HONEST_MESSAGES, "(MAX_COMPRESSION_RATIO)", 0, id="zip-256mib-padding"),
    pytest.param("zip-spread", HONEST_MESSAGES, "(MAX_COMPRESSION_RATIO)", 0, id="zip-160mib-over-40-members"),
    pytest.param("tar-2gib", HONEST_MESSAGES, "(MAX_COMPRESSION_RATIO)", 0, id="tar-gz-2gib-member"),
    pytest.param("zip-damaged-deflate", HONEST_MESSAGES + RANDOM_MESSAGES + 5, "invalid block type", 0, id="zip-damaged-deflate"),
    pytest.param("zip-damaged-crc", HONEST_MESSAGES + RANDOM_MESSAGES + 5, "Bad CRC-32", 0, id="zip-bad-crc"),
    pytest.param("zip-damaged-directory", 0, "a damaged zip", 2, id="zip-damaged-directory"),
]  # fmt: skip


@pytest.mark.requirement("F8")
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("bomb", "messages", "said", "status"), CASES)
def test_a_bomb_or_a_damaged_archive_imports_what_came_before_within_bounds(
    tmp_path: Path,
    database_url: str,
    figure: Figure,
    bomb: str,
    messages: int,
    said: str,
    status: int,
) -> None:
    archive = BOMBS[bomb](tmp_path / (f"{bomb}.tar.gz" if bomb.startswith("tar") else f"{bomb}.zip"))
    run = run_import(archive, tmp_path / "run", database_url=database_url)
    with open_store(tmp_path / "run" / "data", database_url=database_url) as store:  # type: ignore[attr-defined]
        kept = store.count_messages() if run.status == 0 else 0
    output = run.stdout + run.stderr
    failures = {
        "traceback": run.traceback,
        "exit_status": run.status != status,
        "lost_what_came_before": kept != messages,
        "not_reported": said not in output,
        "memory": run.peak_rss_mib > PEAK_RSS_MIB,
        "temp_disk": run.peak_temp_mib > PEAK_TEMP_MIB,
        "stop_not_said": said == "(MAX_COMPRESSION_RATIO)"
        and STOPPED not in output
        and "not imported" not in output,
    }
    figure(
        tried=len(failures),
        failed=sum(failures.values()),
        bomb=bomb,
        archive_kib=round(archive.stat().st_size / 1024),
        exit_status=run.status,
        messages_kept=f"{kept}/{messages}",
        peak_rss_mib=round(run.peak_rss_mib),
        peak_temp_mib=round(run.peak_temp_mib, 1),
        seconds=round(run.seconds, 1),
        traceback=run.traceback,
        said=next((line.strip()[:160] for line in output.splitlines() if said in line), ""),
    )
    assert [name for name, failed in failures.items() if failed] == [], output[-2000:]


@pytest.mark.requirement("F8")
def test_a_mattermost_zip_damaged_part_way_keeps_the_posts_before_the_damage(
    tmp_path: Path, database_url: str, figure: Figure
) -> None:
    """The one JSONL member of an ``mmctl export`` zip, its deflate data overwritten three quarters of
    the way in: the posts read before the damage are imported, the member is reported, no traceback."""
    archive = damaged_mattermost(tmp_path / "mattermost.zip", posts=6000)
    with open_store(tmp_path / "data", database_url=database_url) as store:  # type: ignore[attr-defined]
        report = import_path(store, archive, progress=False)
        kept, people = (
            store.count_messages(),
            [store.get_user_by_username(n) for n in ("alice", "bob", "carol")],
        )
    reasons = [reason for where, reason in report.skipped if where == "export.jsonl"]
    assert reasons and "cannot be read" in reasons[0], report.summary()
    assert 1_000 < kept < 6_000 and all(people)
    figure(tried=1, failed=0, posts=6000, kept_before_the_damage=kept, said=reasons[0][:160])


def _limits(**changes: int) -> archive_limits.ArchiveLimits:
    return archive_limits.ArchiveLimits(**changes)


@pytest.mark.requirement("F8")
@pytest.mark.parametrize(
    ("make", "limits", "kept", "said"),
    [
        pytest.param(
            lambda path: many_members(path / "many.zip", 1_000, "zip"),
            {"max_members": 1_000},
            None,
            "1,004 files, more than 1,000 (MAX_MEMBERS)",
            id="zip-over-the-member-count-refused-before-opening",
        ),
        pytest.param(
            lambda path: many_members(path / "many.tar.gz", 1_000, "tar.gz"),
            {"max_members": 1_000},
            HONEST_MESSAGES,
            "the archive holds more than 1,000 files (MAX_MEMBERS)",
            id="tar-gz-over-the-member-count-stops-there",
        ),
        pytest.param(
            lambda path: slack_bomb(path / "spread.zip", "spread", mib=40),
            {"max_total_bytes": 8 * MIB, "max_ratio": 10**6},
            HONEST_MESSAGES,
            "more than 8,388,608 bytes in all (MAX_ARCHIVE_BYTES)",
            id="zip-over-the-total-budget-stops-there",
        ),
        pytest.param(
            lambda path: zulip_bomb(path / "big.tar.gz", mib=2),
            {"max_member_bytes": MIB},
            HONEST_MESSAGES,
            "1 file not read, each larger than 1,048,576 bytes (MAX_MEMBER_BYTES)",
            id="tar-gz-member-over-its-cap-reported",
        ),
        pytest.param(
            lambda path: slack_bomb(path / "spread.zip", "spread", mib=40),
            {"ratio_free_bytes": 0},
            HONEST_MESSAGES,
            "(MAX_COMPRESSION_RATIO)",
            id="zip-ratio-checked-from-the-first-byte",
        ),
    ],
)
def test_every_archive_limit_holds_and_keeps_what_came_before(
    tmp_path: Path,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    figure: Figure,
    make: Callable[[Path], Path],
    limits: dict[str, int],
    kept: int | None,
    said: str,
) -> None:
    archive = make(tmp_path)
    opened: list[Path] = []
    real_zipfile = zipfile.ZipFile
    monkeypatch.setattr(
        zipfile, "ZipFile", lambda path, *a, **k: opened.append(path) or real_zipfile(path, *a, **k)
    )
    with open_store(tmp_path / "data", database_url=database_url) as store:  # type: ignore[attr-defined]
        try:
            report = import_path(store, archive, progress=False, limits=_limits(**limits))
        except ImportFailed as error:
            outcome, imported, refused_before_opening = str(error), None, not opened
        else:
            outcome = report.summary()
            imported, refused_before_opening = report.imported, None
    assert said in outcome and imported == kept
    assert refused_before_opening in (None, True), (
        "a zip over the member count is refused before zipfile reads it"
    )
    figure(
        tried=2,
        failed=0,
        limits=limits,
        messages_kept=imported,
        refused_before_zipfile_read_its_directory=refused_before_opening,
        said=next(line.strip()[:160] for line in outcome.splitlines() if said in line),
    )


def test_the_archive_limits_in_force_are_the_documented_ones() -> None:
    """docs/imports.md: 1,000,000 files, 32 GiB in all, 100 times the archive past 64 MiB, 16 GiB a
    member, 16 Mi characters a streamed JSON item."""
    assert (
        archive_limits.ArchiveLimits(
            max_members=1_000_000,
            max_total_bytes=32 * 1024**3,
            max_ratio=100,
            ratio_free_bytes=64 * MIB,
            max_member_bytes=16 * 1024**3,
        )
        == archive_limits.DEFAULT_ARCHIVE_LIMITS
    )
    assert json_stream.MAX_JSON_ITEM_CHARS == 16 * MIB
