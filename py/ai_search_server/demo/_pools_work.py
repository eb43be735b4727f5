"""Everyday engineering chatter: standup steps, pull requests, deploys, alerts, questions.

None of it touches the incidents, releases or decisions the relevance judgments are about; it is the
background a real search has to find those needles in. Standup steps are noun phrases, in the order
the work happened, so consecutive standups of one person tell a coherent story.
"""

from __future__ import annotations

__all__ = [
    "ALERTS",
    "DEPLOY_CHANGES",
    "PULL_REQUESTS",
    "QUESTIONS",
    "STANDUP_STEPS",
]

STANDUP_STEPS: dict[str, list[str]] = {
    "carol": [
        "the dunning schedule config model", "retry timings for failed card payments (day 1, 3, 7)",
        "the dunning email templates with frank's copy", "tests for the day-7 suspension path",
        "review fixes on the dunning PR", "credit notes: the data model", "credit note numbering per country",
        "the credit note PDF layout", "credit notes in the invoice API responses", "proration on mid-cycle "
        "plan changes", "edge cases for proration with coupons", "proration docs for the API reference",
        "the tax rate table refresh job", "tax rates for the three new EU countries", "backfilling tax "
        "rates on draft invoices", "invoice numbering sequences per legal entity", "the migration for "
        "invoice number prefixes", "ledger archiving of closed years", "archive restore tooling",
        "webhook signing v2 (rotating secrets)", "docs for webhook signature verification",
        "pairing with grace on the ledger queries", "the quarterly billing metrics for finance",
        "cleanup of dead feature flags in billing-api", "the yearly plan discount logic",
        "refund reasons in the admin panel", "the partial refund endpoint", "tests for partial refunds in "
        "three currencies",
        "the invoice export columns finance asked for",
        "a spike on usage-based billing",
        "the usage records table design",
        "usage aggregation per billing period",
        "usage line items on invoices",
        "the billing team's Q1 plan draft",
        "usage records table and API",
        "usage line items on invoices",
        "export columns for finance (cost centre, PO)",
        "billing-api: drop the unused `draft_v1` table",
    ],
    "bob": [
        "runbook for restoring a single table from backup", "the monthly backup restore test",
        "terraform module cleanup for the network layer", "moving the DNS records into terraform",
        "the node pool upgrade on the staging cluster", "the node pool upgrade in prod, zone a",
        "zone b and c of the node pool upgrade", "page routing rules in the on-call tool",
        "dashboards for the platform services", "metrics retention settings", "downsampling old metrics",
        "base image update to the new distro release", "rebuilding service images on the new base",
        "the cluster version upgrade plan", "autoscaling thresholds for the API pods", "tidying up IAM roles "
        "for CI", "short-lived credentials for CI jobs", "the synthetic checks for the public API",
        "a status page component per service", "load test setup for the event bus",
        "the event bus partition rebalance", "capacity plan for Q1", "log pipeline config per service",
        "the secrets vault policy review with erin", "uptime report for October", "the runbook for "
        "evacuating a zone", "consumer lag dashboards for the event bus", "new machine type for CI runners",
        "the on-call handbook update",
        "the platform team's Q1 roadmap",
        "autoscaling for the report-builder workers",
        "the database parameter review",
        "alert routing for the new platform team",
        "the event bus retention settings",
        "database parameter tweaks for report-builder",
        "alert routing for the platform team",
        "event bus retention from 7 to 3 days",
        "on-call handbook: escalation paths",
        "runbook links on every paging alert",
    ],
    "dave": [
        "button variants in the design system", "focus states for keyboard users", "the new form field "
        "components", "address autocomplete on the checkout form", "validation messages on the address "
        "form", "the accessibility audit findings (contrast)", "accessibility audit: screen reader labels",
        "the invoice list filters UI", "saved filters on the invoice list", "the onboarding wizard for new "
        "accounts", "the wizard's company details step", "component gallery pages for the new fields",
        "empty state illustrations", "the settings page layout", "the mobile layout of the invoice detail",
        "icon set migration", "the date picker replacement", "frontend error tracking setup",
        "bundle size reduction on the dashboard", "lazy loading the charts", "skeleton loaders on the "
        "dashboard", "copy fixes from frank's list", "the payment method selector", "the receipt page "
        "redesign", "print styles for receipts", "the locale switcher", "right-to-left layout checks",
        "the component gallery search",
        "form error summary at the top of long forms",
        "the print layout of credit notes",
        "the design tokens export for the PDF renderer",
        "the PO number field design",
        "keyboard shortcuts in the invoice list",
        "component gallery search",
        "error summary for long forms",
        "credit note print layout",
        "keyboard shortcuts in the invoice list",
        "design tokens exported as JSON for the PDF renderer",
    ],
    "grace": [
        "reading the billing-api codebase", "the ledger query helpers", "fixing a flaky test in the ledger "
        "suite", "reminder emails for overdue invoices", "the reminder schedule settings", "tests for the "
        "reminder opt-out", "the currency-rates cache", "refresh interval for currency rates", "fallback "
        "when the rates provider is down", "the admin audit log API", "filters on the audit log endpoint",
        "audit log export", "the invoice search endpoint", "pagination docs for the API reference",
        "shadowing on-call with bob", "the on-call runbook for billing-api", "metrics for the reminder "
        "emails", "the customer portal's invoice download", "retries for PDF generation",
        "reminder email metrics dashboard",
        "audit log export as CSV",
        "PDF retries with backoff",
        "fix the N+1 in /v2/invoices/summary",
    ],
    "erin": [
        "the phishing exercise results", "MFA enforcement for the admin panel", "SSO for the internal "
        "tools", "laptop disk encryption report", "the security training module for new hires",
        "threat model for the new checkout", "the vendor security questionnaire for a customer",
        "dependency scanning config", "the SBOM export for enterprise customers", "secrets vault policy "
        "review with bob", "the incident response tabletop plan", "the security page for the website",
        "access logging for the admin panel", "the customer data retention policy draft",
        "the access review automation",
        "the security awareness newsletter",
        "a threat model for the public API rate limits",
        "the bug bounty scope draft",
        "access review report as a weekly job",
        "security.txt on all public hosts",
    ],
}

# Per author: what their pull requests do (one line each, used once).
PULL_REQUESTS: dict[str, list[str]] = {
    "carol": [
        "dunning v2: configurable retry schedule per plan", "credit notes, part 1: model + migrations",
        "credit notes, part 2: API and PDF", "proration for mid-cycle upgrades", "tax rate refresh job with "
        "a dry-run mode", "per-entity invoice number sequences", "webhook signatures with two active "
        "secrets during rotation", "partial refunds endpoint", "remove the dead `legacy_tax` flag",
        "yearly plan discount applied before coupons", "refund reason codes in the admin API",
        "ledger archive job for closed fiscal years", "faster invoice totals query (one join less)",
        "typed settings for the billing config", "log the Paynova request id on every failed charge",
        "move coupon validation into the ledger library",
    ],
    "bob": [
        "terraform: DNS records as code", "on-call routing: page the secondary after 10 minutes",
        "base image bump for all platform services", "autoscaling on request rate", "CI: short-lived "
        "credentials instead of static keys", "synthetic checks for /v2/invoices and /v2/charges",
        "metrics retention: 15 days raw, 13 months downsampled", "event bus: rebalance partitions on "
        "deploy", "runbook: restore one table from a backup", "zone evacuation runbook as a checklist",
        "CI runners on the new machine type", "dashboards as code for platform services",
        "load test scenario for the event bus", "status page component per service",
    ],
    "dave": [
        "design system: button variants and sizes", "visible focus rings everywhere", "address "
        "autocomplete on checkout", "invoice list filters with chips", "saved filters", "onboarding wizard, "
        "step 1 and 2", "component gallery pages for form fields", "empty states for the invoice list",
        "settings page layout refresh", "invoice detail on small screens", "new icon set", "replace the "
        "date picker", "lazy-load the dashboard charts", "skeleton loaders for the dashboard", "receipt "
        "page redesign with print styles", "locale switcher in the footer",
    ],
    "grace": [
        "reminder emails for overdue invoices", "reminder opt-out per customer", "currency-rates cache "
        "with a 1h refresh", "fallback to yesterday's rates when the provider is down", "admin audit log "
        "API", "filters on the audit log", "invoice search endpoint", "fix the flaky "
        "test_ledger_balance_rollover", "retry PDF generation up to 3 times", "metrics for reminder emails",
        "customer portal: invoice download as PDF",
    ],
    "erin": [
        "MFA required for admin panel logins", "dependency scanning in CI for every repo", "SBOM export in "
        "CycloneDX format", "admin panel access logging", "SSO for the internal dashboards", "security "
        "headers on the marketing site",
    ],
}

# Minor services (the scripted threads own the big ones' version numbers), their first version and
# what their deploys change (each deploy names one or two of these).
DEPLOY_CHANGES: dict[str, tuple[tuple[int, int, int], list[str]]] = {
    "media-proxy": ((0, 31, 0), [
        "webp thumbnails for avatars", "empty content-type on HEAD requests fixed", "smaller default "
        "thumbnail quality", "graceful shutdown waits for in-flight fetches", "image size limit raised to "
        "25 MB", "better error when an upload is not an image", "request ids in the access log",
        "cache headers per content type",
        "a metric for fetch duration per source",
        "HTTP/2 to the storage backend",
    ]),
    "toggles-svc": ((1, 8, 0), [
        "audit trail for flag changes", "flag owners shown in the admin UI", "faster flag evaluation "
        "cache", "stale flag report", "bulk archive of old flags", "the SDK retries on 503",
        "flag evaluation logs sampled at 1%",
        "a read-only role for support",
        "flag descriptions required on create",
    ]),
    "webhook-sender": ((2, 3, 0), [
        "exponential backoff capped at 1h", "per-endpoint concurrency limit", "delivery attempts "
        "visible in the admin panel", "disable endpoints after 5 days of failures", "smaller payloads for "
        "invoice.updated", "signature header documented in responses",
        "a dead-letter view in the admin panel",
        "retry jitter",
        "TLS 1.3 for outgoing deliveries",
    ]),
    "tax-service": ((0, 14, 0), [
        "VAT number validation cache", "new reduced rates for two countries", "timeouts on the VAT "
        "validation API lowered to 3s", "rounding per line item instead of per invoice", "tax ids "
        "normalised before lookup",
        "a rate table versioning endpoint",
        "metrics per country",
        "a clearer error for unknown regions",
    ]),
    "pdf-renderer": ((3, 2, 0), [
        "fonts loaded from disk", "memory limit per render", "page numbers on long invoices", "faster "
        "table layout", "right-to-left text support", "PDF/A output for archive copies",
        "a render queue priority for receipts",
        "smaller fonts subset in the output",
        "timeouts per page instead of per document",
    ]),
    "currency-rates": ((1, 0, 0), [
        "1h cache for rates", "fallback to the previous day", "new provider endpoint", "rates history "
        "endpoint", "metrics for provider latency",
        "rates rounded to 6 decimals",
        "an admin endpoint to pin a rate",
        "a stale-rate warning header",
    ]),
    "ledger-archiver": ((0, 4, 0), [
        "dry-run mode", "archive manifest checksums", "restore command", "parallel archive of months",
        "resumable archives",
        "a progress metric",
        "archive size report",
    ]),
}

# (short label for the handoff, what fired, how it ended, the follow-up ticket): {n} and {m} are small
# numbers, {host} a host name, {svc} a service.
ALERTS: list[tuple[str, str, list[str], str]] = [
    ("memory pressure", "memory pressure on worker pool b ({n}% of node memory)",
     ["a pdf-renderer pod without a memory limit. limit set, pressure gone",
      "the nightly batch landed on pool b instead of pool c, rescheduled"],
     "memory limits audit for every deployment"),
    ("media-proxy 5xx", "5xx rate on media-proxy at {n}.{m}% for 5 min",
     ["a crawler requesting thumbnails for deleted uploads. 404 now instead of 502",
      "one pod stuck after the node drain, deleted it, back to normal"],
     "return 404 for deleted uploads without touching storage"),
    ("tax-service timeouts", "tax-service timeouts to the VAT validation API",
     ["their API had a {n} minute blip, our cache covered most lookups",
      "provider status page confirms a partial outage, nothing to do on our side"],
     "longer cache for VAT validation results"),
    ("pdf-renderer OOM", "pdf-renderer OOMKilled {n} times in 10 min",
     ["a 900-page invoice from one customer. render limit per document added to the backlog",
      "memory limit was still the old 512 MB on one deployment, bumped to 1 GB"],
     "a page limit per rendered document"),
    ("webhook retries", "webhook-sender retry queue above {n}k",
     ["one partner endpoint returning 500 for everything. it's on their side, deliveries will retry",
      "a partner moved their endpoint without telling us. disabled it and emailed their admin"],
     "auto-disable endpoints that fail for 24h"),
    ("currency-rates CPU", "CPU throttling on currency-rates",
     ["CPU limit was 100m, way too low after the cache change. set to 500m",
      "a retry loop against the provider during their maintenance window, stopped by itself"],
     "right-size CPU requests after the cache change"),
    ("synthetic login check", "synthetic login check failed {n} times in a row",
     ["the check's test account password had expired. rotated it, check green",
      "the synthetic runner in one region lost its network for a few minutes, not us"],
     "an expiry alert for the synthetic test account"),
    ("late backup", "nightly backup job finished {n} minutes late",
     ["the backup overlapped with the node upgrade. fine, just slower",
      "snapshot throttling on the storage side, within the SLA"],
     "move the backup window away from maintenance"),
    ("429s for one key", "elevated 429s for one API key ({n}k in 10 min)",
     ["a customer's sync script in a tight loop. frank emailed them, it stopped",
      "an integration partner backfilling a year of invoices. raised their limit for the day"],
     "a rate-limit email to the account owner"),
    ("DNS errors", "DNS resolution errors from {host}",
     ["the node's resolver cache was wedged, cordoned and replaced the node",
      "transient, {n} errors total, nothing since"],
     "node-local DNS cache"),
    ("LB health checks", "load balancer health checks flapping for {svc}",
     ["the health endpoint did a database call and timed out under load, made it static",
      "a slow rolling restart, resolved once all pods were ready"],
     "a health endpoint that never touches the database"),
    ("missed cron", "cron `invoice-reminders` missed its schedule",
     ["the scheduler pod was evicted during the node drain, job ran {n} minutes late",
      "the job overlapped with its previous run and skipped, as designed"],
     "a PodDisruptionBudget for the scheduler"),
    ("consumer lag", "event bus consumer lag on `invoices.updated` at {n}k",
     ["report-builder consumer redeploying, caught up within {m} minutes",
      "a slow partition after the rebalance, recovered by itself"],
     "lag alert per consumer group instead of per topic"),
    ("storage latency", "object storage latency p99 above {n}s",
     ["provider-side, their status page has it, resolved after {m} minutes",
      "one bucket with millions of tiny objects listed by a debug script. stopped it"],
     "list uploads by prefix in the debug script"),
    ("error budget burn", "error budget burn on the public API ({n}% of the monthly budget in 1h)",
     ["one customer's malformed requests counted as 5xx instead of 4xx. fixed the status code",
      "a short burst during the train deploy, no customer reports"],
     "map validation errors to 4xx everywhere"),
    ("CT monitor", "certificate transparency monitor: new cert for a marketing subdomain",
     ["expected, the marketing team moved their landing pages. confirmed with them",
      "issued by our own ACME account for the new docs site, all good"],
     "a list of expected certificate issuers"),
    ("outbound traffic", "high outbound traffic from {host}",
     ["the monthly report export for a large customer. expected",
      "a misconfigured log shipper resending the same files, fixed the checkpoint"],
     "checkpoint the log shipper on disk"),
]

# (question, answer): things people ask in #engineering and get a straight answer to.
QUESTIONS: list[tuple[str, str]] = [
    ("where do we configure the invoice reminder schedule?", "config/billing.toml, section [reminders]. "
     "per-account overrides live in the admin panel"),
    ("is there a way to replay a webhook for one customer?", "admin panel → webhooks → deliveries, there's "
     "a 'resend' button per delivery. for bulk, the `webhooks replay --since` CLI"),
    ("what's the rule for naming feature flags again?", "team_feature_yyyymm, e.g. billing_dunning_v2_202609, "
     "and an owner + removal date in toggles-svc"),
    ("how do I get a prod-like dataset locally?", "`make seed SIZE=large` gives you 500k invoices. never "
     "copy real customer data down"),
    ("which timezone do invoice dates use?", "the account's billing timezone, stored on the account. the API "
     "returns UTC timestamps plus that zone"),
    ("anyone know why staging emails go nowhere?", "staging sends everything to the mail catcher, open "
     "mail.staging.internal to read them"),
    ("do we have a style guide for API error messages?", "docs/api-errors.md: a stable code, a sentence for "
     "humans, and never internal details"),
    ("how long do we keep deleted invoices?", "soft-deleted for 30 days, then hard-deleted by the nightly "
     "job. drafts only, finalized invoices can't be deleted"),
    ("can I run the integration tests without docker?", "only the unit ones. the integration suite needs "
     "the compose stack for postgres and the fake Paynova"),
    ("what's our browser support policy?", "last 2 versions of the evergreen browsers, no IE, Safari back to "
     "the previous major"),
    ("who can approve a terraform change in prod?", "anyone on platform, plus a second reviewer for "
     "anything touching networking or IAM"),
    ("where are the API docs generated from?", "the OpenAPI spec in api/openapi.yaml, built on every merge "
     "to main"),
    ("is there a dashboard for webhook delivery rates?", "yes, 'Webhooks overview' in the platform folder. "
     "success rate per partner endpoint is the second row"),
    ("how do I add a new currency?", "the ISO table in the ledger library covers it; you only need to enable "
     "it per account and check tax-service supports the country"),
    ("what's the max size of a CSV import?", "50 MB or 200k rows, whichever comes first. bigger files go "
     "through support"),
    ("do we squash merge or rebase?", "squash, with the PR title as the commit message. keep titles in the "
     "imperative"),
    ("where do I find the coupon codes marketing created?", "admin panel → coupons, filter by 'created by "
     "marketing'. or ask frank, he knows all of them by heart"),
    ("how do we version the internal events?", "a `schema_version` field on each event; consumers must "
     "ignore unknown fields"),
    ("is there a linter rule against print statements?", "yes, T201 in the ruff config. use the logger"),
    ("what's the password for the staging admin?", "there isn't one: staging admin uses SSO like prod. "
     "ask alice if your account is missing the role"),
    ("how do I trigger the nightly jobs by hand in staging?", "`jobs run NAME --env staging`. the list is in "
     "`jobs list`"),
    ("do we have a template for design docs?", "docs/templates/design-doc.md: context, options, decision, "
     "rollout. keep it under 3 pages"),
    ("why does the admin panel log me out every hour?", "session lifetime is 1h for admins by design, it's "
     "in the security policy"),
    ("who owns the marketing site?", "the marketing team and their agency, we only host it. tickets go to "
     "the web-requests board"),
    ("is there a sandbox for Paynova?", "yes, test mode keys are in the vault under paynova/test. never "
     "use the live ones locally"),
    ("how do I mute a noisy alert for a few hours?", "silence it in the alerting UI with a reason and an "
     "expiry, and mention it in #ops"),
    ("can someone explain how coupons stack?", "they don't: one coupon per invoice, the best one wins. "
     "yearly discounts apply first"),
]
