"""The everyday background of the demo workspace, placed day by day with a seeded random generator.

Streams: async standups, pull-request reviews, questions and answers (#engineering); deploys, alerts
and on-call handoffs (#ops); release trains (#releases); Friday wins and announcements (#general);
support triage; team life (#random); small talk in direct messages; and a little in every private room.
Working hours are 08:30–17:30 UTC with a weekday bias; only alerts and a bit of #random happen at
weekends. An exact repeat of an earlier text is never posted, so the background stays varied.
"""

from __future__ import annotations

import random
from datetime import datetime

from ._calendar import Context, Day, Draft, calendar_days, place_snippet, snippet_stream, take_snippet
from ._engineering import friday_wins, pull_requests, questions, standups
from ._operations import alerts_and_handoffs, deploys, support_queue, trains
from ._pools_rooms import (
    DESIGN_SNIPPETS,
    GENERAL_SNIPPETS,
    HIRING_SNIPPETS,
    LEADERSHIP_SNIPPETS,
    ONBOARDING_SNIPPETS,
    SECURITY_SNIPPETS,
)
from ._pools_social import (
    DM_SNIPPETS,
    LUNCH_ASK,
    LUNCH_EXCUSES,
    LUNCH_NO,
    LUNCH_PLACES,
    LUNCH_TIMES,
    LUNCH_YES,
    RANDOM_SNIPPETS,
)
from ._pools_support import CUSTOMERS, SUPPORT_SNIPPETS
from ._workspace import DEMO_ROOMS

__all__ = ["Draft", "ambient_drafts"]

_FIRST_TICKET_NUMBER = 48100


def _support(ctx: Context, days: list[Day]) -> None:
    remaining = list(SUPPORT_SNIPPETS)
    customers = list(CUSTOMERS)
    ticket = _FIRST_TICKET_NUMBER
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.65):
            continue
        ticket += ctx.rng.randint(20, 90)
        slots = {
            "customer": ctx.rng.choice(customers),
            "plan": ctx.rng.choice(("Starter", "Growth", "Growth", "Scale")),
            "ticket": f"#{ticket}",
        }
        if snippet := take_snippet(ctx.rng, remaining, "support-escalations", day.days_ago):
            place_snippet(ctx, "support-escalations", snippet, ctx.clock(day.day), day.days_ago, slots)


def _random(ctx: Context, days: list[Day]) -> None:
    remaining = list(RANDOM_SNIPPETS)
    for day in days:
        chance = 0.95 if day.weekday else 0.1
        for _ in range(2):
            if ctx.rng.random() < chance and (
                snippet := take_snippet(ctx.rng, remaining, "random", day.days_ago)
            ):
                start = (
                    ctx.clock(day.day, 11.5, 13.0)
                    if ctx.rng.random() < 0.5
                    else ctx.clock(day.day, 14.5, 17.0)
                )
                place_snippet(ctx, "random", snippet, start, day.days_ago)
            chance *= 0.35


def _lunch(ctx: Context, days: list[Day]) -> None:
    """The daily lunch question in #random, with a few answers."""
    for day in days:
        if not day.weekday or ctx.rng.random() > 0.7:
            continue
        people = ctx.active("random", day.days_ago)
        asker, *answerers = ctx.rng.sample(people, ctx.rng.randint(2, 4))
        fill = {"place": ctx.rng.choice(LUNCH_PLACES), "time": ctx.rng.choice(LUNCH_TIMES)}
        moment = ctx.clock(day.day, 11.3, 11.9)
        if not ctx.post("random", asker, moment, ctx.rng.choice(LUNCH_ASK).format(**fill)):
            continue
        for person in answerers:
            moment = ctx.later(moment, 1, 6)
            if ctx.rng.random() < 0.7:
                ctx.post("random", person, moment, ctx.rng.choice(LUNCH_YES).format(**fill))
            else:
                ctx.post(
                    "random",
                    person,
                    moment,
                    ctx.rng.choice(LUNCH_NO).format(excuse=ctx.rng.choice(LUNCH_EXCUSES)),
                )


def _direct_messages(ctx: Context, days: list[Day]) -> None:
    remaining = list(DM_SNIPPETS)
    rooms = [room.name for room in DEMO_ROOMS if room.type == "d"]
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.75):
            continue
        room = ctx.rng.choice(rooms)
        if snippet := take_snippet(ctx.rng, remaining, room, day.days_ago):
            place_snippet(ctx, room, snippet, ctx.clock(day.day), day.days_ago)


def ambient_drafts(rng: random.Random, now: datetime, span_days: int) -> list[Draft]:
    """Every background message from ``span_days`` before ``now`` up to ``now``, unordered."""
    ctx = Context(rng, now)
    days = list(calendar_days(now, span_days))
    finished = standups(ctx, days)
    friday_wins(ctx, days, finished)
    merged = pull_requests(ctx, days)
    questions(ctx, days)
    deploys(ctx, days)
    trains(ctx, days, merged)
    support_queue(ctx, days)
    alerts_and_handoffs(ctx, days)
    _support(ctx, days)
    _random(ctx, days)
    _lunch(ctx, days)
    _direct_messages(ctx, days)
    for room, pool, rate in (
        ("general", GENERAL_SNIPPETS, 0.3),
        ("design", DESIGN_SNIPPETS, 0.18),
        ("onboarding", ONBOARDING_SNIPPETS, 0.3),
        ("leadership", LEADERSHIP_SNIPPETS, 0.15),
        ("hiring-committee", HIRING_SNIPPETS, 0.15),
        ("security-review", SECURITY_SNIPPETS, 0.12),
    ):
        snippet_stream(ctx, days, room, pool, rate)
    return ctx.drafts
