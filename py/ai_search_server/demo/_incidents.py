"""Incidents, rollbacks and the follow-ups they caused (#incidents, #ops, #engineering, a DM).

Facts the judgments rely on: the ledger-db failover of mid-September (pg-ledger-01 -> pg-ledger-02,
4m12s promotion, 38 minutes of ERR_CONN_RESET), the October checkout latency incident (pricing cache
stampede after a Redis eviction-policy change), the notification-worker v3.7.0 retry loop, the
search-indexer v1.9.0 rollback, the expired webhook certificate, the full indexer disk, the SSO outage
(unknown kid) and the September auth-gateway rollback that the `after:` filter must leave out.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["INCIDENT_THREADS"]

INCIDENT_THREADS: list[Thread] = [
    thread(
        "pg-failover",
        "incidents",
        74,
        "02:14",
        (
            "bob",
            "🔥 paged: billing-api 5xx rate at 18%. ledger-db primary pg-ledger-01 is failing its health "
            "checks, looking",
        ),
        (
            "bob",
            "patroni just promoted pg-ledger-02 to primary. 4m12s from the first failed check to the "
            "promotion. 5xx still elevated though",
            "+4m",
        ),
        (
            "carol",
            "I'm up. billing-api logs are full of `ERR_CONN_RESET` on the ledger pool. looks like the "
            "pool kept its connections to the old primary and is handing out dead sockets",
            "+6m",
        ),
        (
            "bob",
            "psql from a billing pod to the new primary works fine, so it's the app-side pool, not the "
            "network",
        ),
        ("carol", "restarting billing-api pods one zone at a time to flush the pool"),
        (
            "frank",
            "support here: 11 tickets about failed invoice payments in the last 20 minutes. anything I "
            "can tell customers?",
            "+9m",
        ),
        (
            "bob",
            "tell them card payments have been failing intermittently since 02:10 UTC, we know the cause "
            "and are recovering. no data lost, failed payments can simply be retried",
        ),
        (
            "carol",
            "all billing-api pods restarted, ERR_CONN_RESET is gone, 5xx back to the 0.2% baseline",
            "+7m",
        ),
        (
            "bob",
            "confirmed. customer impact ~38 minutes (02:10–02:48 UTC). the data volume on pg-ledger-01 "
            "stalled, iowait pinned at 100%. opened a ticket with the cloud provider",
        ),
        (
            "alice",
            "thanks both for jumping on this at 2am. bob, can you own the postmortem, by Monday? two "
            "questions I want answered: why did the failover take 4 minutes, and why didn't the pool "
            "recover on its own",
            "@07:40",
        ),
        (
            "bob",
            "on it. short version for the pool: no max lifetime and tcp keepalives are off, so sockets to "
            "a dead host look alive until a query hits them",
        ),
        (
            "carol",
            "proposal: max_lifetime=300s, keepalives_idle=30 and a pre-ping when a connection is checked "
            "out of the pool. PR today",
        ),
        (
            "alice",
            "👍 do it. and let's lower the patroni ttl so we promote faster, as long as bob is sure we "
            "won't start flapping",
        ),
        ("frank", "I'll send the 11 customers a follow-up with the timeline once the postmortem is out"),
        night=True,
    ),
    thread(
        "pg-failover-dm",
        "bob__carol",
        74,
        "09:30",
        ("bob", "thanks again for last night. want to pair on the pool settings or should I just review?"),
        (
            "carol",
            "just review. one thing: the pre-ping adds a round trip per checkout, ~0.4ms inside the same "
            "zone. I think we can live with that",
        ),
        (
            "bob",
            "fine by me. can you check report-builder too? it uses the same pool library and would have "
            "broken the same way if its cron had been running at 2am",
        ),
        ("carol", "good catch, same version. bumping it in the same PR (#5041)"),
    ),
    thread(
        "pg-postmortem",
        "engineering",
        70,
        "10:05",
        (
            "bob",
            "Postmortem for the {d-4} ledger-db failover is in the wiki. TL;DR: the data volume of "
            "pg-ledger-01 stalled at 02:10 UTC, patroni promoted pg-ledger-02 after 4m12s, but billing-api "
            "kept failing for 38 minutes because its connection pool handed out sockets to the dead "
            "primary (ERR_CONN_RESET). restarting the pods fixed it.",
        ),
        (
            "bob",
            "Action items: (1) pool max_lifetime 300s + tcp keepalives + pre-ping, carol, merged in #5041 "
            "(2) patroni ttl 30s → 20s and loop_wait 10s → 5s (3) alert on the ERR_CONN_RESET rate, not "
            "only on 5xx (4) a game day to rehearse a primary failover in staging",
        ),
        (
            "dave",
            "naive question: why doesn't the pool notice the host is gone? don't all db clients have "
            "that problem?",
        ),
        (
            "carol",
            "without keepalives the kernel only finds out when it sends something and the retransmits "
            "time out, which is ~15 minutes with linux defaults. the pre-ping catches it when the "
            "connection is borrowed instead",
        ),
        ("erin", "any chance of split brain during those 4 minutes?"),
        (
            "bob",
            "no: patroni fenced the old primary through the DCS lease and pg-ledger-01 never came back "
            "until we rebooted it. I compared WAL positions, nothing was lost",
        ),
        ("alice", "great write-up. let's do the game day in about three weeks, bob picks the date"),
    ),
    thread(
        "failover-gameday",
        "ops",
        47,
        "10:00",
        (
            "bob",
            "failover game day in staging starts in 10 minutes. plan: hard-kill pg-ledger-stg-01, watch "
            "patroni promote, watch billing-api recover",
        ),
        (
            "bob",
            "results: promotion in 38s (4m12s in the September incident, thanks to ttl 20s / loop_wait 5). "
            "billing-api recovered in 6s, and after the first retry not a single ERR_CONN_RESET thanks "
            "to the pre-ping",
            "+25m",
        ),
        (
            "carol",
            "🎉 so the pool change works. one surprise: report-builder needed 90s because its cron held "
            "a long transaction open",
        ),
        (
            "bob",
            "noted, adding a statement_timeout to report-builder. next game day: a failover under peak load",
        ),
    ),
    thread(
        "checkout-latency",
        "incidents",
        34,
        "14:20",
        (
            "frank",
            "customers in the EU say carts take 10+ seconds to load at the payment step. 6 tickets in "
            "the last half hour, two of them Growth plan accounts",
        ),
        (
            "bob",
            "seeing it. checkout-web p95 went from ~420ms to 3.8s starting 13:52 UTC. error rate is flat, "
            "it's pure latency",
        ),
        (
            "carol",
            "the hot spot is billing-api /v2/quotes, p99 at 9s. pricing cache hit ratio dropped from 97% "
            "to 12%",
        ),
        (
            "bob",
            "that lines up with today's change: the cache cluster's eviction policy went from "
            "allkeys-lru to volatile-ttl at 13:45",
        ),
        (
            "carol",
            "and all pricing keys share the same 10 minute TTL, so they expired together and every "
            "request went to the database to rebuild its quote. a textbook cache stampede",
        ),
        ("alice", "revert the eviction policy now, root cause later"),
        ("bob", "reverted. hit ratio climbing: 64%… 91%", "+4m"),
        ("bob", "checkout p95 back to 450ms. incident window 13:52–14:41 UTC", "+11m"),
        ("frank", "thanks, answering the tickets. any numbers on lost orders?"),
        (
            "carol",
            "from the funnel: abandonment at the payment step was 2.4x normal during the window, roughly "
            "310 carts. sales asks whether we can email those people a reminder, I told them to talk "
            "to you",
            "+2h",
        ),
        (
            "carol",
            "fix for the real problem: request coalescing on quote rebuilds (one rebuild in flight per "
            "key) and ±20% jitter on the TTL. PR #5298",
            "+1d@10:15",
        ),
        (
            "alice",
            "and no more config changes to the cache cluster without a change ticket. bob, please add "
            "it to the change calendar rules",
        ),
    ),
    thread(
        "checkout-latency-support",
        "support-escalations",
        34,
        "15:05",
        (
            "frank",
            "heads-up for whoever is on tickets: the cart delays this afternoon (13:52–14:41 UTC) are "
            "resolved. I made a macro 'Payment step delay {d}' that explains what happened",
        ),
        (
            "carol",
            "if anyone asks for details: a cache configuration change, reverted, nothing was charged "
            "twice and no data was lost",
        ),
    ),
    thread(
        "notif-backlog",
        "incidents",
        39,
        "09:40",
        ("frank", "are emails broken? customers say invoice emails haven't arrived since this morning"),
        (
            "bob",
            "notification-worker queue is at 1.2M messages and growing. workers are busy but throughput to "
            "the email provider is down to ~40/s",
        ),
        (
            "carol",
            "v3.7.0 went out yesterday at 17:00 with the new retry policy. when the email provider "
            "answers 429 we retry immediately instead of backing off, so we burn our whole rate limit "
            "on retries",
        ),
        ("bob", "rolling back notification-worker to v3.6.2"),
        ("bob", "rollback done. throughput back to 900/s, backlog draining, ~25 min to zero", "+15m"),
        ("frank", "what's the longest delay a customer saw?"),
        (
            "carol",
            "the oldest queued message is from 06:02 UTC, so a bit over 3 hours for the earliest invoice "
            "emails. nothing was dropped, everything gets delivered",
        ),
        (
            "alice",
            "carol, fix forward with exponential backoff that honours Retry-After, and please add an "
            "alert on queue depth",
        ),
        (
            "bob",
            "backlog at zero. alert added: notification queue depth > 50k for 10 min pages on-call",
            "+30m",
        ),
    ),
    thread(
        "notif-rollback-ops",
        "ops",
        39,
        "10:05",
        (
            "bob",
            "FYI rolled back notification-worker v3.7.0 → v3.6.2 at 09:52 (details in #incidents). please "
            "don't redeploy any v3.7.x until carol's backoff fix lands",
        ),
        (
            "carol",
            "v3.7.1 with proper backoff is in review, I'll deploy it myself tomorrow morning and watch "
            "the 429 rate",
        ),
        (
            "carol",
            "notification-worker v3.7.1 deployed. 429s from the email provider: 0 in the first hour",
            "+1d@09:20",
        ),
    ),
    thread(
        "indexer-rollback",
        "ops",
        41,
        "10:15",
        (
            "carol",
            "deploying search-indexer v1.9.0 to prod: new mapping with customer_ref as a keyword, bulk "
            "size raised to 5k",
        ),
        (
            "carol",
            "indexing errors climbing: `mapper_parsing_exception: failed to parse field [customer_ref] of "
            "type [keyword]`. some old documents have customer_ref as an object",
            "+9m",
        ),
        ("bob", "search freshness lag is 14 min and growing. roll back?"),
        ("carol", "yes, rolling back to v1.8.7"),
        (
            "carol",
            "rollback complete, lag back under 30s. the 2,300 failed documents are in the dead-letter "
            "topic, I'll replay them after the fix",
            "+12m",
        ),
        (
            "bob",
            "for next time: can we run a new mapping against a snapshot of prod documents in staging "
            "before deploying?",
        ),
        (
            "carol",
            "v1.9.1 is out: a legacy object-shaped customer_ref is flattened to its id before indexing. "
            "dead letters replayed, 2,300/2,300 indexed",
            "+2d@14:00",
        ),
        ("erin", "nice. I added the mapping dry-run to the deploy checklist"),
    ),
    thread(
        "auth-rollback",
        "ops",
        82,
        "15:30",
        ("bob", "deploying auth-gateway v4.2.0 (session store moves to redis)"),
        (
            "bob",
            "rolling back auth-gateway to v4.1.3: login latency doubled, the new session store does a "
            "network round trip on every request",
            "+12m",
        ),
        (
            "carol",
            "ack. I'll put a small in-process LRU in front of the session lookup and we try again next week",
        ),
        ("bob", "auth-gateway v4.2.1 with carol's LRU is out, p95 of /session back to 35ms", "+7d@11:00"),
    ),
    thread(
        "cert-expiry",
        "ops",
        27,
        "00:25",
        (
            "bob",
            "webhook deliveries to partners failing since 00:00 UTC. our sender says "
            "`x509: certificate has expired or is not yet valid`",
        ),
        (
            "bob",
            "it's hooks.larkspur.example: the certificate expired at midnight. the auto-renew job should "
            "have renewed it 30 days ago",
        ),
        (
            "erin",
            "renew job logs: failing since {d-33} with a 401 from the DNS provider's API. the DNS API token "
            "was rotated in the secrets cleanup and nobody updated the cert job",
            "+20m",
        ),
        (
            "bob",
            "issued a new certificate by hand with the new token and pushed it to the edge. webhooks "
            "flowing again at 00:51",
        ),
        (
            "erin",
            "I'll make the renewer read the token from the vault path instead of its own copy. the real "
            "bug though: the job failed silently for a month",
        ),
        (
            "bob",
            "partners retried on their side, the webhook backlog was 14k events, all delivered by 01:30",
            "+40m",
        ),
        (
            "alice",
            "agree with erin. two asks: alert when any certificate is less than 21 days from expiry, and "
            "a dashboard listing all our certificates with their expiry dates",
            "@08:50",
        ),
        ("bob", "on it, both by Friday"),
        night=True,
    ),
    thread(
        "indexer-disk",
        "ops",
        52,
        "11:10",
        ("bob", "search-indexer-2 at 97% disk, `No space left on device` in the indexer logs a minute ago"),
        ("carol", "debug logging was left on after last week's investigation, the log file is 180 GB"),
        ("bob", "truncated it, disk at 41%. the logrotate config on that box was missing the indexer path"),
        ("carol", "turned debug off through the toggle and added the path to logrotate in the base image"),
    ),
    thread(
        "sso-outage",
        "incidents",
        18,
        "08:47",
        (
            "frank",
            "several customers can't sign in with SSO: 502 right after the identity provider redirects "
            "back to us",
        ),
        ("bob", "auth-gateway throws `jwt: unknown kid 7f3a` on every SSO callback since 08:31 UTC"),
        (
            "carol",
            "the identity provider rotated its signing key this morning. we cache the JWKS for 24h and "
            "only refresh on the timer, so we don't know the new key",
        ),
        ("bob", "forcing a JWKS refresh by restarting auth-gateway"),
        ("bob", "SSO logins work again since 08:53. password logins were never affected", "+6m"),
        (
            "alice",
            "22 minutes of failed SSO logins. carol: refresh the JWKS when we see an unknown kid (at most "
            "once a minute) and keep old keys around for the overlap",
        ),
        (
            "frank",
            "most affected: Kestrel Freight, they were rolling SSO out to their warehouse staff today "
            "😬 calling them now",
        ),
        (
            "carol",
            "fix merged: auth-gateway v4.3.2 refreshes the JWKS on an unknown kid, at most once per 60s",
            "+1d@11:00",
        ),
    ),
]
