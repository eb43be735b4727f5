"""``ai-search sync rocketchat`` takes the admin's token without putting it in the process list.

A command line is readable by every user of the machine (``ps``, ``/proc/PID/cmdline``), so the token
comes from a file (``--token-file``), standard input (``--token -``) or the environment
(``AI_SEARCH_ROCKETCHAT_TOKEN``, a setting like any other); ``--token VALUE`` still works and warns.
Checked against the stand-in Rocket.Chat (a real HTTP server that refuses any other token), in
process for each way and through a real ``ai-search`` process whose command line is read back.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_search_server import cli
from ai_search_server.cli import main

from ._fake_rocketchat import ADMIN_TOKEN, FakeRocketChat, sync_argv

WARNING = "can be read by every user of this machine"


@pytest.fixture
def server() -> Iterator[FakeRocketChat]:
    fake = FakeRocketChat().serve()
    yield fake
    fake.stop()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "cli-data"
    folder.mkdir()
    (folder / "config.toml").write_text('embedder = "none"\n')
    return folder


@pytest.mark.parametrize(
    ("how", "warned"),
    [
        pytest.param("file", False, id="token-file"),
        pytest.param("stdin", False, id="token-dash-stdin"),
        pytest.param("env", False, id="environment"),
        pytest.param("flag", True, id="token-value-warns"),
    ],
)
def test_each_way_of_giving_the_token_syncs_and_only_the_flag_warns(
    tmp_path: Path,
    server: FakeRocketChat,
    data: Path,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    warned: bool,
) -> None:
    token: tuple[str, ...] = ()
    if how == "file":
        path = tmp_path / "rocketchat.token"
        path.write_text(f"\n{ADMIN_TOKEN}\n")
        token = ("--token-file", str(path))
    elif how == "stdin":
        monkeypatch.setattr(sys, "stdin", io.StringIO(f"{ADMIN_TOKEN}\n"))
        token = ("--token", "-")
    elif how == "env":
        monkeypatch.setenv("AI_SEARCH_ROCKETCHAT_TOKEN", ADMIN_TOKEN)
    else:
        token = ("--token", ADMIN_TOKEN)
    argv = sync_argv(server, data, database_url, *token)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert f"{server.url}: " in out and "Traceback" not in err
    assert (WARNING in err) is warned
    assert (ADMIN_TOKEN in argv) is (how == "flag")
    assert server.calls("/api/v1/users.list"), "the token was accepted"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        pytest.param(None, "cannot be read (No such file or directory)", id="missing-file"),
        pytest.param("\n  \n", "holds no token", id="blank-file"),
        pytest.param("x" * 4097, "more than 4,096 characters", id="huge-file"),
        pytest.param(b"\xff\xfe token", "not UTF-8 text", id="binary-file"),
    ],
)
def test_a_token_file_that_cannot_serve_is_refused_with_a_sentence(
    tmp_path: Path,
    server: FakeRocketChat,
    data: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes | None,
    fragment: str,
) -> None:
    assert cli.MAX_TOKEN_INPUT_CHARS == 4096
    path = tmp_path / "rocketchat.token"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(sync_argv(server, data, "", "--token-file", str(path))) == 2
    err = capsys.readouterr().err
    assert f"--token-file {path}: {fragment}" in err and "Traceback" not in err
    assert not server.calls("/api/v1/users.list"), "nothing was called without a token"


def test_the_token_file_and_the_token_flag_exclude_each_other(
    tmp_path: Path, server: FakeRocketChat, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(sync_argv(server, data, "", "--token-file", str(tmp_path / "t"), "--token", "-"))
    assert stopped.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_the_help_says_how_to_keep_the_token_out_of_the_process_list(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["sync", "rocketchat", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--token-file PATH" in text and "- to read it from standard input" in text
    assert "AI_SEARCH_ROCKETCHAT_TOKEN" in text and "visible to every user of the machine" in text


@pytest.mark.parametrize(
    ("how", "listed"),
    [pytest.param("file", False, id="token-file"), pytest.param("flag", True, id="token-value")],
)
def test_the_process_list_shows_the_token_only_when_given_on_the_command_line(
    tmp_path: Path, server: FakeRocketChat, data: Path, database_url: str, how: str, listed: bool
) -> None:
    """A real ``ai-search sync rocketchat --watch`` process, its command line read from /proc while it
    runs (what ``ps`` shows any user), after its first run was accepted."""
    path = tmp_path / "rocketchat.token"
    path.write_text(ADMIN_TOKEN)
    token = ("--token-file", str(path)) if how == "file" else ("--token", ADMIN_TOKEN)
    argv = sync_argv(server, data, database_url, *token, "--watch", "--interval", "60")
    with subprocess.Popen(
        [sys.executable, "-m", "ai_search_server", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            assert f"{server.url}: " in process.stdout.readline()  # the first run is done: the token worked
            cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().decode()
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert (ADMIN_TOKEN in cmdline) is listed
