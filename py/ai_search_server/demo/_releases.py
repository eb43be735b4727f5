"""Releases and engineering practice (#releases, #engineering, #general).

Facts the judgments rely on: billing-api v2.14.0 (idempotency keys, Paynova API upgrade, /v1/invoices
removed) and its v2.14.1 hotfix for zero-decimal currencies (JPY, KRW); checkout-web 5.0 behind the
checkout_v5 flag (+2.3 points conversion); the holiday code freeze (Dec 18 – Jan 4); the twice-weekly
release train; the flaky PDF test; Python 3.13; the concurrent index on invoices; async CSV export.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["RELEASE_THREADS"]

RELEASE_THREADS: list[Thread] = [
    thread(
        "billing-2140-plan",
        "releases",
        53,
        "13:00",
        (
            "carol",
            "billing-api v2.14.0 release plan: {dow+5} {d+5}, 10:00 UTC. contents: (1) idempotency keys "
            "on POST /v2/charges (Idempotency-Key header, kept 24h) (2) Paynova API upgrade to their "
            "2026-07 version (3) removal of the legacy /v1/invoices endpoint (4) multi-currency rounding "
            "moves into the ledger library",
        ),
        ("frank", "the /v1/invoices removal: do we know who still calls it?"),
        ("carol", "3 accounts in the last 30 days, all on an old integration. 41 calls in total"),
        ("frank", "I'll email those 3 today and ask them to move to /v2. can they have until the release?"),
        (
            "alice",
            "yes. if one of them can't make it, /v1/invoices stays behind a per-account allowlist for "
            "one more month, no longer",
        ),
        (
            "bob",
            "checklist: migration 0142 (new idempotency_keys table) runs before the deploy. it's additive, "
            "no downtime",
        ),
        (
            "grace",
            "I can draft the release notes, I read the idempotency PR end to end during onboarding anyway",
        ),
        ("carol", "yes please 🙏"),
    ),
    thread(
        "billing-2140-release",
        "releases",
        48,
        "10:02",
        ("carol", "starting the billing-api v2.14.0 rollout. migration 0142 applied in 3.1s"),
        (
            "carol",
            "v2.14.0 at 100%. error rate flat, p95 unchanged at ~180ms. 8% of charge requests already "
            "send an Idempotency-Key",
            "+20m",
        ),
        (
            "grace",
            "release notes published in the changelog: v2.14.0 — idempotent charges, Paynova API "
            "update, /v1/invoices removed",
        ),
        ("frank", "all 3 /v1 accounts switched yesterday, nobody needs the allowlist 🎉"),
    ),
    thread(
        "billing-2141-hotfix",
        "releases",
        47,
        "08:55",
        (
            "frank",
            "ticket from a customer who bills in yen: the invoice total says ¥12,480 but the charge was "
            "¥1,248,000. off by 100x",
        ),
        (
            "carol",
            "oh no. the new rounding in the ledger library assumes 2 decimal places for every currency. "
            "JPY has none, so the minor units are wrong",
        ),
        (
            "carol",
            "affected: zero-decimal currencies (JPY, KRW) since v2.14.0 went out yesterday at 10:20. "
            "counting charges",
        ),
        (
            "carol",
            "17 invoices in JPY and 2 in KRW were charged the wrong amount. none of the Paynova "
            "captures has settled yet, so we can void them",
            "+25m",
        ),
        ("alice", "void them now, hotfix today, and frank please contact the 4 accounts involved"),
        (
            "carol",
            "billing-api v2.14.1 hotfix is out: the currency exponent now comes from the ISO 4217 table, "
            "with regression tests for JPY, KRW and BHD (3 decimals). all 19 charges voided and "
            "re-created with the right amounts",
            "+2h",
        ),
        ("grace", "changelog updated with v2.14.1"),
        (
            "frank",
            "all 4 accounts contacted. nobody actually paid the wrong amount, the captures were voided "
            "before settlement",
        ),
    ),
    thread(
        "checkout-v5",
        "releases",
        20,
        "11:00",
        (
            "dave",
            "checkout-web 5.0 (the one-page checkout) is behind the checkout_v5 flag. plan: 5% today, 25% "
            "on Thursday, 100% next Tuesday if conversion holds",
        ),
        (
            "dave",
            "checkout_v5 at 25%. conversion on v5 is 68.1% vs 65.8% on the old flow (+2.3 points), "
            "n≈14k sessions",
            "+2d@15:00",
        ),
        (
            "frank",
            "one complaint so far: the VAT number field hides behind 'add company details' and a "
            "customer couldn't find it",
        ),
        ("dave", "good catch, moving it out of the collapsed section for EU billing addresses"),
        ("dave", "checkout_v5 at 100%. the old checkout code gets deleted in two weeks", "+5d@10:30"),
        ("alice", "congrats! +2.3 points of conversion is a big deal for us"),
    ),
    thread(
        "code-freeze",
        "general",
        13,
        "16:00",
        (
            "alice",
            "📅 holiday code freeze: no production deploys from Friday Dec 18 to Monday Jan 4. "
            "exceptions (security fixes, incidents) need my approval in #releases",
        ),
        ("bob", "does that include infra changes, terraform and the like?"),
        ("alice", "yes, infra too. flipping config toggles is fine as long as it's reversible"),
        ("dave", "so the last day to ship dark mode is Dec 17 😅"),
        ("frank", "I'll let the big customers know, some of them plan their own changes around ours"),
    ),
    thread(
        "release-train",
        "engineering",
        87,
        "11:00",
        (
            "alice",
            "proposal: move from one weekly release on Wednesday to a release train twice a week, "
            "Tuesday and Thursday. smaller batches, less scary rollbacks",
        ),
        ("bob", "+1. last Wednesday's batch had 34 PRs in it and bisecting the regression took half a day"),
        (
            "carol",
            "fine for billing-api if we keep the migration rule: a migration ships one train before the "
            "code that needs it",
        ),
        ("dave", "frontend would love it, small copy fixes sometimes wait 6 days"),
        (
            "alice",
            "decided: release train every Tuesday and Thursday, branch cut 09:00 UTC, deploy 10:00. "
            "carol's migration rule is now in the release checklist",
            "+3d@09:30",
        ),
    ),
    thread(
        "flaky-pdf-test",
        "engineering",
        66,
        "14:10",
        (
            "dave",
            "test_invoice_pdf_render failed 4 times in CI today on unrelated PRs. anyone know what's up?",
        ),
        (
            "carol",
            "it downloads a font from the internet at render time. when the download is slow it hits the "
            "30s timeout",
        ),
        ("bob", "quarantined it with the flaky marker for now so it stops blocking merges"),
        (
            "carol",
            "fixed for real: the fonts are vendored in tests/fixtures/fonts and the renderer reads them "
            "from disk. the test runs in 1.2s now and is out of quarantine",
            "+3d@10:00",
        ),
    ),
    thread(
        "python-313",
        "engineering",
        31,
        "11:40",
        (
            "grace",
            "tried billing-api on Python 3.13 locally: everything passes except the PDF module, its C "
            "extension doesn't build",
        ),
        ("carol", "that's the old rendering library pinned at 0.9. the maintained fork ships 3.13 wheels"),
        ("grace", "swapped it in a branch: 2 renamed functions, all tests green. PR #5311"),
        ("bob", "3.13 base images are ready. billing-api first, then report-builder"),
        ("carol", "billing-api runs on 3.13 in prod since this morning. p95 down ~6% for free", "+4d@14:00"),
    ),
    thread(
        "invoice-index",
        "engineering",
        24,
        "10:20",
        (
            "grace",
            "for the invoice list pagination I need an index on invoices(customer_id, created_at). the "
            "table has ~90M rows, how do we build it without locking writes?",
        ),
        (
            "carol",
            "CREATE INDEX CONCURRENTLY in its own migration, outside a transaction. our migration tool "
            "needs `atomic = False` for that",
        ),
        (
            "bob",
            "run it on Tuesday morning, not during the nightly report-builder run. it'll take 20–40 min "
            "and adds IO load",
        ),
        (
            "grace",
            "index built concurrently in 27 min, no locks. /v2/invoices with a cursor went from 1.9s to "
            "85ms p95 for the biggest customer",
            "+4d@11:30",
        ),
        ("carol", "🚀"),
    ),
    thread(
        "async-export-release",
        "releases",
        17,
        "13:30",
        (
            "grace",
            "report-builder v1.12.0 is out: CSV exports over 10k rows now run in the background and the "
            "download link is emailed, valid for 7 days",
        ),
        (
            "frank",
            "thank you!! Olivetree Clinics just exported all 180k invoices in 3m40s, closing their ticket",
        ),
        ("carol", "nice work grace. first project end to end 👏"),
    ),
    thread(
        "monorepo",
        "engineering",
        84,
        "15:00",
        (
            "dave",
            "can we talk about the monorepo again? changing the shared money formatting means 3 PRs in "
            "3 repos and a version bump dance",
        ),
        ("carol", "I'd move billing-api and the ledger library together first. they always change together"),
        ("bob", "my worry is CI time: the billing-api pipeline already takes 14 minutes"),
        ("dave", "with path-based triggers only the affected packages build"),
        (
            "alice",
            "decision: billing-api, the ledger library and the money-format package move into one repo "
            "by the end of Q4. checkout-web stays separate for now, revisit in Q1",
        ),
        (
            "carol",
            "monorepo move done: billing-api, ledger and money-format live in one repo, CI with path "
            "filters runs in 9 minutes",
            "+45d@16:10",
        ),
    ),
]
