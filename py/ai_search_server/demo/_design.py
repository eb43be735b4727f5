"""Design debates and the decisions they reached (#engineering, #design).

Facts the judgments rely on: date-based API versions in the Larkspur-Version header (ADR-017), dark
mode as semantic color tokens with 4.5:1 contrast shipping in checkout-web 5.2, the report job queue
on a Postgres table with SKIP LOCKED (47 min nightly run down to 9), and keeping the in-house
toggles-svc instead of buying a $1,800/month feature-flag service.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["DESIGN_THREADS"]

DESIGN_THREADS: list[Thread] = [
    thread(
        "api-versioning",
        "engineering",
        69,
        "14:00",
        (
            "carol",
            "design question for the public API: we need a breaking change in /v2/charges (amounts as "
            "integer minor units). options: a /v3 URL, or date-based versions in a header, like "
            "`Larkspur-Version: 2026-10-01`",
        ),
        (
            "dave",
            "URL versions are easier to spot in logs and docs. headers are invisible to people pasting "
            "curl commands",
        ),
        (
            "carol",
            "but /v3 means duplicating every route for one field. with dated versions we write one "
            "converter per change and pin each account to the version it signed up with",
        ),
        (
            "bob",
            "operationally I prefer the header too: one deployment, one set of routes. but then the "
            "version has to show up in the access logs",
        ),
        (
            "alice",
            "we have maybe 3 breaking changes a year. what I care about is that old integrations never "
            "break silently",
        ),
        ("dave", "ok, convinced, if every example in the docs shows the header"),
        (
            "alice",
            "decision: date-based API versions through the Larkspur-Version header. accounts are pinned "
            "to their signup version and the header overrides it. the first dated version, 2026-10-01, "
            "carries the integer amounts change. carol writes the ADR",
            "+1d@10:00",
        ),
        ("carol", "ADR-017 (API versioning by date header) is merged", "+2d@16:00"),
    ),
    thread(
        "dark-mode",
        "design",
        21,
        "13:30",
        (
            "dave",
            "dark mode proposal is in the design file: semantic color tokens (surface, surface-raised, "
            "text-primary…) instead of raw hex values, and every foreground/background pair meets 4.5:1 "
            "contrast",
        ),
        ("grace", "are charts included? the revenue chart colors would be unreadable on a dark background"),
        (
            "dave",
            "charts get their own palette. I checked all 8 series colors for 3:1 against both backgrounds",
        ),
        ("carol", "please make sure invoice PDFs are never rendered dark, customers print them"),
        ("dave", "PDFs are out of scope, they always use the light tokens"),
        ("alice", "ship it behind a user setting, default 'system'. target checkout-web 5.2"),
        (
            "dave",
            "dark mode tokens merged: 312 hard-coded colors replaced. the setting lands in 5.2 with the "
            "next train",
            "+9d@12:00",
        ),
    ),
    thread(
        "report-queue",
        "engineering",
        49,
        "11:00",
        (
            "carol",
            "report-builder's nightly cron takes 47 minutes now and keeps growing. I want report jobs on "
            "a queue so they run in parallel and retry one by one",
        ),
        (
            "bob",
            "two options: a jobs table in postgres with SELECT … FOR UPDATE SKIP LOCKED, or jobs on the "
            "event bus",
        ),
        (
            "carol",
            "the event bus has no per-job retry or visibility timeout, we'd be rebuilding that. a jobs "
            "table gives us transactions together with the report data for free",
        ),
        ("bob", "agreed, as long as we stay below a few hundred jobs per second. peak today is ~2/s"),
        ("grace", "can I take the worker loop? I built one on SKIP LOCKED at my last job"),
        ("carol", "yes! decision: a postgres jobs table with SKIP LOCKED, revisit if we pass 200 jobs/s"),
        (
            "grace",
            "report jobs run from the queue since this morning: the nightly run finished in 9 minutes "
            "with 4 workers instead of 47",
            "+10d@15:00",
        ),
    ),
    thread(
        "feature-flags",
        "engineering",
        17,
        "14:00",
        (
            "dave",
            "during the checkout_v5 rollout I really missed percentage rollouts by country in "
            "toggles-svc. should we buy a feature flag service?",
        ),
        (
            "bob",
            "I priced two: ~$1,800/month for our seats and event volume. toggles-svc costs us maybe a day "
            "a month of maintenance",
        ),
        ("alice", "with the infra budget where it is, no new $22k/year tool unless it replaces something"),
        ("dave", "fair. then I'll add country targeting to toggles-svc, it's a small change"),
        (
            "alice",
            "decision: keep toggles-svc, dave adds country targeting. revisit if we ever need "
            "experiments with proper statistics",
        ),
    ),
    thread(
        "empty-states",
        "design",
        61,
        "14:20",
        (
            "dave",
            "the invoice list empty state still says 'No data'. proposal: an illustration, one sentence "
            "on what invoices are, and a 'create your first invoice' button",
        ),
        (
            "carol",
            "for filtered lists it should say the filter matched nothing and offer to clear it, not "
            "tell people to create an invoice",
        ),
        ("dave", "good point, two variants then: first-use and no-results"),
    ),
]
