"""The live Rocket.Chat mirror against the stand-in server on loopback: a full run, then increments
(new, edited, reacted, deleted, left, renamed, removed), pagination everywhere, 429s, a server that
restarts mid-sync, a sync that dies and resumes, a server from before the cursor API."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from ai_search_server.cli import main
from ai_search_server.imports.batches import ImportReport
from ai_search_server.imports.rocketchat import RocketChatSync, origin_of
from ai_search_server.imports.rocketchat_api import (
    Credentials,
    RocketChatAPI,
    RocketChatRefused,
    RocketChatUnreachable,
)
from ai_search_server.outbound import GuardedClient, OutboundPolicy
from ai_search_server.settings import Settings, load_settings
from ai_search_server.store import open_store
from ai_search_server.store.base import Store
from ai_search_server.store.records import Message

from ._exports import content_hash
from ._fake_rocketchat import ADMIN_ID, ADMIN_TOKEN, FakeRocketChat, sync_argv
from ._scoping import check_scoping, scoped_client
from ._search_support import UvicornThread

# Items per page, small so that every list (users, rooms, members, messages) takes several pages.
PAGE = 3


def workspace(server: FakeRocketChat) -> FakeRocketChat:
    """Four people, a bot and a deactivated account; a channel, a private group, a DM, a group DM;
    threads, files, reactions, a pin, markdown, a system message."""
    add = server.add_user
    add("uAlice00000000001", "alice", "Alice Okafor", password="pw-alice-123")
    add("uBob0000000000002", "bob", "Bob Martínez", password="pw-bob-123")
    add("uCarol00000000003", "carol", "Carol Chen")
    add("uDave000000000004", "dave", "Dave Gone", active=False)
    add("uBot0000000000005", "deploybot", "Deploy Bot", kind="bot")
    a, b, c, d, bot = (
        "uAlice00000000001",
        "uBob0000000000002",
        "uCarol00000000003",
        "uDave000000000004",
        "uBot0000000000005",
    )
    server.add_room("rGeneral000000001", "c", "general", [a, b, c, d, ADMIN_ID], topic="All hands")
    server.add_room("rOps0000000000002", "c", "ops", [a, c, bot])
    server.add_room("rSecret0000000003", "p", "secret", [b, c], fname="Secret Plans")
    server.add_room("rDirectAB00000004", "d", "", [a, b])
    server.add_room("rGroupABC0000005", "d", "", [a, b, c])
    server.post(
        "rGeneral000000001",
        a,
        "Welcome! Read [the handbook](https://handbook.test/start) first",
        message_id="mWelcome000000001",
    )
    server.post("rGeneral000000001", d, "", t="uj", message_id="mJoin00000000002")
    parent = server.post(
        "rOps0000000000002",
        c,
        "deploy failed on billing-api with ERR_CONN_RESET",
        message_id="mDeploy000000003",
    )
    server.post("rOps0000000000002", a, "rolling back now", tmid=parent, message_id="mRollback0000004")
    server.post("rOps0000000000002", bot, "rollback done in 42 s", tmid=parent, message_id="mRolledBack00005")
    server.post(
        "rOps0000000000002", a, "", message_id="mRunbook00000006",
        files=[{"_id": "f1", "name": "runbook.pdf", "type": "application/pdf", "size": 2048}],
        attachments=[{"type": "file", "title": "runbook.pdf", "description": "the disk-full runbook"}],
    )  # fmt: skip
    server.post(
        "rSecret0000000003", b, "the acquisition closes in march", message_id="mSecret000000007", pinned=True
    )
    server.post("rDirectAB00000004", a, "lunch at noon? 日本語", message_id="mLunch0000000008")
    server.post("rGroupABC0000005", c, "offsite planning", message_id="mOffsite00000009")
    for n in range(7):
        server.post("rGeneral000000001", (a, b, c)[n % 3], f"standup note {n}: shard {n} is fine")
    server.react("mWelcome000000001", ":+1:", ["bob", "carol"])
    return server


@pytest.fixture
def server() -> Iterator[FakeRocketChat]:
    fake = workspace(FakeRocketChat()).serve()
    yield fake
    fake.stop()


def sync(
    store: Store, server: FakeRocketChat, **api_options: object
) -> tuple[ImportReport, RocketChatAPI]:
    async def run() -> tuple[ImportReport, RocketChatAPI]:
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            api = RocketChatAPI(
                server.url, Credentials(ADMIN_ID, ADMIN_TOKEN), client, page_size=PAGE, **api_options
            )  # type: ignore[arg-type]
            return await RocketChatSync(store, api).run(), api

    return anyio.run(run)


def messages(store: Store) -> dict[str, Message]:
    return {m.id: m for batch in store.iter_messages() for m in batch}


def members(store: Store, name: str) -> list[str]:
    room = store.get_room_by_name(name)
    assert room is not None
    return sorted(u.username for u in store.get_users(store.members_of(room.id)).values())


def test_a_full_sync_mirrors_people_rooms_members_and_messages(
    store: Store, server: FakeRocketChat
) -> None:
    report, api = sync(store, server)
    assert (report.imported, report.ignored, report.skipped_count) == (15, 1, 0)
    stored = messages(store)
    assert set(stored) == set(server.ws.messages) - {"mJoin00000000002"}  # Rocket.Chat's own ids
    assert stored["mRollback0000004"].tmid == stored["mRolledBack00005"].tmid == "mDeploy000000003"
    assert (
        stored["mWelcome000000001"].text == "Welcome! Read the handbook (https://handbook.test/start) first"
    )
    assert [(r.emoji, r.usernames) for r in stored["mWelcome000000001"].reactions] == [
        (":+1:", ("bob", "carol"))
    ]
    assert stored["mRunbook00000006"].text == "the disk-full runbook"
    assert [(a.name, a.size) for a in stored["mRunbook00000006"].attachments] == [("runbook.pdf", 2048)]
    assert stored["mSecret000000007"].pinned_at is not None
    assert stored["mDeploy000000003"].source_url == f"{server.url}/channel/ops?msg=mDeploy000000003"
    assert (
        stored["mLunch0000000008"].source_url == f"{server.url}/direct/rDirectAB00000004?msg=mLunch0000000008"
    )
    assert members(store, "general") == ["admin", "alice", "bob", "carol", "dave"]
    assert members(store, "secret") == ["bob", "carol"]
    assert members(store, "alice__bob") == ["alice", "bob"] and members(store, "alice__bob__carol") == [
        "alice",
        "bob",
        "carol",
    ]
    secret = store.get_room_by_name("secret")
    assert secret is not None and (secret.type, secret.fname) == ("p", "Secret Plans")
    users = {u: store.get_user_by_username(u) for u in ("deploybot", "dave")}
    assert users["deploybot"] is not None and users["deploybot"].roles == ("bot",)
    assert users["dave"] is not None and not users["dave"].active
    assert len(server.calls("/api/v1/users.list")) == 2 and len(server.calls("/api/v1/rooms.adminRooms")) == 2
    assert api.calls == len(server.requests)


def test_the_next_sync_applies_what_changed_and_then_nothing(
    store: Store, server: FakeRocketChat, tmp_path: Path
) -> None:
    sync(store, server)
    a, b, c = "uAlice00000000001", "uBob0000000000002", "uCarol00000000003"
    server.post(
        "rOps0000000000002", c, "postmortem on Monday", tmid="mDeploy000000003", message_id="mPostmortem00010"
    )
    server.edit("mWelcome000000001", "Welcome! Read the handbook before Friday")
    server.react("mLunch0000000008", ":pizza:", ["bob"])
    server.delete("mRolledBack00005")
    server.leave("rSecret0000000003", c)
    server.rename("rOps0000000000002", "incident-ops")
    server.remove_room("rGroupABC0000005")
    report, _ = sync(store, server)
    assert (report.imported, report.updated, report.deleted) == (1, 3, 1)
    assert report.rooms_renamed == 1 and report.unsubscribed == 1 + 3
    stored = messages(store)
    assert (
        stored["mWelcome000000001"].text == "Welcome! Read the handbook before Friday"
        and stored["mWelcome000000001"].edited_at
    )
    assert "mRolledBack00005" not in stored and stored["mPostmortem00010"].tmid == "mDeploy000000003"
    assert [r.emoji for r in stored["mLunch0000000008"].reactions] == [":pizza:"]
    assert members(store, "secret") == ["bob"] and members(store, "alice__bob__carol") == []
    assert store.get_room_by_name("incident-ops") is not None
    before = content_hash(tmp_path / "data")
    again, _ = sync(store, server)
    assert (again.imported, again.updated, again.deleted, again.subscribed, again.unsubscribed) == (
        0,
        0,
        0,
        0,
        0,
    )
    assert content_hash(tmp_path / "data") == before
    assert a and b


def test_429s_are_waited_out_within_the_servers_limits(store: Store, server: FakeRocketChat) -> None:
    server.rate_limit, server.rate_window_seconds = 8, 1.0
    report, api = sync(store, server)
    assert report.imported == 15
    # Paced on X-RateLimit-Remaining and -Reset: it waited, and never went past the limit.
    assert api.waited_seconds > 0 and api.rate_limited == 0
    server.fail_next(429, 429)
    report, api = sync(store, server)
    assert api.rate_limited >= 2 and report.skipped_count == 0


def test_a_server_that_restarts_mid_sync_is_waited_for(store: Store, server: FakeRocketChat) -> None:
    server.bounce_after("/api/v1/chat.syncMessages", calls=4, down_seconds=1.0)
    server.fail_next(503)
    report, _ = sync(store, server)
    assert report.imported == 15 and set(messages(store)) == set(server.ws.messages) - {"mJoin00000000002"}
    assert server.generation == 2 and server.generations[-1] == 2, (
        "the sync went on with the restarted server"
    )


def test_a_sync_that_dies_resumes_at_the_page_it_was_on(store: Store, server: FakeRocketChat) -> None:
    server.unavailable_after("/api/v1/chat.syncMessages", calls=6, seconds=3.0)
    with pytest.raises(RocketChatUnreachable, match="run the sync again to resume"):
        sync(store, server, max_outage_seconds=0.5)
    done = len(messages(store))
    assert 0 < done < 15
    time.sleep(3.0)
    server.requests.clear()
    report, _ = sync(store, server)
    assert report.imported == 15 - done and set(messages(store)) == set(server.ws.messages) - {
        "mJoin00000000002"
    }
    first_calls = {}
    for query in server.calls("/api/v1/chat.syncMessages"):
        first_calls.setdefault((query["roomId"], query["type"]), query["next"])
    assert any(cursor != "0" for (room, kind), cursor in first_calls.items() if kind == "UPDATED"), (
        "no room resumed from its saved cursor"
    )


def test_a_server_before_the_cursor_api_is_read_by_last_update(store: Store, tmp_path: Path) -> None:
    old = workspace(FakeRocketChat(version="6.9.0")).serve()
    try:
        report, _ = sync(store, old)
        assert report.imported == 15
        old.edit("mSecret000000007", "the acquisition closes in april")
        old.delete("mLunch0000000008")
        report, _ = sync(store, old)
        assert (report.imported, report.updated, report.deleted) == (0, 1, 1)
        assert all("lastUpdate" in q for q in old.calls("/api/v1/chat.syncMessages") if "type" not in q)
    finally:
        old.stop()


def test_a_room_the_token_cannot_read_is_reported_and_the_rest_synced(
    store: Store, server: FakeRocketChat
) -> None:
    server.unreadable.add("rSecret0000000003")
    report, _ = sync(store, server)
    assert report.imported == 14
    assert [where for where, _ in report.skipped] == ["room Secret Plans"]
    assert "cannot be read with this token" in report.summary()


@pytest.mark.parametrize(
    ("user_id", "token", "fragment"),
    [
        pytest.param(ADMIN_ID, "wrong-token", "refused the credentials", id="bad-token"),
        pytest.param("uAlice00000000001", "alice-pat", "does not have the permissions", id="not-an-admin"),
    ],
)
def test_a_token_that_cannot_sync_is_refused_with_a_sentence(
    store: Store, server: FakeRocketChat, user_id: str, token: str, fragment: str
) -> None:
    server.ws.tokens["alice-pat"] = "uAlice00000000001"

    async def run() -> None:
        async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as client:
            await RocketChatSync(store, RocketChatAPI(server.url, Credentials(user_id, token), client)).run()

    with pytest.raises(RocketChatRefused, match=fragment):
        anyio.run(run)
    assert store.count_messages() == 0


def test_the_origin_names_the_server() -> None:
    assert origin_of("https://Chat.Example.com/") == "rocketchat:https://chat.example.com"
    assert origin_of("http://127.0.0.1:3000/rc/") == "rocketchat:http://127.0.0.1:3000/rc"


def test_the_mirror_and_the_index_call_out_through_the_jobs_one_client(
    tmp_path: Path, server: FakeRocketChat, monkeypatch: pytest.MonkeyPatch, open_workspace: Callable[[Path], Store]) -> None:
    """Rocket.Chat's REST API and the index's OpenAI-compatible embedder share one GuardedClient
    under the outbound policy; the index never makes a client of its own."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from ai_search_server import mirror_job
    from ai_search_server.retrieval import wiring

    embedded: list[str] = []

    async def embeddings(request: Request) -> Response:
        texts = (await request.json())["input"]
        embedded.extend(texts)
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(texts)]
        return JSONResponse({"object": "list", "data": data})

    clients: list[GuardedClient] = []

    class CountedClient(GuardedClient):
        def __init__(self, policy: OutboundPolicy) -> None:
            super().__init__(policy)
            clients.append(self)

    def no_client_of_its_own(policy: OutboundPolicy) -> None:
        raise AssertionError("the index made an outbound client of its own")

    monkeypatch.setattr(mirror_job, "GuardedClient", CountedClient)
    monkeypatch.setattr(wiring, "blocking_client", no_client_of_its_own)
    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])
    with UvicornThread(app) as running, open_workspace(tmp_path / "data") as store:  # type: ignore[attr-defined]
        settings = load_settings(
            environ={},
            overrides={"embedder": "openai", "embedding_base_url": f"{running.url}/v1", "embedding_model": "m"},
        )
        job = mirror_job.MirrorJob(
            settings=settings,
            store=store,
            data_dir=tmp_path / "data",
            url=server.url,
            credentials=Credentials(ADMIN_ID, ADMIN_TOKEN),
            interval_seconds=1,
            watch=False,
            quiet=True,
        )
        assert mirror_job.run_mirror_job(job) is False
        stored = {m.text for batch in store.iter_messages() for m in batch}
    assert len(clients) == 1 and clients[0].policy.allow_hosts == ("127.0.0.1",)
    # (an embedded text may carry more than the message: its files' names, its conversation)
    missing = [text for text in stored if not any(text in sent for sent in embedded)]
    assert stored and not missing, "every mirrored message embedded through the job's client"


def test_the_command_syncs_and_says_what_it_did(
    tmp_path: Path, server: FakeRocketChat, capsys: pytest.CaptureFixture[str], database_url: str) -> None:
    data = tmp_path / "cli-data"
    data.mkdir()
    (data / "config.toml").write_text('embedder = "none"\n')
    argv = sync_argv(server, data, database_url, "--token", ADMIN_TOKEN)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{server.url}: " in out and "15 messages imported" in out
    assert main(argv) == 0
    assert "0 messages imported, 0 unchanged" in capsys.readouterr().out  # nothing changed: nothing re-read


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        pytest.param(["sync", "rocketchat"], "which Rocket.Chat?", id="no-url"),
        pytest.param(
            ["sync", "rocketchat", "--url", "{url}"], "needs an admin's personal access token", id="no-token"
        ),
        pytest.param(
            ["sync", "rocketchat", "--url", "{url}", "--user-id", ADMIN_ID, "--token", "nope"],
            "refused the credentials",
            id="refused-token",
        ),
        pytest.param(
            ["sync", "rocketchat", "--url", "ftp://chat.test"], "must be an http(s) address", id="bad-url"
        ),
    ],
)
def test_the_command_refuses_with_a_sentence(
    tmp_path: Path, server: FakeRocketChat, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    argv = [a.format(url=server.url) for a in argv]
    assert main([*argv, "--quiet", "--data", str(tmp_path / "cli-data")]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


@pytest.mark.anyio
async def test_scoping_follows_rocket_chat_subscriptions_as_last_synced(
    store: Store, server: FakeRocketChat, settings: Settings, tmp_path: Path
) -> None:
    await anyio.to_thread.run_sync(sync, store, server)
    async for client in scoped_client(settings, store, tmp_path / "data"):
        assert await check_scoping(client, store) > 40
    server.leave("rSecret0000000003", "uCarol00000000003")
    await anyio.to_thread.run_sync(sync, store, server)
    carol, secret = store.get_user_by_username("carol"), store.get_room_by_name("secret")
    assert carol is not None and secret is not None and secret.id not in store.readable_room_ids(carol.id)
    async for client in scoped_client(settings, store, tmp_path / "data"):
        assert await check_scoping(client, store) > 40


@pytest.mark.parametrize(
    "stop", [pytest.param(signal.SIGINT, id="ctrl-c"), pytest.param(signal.SIGTERM, id="sigterm")]
)
def test_watch_keeps_mirroring_until_stopped(
    tmp_path: Path, server: FakeRocketChat, stop: signal.Signals, database_url: str) -> None:
    data = tmp_path / "watch-data"
    data.mkdir()
    (data / "config.toml").write_text('embedder = "none"\n')
    command = [sys.executable, "-m", "ai_search_server", "sync", "rocketchat", "--url", server.url]
    command += [
        "--user-id",
        ADMIN_ID,
        "--token",
        ADMIN_TOKEN,
        "--watch",
        "--interval",
        "1",
        "--quiet",
        "--data",
        str(data),
        *(["--database", database_url] if database_url else []),
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            assert "15 messages imported" in process.stdout.readline()
            server.post(
                "rGeneral000000001",
                "uBob0000000000002",
                "posted while the mirror watches",
                message_id="mWatched00000011",
            )
            lines = [process.stdout.readline() for _ in range(2)]
            assert any("1 messages imported" in line for line in lines), lines
            process.send_signal(stop)
            _out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 0 and "sync stopped" in err and "Traceback" not in err, err
    with open_store(data, database_url=database_url) as store:  # type: ignore[attr-defined]
        assert store.get_message("mWatched00000011") is not None
