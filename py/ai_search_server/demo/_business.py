"""Customer escalations, infrastructure cost and the leadership conversations around them.

Facts the judgments rely on: Bramblecrest Outdoor's 214 duplicate charges ($18,430.50 refunded,
the reason idempotency keys became a must-have), Olivetree Clinics' CSV export timeouts, Kestrel
Freight's SAML deadline ($96k renewal), the September cloud bill ($48.2k, +31%: thumbnail egress,
staging running 24/7, logs), log volume 2.1 TB/day cut to 0.8, the Q4 OKRs, the November forecast.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["BUSINESS_THREADS"]

BUSINESS_THREADS: list[Thread] = [
    thread(
        "bramblecrest-duplicates",
        "support-escalations",
        67,
        "10:30",
        (
            "frank",
            "escalation: Bramblecrest Outdoor (Scale plan) says 214 of their customers were billed "
            "double yesterday. they're getting angry emails from their own buyers",
        ),
        (
            "carol",
            "looking. yesterday at 16:40 UTC Paynova had a 90 second blip, our client timed out and "
            "retried the charge, but the first attempt had actually gone through",
        ),
        (
            "carol",
            "so each of those invoices has two captured payments. exactly the case idempotency keys are "
            "meant to fix, and we don't send one yet",
        ),
        ("alice", "refund every duplicate today, no questions asked. frank, can you own the communication?"),
        (
            "carol",
            "refunds issued: 214 duplicate payments, $18,430.50 in total. Paynova says 5–7 days until "
            "they show on card statements",
            "+2h",
        ),
        (
            "frank",
            "sent Bramblecrest the list of refunded invoices, plus one month of their subscription as a "
            "credit",
        ),
        (
            "alice",
            "carol: idempotency keys are a must-have for v2.14.0 now, not a nice-to-have. and check "
            "whether any other account was hit",
        ),
        (
            "carol",
            "checked all accounts: only Bramblecrest had retried charges inside that 90s window",
            "+1h",
        ),
    ),
    thread(
        "olivetree-export",
        "support-escalations",
        59,
        "13:45",
        (
            "frank",
            "Olivetree Clinics can't export invoices to CSV anymore: the export spins, then fails with a "
            "504. they have ~180k invoices",
        ),
        (
            "carol",
            "CSV export runs inside the request and we cut requests at 60s. above ~50k rows it can't "
            "finish in time",
        ),
        ("frank", "any workaround I can give them today?"),
        ("carol", "export by date range: one quarter at a time stays under 50k rows for them"),
        (
            "alice",
            "the real fix is an async export in report-builder: build the file in the background and "
            "email a download link. a good second project for the new backend hire",
        ),
    ),
    thread(
        "kestrel-saml",
        "support-escalations",
        26,
        "16:00",
        (
            "frank",
            "Kestrel Freight ($96k ARR, renewal Dec 1) needs SAML SSO for 1,400 warehouse users by "
            "{d+11} or they won't renew. office staff already use OIDC",
        ),
        (
            "bob",
            "auth-gateway already speaks SAML for two enterprise accounts, it's config plus their metadata "
            "XML. the real work is just-in-time provisioning, which they want",
        ),
        ("carol", "JIT provisioning is about 3 days in billing-api, mostly the seat counting"),
        ("alice", "we do it: a $96k renewal is worth 3 days. test tenant by {d+6}, production {d+8}"),
        (
            "frank",
            "Kestrel confirmed SAML works in their test tenant 🎉 go-live with the warehouse staff on {d+8}",
            "+6d@17:00",
        ),
    ),
    thread(
        "dunning-escalation",
        "support-escalations",
        48,
        "15:10",
        (
            "frank",
            "Fennel & Finch Bakeries got suspended for non-payment although their card was updated "
            "two days ago. they're furious, the suspension email went to their whole finance team",
        ),
        (
            "carol",
            "the dunning job only re-checks the card on its next scheduled retry (day 7), it doesn't "
            "react to a card update",
        ),
        (
            "carol",
            "unsuspended them by hand and retried the invoice: paid. I'll make a card update trigger an "
            "immediate retry of open invoices",
            "+20m",
        ),
        ("frank", "thanks. I told them it was our bug and offered a discount on next month"),
    ),
    thread(
        "cloud-bill",
        "ops",
        55,
        "10:00",
        (
            "bob",
            "September cloud bill: $48.2k, up 31% from July's $36.8k. where the increase comes from: "
            "media-proxy egress +$6.1k, the staging cluster +$4.3k, log ingestion +$2.2k, the rest is "
            "database growth",
        ),
        ("carol", "the egress is thumbnails? those should be cacheable"),
        (
            "bob",
            "yes: media-proxy sends `Cache-Control: no-store` on everything, so the CDN never caches. "
            "thumbnails are 71% of egress bytes",
        ),
        ("erin", "public caching for thumbnails only. PDFs and anything behind a signed URL stay no-store"),
        (
            "bob",
            "sure. staging: it runs 24/7 at production size. plan: scale it to zero from 20:00 to 07:00 "
            "and on weekends",
        ),
        ("alice", "expected savings?"),
        (
            "bob",
            "~$5.4k from thumbnails and ~$3.6k from the staging schedule, so about $9k a month. logs get "
            "their own thread",
        ),
        ("bob", "thumbnail caching is live: CDN hit ratio 94%, egress down 68% week over week", "+8d@11:00"),
    ),
    thread(
        "budget-leadership",
        "leadership",
        54,
        "16:00",
        (
            "alice",
            "infra cost: September came in at $48.2k, up 31% from $36.8k in July. bob's breakdown is "
            "in #ops. I told finance we'd be back at $40k by December",
        ),
        ("frank", "is that the storage thing?"),
        (
            "alice",
            "mostly thumbnail egress from media-proxy without CDN caching (~$6.1k) and staging running "
            "24/7 (~$4.3k). plus logs",
        ),
        (
            "erin",
            "careful with edge caching of anything behind auth. invoice PDFs must never be cached at the CDN",
        ),
        (
            "alice",
            "noted, public thumbnails only. I'm also looking at a 1-year commitment on the database "
            "instances: 22% off, ~$2.9k a month",
        ),
    ),
    thread(
        "log-volume",
        "ops",
        12,
        "14:30",
        (
            "bob",
            "log ingestion is at 2.1 TB/day, and 60% of it is debug lines from billing-api and "
            "search-indexer in prod",
        ),
        ("carol", "billing-api logs every ledger query at debug. we only need that in staging"),
        (
            "bob",
            "proposal: prod log level info by default, debug switchable per service for 1h through a "
            "toggle; retention for app logs from 30 to 14 days; audit logs keep 1 year",
        ),
        ("erin", "audit logs must stay 1 year, it's in our security commitments. the rest is fine by me"),
        ("bob", "log volume down to 0.8 TB/day, about $3.4k/month less", "+2d@10:00"),
    ),
    thread(
        "q4-okrs",
        "leadership",
        62,
        "16:30",
        (
            "alice",
            "draft Q4 OKRs: (1) checkout p95 under 500ms every week (2) no sev-1 incident longer than 30 "
            "minutes (3) gross churn under 1.5% a month (4) infra spend back to $40k/month or less",
        ),
        (
            "frank",
            "churn was 1.9% in August, mostly small accounts leaving after failed payments. 1.5 is "
            "ambitious but fine",
        ),
        ("erin", "can we add one for security? close every high pentest finding within 30 days"),
        ("alice", "added as (5)"),
    ),
    thread(
        "cost-forecast",
        "leadership",
        3,
        "15:00",
        ("alice", "November infra forecast: $39.6k 🎉 under the $40k target for the first time since June"),
        ("frank", "nice! what moved it the most?"),
        (
            "alice",
            "thumbnail caching, staging sleeping at night and the log diet. the database commitment "
            "starts in December on top",
        ),
    ),
    thread(
        "checkout-feedback-dm",
        "dave__frank",
        19,
        "10:40",
        (
            "frank",
            "customer feedback on the new checkout: people love the single page, but 3 accounts asked "
            "for a PO number field",
        ),
        ("dave", "a PO number is easy: an optional field, printed on the invoice PDF. I'll aim for 5.1"),
        ("frank", "perfect. also one asked if the logo on the checkout can be bigger 🙃"),
        ("dave", "that one goes in the 'nope' pile"),
    ),
]
