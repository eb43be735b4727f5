"""The security review: pentest findings, a leaked test key and a vulnerable XML parser.

Most of it lives in the private #security-review (alice and erin only); #engineering only gets a
heads-up that media-proxy will refuse URLs outside an allowlist. Facts the judgments rely on: SSRF in
media-proxy (critical), IDOR on GET /v2/invoices/:id and no rate limit on password reset (high), the
Paynova test key in CI job #88412, the XXE fix in report-builder v1.12.3.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["SECURITY_THREADS"]

SECURITY_THREADS: list[Thread] = [
    thread(
        "pentest",
        "security-review",
        32,
        "11:00",
        ("erin", "the external pentest report is in. summary: 1 critical, 2 high, 3 medium, 5 low"),
        (
            "erin",
            "critical: SSRF in media-proxy. the thumbnail endpoint fetches any URL it's given, including "
            "http://169.254.169.254/ (the metadata endpoint) and our internal services",
        ),
        (
            "erin",
            "high: IDOR on GET /v2/invoices/:id. invoice ids are sequential and the handler checks the "
            "token but not that the invoice belongs to the caller's account. second high: no rate limit "
            "on password reset",
        ),
        ("alice", "ugh. the IDOR is the one that scares me. any sign it was exploited?"),
        (
            "erin",
            "went through 90 days of access logs: no cross-account invoice reads except the pentesters' "
            "own test accounts. the ids are guessable though",
        ),
        (
            "alice",
            "deadlines: the critical in 7 days, the highs in 30 days like the OKR says. who do you need?",
        ),
        (
            "erin",
            "bob for media-proxy (allowlist, and refuse private ranges after DNS resolution), carol for "
            "the IDOR. I'll do the rate limit myself",
        ),
        (
            "erin",
            "SSRF fixed: media-proxy only fetches from the uploads bucket and the CDN hosts, resolves DNS "
            "first and refuses private, loopback and link-local addresses. the pentesters re-tested: "
            "closed",
            "+6d@15:30",
        ),
        (
            "erin",
            "IDOR fixed (the account check now lives in the invoice repository, not the handler) and "
            "password reset is limited to 5/hour per account and 20/hour per IP. all highs closed within "
            "30 days ✅",
            "+7d@10:00",
        ),
    ),
    thread(
        "idor-disclosure-dm",
        "alice__erin",
        31,
        "17:30",
        (
            "erin",
            "do we tell customers about the IDOR? no evidence anyone used it, but it was there for at "
            "least a year",
        ),
        (
            "alice",
            "let's ask legal on Monday. my instinct: no individual notices since no data was accessed, "
            "but an entry in the security page changelog once it's fixed",
        ),
        ("erin", "ok, I'll draft the wording"),
        ("alice", "legal agrees: changelog entry, no individual notices. thanks for drafting", "+3d@12:15"),
    ),
    thread(
        "media-proxy-heads-up",
        "engineering",
        28,
        "10:00",
        (
            "erin",
            "heads-up: from Wednesday media-proxy refuses to fetch URLs outside an allowlist (the uploads "
            "bucket and the CDN). if you rely on it for anything else, tell me today",
        ),
        ("carol", "report-builder fetches customer logos through media-proxy from their websites 😬"),
        (
            "erin",
            "ok, logos get their own path: fetched once at upload time and stored in the bucket. I'll "
            "pair with you on it",
        ),
    ),
    thread(
        "ci-key-leak",
        "security-review",
        80,
        "09:20",
        (
            "erin",
            "found a Paynova test-mode secret key printed in the CI logs of the billing-api integration "
            "tests (job #88412). the logs are visible to everyone in the org, not public",
        ),
        ("alice", "test mode only? can it move money?"),
        ("erin", "test mode only, no real money. rotating it anyway and purging the job logs"),
        (
            "erin",
            "rotated. and CI output now goes through secret scanning: the job fails if a known key "
            "pattern shows up in the logs",
            "+40m",
        ),
        ("alice", "thanks. put it in the monthly security summary"),
    ),
    thread(
        "xxe-parser",
        "security-review",
        19,
        "13:10",
        (
            "erin",
            "dependency alert: the XML library report-builder uses for bank statement imports (v2.3.1) "
            "has an XXE issue, fixed in v2.3.4. we parse customer-uploaded files with it",
        ),
        ("alice", "exploitable in our setup?"),
        (
            "erin",
            "we never disable external entities explicitly, so in theory yes. upgrading and setting "
            "resolve_entities=False explicitly",
        ),
        (
            "erin",
            "report-builder v1.12.3 deployed with the patched parser, plus a regression test with an "
            "external entity payload",
            "+3h",
        ),
    ),
    thread(
        "access-review",
        "security-review",
        47,
        "16:00",
        (
            "erin",
            "quarterly access review done: 3 ex-contractor accounts still had staging access, removed. "
            "2 people had prod write access they haven't used in 90 days, downgraded to read-only",
        ),
        ("alice", "thanks. can we automate the 90-day check?"),
        ("erin", "yes, a weekly report of unused privileged grants goes to me from next week"),
    ),
]
