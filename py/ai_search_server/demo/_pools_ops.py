"""What running the service sounds like: the minor services' deploys and the alerts on-call sees.

None of it touches the incidents the relevance judgments are about: no database failover, no
checkout latency, no full disk, no certificate expiry, no rollback.
"""

from __future__ import annotations

__all__ = ["ALERTS", "DEPLOY_CHANGES"]

# Minor services (the scripted threads own the big ones' version numbers), their first version and
# what their deploys change (each deploy names one or two of these).
DEPLOY_CHANGES: dict[str, tuple[tuple[int, int, int], list[str]]] = {
    "media-proxy": (
        (0, 31, 0),
        [
            "webp thumbnails for avatars",
            "empty content-type on HEAD requests fixed",
            "smaller default thumbnail quality",
            "graceful shutdown waits for in-flight fetches",
            "image size limit raised to 25 MB",
            "better error when an upload is not an image",
            "request ids in the access log",
            "cache headers per content type",
            "a metric for fetch duration per source",
            "HTTP/2 to the storage backend",
        ],
    ),
    "toggles-svc": (
        (1, 8, 0),
        [
            "audit trail for flag changes",
            "flag owners shown in the admin UI",
            "faster flag evaluation cache",
            "stale flag report",
            "bulk archive of old flags",
            "the SDK retries on 503",
            "flag evaluation logs sampled at 1%",
            "a read-only role for support",
            "flag descriptions required on create",
        ],
    ),
    "webhook-sender": (
        (2, 3, 0),
        [
            "exponential backoff capped at 1h",
            "per-endpoint concurrency limit",
            "delivery attempts visible in the admin panel",
            "disable endpoints after 5 days of failures",
            "smaller payloads for invoice.updated",
            "signature header documented in responses",
            "a dead-letter view in the admin panel",
            "retry jitter",
            "TLS 1.3 for outgoing deliveries",
        ],
    ),
    "tax-service": (
        (0, 14, 0),
        [
            "VAT number validation cache",
            "new reduced rates for two countries",
            "timeouts on the VAT validation API lowered to 3s",
            "rounding per line item instead of per invoice",
            "tax ids normalised before lookup",
            "a rate table versioning endpoint",
            "metrics per country",
            "a clearer error for unknown regions",
        ],
    ),
    "pdf-renderer": (
        (3, 2, 0),
        [
            "fonts loaded from disk",
            "memory limit per render",
            "page numbers on long invoices",
            "faster table layout",
            "right-to-left text support",
            "PDF/A output for archive copies",
            "a render queue priority for receipts",
            "smaller fonts subset in the output",
            "timeouts per page instead of per document",
        ],
    ),
    "currency-rates": (
        (1, 0, 0),
        [
            "1h cache for rates",
            "fallback to the previous day",
            "new provider endpoint",
            "rates history endpoint",
            "metrics for provider latency",
            "rates rounded to 6 decimals",
            "an admin endpoint to pin a rate",
            "a stale-rate warning header",
        ],
    ),
    "ledger-archiver": (
        (0, 4, 0),
        [
            "dry-run mode",
            "archive manifest checksums",
            "restore command",
            "parallel archive of months",
            "resumable archives",
            "a progress metric",
            "archive size report",
        ],
    ),
}

# (short label for the handoff, what fired, how it ended, the follow-up ticket). Slots: {n} a count
# from 3 to 60, {m} a small number from 2 to 9, {pct} a percentage from 86 to 98, {host} a host name,
# {svc} a minor service.
ALERTS: list[tuple[str, str, list[str], str]] = [
    (
        "memory pressure",
        "memory pressure on worker pool b ({pct}% of node memory)",
        [
            "a pdf-renderer pod without a memory limit. limit set, pressure gone",
            "the nightly batch landed on pool b instead of pool c, rescheduled",
        ],
        "memory limits audit for every deployment",
    ),
    (
        "media-proxy 5xx",
        "5xx rate on media-proxy above {m}% for 5 min",
        [
            "a crawler requesting thumbnails for deleted uploads. 404 now instead of 502",
            "one pod stuck after the node drain, deleted it, back to normal",
        ],
        "return 404 for deleted uploads without touching storage",
    ),
    (
        "tax-service timeouts",
        "tax-service timeouts to the VAT validation API",
        [
            "their API had a {n} minute blip, our cache covered most lookups",
            "provider status page confirms a partial outage, nothing to do on our side",
        ],
        "longer cache for VAT validation results",
    ),
    (
        "pdf-renderer OOM",
        "pdf-renderer OOMKilled {m} times in 10 min",
        [
            "a 900-page invoice from one customer. render limit per document added to the backlog",
            "memory limit was still the old 512 MB on one deployment, bumped to 1 GB",
        ],
        "a page limit per rendered document",
    ),
    (
        "webhook retries",
        "webhook-sender retry queue above {n}k",
        [
            "one partner endpoint returning 500 for everything. it's on their side, deliveries will retry",
            "a partner moved their endpoint without telling us. disabled it and emailed their admin",
        ],
        "auto-disable endpoints that fail for 24h",
    ),
    (
        "currency-rates CPU",
        "CPU throttling on currency-rates",
        [
            "CPU limit was 100m, way too low after the cache change. set to 500m",
            "a retry loop against the provider during their maintenance window, stopped by itself",
        ],
        "right-size CPU requests after the cache change",
    ),
    (
        "synthetic login check",
        "synthetic login check failed {m} times in a row",
        [
            "the check's test account password had expired. rotated it, check green",
            "the synthetic runner in one region lost its network for a few minutes, not us",
        ],
        "an expiry alert for the synthetic test account",
    ),
    (
        "late backup",
        "nightly backup job finished {n} minutes late",
        [
            "the backup overlapped with the node upgrade. fine, just slower",
            "snapshot throttling on the storage side, within the SLA",
        ],
        "move the backup window away from maintenance",
    ),
    (
        "429s for one key",
        "elevated 429s for one API key ({n}k in 10 min)",
        [
            "a customer's sync script in a tight loop. frank emailed them, it stopped",
            "an integration partner backfilling a year of invoices. raised their limit for the day",
        ],
        "a rate-limit email to the account owner",
    ),
    (
        "DNS errors",
        "DNS resolution errors from {host}",
        [
            "the node's resolver cache was wedged, cordoned and replaced the node",
            "transient, {n} errors total, nothing since",
        ],
        "node-local DNS cache",
    ),
    (
        "LB health checks",
        "load balancer health checks flapping for {svc}",
        [
            "the health endpoint did a database call and timed out under load, made it static",
            "a slow rolling restart, resolved once all pods were ready",
        ],
        "a health endpoint that never touches the database",
    ),
    (
        "missed cron",
        "cron `ledger-archive` missed its schedule",
        [
            "the scheduler pod was evicted during the node drain, job ran {n} minutes late",
            "the job overlapped with its previous run and skipped, as designed",
        ],
        "a PodDisruptionBudget for the scheduler",
    ),
    (
        "consumer lag",
        "event bus consumer lag on `invoices.updated` at {n}k",
        [
            "report-builder consumer redeploying, caught up within {m} minutes",
            "a slow partition after the rebalance, recovered by itself",
        ],
        "lag alert per consumer group instead of per topic",
    ),
    (
        "storage latency",
        "object storage latency p99 above {m}s",
        [
            "provider-side, their status page has it, resolved after {m} minutes",
            "one bucket with millions of tiny objects listed by a debug script. stopped it",
        ],
        "list uploads by prefix in the debug script",
    ),
    (
        "error budget burn",
        "error budget burn on the public API ({m}% of the monthly budget in 1h)",
        [
            "one customer's malformed requests counted as 5xx instead of 4xx. fixed the status code",
            "a short burst during the train deploy, no customer reports",
        ],
        "map validation errors to 4xx everywhere",
    ),
    (
        "CT monitor",
        "certificate transparency monitor: new cert for a marketing subdomain",
        [
            "expected, the marketing team moved their landing pages. confirmed with them",
            "issued by our own ACME account for the new docs site, all good",
        ],
        "a list of expected certificate issuers",
    ),
    (
        "outbound traffic",
        "high outbound traffic from {host}",
        [
            "the monthly report export for a large customer. expected",
            "a misconfigured log shipper resending the same files, fixed the checkpoint",
        ],
        "checkpoint the log shipper on disk",
    ),
]
