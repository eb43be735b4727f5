"""The everyday background of the demo workspace, placed day by day with a seeded random generator.

Streams: async standups, pull-request reviews, questions and answers (#engineering); deploys, alerts
and on-call handoffs (#ops); release trains (#releases); Friday wins and announcements (#general);
support triage; team life (#random); small talk in direct messages; and a little in every private room.
Working hours are 08:30–17:30 UTC with a weekday bias; only alerts and a bit of #random happen at
weekends. An exact repeat of an earlier text is never posted, so the background stays varied.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone

from ._pools_rooms import (
    CUSTOMERS,
    DESIGN_SNIPPETS,
    GENERAL_SNIPPETS,
    HIRING_SNIPPETS,
    LEADERSHIP_SNIPPETS,
    ONBOARDING_SNIPPETS,
    SECURITY_SNIPPETS,
    SUPPORT_SNIPPETS,
)
from ._pools_social import DM_SNIPPETS, RANDOM_SNIPPETS, Snippet
from ._pools_work import ALERTS, DEPLOY_CHANGES, PULL_REQUESTS, QUESTIONS, STANDUP_STEPS
from ._script import render
from ._workspace import DEMO_ROOMS, DEMO_USERS

__all__ = ["Draft", "ambient_drafts"]

# Pull-request numbers the scripted threads use; the background never reuses them.
_SCRIPTED_PR_NUMBERS = frozenset({5041, 5177, 5203, 5298, 5311})
_FIRST_PR_NUMBER = 4986
_FIRST_TICKET_NUMBER = 48100
_ON_CALL_ROTATION = ("bob", "carol", "erin")
# The release train replaced the weekly Wednesday release this many days before `now` (see _releases).
_RELEASE_TRAIN_DAYS_AGO = 83

_FIRST_NAMES = {user.username: user.name.split()[0] for user in DEMO_USERS}
_JOINED = {user.username: user.joined_days_ago for user in DEMO_USERS}
_MEMBERS = {room.name: room.members for room in DEMO_ROOMS}


@dataclass(frozen=True, slots=True)
class Draft:
    room: str
    user: str
    ts: datetime
    text: str


@dataclass(frozen=True, slots=True)
class _Day:
    day: date
    days_ago: int

    @property
    def weekday(self) -> bool:
        return self.day.weekday() < 5


@dataclass
class _Context:
    rng: random.Random
    now: datetime
    drafts: list[Draft] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def post(self, room: str, user: str, ts: datetime, text: str) -> bool:
        """Add a message unless it would repeat an earlier text or lie in the future."""
        if text in self.seen or ts > self.now or _JOINED[user] < (self.now.date() - ts.date()).days:
            return False
        self.seen.add(text)
        self.drafts.append(Draft(room, user, ts, text))
        return True

    def clock(self, day: date, start: float = 8.5, end: float = 17.5) -> datetime:
        hours = self.rng.uniform(start, end)
        moment = datetime.combine(day, time(0, 0), tzinfo=timezone.utc) + timedelta(hours=hours)
        return moment.replace(second=self.rng.randrange(60), microsecond=0)

    def later(self, moment: datetime, low_minutes: int = 1, high_minutes: int = 14) -> datetime:
        return moment + timedelta(minutes=self.rng.randint(low_minutes, high_minutes), seconds=self.rng.randrange(60))

    def active(self, room: str, days_ago: int, exclude: Sequence[str] = ()) -> list[str]:
        return [u for u in _MEMBERS[room] if _JOINED[u] >= days_ago and u not in exclude]


def _calendar(now: datetime, span_days: int) -> Iterator[_Day]:
    for days_ago in range(span_days, -1, -1):
        yield _Day(now.date() - timedelta(days=days_ago), days_ago)


def _placeable(snippet: Snippet, room: str, days_ago: int) -> bool:
    """Whether every named speaker had joined and enough other members are there for the roles."""
    fixed = {speaker for speaker, _ in snippet if speaker in _JOINED}
    roles = {speaker for speaker, _ in snippet if speaker not in _JOINED}
    others = [u for u in _MEMBERS[room] if _JOINED[u] >= days_ago and u not in fixed]
    return all(_JOINED[user] >= days_ago for user in fixed) and len(others) >= len(roles)


def _take(rng: random.Random, pool: list[Snippet], room: str, days_ago: int) -> Snippet | None:
    """Remove and return a random snippet of ``pool`` that can be posted in ``room`` that day."""
    candidates = [index for index, snippet in enumerate(pool) if _placeable(snippet, room, days_ago)]
    return pool.pop(rng.choice(candidates)) if candidates else None


def _place_snippet(
    ctx: _Context, room: str, snippet: Snippet, start: datetime, days_ago: int, slots: dict[str, str] | None = None
) -> None:
    """Post ``snippet`` in ``room`` from ``start``, giving its roles to distinct active members."""
    fixed = {speaker for speaker, _ in snippet if speaker in _JOINED}
    roles = sorted({speaker for speaker, _ in snippet if speaker not in _JOINED})
    people = ctx.active(room, days_ago, exclude=tuple(fixed))
    cast = dict(zip(roles, ctx.rng.sample(people, len(roles)), strict=True))
    names = {role: _FIRST_NAMES[user] for role, user in cast.items()}
    moment = start
    for speaker, text in snippet:
        ctx.post(room, cast.get(speaker, speaker), moment, render(text, day=moment.date(), names=names, slots=slots))
        moment = ctx.later(moment)


def _snippet_stream(ctx: _Context, days: list[_Day], room: str, pool: Sequence[Snippet], rate: float) -> None:
    remaining = list(pool)
    for day in days:
        if day.weekday and ctx.rng.random() < rate and (snippet := _take(ctx.rng, remaining, room, day.days_ago)):
            _place_snippet(ctx, room, snippet, ctx.clock(day.day), day.days_ago, {"customer": ctx.rng.choice(CUSTOMERS)})


# Chance that a standup reports a step finished rather than still in progress.
_STANDUP_PROGRESS_CHANCE = 0.45
_DONE_NEXT = (
    "yesterday: {done}. today: {next}. no blockers",
    "y: {done}\nt: {next}\nblockers: none",
    "done: {done} · doing: {next}{extra}",
    "wrapped up {done}, moving on to {next}{extra}",
    "finished {done}. next up: {next}",
    "yesterday {done}, today {next}{extra}",
)
_STILL = (
    "still on {cur}{extra}",
    "today: more {cur}{extra}",
    "{cur} took longer than I hoped, on it today too{extra}",
    "continuing with {cur}{extra}",
    "same as yesterday: {cur}{extra}",
)
_EXTRAS = (
    "", "", "", " + reviews in the afternoon", " + an interview at 14:00", " (out after 15:00)",
    " + pairing with {other} after lunch", ". blocked on a review from {other}", " + the billing sync",
    ". small blocker: staging was down this morning", " + catching up on PR comments",
)


def _standups(ctx: _Context, days: list[_Day]) -> dict[str, list[tuple[date, str]]]:
    """Async standups in #engineering; returns what each person finished, for the Friday wins."""
    rates = {"bob": 0.85, "carol": 0.9, "dave": 0.85, "grace": 0.9, "erin": 0.35}
    position = dict.fromkeys(rates, 0)
    finished: dict[str, list[tuple[date, str]]] = {user: [] for user in rates}
    for day in days:
        if not day.weekday:
            continue
        for user, rate in rates.items():
            steps = STANDUP_STEPS[user]
            index = position[user]
            if _JOINED[user] < day.days_ago or index + 1 >= len(steps) or ctx.rng.random() > rate:
                continue
            others = ctx.active("engineering", day.days_ago, exclude=(user, "alice"))
            extra = ctx.rng.choice(_EXTRAS).replace("{other}", _FIRST_NAMES[ctx.rng.choice(others)])
            moves_on = ctx.rng.random() < _STANDUP_PROGRESS_CHANCE
            if moves_on:
                text = ctx.rng.choice(_DONE_NEXT).format(done=steps[index], next=steps[index + 1], extra=extra)
            else:
                text = ctx.rng.choice(_STILL).format(cur=steps[index], extra=extra)
            if ctx.post("engineering", user, ctx.clock(day.day, 8.6, 10.0), text) and moves_on:
                position[user] += 1
                finished[user].append((day.day, steps[index]))
    return finished


_WINS_ASK = (
    "friday wins thread 🎉 what went well this week?",
    "wins of the week, big or small?",
    "it's friday: share one thing you're proud of this week",
    "weekly wins please! I'll start: the team survey came back very positive",
    "end of week wins? 🙌",
)
_WIN = ("{done} is done 🎉", "shipped {done}", "finally finished {done}", "{done}, done and dusted", "got {done} over the line")
_FRANK_WIN = (
    "support: {n} tickets closed, median first response {m} minutes",
    "no open escalations going into the weekend, first time in a month",
    "{n} tickets closed and two happy customer calls",
    "renewed {n} accounts this week, zero churned",
)


def _friday_wins(ctx: _Context, days: list[_Day], finished: dict[str, list[tuple[date, str]]]) -> None:
    for day in days:
        if day.day.weekday() != 4 or ctx.rng.random() > 0.85:
            continue
        moment = ctx.clock(day.day, 15.0, 16.0)
        if not ctx.post("general", "alice", moment, ctx.rng.choice(_WINS_ASK)):
            continue
        week = [(user, step) for user, done in finished.items() for when, step in done if 0 <= (day.day - when).days < 5]
        ctx.rng.shuffle(week)
        for user, step in week[: ctx.rng.randint(2, 4)]:
            moment = ctx.later(moment, 2, 25)
            ctx.post("general", user, moment, ctx.rng.choice(_WIN).format(done=step))
        if ctx.rng.random() < 0.6:
            win = ctx.rng.choice(_FRANK_WIN).format(n=ctx.rng.randint(40, 95), m=ctx.rng.randint(18, 75))
            ctx.post("general", "frank", ctx.later(moment, 5, 40), win)


_PR_ASK = (
    "could someone review #{n}? {desc}",
    "PR #{n} is ready for review: {desc}",
    "#{n} needs a reviewer 🙏 {desc}",
    "review please: #{n} — {desc}",
    "up for review, small one: #{n} ({desc})",
    "#{n}: {desc}. any taker for a review?",
)
_PR_LOOK = ("looking at #{n}", "I'll take #{n} after lunch", "on it (#{n})", "#{n} is mine, give me 20 min")
_PR_APPROVE = (
    "#{n} approved ✅",
    "#{n} approved, one nit: {nit}",
    "approved #{n}. nit: {nit}, feel free to ignore",
    "#{n} looks good. only thing: {nit}",
    "left two comments on #{n}, the main one: {nit}",
)
_PR_DONE = ("fixed the nit, #{n} merged", "#{n} merged, thanks {reviewer}", "merged #{n} 🚀", "thanks! #{n} is in")
_NITS = (
    "the test name doesn't say what it checks", "there's a leftover debug print", "make the timeout a named "
    "constant", "a typo in the docstring", "log the account id on that error path", "a table of cases would "
    "read better than four copies of the test", "the migration needs a down step", "that helper belongs in "
    "the ledger library", "name the boolean argument at the call site", "the error message should say what "
    "to do next", "please add the ticket number to the TODO", "the comment says what, not why",
    "the feature flag needs an owner and a removal date",
)


def _pull_requests(ctx: _Context, days: list[_Day]) -> None:
    pools = {user: list(descs) for user, descs in PULL_REQUESTS.items()}
    number = _FIRST_PR_NUMBER
    for day in days:
        if not day.weekday:
            continue
        for _ in range(ctx.rng.choice((1, 1, 1, 2, 2, 3))):
            authors = [u for u in ctx.active("engineering", day.days_ago, exclude=("alice",)) if pools.get(u)]
            if not authors:
                return
            author = ctx.rng.choice(authors)
            number += ctx.rng.randint(2, 6)
            while number in _SCRIPTED_PR_NUMBERS:
                number += 1
            desc = pools[author].pop(ctx.rng.randrange(len(pools[author])))
            reviewer = ctx.rng.choice(ctx.active("engineering", day.days_ago, exclude=(author, "alice")))
            moment = ctx.clock(day.day, 9.5, 16.5)
            ctx.post("engineering", author, moment, ctx.rng.choice(_PR_ASK).format(n=number, desc=desc))
            if ctx.rng.random() < 0.5:
                moment = ctx.later(moment, 3, 30)
                ctx.post("engineering", reviewer, moment, ctx.rng.choice(_PR_LOOK).format(n=number))
            moment = ctx.later(moment, 15, 90)
            nit = ctx.rng.choice(_NITS)
            ctx.post("engineering", reviewer, moment, ctx.rng.choice(_PR_APPROVE).format(n=number, nit=nit))
            if ctx.rng.random() < 0.55:
                done = ctx.rng.choice(_PR_DONE).format(n=number, reviewer=_FIRST_NAMES[reviewer])
                ctx.post("engineering", author, ctx.later(moment, 5, 40), done)


def _questions(ctx: _Context, days: list[_Day]) -> None:
    remaining = list(QUESTIONS)
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.45):
            continue
        question, answer = remaining.pop(ctx.rng.randrange(len(remaining)))
        asker, answerer = ctx.rng.sample(ctx.active("engineering", day.days_ago), 2)
        moment = ctx.clock(day.day)
        ctx.post("engineering", asker, moment, question)
        ctx.post("engineering", answerer, ctx.later(moment, 2, 20), answer)


_DEPLOY = (
    "deploying {svc} v{ver}: {change}",
    "{svc} v{ver} going out now ({change})",
    "shipping {svc} v{ver} — {change}",
    "{svc} v{ver} to prod: {change}",
)
_DEPLOYED = (
    "{svc} v{ver} fully out, error rate flat",
    "{svc} v{ver} done, p95 {ms}ms as before",
    "v{ver} of {svc} is at 100%, no alerts",
    "{svc} v{ver} rolled out in {minutes} min, all green",
)


def _deploys(ctx: _Context, days: list[_Day]) -> None:
    versions = {svc: list(first) for svc, (first, _) in DEPLOY_CHANGES.items()}
    changes = {svc: list(items) for svc, (_, items) in DEPLOY_CHANGES.items()}
    for day in days:
        if not day.weekday or ctx.rng.random() > 0.8:
            continue
        services = [svc for svc, items in changes.items() if items]
        if not services:
            return
        svc = ctx.rng.choice(services)
        picked = [changes[svc].pop(ctx.rng.randrange(len(changes[svc])))]
        version = versions[svc]
        if ctx.rng.random() < 0.35:
            version[1:] = [version[1] + 1, 0]
        else:
            version[2] += 1
        ver = ".".join(map(str, version))
        user = ctx.rng.choice(("bob", "bob", "carol", "erin"))
        moment = ctx.clock(day.day, 9.0, 16.0)
        ctx.post("ops", user, moment, ctx.rng.choice(_DEPLOY).format(svc=svc, ver=ver, change=" and ".join(picked)))
        if ctx.rng.random() < 0.6:
            done = ctx.rng.choice(_DEPLOYED).format(
                svc=svc, ver=ver, ms=ctx.rng.randint(40, 260), minutes=ctx.rng.randint(4, 18)
            )
            ctx.post("ops", user, ctx.later(moment, 6, 30), done)


_TRAIN_START = (
    "release train {when}: {n} PRs across {svcs}. branch cut, deploying at 10:00",
    "🚂 {when} train: {n} PRs ({svcs}), starting the deploy",
    "train for {when} is cut: {n} PRs, {svcs}",
)
_WEEKLY_START = ("weekly release {when}: {n} PRs across {svcs}, deploying now",)
_TRAIN_DONE = (
    "{when} train is out ✅ no alerts",
    "{when} train done in {minutes} min, migrations included",
    "train {when} deployed, one flaky canary check re-ran green",
    "all {n} PRs of the {when} train are live",
    "{when}: deployed, {minutes} minutes end to end, quiet dashboards",
)
_TRAIN_SERVICES = ("billing-api", "checkout-web", "report-builder", "auth-gateway", "search-indexer")


def _trains(ctx: _Context, days: list[_Day]) -> None:
    for day in days:
        weekly = day.days_ago > _RELEASE_TRAIN_DAYS_AGO
        if day.day.weekday() not in ((2,) if weekly else (1, 3)):
            continue
        drivers = [u for u in ("carol", "dave", "bob", "grace") if _JOINED[u] >= day.days_ago]
        driver = ctx.rng.choice(drivers)
        when = f"{day.day:%a} {day.day:%b} {day.day.day}"
        svcs = ", ".join(sorted(ctx.rng.sample(_TRAIN_SERVICES, ctx.rng.randint(2, 4))))
        n = ctx.rng.randint(12, 34) if weekly else ctx.rng.randint(5, 17)
        moment = datetime.combine(day.day, time(9, 58), tzinfo=timezone.utc) + timedelta(minutes=ctx.rng.randint(0, 6))
        frames = _WEEKLY_START if weekly else _TRAIN_START
        ctx.post("releases", driver, moment, ctx.rng.choice(frames).format(when=when, n=n, svcs=svcs))
        done = ctx.rng.choice(_TRAIN_DONE).format(when=when, n=n, minutes=ctx.rng.randint(14, 38))
        ctx.post("releases", driver, ctx.later(moment, 15, 40), done)


_ALERT = ("🔔 {alert}, looking", "alert: {alert}. on it", "paged: {alert}", "{alert} — checking")
_RESOLVED = ("resolved: {res}", "{res}", "all good. {res}", "closed. {res}")
_FOLLOW_UP = ("follow-up ticket OPS-{n}: {what}", "opened OPS-{n} for {what}", "OPS-{n} filed: {what}")
_FIRST_OPS_TICKET = 1840


def _alerts_and_handoffs(ctx: _Context, days: list[_Day]) -> None:
    week_pages: list[str] = []
    previous = None
    ticket = _FIRST_OPS_TICKET
    for day in days:
        on_call = _ON_CALL_ROTATION[day.day.isocalendar()[1] % len(_ON_CALL_ROTATION)]
        if day.day.weekday() == 0:
            if previous is not None and previous != on_call:
                summary = (
                    f"{len(week_pages)} pages ({', '.join(sorted(set(week_pages)))}), nothing open"
                    if week_pages
                    else "quiet week, zero pages 😌"
                )
                moment = datetime.combine(day.day, time(10, 0), tzinfo=timezone.utc)
                ctx.post("ops", previous, moment, f"on-call handoff {previous} → {on_call}: {summary}")
            week_pages = []
        previous = on_call
        if ctx.rng.random() > (0.85 if day.weekday else 0.35):
            continue
        label, alert, resolutions, follow_up = ctx.rng.choice(ALERTS)
        slots = {
            "n": str(ctx.rng.randint(2, 95)),
            "m": str(ctx.rng.randint(1, 9)),
            "host": f"node-{ctx.rng.choice('abc')}-{ctx.rng.randint(1, 24):02d}",
            "svc": ctx.rng.choice(list(DEPLOY_CHANGES)),
        }
        moment = ctx.clock(day.day, 7.0, 19.0) if day.weekday else ctx.clock(day.day, 0.0, 23.5)
        if ctx.post("ops", on_call, moment, render(ctx.rng.choice(_ALERT).format(alert=alert), day=day.day, slots=slots)):
            week_pages.append(label)
            res = render(ctx.rng.choice(resolutions), day=day.day, slots=slots)
            moment = ctx.later(moment, 5, 45)
            ctx.post("ops", on_call, moment, ctx.rng.choice(_RESOLVED).format(res=res))
            if ctx.rng.random() < 0.4:
                ticket += ctx.rng.randint(1, 6)
                ctx.post("ops", on_call, ctx.later(moment), ctx.rng.choice(_FOLLOW_UP).format(n=ticket, what=follow_up))


def _support(ctx: _Context, days: list[_Day]) -> None:
    remaining = list(SUPPORT_SNIPPETS)
    customers = list(CUSTOMERS)
    ticket = _FIRST_TICKET_NUMBER
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.5):
            continue
        ticket += ctx.rng.randint(20, 90)
        slots = {
            "customer": ctx.rng.choice(customers),
            "plan": ctx.rng.choice(("Starter", "Growth", "Growth", "Scale")),
            "ticket": f"#{ticket}",
        }
        if snippet := _take(ctx.rng, remaining, "support-escalations", day.days_ago):
            _place_snippet(ctx, "support-escalations", snippet, ctx.clock(day.day), day.days_ago, slots)


def _random(ctx: _Context, days: list[_Day]) -> None:
    remaining = list(RANDOM_SNIPPETS)
    for day in days:
        chance = 0.85 if day.weekday else 0.08
        for _ in range(2):
            if ctx.rng.random() < chance and (snippet := _take(ctx.rng, remaining, "random", day.days_ago)):
                start = ctx.clock(day.day, 11.5, 13.0) if ctx.rng.random() < 0.5 else ctx.clock(day.day, 14.5, 17.0)
                _place_snippet(ctx, "random", snippet, start, day.days_ago)
            chance *= 0.35


def _direct_messages(ctx: _Context, days: list[_Day]) -> None:
    remaining = list(DM_SNIPPETS)
    rooms = [room.name for room in DEMO_ROOMS if room.type == "d"]
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.4):
            continue
        room = ctx.rng.choice(rooms)
        if snippet := _take(ctx.rng, remaining, room, day.days_ago):
            _place_snippet(ctx, room, snippet, ctx.clock(day.day), day.days_ago)


def ambient_drafts(rng: random.Random, now: datetime, span_days: int) -> list[Draft]:
    """Every background message from ``span_days`` before ``now`` up to ``now``, unordered."""
    ctx = _Context(rng, now)
    days = list(_calendar(now, span_days))
    finished = _standups(ctx, days)
    _friday_wins(ctx, days, finished)
    _pull_requests(ctx, days)
    _questions(ctx, days)
    _deploys(ctx, days)
    _trains(ctx, days)
    _alerts_and_handoffs(ctx, days)
    _support(ctx, days)
    _random(ctx, days)
    _direct_messages(ctx, days)
    for room, pool, rate in (
        ("general", GENERAL_SNIPPETS, 0.22),
        ("design", DESIGN_SNIPPETS, 0.12),
        ("onboarding", ONBOARDING_SNIPPETS, 0.12),
        ("leadership", LEADERSHIP_SNIPPETS, 0.1),
        ("hiring-committee", HIRING_SNIPPETS, 0.1),
        ("security-review", SECURITY_SNIPPETS, 0.07),
    ):
        _snippet_stream(ctx, days, room, pool, rate)
    return ctx.drafts
