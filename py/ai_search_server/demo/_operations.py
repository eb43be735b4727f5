"""Background streams of running the service: deploys of the minor services and on-call alerts with
their handoffs (#ops), release trains with their risk check (#releases), and the support queue.

The big services' versions belong to the scripted threads (billing-api v2.14.x, search-indexer v1.9.x,
notification-worker v3.7.x...), so deploys here only touch the minor ones and never roll anything back.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from ._calendar import JOINED, MEMBERS, Context, Day
from ._engineering import MergedPullRequest
from ._pools_ops import ALERTS, DEPLOY_CHANGES
from ._script import render

__all__ = ["alerts_and_handoffs", "deploys", "support_queue", "trains"]

_ON_CALL_ROTATION = ("bob", "carol", "erin")
# The release train replaced the weekly Wednesday release this many days before `now` (see _releases).
_RELEASE_TRAIN_DAYS_AGO = 83


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


def deploys(ctx: Context, days: list[Day]) -> None:
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
        ctx.post(
            "ops", user, moment, ctx.rng.choice(_DEPLOY).format(svc=svc, ver=ver, change=" and ".join(picked))
        )
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


_RISK_ASK = (
    "anything risky going into tomorrow's train?",
    "train prep for tomorrow: anything I should watch?",
    "cutting tomorrow's train at 09:00. migrations or risky changes?",
)
_RISK_ANSWER = (
    "#{n} ({desc}) has an additive migration, safe to run before the code",
    "mine is low risk: #{n} is behind a flag",
    "#{n} ({desc}) touches billing, I'll watch the dashboards after the deploy",
    "#{n}: nothing risky, but tell me if the error rate moves",
)


def trains(ctx: Context, days: list[Day], merged: list[MergedPullRequest]) -> None:
    """Weekly releases, then twice-weekly trains in #releases, with a risk check the day before."""
    shipped: set[int] = set()
    for day in days:
        weekly = day.days_ago > _RELEASE_TRAIN_DAYS_AGO
        if day.day.weekday() not in ((2,) if weekly else (1, 3)):
            continue
        included = [pr for pr in merged if pr[0] < day.day and pr[2] not in shipped]
        shipped.update(pr[2] for pr in included)
        if not weekly and included and day.days_ago >= 1:
            asker = ctx.rng.choice([u for u in ("carol", "dave", "bob", "grace") if JOINED[u] > day.days_ago])
            eve = datetime.combine(day.day - timedelta(days=1), time(15, 30), tzinfo=UTC)
            eve += timedelta(minutes=ctx.rng.randint(0, 90))
            if ctx.post("releases", asker, eve, ctx.rng.choice(_RISK_ASK)):
                for _, author, number, desc in ctx.rng.sample(
                    included, min(len(included), ctx.rng.randint(1, 2))
                ):
                    if JOINED[author] > day.days_ago and author in MEMBERS["releases"]:
                        eve = ctx.later(eve, 3, 40)
                        ctx.post(
                            "releases", author, eve, ctx.rng.choice(_RISK_ANSWER).format(n=number, desc=desc)
                        )
        drivers = [u for u in ("carol", "dave", "bob", "grace") if JOINED[u] >= day.days_ago]
        driver = ctx.rng.choice(drivers)
        when = f"{day.day:%a} {day.day:%b} {day.day.day}"
        svcs = ", ".join(sorted(ctx.rng.sample(_TRAIN_SERVICES, ctx.rng.randint(2, 4))))
        n = len(included) + (ctx.rng.randint(10, 24) if weekly else ctx.rng.randint(3, 9))
        moment = datetime.combine(day.day, time(9, 58), tzinfo=UTC) + timedelta(minutes=ctx.rng.randint(0, 6))
        frames = _WEEKLY_START if weekly else _TRAIN_START
        ctx.post("releases", driver, moment, ctx.rng.choice(frames).format(when=when, n=n, svcs=svcs))
        done = ctx.rng.choice(_TRAIN_DONE).format(when=when, n=n, minutes=ctx.rng.randint(14, 38))
        ctx.post("releases", driver, ctx.later(moment, 15, 40), done)


_ALERT = ("🔔 {alert}, looking", "alert: {alert}. on it", "paged: {alert}", "{alert} — checking")
_RESOLVED = ("resolved: {res}", "{res}", "all good. {res}", "closed. {res}")
_FOLLOW_UP = ("follow-up ticket OPS-{n}: {what}", "opened OPS-{n} for {what}", "OPS-{n} filed: {what}")
_FIRST_OPS_TICKET = 1840


def alerts_and_handoffs(ctx: Context, days: list[Day]) -> None:
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
                moment = datetime.combine(day.day, time(10, 0), tzinfo=UTC)
                ctx.post("ops", previous, moment, f"on-call handoff {previous} → {on_call}: {summary}")
            week_pages = []
        previous = on_call
        if ctx.rng.random() > (0.85 if day.weekday else 0.35):
            continue
        label, alert, resolutions, follow_up = ctx.rng.choice(ALERTS)
        slots = {
            "n": str(ctx.rng.randint(3, 60)),
            "m": str(ctx.rng.randint(2, 9)),
            "pct": str(ctx.rng.randint(86, 98)),
            "host": f"node-{ctx.rng.choice('abc')}-{ctx.rng.randint(1, 24):02d}",
            "svc": ctx.rng.choice(list(DEPLOY_CHANGES)),
        }
        moment = ctx.clock(day.day, 7.0, 19.0) if day.weekday else ctx.clock(day.day, 0.0, 23.5)
        if ctx.post(
            "ops",
            on_call,
            moment,
            render(ctx.rng.choice(_ALERT).format(alert=alert), day=day.day, slots=slots),
        ):
            week_pages.append(label)
            res = render(ctx.rng.choice(resolutions), day=day.day, slots=slots)
            moment = ctx.later(moment, 5, 45)
            ctx.post("ops", on_call, moment, ctx.rng.choice(_RESOLVED).format(res=res))
            if ctx.rng.random() < 0.4:
                ticket += ctx.rng.randint(1, 6)
                ctx.post(
                    "ops",
                    on_call,
                    ctx.later(moment),
                    ctx.rng.choice(_FOLLOW_UP).format(n=ticket, what=follow_up),
                )


_QUEUE = (
    "support queue this morning: {open} open, {eng} waiting on engineering, oldest is {age}h old",
    "morning queue: {open} tickets open ({eng} need an engineer). oldest {age}h",
    "queue check: {open} open, {eng} with engineering, nothing older than {age}h",
)
_QUEUE_REPLY = (
    "I'll take the {eng} engineering ones after standup",
    "looking at the {age}h one now",
    "two of the {eng} are mine, answering before lunch",
)


def support_queue(ctx: Context, days: list[Day]) -> None:
    """frank's morning look at the ticket queue, sometimes picked up by an engineer."""
    for day in days:
        if not day.weekday or ctx.rng.random() > 0.5:
            continue
        fill = {"open": ctx.rng.randint(9, 48), "eng": ctx.rng.randint(1, 7), "age": ctx.rng.randint(3, 40)}
        moment = ctx.clock(day.day, 8.5, 9.2)
        posted = ctx.post("support-escalations", "frank", moment, ctx.rng.choice(_QUEUE).format(**fill))
        if posted and ctx.rng.random() < 0.45:
            helper = ctx.rng.choice(("carol", "bob", "carol"))
            reply = ctx.rng.choice(_QUEUE_REPLY).format(**fill)
            ctx.post("support-escalations", helper, ctx.later(moment, 5, 50), reply)
