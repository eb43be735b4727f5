"""Background streams of the engineering rooms: async standups, Friday wins, pull-request reviews and
questions with straight answers.

Standups walk each person's steps in order (``_pools_work.STANDUP_STEPS``), so one person's updates
tell a coherent story; Friday wins quote what was finished that week; merged pull requests are
returned so the release trains can ship them.
"""

from __future__ import annotations

from datetime import date

from ._calendar import FIRST_NAMES, JOINED, Context, Day
from ._pools_work import PULL_REQUESTS, QUESTIONS, STANDUP_STEPS

__all__ = ["MergedPullRequest", "friday_wins", "pull_requests", "questions", "standups"]

# (day merged, author, number, what it does)
MergedPullRequest = tuple[date, str, int, str]

# Pull-request numbers the scripted threads use; the background never reuses them.
_SCRIPTED_PR_NUMBERS = frozenset({5041, 5177, 5203, 5298, 5311})
_FIRST_PR_NUMBER = 4986


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
    "still working on {cur}{extra}",
    "{cur} took longer than I hoped, on it today too{extra}",
    "continuing with {cur}{extra}",
    "same as yesterday: {cur}{extra}",
)
_EXTRAS = (
    "",
    "",
    "",
    " + reviews in the afternoon",
    " + an interview at 14:00",
    " (out after 15:00)",
    " + pairing with {other} after lunch",
    ". blocked on a review from {other}",
    " + the billing sync",
    ". small blocker: staging was down this morning",
    " + catching up on PR comments",
)


def standups(ctx: Context, days: list[Day]) -> dict[str, list[tuple[date, str]]]:
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
            if JOINED[user] < day.days_ago or index + 1 >= len(steps) or ctx.rng.random() > rate:
                continue
            others = ctx.active("engineering", day.days_ago, exclude=(user, "alice"))
            extra = ctx.rng.choice(_EXTRAS).replace("{other}", FIRST_NAMES[ctx.rng.choice(others)])
            moves_on = ctx.rng.random() < _STANDUP_PROGRESS_CHANCE
            if moves_on:
                text = ctx.rng.choice(_DONE_NEXT).format(
                    done=steps[index], next=steps[index + 1], extra=extra
                )
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
_WIN = (
    "{done} is done 🎉",
    "{done}: finished ✅",
    "finally finished {done}",
    "{done}, done and dusted",
    "got {done} over the line",
)
_FRANK_WIN = (
    "support: {n} tickets closed, median first response {m} minutes",
    "no open escalations going into the weekend, first time in a month",
    "{n} tickets closed and two happy customer calls",
    "renewed {n} accounts this week, zero churned",
)


def friday_wins(ctx: Context, days: list[Day], finished: dict[str, list[tuple[date, str]]]) -> None:
    for day in days:
        if day.day.weekday() != 4 or ctx.rng.random() > 0.85:
            continue
        moment = ctx.clock(day.day, 15.0, 16.0)
        if not ctx.post("general", "alice", moment, ctx.rng.choice(_WINS_ASK)):
            continue
        week = [
            (user, step)
            for user, done in finished.items()
            for when, step in done
            if 0 <= (day.day - when).days < 5
        ]
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
_PR_DONE = (
    "fixed the nit, #{n} merged",
    "#{n} merged, thanks {reviewer}",
    "merged #{n} 🚀",
    "thanks! #{n} is in",
)
_NITS = (
    "the test name doesn't say what it checks",
    "there's a leftover debug print",
    "make the timeout a named constant",
    "a typo in the docstring",
    "log the account id on that error path",
    "a table of cases would read better than four copies of the test",
    "the migration needs a down step",
    "that helper belongs in the ledger library",
    "name the boolean argument at the call site",
    "the error message should say what to do next",
    "please add the ticket number to the TODO",
    "the comment says what, not why",
    "the feature flag needs an owner and a removal date",
)


def pull_requests(ctx: Context, days: list[Day]) -> list[MergedPullRequest]:
    """Review requests and approvals in #engineering; returns the merged PRs (day, author, number, what)."""
    pools = {user: list(descs) for user, descs in PULL_REQUESTS.items()}
    merged: list[MergedPullRequest] = []
    number = _FIRST_PR_NUMBER
    for day in days:
        if not day.weekday:
            continue
        for _ in range(ctx.rng.choice((1, 1, 1, 2, 2, 3))):
            authors = [u for u in ctx.active("engineering", day.days_ago, exclude=("alice",)) if pools.get(u)]
            if not authors:
                return merged
            author = ctx.rng.choice(authors)
            number += ctx.rng.randint(2, 6)
            while number in _SCRIPTED_PR_NUMBERS:
                number += 1
            desc = pools[author].pop(0)  # in the order written: each person's work moves forward
            reviewer = ctx.rng.choice(ctx.active("engineering", day.days_ago, exclude=(author, "alice")))
            moment = ctx.clock(day.day, 9.5, 16.5)
            ctx.post("engineering", author, moment, ctx.rng.choice(_PR_ASK).format(n=number, desc=desc))
            if ctx.rng.random() < 0.5:
                moment = ctx.later(moment, 3, 30)
                ctx.post("engineering", reviewer, moment, ctx.rng.choice(_PR_LOOK).format(n=number))
            moment = ctx.later(moment, 15, 90)
            nit = ctx.rng.choice(_NITS)
            if ctx.post(
                "engineering", reviewer, moment, ctx.rng.choice(_PR_APPROVE).format(n=number, nit=nit)
            ):
                merged.append((moment.date(), author, number, desc))
            if ctx.rng.random() < 0.55:
                done = ctx.rng.choice(_PR_DONE).format(n=number, reviewer=FIRST_NAMES[reviewer])
                ctx.post("engineering", author, ctx.later(moment, 5, 40), done)
    return merged


def questions(ctx: Context, days: list[Day]) -> None:
    remaining = list(QUESTIONS)
    for day in days:
        if not (day.weekday and remaining and ctx.rng.random() < 0.6):
            continue
        question, answer = remaining.pop(ctx.rng.randrange(len(remaining)))
        asker, answerer = ctx.rng.sample(ctx.active("engineering", day.days_ago), 2)
        moment = ctx.clock(day.day)
        ctx.post("engineering", asker, moment, question)
        ctx.post("engineering", answerer, ctx.later(moment, 2, 20), answer)
