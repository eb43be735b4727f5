"""Write a Slack workspace export (.zip) of N messages that reads like a real team's, for the benches.

Deterministic for a seed. 60 people (two bots, one deleted), 24 public channels, 6 private ones,
DMs and group DMs; messages spread over working hours of consecutive days, one file per
conversation a day as Slack writes them. Every text is distinct (an incident, ticket or build number
and a mix of an engineering vocabulary), about a third are thread replies to a recent message of the
same channel (some threads run to hundreds of replies across days), and the markup Slack really
writes is there: ``<@U...>`` mentions, ``<#C...|name>`` links, ``<https://...|label>`` URLs,
``&amp;`` entities, code blocks, edits, reactions, files, joins and bot messages.

    .venv/bin/python bench/make_slack_export.py /tmp/slack-100k.zip [--messages 100000] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import zipfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["write_slack_export"]

MESSAGES = 100_000
SEED = 20261102
PEOPLE = 60
PUBLIC_CHANNELS = 24
PRIVATE_CHANNELS = 6
DIRECT_PAIRS = 40
GROUP_DIRECTS = 8
# Share of messages that reply in a thread, and how far back (messages of the channel) a reply reaches.
REPLY_SHARE = 0.35
REPLY_REACH = 40
TEAM = "T0BENCH01"
START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
# Messages a day across the workspace: a busy team of 60 people.
MESSAGES_PER_DAY = 1500

_SERVICES = [
    "billing-api",
    "checkout-web",
    "search-indexer",
    "auth-gateway",
    "payments-worker",
    "ledger",
    "cdn-edge",
    "mobile-bff",
]
_VERBS = [
    "deployed",
    "rolled",
    "back",
    "paged",
    "restarted",
    "scaled",
    "migrated",
    "patched",
    "profiled",
    "reverted",
    "benchmarked",
]
_THINGS = [
    "p99 latency",
    "error budget",
    "connection pool",
    "replica lag",
    "canary",
    "feature flag",
    "cache hit rate",
    "queue depth",
    "retry storm",
    "memory leak",
    "TLS certificate",
    "rate limiter",
    "schema migration",
    "dead letter queue",
    "index rebuild",
    "load balancer",
    "circuit breaker",
    "cron job",
    "flaky test",
    "release branch",
    "on-call rotation",
    "runbook",
    "postmortem",
]
_CHATTER = [
    "can someone take a look",
    "I think this started after",
    "let's pair on it tomorrow",
    "LGTM, shipping",
    "not sure that's related",
    "adding a ticket for it",
    "the dashboard shows",
    "rolling forward instead",
    "who owns this now",
    "I'll write it up in the doc",
    "numbers look better since",
    "this is blocking the release",
]
_EMOJI = ["+1", "eyes", "white_check_mark", "tada", "fire", "thinking_face", "rocket", "pray"]


def _people(rng: random.Random) -> list[dict[str, Any]]:
    first = [
        "ana",
        "ben",
        "chloe",
        "dev",
        "emma",
        "farid",
        "grace",
        "hiro",
        "ines",
        "jon",
        "kira",
        "liam",
        "maya",
        "noor",
        "omar",
        "pia",
        "quinn",
        "ravi",
        "sara",
        "tom",
    ]
    last = ["okafor", "martinez", "chen", "novak", "silva", "tanaka", "kowalski", "haddad", "berg", "dubois"]
    people = []
    for n in range(PEOPLE):
        name = f"{first[n % len(first)]}.{last[(n // len(first) + n) % len(last)]}"
        real = " ".join(part.title() for part in name.split("."))
        people.append(
            {"id": f"U{n:08d}", "team_id": TEAM, "name": name, "real_name": real, "deleted": n == PEOPLE - 3,
             "is_bot": n >= PEOPLE - 2, "profile": {"real_name": real, "display_name": name}}
        )  # fmt: skip
    return people


def _text(rng: random.Random, n: int, people: list[dict[str, Any]], channels: list[dict[str, Any]]) -> str:
    service, thing = rng.choice(_SERVICES), rng.choice(_THINGS)
    parts = [
        f"{rng.choice(_CHATTER)}: {service} {rng.choice(_VERBS)}, {thing} at {rng.randrange(2, 990)} ms (INC-{n})"
    ]
    roll = rng.random()
    if roll < 0.15:
        parts.append(f"<@{rng.choice(people)['id']}> thoughts?")
    elif roll < 0.22:
        channel = rng.choice(channels)
        parts.append(f"see <#{channel['id']}|{channel['name']}>")
    elif roll < 0.28:
        parts.append(
            f"<https://wiki.example.com/{service}/{thing.replace(' ', '-')}?rev={n}&amp;v=2|the {thing} page>"
        )
    elif roll < 0.31:
        parts.append(f"```kubectl -n {service} rollout undo deploy/{service} &amp;&amp; echo ok-{n}```")
    return " ".join(parts)


def _conversations(rng: random.Random, people: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    ids = [p["id"] for p in people if not p["deleted"]]
    channels = [
        {"id": f"C{n:08d}", "name": f"{rng.choice(_SERVICES)}-{n}" if n else "general", "created": 1700000000,
         "members": ids if n == 0 else rng.sample(ids, rng.randrange(6, 30)), "topic": {"value": f"topic {n}"}}
        for n in range(PUBLIC_CHANNELS)
    ]  # fmt: skip
    groups = [
        {
            "id": f"G{n:08d}",
            "name": f"private-{n}",
            "created": 1700000000,
            "members": rng.sample(ids, rng.randrange(3, 9)),
        }
        for n in range(PRIVATE_CHANNELS)
    ]
    dms = [
        {"id": f"D{n:08d}", "created": 1700000000, "members": rng.sample(ids, 2)} for n in range(DIRECT_PAIRS)
    ]
    mpims = []
    for n in range(GROUP_DIRECTS):
        members = rng.sample(ids, 3)
        names = "--".join(sorted(p["name"] for p in people if p["id"] in members))
        mpims.append(
            {"id": f"G9{n:07d}", "name": f"mpdm-{names}-1", "created": 1700000000, "members": members}
        )
    return {"channels.json": channels, "groups.json": groups, "dms.json": dms, "mpims.json": mpims}


def write_slack_export(path: Path, messages: int = MESSAGES, seed: int = SEED) -> int:
    """Writes the export; returns the number of chatter messages (what an import should import)."""
    rng = random.Random(seed)
    people = _people(rng)
    lists = _conversations(rng, people)
    conversations = [
        (c, c["name"]) for key in ("channels.json", "groups.json", "mpims.json") for c in lists[key]
    ]
    conversations += [(c, c["id"]) for c in lists["dms.json"]]
    weights = [
        8.0 if folder == "general" else 3.0 if c["id"][0] == "C" else 1.0 for c, folder in conversations
    ]
    recent: dict[str, list[str]] = defaultdict(list)  # conversation id -> recent top-level ts
    days: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    chatter = 0
    for n in range(messages):
        day, within = divmod(n, MESSAGES_PER_DAY)
        moment = START + timedelta(days=day, seconds=within * 36000 // MESSAGES_PER_DAY + rng.randrange(20))
        ts = f"{int(moment.timestamp())}.{n % 1_000_000:06d}"
        conversation, folder = rng.choices(conversations, weights)[0]
        author = rng.choice(conversation["members"])
        if n % 997 == 0:
            message: dict[str, Any] = {"type": "message", "subtype": "channel_join", "user": author,
                                       "text": f"<@{author}> has joined the channel", "ts": ts}  # fmt: skip
        else:
            chatter += 1
            message = {
                "type": "message",
                "user": author,
                "text": _text(rng, n, people, lists["channels.json"]),
                "ts": ts,
            }
            if n % 211 == 0:
                message = {"type": "message", "subtype": "bot_message", "bot_id": "B0BENCH1", "username": "deploybot",
                           "text": "", "ts": ts, "attachments": [{"fallback": f"Deploy {n} finished",
                           "title": f"Deploy {n} finished", "text": _text(rng, n, people, lists["channels.json"])}]}  # fmt: skip
            thread = recent[conversation["id"]]
            if thread and rng.random() < REPLY_SHARE:
                message["thread_ts"] = thread[-1] if rng.random() < 0.3 else rng.choice(thread[-REPLY_REACH:])
            else:
                thread.append(ts)
            if rng.random() < 0.05:
                message["edited"] = {"user": author, "ts": f"{int(moment.timestamp()) + 90}.000000"}
            if rng.random() < 0.08:
                message["reactions"] = [
                    {"name": rng.choice(_EMOJI), "users": rng.sample(conversation["members"], 1), "count": 1}
                ]
            if rng.random() < 0.02:
                message["files"] = [{"id": f"F{n:08d}", "name": f"{rng.choice(_SERVICES)}-{n}.log", "title": f"log {n}",
                                     "mimetype": "text/plain", "size": rng.randrange(200, 90000)}]  # fmt: skip
        days[(folder, moment.strftime("%Y-%m-%d"))].append(message)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("users.json", json.dumps(people))
        for name, entries in lists.items():
            archive.writestr(name, json.dumps(entries))
        for (folder, day), day_messages in sorted(days.items()):
            archive.writestr(f"{folder}/{day}.json", json.dumps(day_messages, ensure_ascii=False))
    return chatter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    chatter = write_slack_export(args.path, args.messages, args.seed)
    size = args.path.stat().st_size / 2**20
    print(f"{args.path}: {args.messages:,} records ({chatter:,} messages to index), {size:.1f} MiB zipped")


if __name__ == "__main__":
    main()
