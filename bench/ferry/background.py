"""The Ferry workspace's background: the everyday chat around the written conversations.

Greetings and introductions, "thanks, that did it", the CI bot's build results, review requests for
small chores, release cheers, docs proofreading, off-topic homelab and weekend chatter, a few DMs.
Seeded, so it is the same every time, and drawn by Halden's ``draw_background`` (distinct texts, a
poster per text). It stays off the judged topics by construction: its chores are shell completions,
help texts, linters, dependency bumps, progress bars and typos; its people never name a backend, a
lock, a schedule, a key, a password, an exclude, a prune, a restore, a container or a version.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta

from bench.halden.background import BackgroundMessage, PlanLine, draw_background

from .workspace import PEOPLE, ROOMS

__all__ = ["BACKGROUND_SEED", "FIRST_DAY", "LAST_DAY", "generate_background"]

BACKGROUND_SEED = 2025
FIRST_DAY = date(2025, 9, 1)
LAST_DAY = date(2025, 12, 19)
# The hours (UTC, first and last) people of a region chat in; a community chats on weekends too.
_HOURS = {"europe": (7, 22), "americas": (13, 24), "asia": (1, 15), "bot": (0, 24)}
_REGION = {p.username: p.office for p in PEOPLE}
_DAYS = tuple(FIRST_DAY + timedelta(days=n) for n in range((LAST_DAY - FIRST_DAY).days + 1))
_USERS = tuple(p.username for p in PEOPLE if p.office != "bot")
_FIRST_NAMES = {p.username: p.name.split()[0] for p in PEOPLE}

_CITIES = (
    "Lyon", "Leeds", "Porto", "Kraków", "Austin", "Pune", "Osaka", "Melbourne", "Toronto", "Nairobi",
    "Ghent", "Bologna", "Tartu", "Denver", "Curitiba", "Taipei",
)  # fmt: skip
_FOUND_VIA = (
    "a Hacker News thread",
    "the selfhosted subreddit",
    "a friend at work",
    "a YouTube video",
    "an awesome-selfhosted list",
    "a Mastodon post",
    "a podcast",
    "a blog comparison",
)
_GREETING_FORMS = (
    "hi all 👋 {name} from {city}, found this project via {via}",
    "hello from {city}! just joined, found you through {via}",
    "hey everyone, lurker from {city} finally saying hi",
    "good morning from {city} ☕",
    "welcome {other}! 👋",
    "welcome aboard {other} 🙂",
    "hi {other}, welcome! the channel topics say where to ask what",
    "evening all, long day here in {city}",
    "happy friday everyone 🎉",
    "grey and wet in {city} as usual",
)
_THANKS_FORMS = (
    "thanks {other}, that did it 🙏",
    "works now, much appreciated {other}",
    "ah of course. thanks {other}!",
    "that was it, thank you {other}",
    "perfect, all good now. cheers {other}",
    "thanks for the quick answer {other}",
    "sorted, thanks a lot {other} 👍",
    "brilliant, thank you {other}",
    "{other} you're a star, thanks",
    "confirmed working here too, thanks {other}",
    "never mind, figured it out. thanks anyway {other}",
    "glad it helped {other} 🙂",
    "no worries {other}, happy to help",
    "anytime {other}!",
)
_CHEER_FORMS = (
    "congrats on the release everyone 🎉",
    "nice work on the release, {other}!",
    "🎉🎉🎉",
    "great changelog this time, very readable",
    "thanks to everyone who tested the candidate 🙏",
    "the blog post is a great read, {other}",
    "shoutout to {other} for all the review work this month",
)
_CHORES = (
    "shell completions for fish",
    "a typo in the --help text of the stats command",
    "colours in the progress bar output",
    "the CONTRIBUTING guide's section on commit messages",
    "golangci-lint warnings in internal/ui",
    "a bump of github.com/spf13/cobra to 1.9.1",
    "a bump of golang.org/x/term",
    "a bump of github.com/klauspost/cpuid",
    "gofumpt formatting in the cmd package",
    "the man page generator",
    "JSON output for the stats command",
    "spelling fixes from codespell",
    "the issue template wording",
    "a clearer message when the config file has a syntax error",
    "zsh completion for subcommand aliases",
    "the test helper that builds temp dirs",
    "dead code in internal/progress",
    "the README badges",
    "a bump of github.com/fatih/color",
    "the markdown lint config",
)
_REVIEW_FORMS = (
    "PR #{n}: {chore}. small one, could someone take a look?",
    "could I get a review on #{n}? it's {chore}",
    "#{n} is ready for review ({chore})",
    "approved #{n} with one nit 👍",
    "left a few comments on #{n}, nothing major",
    "merged #{n}, thanks for the quick review",
    "rebased #{n} on main, should be green now",
    "picked up {chore}, will open a PR tonight",
    "good first issue for anyone: {chore} (#{n})",
)
# A failing job and why it failed, as the bot reports it.
_CI_FAILURES = (
    ("gofumpt", "a blank line to remove in cmd/stats.go"),
    ("lint", "golangci-lint: unused parameter"),
    ("codespell", "'recieve' in docs/faq.md"),
    ("vet", "unkeyed fields in a composite literal"),
    ("markdownlint", "line too long in CHANGELOG.md"),
    ("docs", "a dead link in the docs"),
    ("unit", "TestProgressBarWidth: got 79 columns, want 80"),
)
_CI_JOBS = tuple(job for job, _reason in _CI_FAILURES)
_CI_FORMS = (
    "✅ main #{build} passed ({jobs} jobs, {minutes}m {seconds}s)",
    "✅ PR #{n} passed ({jobs} jobs, {minutes}m {seconds}s)",
    "❌ PR #{n} failed: {failure}",
    "🔁 PR #{n}: {job} re-run requested by {dev}",
    "📊 coverage on main: {cov}% ({delta})",
)
_DOCS_PAGES = (
    "getting started",
    "FAQ",
    "glossary",
    "contributing",
    "command reference index",
    "community",
    "code of conduct",
    "changelog archive",
)
_DOCS_FORMS = (
    "proofread the {page} page, a few commas fixed",
    "the {page} page has a broken anchor, fixing",
    "new screenshot for the {page} page",
    "reworded the intro of the {page} page, feedback welcome",
    "the {page} page renders oddly on mobile, looking into the css",
    "merged the {page} page cleanup, thanks {other}",
)
_HOMELAB = (
    "mini PC",
    "retired ThinkPad",
    "second-hand Dell Optiplex",
    "small NUC",
    "fanless N100 box",
    "Raspberry Pi cluster case",
)
_GAMES = ("Factorio", "Stardew Valley", "Outer Wilds", "Balatro", "Hades II", "chess puzzles")
_DRINKS = ("espresso", "flat white", "green tea", "mate", "filter coffee", "chai")
_PETS = ("cat", "dog", "parrot", "rabbit")
_PET_DEEDS = (
    "walked across the keyboard during a meeting",
    "is asleep on my desk again",
    "learned to open the door",
    "knocked my mug over, RIP notes",
)
_OFFTOPIC_FORMS = (
    "new addition to the homelab: a {homelab} 🙂",
    "is anyone else playing {game}? lost my whole weekend to it",
    "third {drink} of the day and it's not even noon",
    "my {pet} {deed}",
    "it's snowing in {city} already?!",
    "weekend plans: repaint the office, maybe some {game}",
    "anyone tried the new keyboard layout thing everyone's posting about?",
    "my mechanical keyboard arrived, the clacking is glorious",
    "obligatory homelab photo, cable management is a lie",
    "just finished a 10k run in {city}, legs are dead",
    "recommend a podcast for a long drive?",
    "{city} friends: is the meetup on thursday still on?",
    "the {drink} machine at work broke, productivity down 80%",
    "soldering iron out, fixing the fan of my {homelab}",
    "{drink} recommendations in {city}? visiting next week",
    "finally beat {game}, what should I play next?",
    "hot take: {game} is the best thing on a rainy sunday",
    "my {pet} says hi 🐾",
    "{city} has the best street food, fight me",
    "who else is watching the F1 this weekend?",
    "reading recommendations? just finished a great sci-fi trilogy",
)
_MAINTAINER_FORMS = (
    "triage this week: {open} open issues, {new} new, {closed} closed",
    "community call notes are in the wiki",
    "community call on {weekday} at {clock} UTC, agenda in the pad",
    "reminder: the {weekday} sync moves to {clock} UTC this week",
    "I'm away {weekday} and the day after, ping {other} for anything urgent",
    "GitHub sponsors statement for the month is in the drive",
)
_DM_FORMS = (
    "got a minute for a quick call on {weekday}?",
    "thanks for the review yesterday!",
    "sent you the doc, no rush",
    "running late for our call, 10 minutes",
    "did you see my comment on the PR?",
    "coffee chat at {clock} UTC?",
    "happy birthday 🎂",
    "can we move our call to {weekday}?",
    "I'll look at #{n} tomorrow morning",
    "pushed a change for your comment on #{n}",
    "no rush on #{n}, whenever you have time",
    "have a good weekend!",
    "back online, what did I miss?",
    "thanks for covering the triage on {weekday}",
)
_ANNOUNCE_FORMS = (
    "📅 community call on {weekday} at {clock} UTC, everyone welcome, link in the channel topic",
    "📣 we're looking for people to help answer questions in the forum, ping {other} if interested",
    "🗳️ the community survey is open until {weekday}, it takes 5 minutes",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _fill(rng: random.Random, form: str) -> str:
    values = {
        "name": "",
        "other": rng.choice([_FIRST_NAMES[u] for u in _USERS]),
        "city": rng.choice(_CITIES),
        "via": rng.choice(_FOUND_VIA),
        "chore": rng.choice(_CHORES),
        "n": str(rng.randint(2400, 2799)),  # the written conversations cite #1790..#2280
        "build": str(rng.randint(4000, 5999)),
        "jobs": str(rng.randint(18, 42)),
        "minutes": str(rng.randint(6, 19)),
        "seconds": f"{rng.randint(0, 59):02d}",
        "job": rng.choice(_CI_JOBS),
        "failure": "{} ({})".format(*rng.choice(_CI_FAILURES)),
        "dev": rng.choice(("felix", "kwame", "lucas", "tobias", "oskar")),
        "cov": f"{rng.randint(71, 79)}.{rng.randint(0, 9)}",
        "delta": rng.choice(("+0.1", "-0.2", "+0.4", "unchanged", "-0.1", "+0.2")),
        "page": rng.choice(_DOCS_PAGES),
        "homelab": rng.choice(_HOMELAB),
        "game": rng.choice(_GAMES),
        "drink": rng.choice(_DRINKS),
        "pet": rng.choice(_PETS),
        "deed": rng.choice(_PET_DEEDS),
        "open": str(rng.randint(140, 190)),
        "new": str(rng.randint(8, 30)),
        "closed": str(rng.randint(6, 34)),
        "weekday": rng.choice(_WEEKDAYS),
        "clock": f"{rng.randint(13, 19)}:{rng.choice(('00', '30'))}",
    }
    values["name"] = values["other"]
    return form.format(**values)


def _one_of(forms: Sequence[str]) -> Callable[[random.Random], str]:
    return lambda rng: _fill(rng, rng.choice(forms))


_PLAN: tuple[PlanLine, ...] = (
    ("general", 130, _USERS, _one_of(_GREETING_FORMS)),
    ("general", 25, _USERS, _one_of(_CHEER_FORMS)),
    ("help", 110, _USERS, _one_of(_THANKS_FORMS)),
    ("install", 45, _USERS, _one_of(_THANKS_FORMS)),
    ("announcements", 10, ("mira", "june", "anil"), _one_of(_ANNOUNCE_FORMS)),
    ("dev", 130, ("mira", "tobias", "anil", "june", "oskar", "felix", "sofia", "kwame", "lucas"), _one_of(_REVIEW_FORMS)),
    ("ci", 150, ("buildbot",), _one_of(_CI_FORMS)),
    ("docs", 45, ("june", "sofia", "greta", "carla"), _one_of(_DOCS_FORMS)),
    ("offtopic", 140, _USERS, _one_of(_OFFTOPIC_FORMS)),
    ("maintainers", 30, None, _one_of(_MAINTAINER_FORMS)),
    *((room.name, 10, None, _one_of(_DM_FORMS)) for room in ROOMS if room.type == "d"),
)  # fmt: skip


def _moment(rng: random.Random, user: str) -> datetime:
    first, last = _HOURS[_REGION[user]]
    day = rng.choice(_DAYS)
    return datetime(
        day.year, day.month, day.day, rng.randint(first, last - 1), rng.randint(0, 59), tzinfo=UTC
    )


def generate_background(taken: set[str], seed: int = BACKGROUND_SEED) -> list[BackgroundMessage]:
    """The background messages, oldest first; `taken` holds texts already used (the written ones)."""
    return draw_background(_PLAN, ROOMS, _moment, taken, seed)
