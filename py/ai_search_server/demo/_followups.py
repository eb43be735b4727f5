"""Smaller threads of the last weeks: follow-ups, audits, load tests, people news.

Facts the judgments rely on: the certificate dashboard that followed the expired webhook certificate,
the Paynova outage in which idempotency keys prevented duplicate charges, grace's additions to the
setup guide, and Kestrel Freight's renewal after the SSO outage.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["FOLLOWUP_THREADS"]

FOLLOWUP_THREADS: list[Thread] = [
    thread(
        "cert-dashboard",
        "ops",
        24,
        "14:10",
        (
            "bob",
            "certificate dashboard is live: 23 certificates, their issuer and expiry date. the next one "
            "to expire is the docs site, in 41 days",
        ),
        (
            "bob",
            "and the alert: any certificate closer than 21 days to expiry pages on-call, 14 days fires "
            "a second time to alice",
        ),
        (
            "erin",
            "the renewer reads the DNS token from the vault now, I tested a renewal end to end in staging",
        ),
        ("alice", "thanks both. that closes the action items from the webhook certificate incident"),
    ),
    thread(
        "paynova-outage",
        "incidents",
        11,
        "15:20",
        (
            "bob",
            "Paynova is degraded: ~30% of card charges fail with `processor_unavailable` since 15:08 "
            "UTC. their status page confirms",
        ),
        ("frank", "customers are noticing at checkout. what do I tell them?"),
        (
            "carol",
            "failed charges are not captured, customers can retry. and thanks to the idempotency keys "
            "our retries can't double-bill anyone this time, unlike in September",
        ),
        (
            "bob",
            "Paynova recovered at 15:49. 41 minutes, 2,870 failed attempts, 2,610 of them succeeded on "
            "a retry",
            "+30m",
        ),
        ("alice", "good outcome for a provider outage. frank, a short note on the status page please"),
    ),
    thread(
        "setup-guide-update",
        "onboarding",
        41,
        "11:30",
        (
            "grace",
            "I updated docs/dev-setup.md with everything that tripped me up: the stale postmaster.pid "
            "(now handled by make bootstrap), the docker memory setting, and the VPN profile you need "
            "for staging",
        ),
        ("carol", "thank you! the next new hire will have a much easier first day"),
        (
            "alice",
            "adding 'update the setup guide' as the last item of the onboarding checklist, every new "
            "person does it",
        ),
    ),
    thread(
        "kestrel-renewal",
        "leadership",
        5,
        "16:00",
        (
            "frank",
            "Kestrel Freight renewed for 2 years 🎉 the SSO outage on their go-live day almost cost us, "
            "the fast fix and the call the same morning saved it",
        ),
        ("alice", "great work. what did they ask for in return?"),
        (
            "frank",
            "a named contact on the platform team for SSO questions (bob agreed) and a discount of 5% on "
            "year two",
        ),
    ),
    thread(
        "load-test",
        "engineering",
        27,
        "16:30",
        (
            "bob",
            "load test of billing-api in staging at 3x our peak: 1,450 requests/s before p95 crossed "
            "500ms. the bottleneck is the invoice totals query, ledger-db CPU at 70%",
        ),
        (
            "carol",
            "the totals query does a sum over all line items every time. we could keep running totals "
            "on the invoice row",
        ),
        ("grace", "that's the same query I'm fixing for the N+1, I can try the running totals too"),
        ("bob", "no rush, 3x peak is a lot of headroom. but good to know where the wall is"),
    ),
    thread(
        "webhook-signing",
        "engineering",
        59,
        "11:10",
        (
            "carol",
            "webhook signing v2 ships next train: each endpoint can have two active secrets, so "
            "customers can rotate without downtime. signatures include a timestamp against replays",
        ),
        ("erin", "reject signatures older than 5 minutes in the verification examples, please"),
        ("dave", "the docs page needs examples in more than one language, half our integrators use PHP"),
        ("carol", "examples in 4 languages are in the docs PR, with the 5 minute tolerance"),
    ),
    thread(
        "staging-data",
        "engineering",
        81,
        "10:40",
        (
            "bob",
            "staging data is 8 months old and nobody trusts it. proposal: refresh staging weekly from a "
            "prod snapshot",
        ),
        (
            "erin",
            "only anonymised. names, emails, addresses, bank details and free-text fields replaced "
            "before the snapshot leaves prod",
        ),
        ("carol", "invoice amounts and dates can stay real, that's what makes staging useful for billing"),
        ("bob", "the anonymiser runs inside prod, only its output is copied. erin reviews the column list"),
        (
            "erin",
            "reviewed: 47 columns anonymised, 2 more I added (invoice notes and customer memo)",
            "+4d@15:00",
        ),
    ),
    thread(
        "timezone-bug",
        "engineering",
        26,
        "09:40",
        ("carol", "bug: invoices for accounts west of UTC show the due date one day early in the PDF"),
        ("dave", "the dashboard is right, so it's the PDF renderer formatting the UTC timestamp as a date"),
        (
            "grace",
            "found it: pdf-renderer gets `due_at` in UTC and formats it without the account timezone. "
            "fix is to send the date as a plain date, not a timestamp",
        ),
        ("carol", "yes, a due date is a date, not an instant. nice find"),
    ),
    thread(
        "a11y-audit",
        "design",
        52,
        "15:00",
        (
            "dave",
            "accessibility audit results: 23 issues, 4 critical. worst one: a keyboard trap in the date "
            "picker, you can't tab out of it",
        ),
        ("grace", "the date picker in the invoice filters too?"),
        (
            "dave",
            "same component, so yes. I'm replacing it instead of patching, the old library is unmaintained",
        ),
        ("alice", "critical ones before the end of the month please, the rest into the backlog with owners"),
        ("dave", "all 4 critical issues fixed, new date picker shipped", "+13d@16:00"),
    ),
    thread(
        "q3-all-hands",
        "general",
        61,
        "16:30",
        (
            "alice",
            "all-hands recap for those who missed it: Q3 revenue up 11%, 2 new enterprise customers, "
            "support CSAT at 93%. Q4 focus: reliability (checkout latency, incidents), billing features "
            "(dunning v2, credit notes) and the new checkout",
        ),
        (
            "frank",
            "and a huge thank-you to engineering for the billing fixes, tickets about invoices are down 20%",
        ),
        ("dave", "the slides are in the shared drive"),
    ),
    thread(
        "be21-debrief",
        "hiring-committee",
        19,
        "15:30",
        ("alice", "BE-21 debrief (backend, billing)"),
        (
            "bob",
            "hire. the system design answer was solid: queue for invoice generation, idempotency on the "
            "payment calls without prompting",
        ),
        ("dave", "hire. coding was clean and they wrote tests first"),
        ("alice", "offer for a Q1 start, first of the two backend roles. recruiter calls them tomorrow"),
    ),
    thread(
        "oncall-swap",
        "bob__carol",
        13,
        "16:40",
        ("carol", "could we swap on-call weeks? I'm away the week of Dec 7"),
        ("bob", "sure, I take Dec 7 and you take Dec 14. I'll update the calendar"),
        ("carol", "thanks, I owe you a coffee"),
    ),
    thread(
        "pr-feedback",
        "carol__grace",
        33,
        "16:15",
        (
            "carol",
            "small feedback on your PR descriptions: they're great on what changed, add a line on how "
            "you tested it. it saves the reviewer a question",
        ),
        ("grace", "makes sense, I'll add a 'how tested' section to the template too"),
        ("carol", "even better"),
    ),
    thread(
        "grace-30-days",
        "alice__grace",
        27,
        "14:00",
        ("alice", "30-day check-in: how does it feel now?"),
        (
            "grace",
            "much better. shipping the pagination and the queue worker helped, I know my way around "
            "billing-api now",
        ),
        (
            "alice",
            "great. for the next month I'd like you to own the async CSV export end to end, including "
            "the talk with frank about what customers need",
        ),
        ("grace", "yes! I already have a list of questions for frank"),
    ),
    thread(
        "vat-field-dm",
        "dave__frank",
        17,
        "11:20",
        ("dave", "the VAT number field is visible by default now for EU billing addresses"),
        ("frank", "perfect, the customer who complained already found it 👍"),
    ),
    thread(
        "marathon",
        "random",
        7,
        "09:20",
        ("bob", "I survived the marathon: 3:41, a personal best by 6 minutes"),
        ("carol", "amazing!! 🏃"),
        ("frank", "I can barely walk to the coffee machine, respect"),
        ("bob", "I'll be walking down stairs backwards for a week"),
    ),
]
