"""Feature launches and the small process changes of the quarter.

Background for search, not judged: dunning v2, credit notes and reminder emails going live, ledger
invariant checks, the status page, support rotation, the customer advisory board and a few more.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["LAUNCH_THREADS"]

LAUNCH_THREADS: list[Thread] = [
    thread(
        "dunning-launch",
        "releases",
        25,
        "10:40",
        (
            "carol",
            "dunning v2 is live for all accounts: retries on day 1, 3 and 7, and a card update now "
            "retries open invoices immediately",
        ),
        ("frank", "the card update part alone would have saved us the Fennel & Finch drama 🙏"),
        (
            "carol",
            "first week numbers: 112 failed payments recovered, $14.2k that would have gone to collections",
            "+7d@09:30",
        ),
        ("alice", "that's a big one for the churn goal, thanks carol"),
    ),
    thread(
        "credit-notes-launch",
        "releases",
        31,
        "14:00",
        (
            "carol",
            "credit notes are out: issue one against any finalized invoice, full or partial, with their "
            "own numbering per country",
        ),
        ("grace", "API docs and the PDF template are live too"),
        ("frank", "finally, support was doing 'void and re-issue' by hand for this"),
    ),
    thread(
        "reminders-launch",
        "releases",
        47,
        "11:00",
        (
            "grace",
            "reminder emails for overdue invoices are live behind the account setting, default off. "
            "schedule: 3 days before due, on the due date, 7 days after",
        ),
        ("frank", "can customers change the wording?"),
        ("grace", "the tone (friendly, neutral, firm) yes, full custom text is for later"),
        (
            "grace",
            "after two weeks: 340 accounts turned it on, 61% open rate, and those accounts have 18% "
            "fewer invoices going overdue",
            "+14d@10:00",
        ),
    ),
    thread(
        "ledger-invariants",
        "engineering",
        74,
        "15:30",
        (
            "carol",
            "new nightly check on the ledger: for every account, debits equal credits and every "
            "invoice total equals the sum of its entries. first run found 3 invoices off by one cent",
        ),
        ("bob", "one cent from where?"),
        (
            "carol",
            "an old rounding bug from two years ago, per-line rounding before we moved to per-invoice. "
            "the three are from 2024, I'll post correcting entries",
        ),
        ("alice", "good. make the check page someone if it ever finds a new one"),
    ),
    thread(
        "status-page",
        "ops",
        33,
        "11:30",
        (
            "bob",
            "new status page is live: one component per customer-facing service (API, dashboard, "
            "checkout, webhooks, emails), incidents posted by whoever runs the incident",
        ),
        ("erin", "is it on a separate provider from our main infrastructure?"),
        ("bob", "yes, hosted elsewhere, otherwise it dies with us"),
        ("carol", "can it show scheduled maintenance too?"),
        ("bob", "yes, the change calendar's maintenance windows sync to it"),
    ),
    thread(
        "support-rotation",
        "support-escalations",
        42,
        "10:20",
        (
            "alice",
            "starting next week: a weekly 'support hero' rotation. one engineer answers the engineering "
            "questions in this channel, so the rest can focus",
        ),
        ("frank", "yes please. today the same 3 people get every question"),
        ("carol", "who's in the rotation?"),
        (
            "alice",
            "carol, bob, grace (from December), dave for checkout questions. the schedule is in the "
            "team calendar",
        ),
    ),
    thread(
        "advisory-board",
        "leadership",
        40,
        "16:10",
        (
            "frank",
            "first customer advisory board meeting: 6 customers, 2 hours. top asks: usage-based "
            "billing, better exports, a mobile-friendly dashboard",
        ),
        (
            "alice",
            "usage-based billing is on the Q1 list already. exports: grace's async export ships in November",
        ),
        ("erin", "one of them asked about our security certification, I'll send them the report"),
    ),
    thread(
        "mobile-app-question",
        "general",
        53,
        "15:00",
        ("frank", "customers keep asking: are we building a mobile app?"),
        (
            "alice",
            "no native app planned. the dashboard will be properly responsive instead, dave's mobile "
            "navigation work is the first step",
        ),
        (
            "dave",
            "the invoice list and invoice detail are already usable on a phone, creating invoices is next",
        ),
    ),
    thread(
        "customer-visit",
        "general",
        24,
        "17:10",
        (
            "frank",
            "dave and I visited Tundra Bike Co. today: 14 people, they send 3,000 invoices a month "
            "and love the reminders. they invoice from a tablet in the workshop",
        ),
        (
            "dave",
            "watching people use it on a tablet with greasy fingers was very humbling. the buttons in "
            "the invoice editor are too small",
        ),
        ("alice", "great trip. let's make customer visits a quarterly thing for engineers"),
    ),
    thread(
        "openapi-lint",
        "engineering",
        48,
        "15:10",
        (
            "dave",
            "the OpenAPI spec has 14 endpoints without examples and 3 with the wrong response schema. "
            "can we lint it in CI?",
        ),
        ("carol", "yes, and fail the build on breaking changes against the last released spec"),
        ("dave", "linter added: missing examples are warnings, breaking changes are errors"),
    ),
    thread(
        "report-ownership-dm",
        "bob__carol",
        52,
        "16:30",
        (
            "carol",
            "can platform take the report-builder infrastructure (workers, queue, storage) while "
            "billing keeps the report logic?",
        ),
        ("bob", "yes, as long as the reports themselves stay yours. I'll put it in the ownership map"),
    ),
    thread(
        "webinar-dm",
        "dave__frank",
        52,
        "13:20",
        ("frank", "would you join the customer webinar on the 20th to show the new invoice list filters?"),
        ("dave", "happy to. 10 minutes of demo and questions?"),
        ("frank", "perfect. 140 people signed up already"),
    ),
    thread(
        "runbook-day",
        "ops",
        17,
        "10:00",
        (
            "bob",
            "runbook day today: every alert that pages must link to a runbook that a new person can "
            "follow. 31 paging alerts, 12 runbooks missing or outdated",
        ),
        ("carol", "I'll take the billing-api ones, 4 of them"),
        ("erin", "the 3 security alerts are mine"),
        ("bob", "all 31 paging alerts link to a current runbook now 🎉", "@17:20"),
    ),
]
