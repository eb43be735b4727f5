"""How the team works: engineering policies, platform chores and the debates behind them.

Facts here are mostly background for search (SLOs and the error budget policy, contract tests,
tracing, rate limits, migrations, public invoice ids, alert fatigue, upgrades and restore tests);
the public-invoice-id thread is the follow-up of the IDOR finding and is judged with it.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["PRACTICE_THREADS"]

PRACTICE_THREADS: list[Thread] = [
    thread(
        "error-budget",
        "engineering",
        77,
        "11:20",
        (
            "bob",
            "proposal for an error budget policy: the public API's SLO is 99.9% of requests without a "
            "5xx over 28 days. if we burn the whole budget, feature work on that service stops until "
            "it's back in the green",
        ),
        ("dave", "does checkout-web count? its errors are mostly the API's errors anyway"),
        (
            "bob",
            "checkout-web gets its own SLO on page load success, 99.5%. the API one is what customers' "
            "integrations feel",
        ),
        ("carol", "I like it, but 'stops' needs an escape hatch for security fixes and customer commitments"),
        (
            "alice",
            "agreed, with the escape hatch: exceptions need my ok and get written down. let's try it "
            "for Q4 and review in January",
        ),
    ),
    thread(
        "contract-tests",
        "engineering",
        68,
        "15:40",
        (
            "dave",
            "checkout-web broke on staging again because billing-api renamed a field in /v2/quotes. can "
            "we have contract tests between the two?",
        ),
        (
            "carol",
            "consumer-driven: checkout-web publishes the fields it reads, billing-api's CI checks them "
            "on every PR. that's the cheap version",
        ),
        ("bob", "please no shared staging environment as the contract, it's already overloaded"),
        ("dave", "I'll write the consumer side this week and carol wires the provider check"),
        (
            "carol",
            "provider check is live: billing-api CI fails if a field checkout-web reads disappears or "
            "changes type",
            "+6d@11:00",
        ),
    ),
    thread(
        "tracing",
        "engineering",
        53,
        "10:30",
        (
            "bob",
            "I want distributed tracing in billing-api and auth-gateway, with the OpenTelemetry SDK and "
            "10% sampling, errors always kept",
        ),
        ("carol", "yes please. debugging slow requests across billing-api and the ledger is guesswork today"),
        ("erin", "make sure request bodies and auth headers are never recorded as span attributes"),
        ("bob", "the SDK setup has an attribute allowlist, nothing else gets exported"),
        (
            "bob",
            "traces are live for billing-api: the slowest endpoint is /v2/invoices/summary, 40% of its "
            "time is one N+1 query",
            "+8d@15:10",
        ),
        ("grace", "I can take the N+1, it's in code I touched for the reminders"),
    ),
    thread(
        "api-rate-limits",
        "engineering",
        52,
        "14:15",
        (
            "carol",
            "we need real rate limits on the public API before the next big customer. proposal: token "
            "bucket per API key, 100 req/s sustained, bursts of 200, counters in redis",
        ),
        (
            "erin",
            "per key and per IP for unauthenticated routes please, or login and password reset stay "
            "open to brute force",
        ),
        (
            "bob",
            "redis handles that easily. send the standard headers so integrators can back off: limit, "
            "remaining, reset",
        ),
        ("dave", "and a clear 429 body, the one we send today is an HTML page from the load balancer"),
        (
            "carol",
            "decision then: per-key token bucket 100/s burst 200, per-IP limits on unauthenticated "
            "routes, RateLimit headers and a JSON 429. shipping behind a flag next train",
        ),
    ),
    thread(
        "review-norms",
        "engineering",
        38,
        "09:50",
        (
            "alice",
            "from the retro: PRs wait too long for review. proposal: first review within one working "
            "day, and PRs over ~400 changed lines get split unless there's a reason",
        ),
        ("grace", "+1, my first big PR waited 3 days and I rebased it 4 times"),
        ("dave", "what about PRs that are big because of generated code?"),
        ("alice", "generated files don't count, mark them in .gitattributes so the diff hides them"),
        ("bob", "and if you're reviewing, say so in the PR so nobody else starts the same review"),
    ),
    thread(
        "expand-contract",
        "engineering",
        31,
        "13:20",
        ("grace", "I need to rename invoices.due_on to due_date. one migration with a RENAME?"),
        (
            "carol",
            "not while the old code still runs during a deploy. expand and contract: add due_date, "
            "write both, backfill, switch reads, then drop due_on one train later",
        ),
        ("grace", "so three trains for a rename 😅"),
        (
            "carol",
            "yes, and it's worth it: we never want a deploy where half the pods read a column that "
            "the other half just dropped",
        ),
        ("bob", "the backfill in batches of 10k please, the table is big"),
    ),
    thread(
        "public-invoice-ids",
        "engineering",
        17,
        "15:30",
        (
            "carol",
            "follow-up to the security fix on invoices: the API will expose random public ids (inv_ + "
            "16 characters) instead of sequential numbers. sequential ids stay internal",
        ),
        ("dave", "checkout-web only uses the ids it gets from the API, so no change for us"),
        (
            "carol",
            "old numeric ids keep working for 6 months for existing integrations, with a deprecation "
            "header. new integrations only see public ids",
        ),
        ("grace", "I'll update the pagination cursor so it never contains the internal id"),
    ),
    thread(
        "alert-fatigue",
        "ops",
        63,
        "14:00",
        (
            "bob",
            "alert review for September: 41 pages, 25 of them needed no action (61%). that's not "
            "sustainable for a 3-person rotation",
        ),
        ("carol", "the worst offender is the disk usage warning at 70%, it fires every night during backups"),
        ("erin", "and the synthetic login check pages on a single failure"),
        (
            "bob",
            "changes: disk warning to 85% and ticket-only, synthetic checks page after 3 consecutive "
            "failures, 9 alerts deleted entirely",
        ),
        (
            "alice",
            "good. rule from now on: every page must have a runbook link, or it's a ticket, not a page",
        ),
    ),
    thread(
        "cache-upgrade",
        "ops",
        80,
        "16:00",
        (
            "bob",
            "maintenance window Sunday 06:00 UTC: upgrading the cache cluster to the new redis minor "
            "version, one replica at a time",
        ),
        ("carol", "billing-api handles a failover of the cache fine, worst case a few slower quotes"),
        ("bob", "upgrade done, 14 minutes, two failovers, no errors", "+2d@06:20"),
    ),
    thread(
        "restore-test",
        "ops",
        47,
        "15:00",
        (
            "bob",
            "monthly restore test: restored last night's ledger-db snapshot to a scratch instance in 47 "
            "minutes, replayed WAL up to 5 minutes before the snapshot time. checksums match",
        ),
        ("alice", "47 minutes is within the 1h RTO we promise. anything surprising?"),
        (
            "bob",
            "the restore script still pointed at the old bucket name for one of the WAL archives. fixed "
            "it in the runbook and the script",
        ),
    ),
    thread(
        "cluster-upgrade",
        "ops",
        21,
        "09:30",
        (
            "bob",
            "cluster upgrade to the next minor version this week. staging today, prod zone a on "
            "Tuesday, zones b and c on Thursday",
        ),
        ("carol", "any API removals that hit us?"),
        ("bob", "two deprecated APIs in our ingress config, already migrated last week"),
        ("bob", "prod fully upgraded, node surge of 2 kept every service at full capacity", "+3d@16:40"),
        ("erin", "node images are on the patched kernel now too, thanks"),
    ),
    thread(
        "dns-terraform",
        "ops",
        70,
        "11:00",
        (
            "bob",
            "moving all DNS records into terraform this week. I lowered the TTLs to 5 minutes yesterday "
            "so any mistake is short-lived",
        ),
        ("erin", "who can apply DNS changes afterwards?"),
        ("bob", "only the CI pipeline, after a review from platform. no more console edits"),
        ("bob", "142 records imported, plan shows no diff. TTLs back to 1h", "+2d@14:30"),
    ),
    thread(
        "dependency-bot",
        "engineering",
        42,
        "11:45",
        (
            "erin",
            "the dependency update bot opened 61 PRs this month and most sat there. let's group them: "
            "one weekly PR per repo for patch and minor updates, majors separately",
        ),
        ("dave", "please. I stopped reading them after the tenth one"),
        ("bob", "and security updates skip the grouping and get opened immediately"),
        ("erin", "configured: weekly groups on Monday, security updates immediately, majors one by one"),
    ),
    thread(
        "hack-day",
        "general",
        35,
        "16:20",
        ("alice", "hack day on {d+8}! any project, any team, demos at 16:00. ideas so far in the doc"),
        ("dave", "I want to try importing invoices from a photo of a paper invoice"),
        ("frank", "can someone build a button that tells me which customers will churn? asking for a friend"),
        ("grace", "I'll join dave, I've wanted to play with OCR forever"),
        ("bob", "I'm doing a 'what did this deploy change' bot for #ops"),
        (
            "alice",
            "demo winners: dave and grace's photo-to-invoice import (it read 9 of 10 test invoices "
            "right!) and bob's deploy diff bot. both go on the Q1 list",
            "+8d@17:30",
        ),
    ),
    thread(
        "gdpr-request",
        "support-escalations",
        60,
        "10:00",
        (
            "frank",
            "a customer's end customer sent a GDPR access request to us directly, asking for all data "
            "we hold about them",
        ),
        (
            "carol",
            "we're the processor, the customer (the controller) has to answer. we help them: the "
            "admin panel can export everything for one end customer as JSON",
        ),
        (
            "frank",
            "so I forward it to the customer with the export instructions and tell the person it was "
            "forwarded?",
        ),
        ("alice", "yes, within 3 working days, and log it in the privacy request register"),
    ),
    thread(
        "reverse-charge",
        "support-escalations",
        39,
        "11:10",
        (
            "frank",
            "Harrowgate Textiles says our invoices to their EU business customers show VAT, but those "
            "should be reverse charge",
        ),
        (
            "carol",
            "tax-service only applies reverse charge when the buyer's VAT number is validated. their "
            "customers' numbers were never validated because the check was switched off on their "
            "account",
        ),
        ("frank", "can we switch it on and fix the existing invoices?"),
        (
            "carol",
            "switched on. existing invoices need credit notes and re-issues, I'll script it for their "
            "37 affected invoices",
            "+15m",
        ),
        ("frank", "they're happy with that, thanks carol"),
    ),
    thread(
        "invoice-editor",
        "design",
        33,
        "14:00",
        (
            "dave",
            "invoice editor v2 sketches: line items edited inline like a spreadsheet, tab moves between "
            "cells, totals update live",
        ),
        ("grace", "what happens with tax when a line changes? the tax call takes ~200ms"),
        ("dave", "totals show a small spinner next to the tax line, everything else is instant"),
        ("carol", "please keep the 'preview PDF' button where it is, support says people use it constantly"),
        (
            "alice",
            "this looks great. let's test it with 5 customers before building, frank can find volunteers",
        ),
    ),
    thread(
        "mobile-nav",
        "design",
        60,
        "11:15",
        (
            "dave",
            "mobile dashboard: the hamburger menu hides everything. proposal: a bottom bar with 4 items "
            "(home, invoices, customers, more)",
        ),
        ("carol", "what's in 'more'?"),
        ("dave", "settings, reports, team, help. analytics says under 5% of mobile sessions touch those"),
        ("alice", "go for it, and measure whether invoice creation on mobile goes up"),
    ),
    thread(
        "pricing-change",
        "leadership",
        49,
        "15:30",
        (
            "alice",
            "pricing committee decision: from January the Starter plan goes from €19 to €25, Growth "
            "and Scale stay. existing Starter accounts keep the old price for 6 months",
        ),
        (
            "frank",
            "we'll get complaints, but 6 months of grandfathering helps. I want a FAQ and a macro "
            "before the email goes out",
        ),
        ("erin", "any change to the trial?"),
        ("alice", "trial stays 14 days. announcement email on Dec 1, in-app banner the same day"),
    ),
    thread(
        "churn-analysis",
        "leadership",
        24,
        "16:30",
        (
            "frank",
            "churn analysis for Q3: 38% of churned accounts left after failed payments, 22% said price, "
            "17% moved to an ERP with invoicing built in, the rest mixed",
        ),
        (
            "alice",
            "the failed payments part is the dunning work carol is doing. can we measure it after launch?",
        ),
        ("frank", "yes, I'll compare accounts that went through dunning v2 with the months before"),
    ),
    thread(
        "winter-party",
        "general",
        18,
        "14:00",
        (
            "alice",
            "❄️ winter party on Friday Dec 11, 18:00 at the bowling alley by the river. partners "
            "welcome, RSVP in the form by Dec 1",
        ),
        ("dave", "is there food or should we eat before?"),
        ("alice", "food and drinks covered, vegetarian and vegan options included"),
        ("frank", "I demand a rematch against the platform team"),
        ("bob", "accepted. prepare to lose"),
    ),
    thread(
        "office-move",
        "general",
        14,
        "09:40",
        (
            "alice",
            "facilities update: in January we move from the 3rd to the 4th floor. more meeting rooms, "
            "a proper quiet room, and the kitchen isn't next to the meeting rooms anymore",
        ),
        ("carol", "will we keep the standing desks?"),
        ("alice", "yes, every desk on the 4th floor is height-adjustable"),
        ("grace", "my first office move and I've been here 6 weeks 😄"),
    ),
    thread(
        "intern-program",
        "hiring-committee",
        32,
        "14:40",
        (
            "alice",
            "we can take 2 summer interns next year, one backend and one frontend. who wants to mentor?",
        ),
        ("dave", "me for frontend. last year's intern built the component gallery, it's still used daily"),
        ("bob", "I'd pass this year, the platform team is brand new. carol offered for backend"),
        ("alice", "great: dave and carol mentor. applications open in February"),
    ),
    thread(
        "cache-change-dm",
        "bob__carol",
        34,
        "17:10",
        (
            "bob",
            "sorry about today. the eviction policy change was mine, I thought volatile-ttl was safe "
            "because all our keys have a TTL",
        ),
        (
            "carol",
            "it was a reasonable guess, the problem was all pricing keys sharing one TTL. nobody would "
            "have caught that in review",
        ),
        ("bob", "still, I'll do cache config through the change calendar from now on, like alice asked"),
        ("carol", "and I'll get the jitter in tomorrow so the next change can't cause a stampede like that"),
    ),
    thread(
        "shadow-week",
        "carol__grace",
        10,
        "17:00",
        ("grace", "shadow week with bob done: 4 pages, all minor. the runbooks are better than I expected"),
        ("carol", "which page was the most interesting?"),
        ("grace", "the webhook retry queue one: a partner had moved their endpoint without telling anyone"),
        ("carol", "classic. you'll be great on the rotation in January"),
    ),
    thread(
        "erin-promotion",
        "alice__erin",
        20,
        "16:00",
        (
            "alice",
            "good news: the promotion committee approved you for senior security engineer, effective "
            "December 1. congrats!",
        ),
        ("erin", "thank you!! that's a great end to the year"),
        ("alice", "well deserved. the pentest follow-up alone was senior work"),
    ),
    thread(
        "sre-q2-dm",
        "alice__bob",
        7,
        "10:30",
        (
            "bob",
            "for the Q2 plan: I'd like to make the case for a second SRE. on-call is 3 people plus grace "
            "from January, still thin",
        ),
        (
            "alice",
            "write me half a page with the page volume and the hours spent on toil, I'll take it to "
            "finance with the cost numbers",
        ),
        ("bob", "will do by Friday"),
    ),
    thread(
        "prospect-demo-dm",
        "dave__frank",
        40,
        "14:20",
        (
            "frank",
            "could you demo the new checkout prototype to a prospect on Thursday? 20 minutes, they're "
            "a furniture webshop",
        ),
        ("dave", "sure, as long as they know it's a prototype. I'll use the staging tenant"),
        ("frank", "they loved it. they asked for a PO number field, first time I hear that one", "+2d@16:10"),
        ("dave", "noted, I'm collecting these requests for 5.1"),
    ),
]
