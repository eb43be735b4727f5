"""What makes the demo's scripted conversations look like a real Rocket.Chat workspace's: which ones
are threads, and the files, edits, reactions and pins on their messages.

A threaded conversation keeps its first message in the room and every later turn as a reply in its
thread (``tmid`` = the first message's id); the others stay inline, as chat is. Incidents, support
escalations, releases, hiring debriefs, security reviews and the longer engineering proposals are
threads; DMs, #ops chatter and announcements are not. Everything is keyed by the scripted ids
(``demo-<thread>-<NN>``), so it holds whatever the seed.
"""

from __future__ import annotations

__all__ = ["DEMO_EDITED_MINUTES", "DEMO_FILES", "DEMO_PINNED", "DEMO_REACTIONS", "is_threaded"]

# Rooms where every scripted conversation is a thread.
_THREADED_ROOMS = frozenset(
    {"incidents", "support-escalations", "releases", "hiring-committee", "security-review"}
)
# Conversations in other rooms that are threads too.
_THREADED_KEYS = frozenset(
    {
        "pg-postmortem",
        "release-train",
        "monorepo",
        "api-versioning",
        "report-queue",
        "error-budget",
        "tracing",
        "expand-contract",
        "cloud-bill",
        "dark-mode",
        "dev-setup",
    }
)


def is_threaded(key: str, room: str) -> bool:
    return room in _THREADED_ROOMS or key in _THREADED_KEYS


def _file(name: str, type_: str, size: int, title: str = "", description: str = "") -> dict[str, object]:
    return {"name": name, "title": title, "description": description, "type": type_, "size": size}


# Files posted with a message: what Rocket.Chat keeps of an upload (no bytes).
DEMO_FILES: dict[str, list[dict[str, object]]] = {
    "demo-pg-failover-02": [
        _file("patroni-failover-timeline.png", "image/png", 184_322, "patroni: failed checks until promotion")
    ],
    "demo-pg-failover-12": [
        _file(
            "pgbouncer.ini",
            "text/plain",
            1_204,
            "ledger pool settings",
            "server_lifetime 300, tcp_keepidle 30, server_check_query on checkout",
        )
    ],
    "demo-pg-postmortem-01": [
        _file(
            "2026-09-17-ledger-db-failover-postmortem.pdf",
            "application/pdf",
            412_880,
            "ledger-db failover postmortem",
        )
    ],
    "demo-checkout-latency-03": [
        _file("grafana-quotes-p99.png", "image/png", 96_113, "billing-api /v2/quotes p99 and cache hit ratio")
    ],
    "demo-billing-2140-plan-01": [
        _file("billing-api-v2.14.0-release-plan.md", "text/markdown", 5_310, "v2.14.0 release plan")
    ],
    "demo-dev-setup-01": [_file("dev-setup.md", "text/markdown", 8_912, "developer setup guide")],
    "demo-olivetree-export-01": [
        _file(
            "olivetree-export-504.har", "application/json", 2_331_004, "browser capture of the failing export"
        )
    ],
    "demo-cloud-bill-01": [
        _file(
            "cloud-bill-2026-09.csv",
            "text/csv",
            61_440,
            "September cloud bill by service",
            "egress, compute and storage per service, July to September",
        )
    ],
    "demo-pentest-01": [
        _file(
            "pentest-report-2026-q3.pdf", "application/pdf", 1_830_112, "external penetration test report, Q3"
        )
    ],
    "demo-dark-mode-01": [
        _file("dark-mode-tokens.png", "image/png", 744_201, "semantic color tokens, light and dark")
    ],
    "demo-load-test-01": [
        _file("k6-billing-api-3x-peak.html", "text/html", 288_765, "load test report: billing-api at 3x peak")
    ],
}

# Messages edited after posting (a typo fixed, a date corrected): minutes after they were posted.
DEMO_EDITED_MINUTES: dict[str, int] = {
    "demo-billing-2140-plan-01": 22,
    "demo-code-freeze-01": 8,
    "demo-oncall-rotation-01": 41,
    "demo-pg-postmortem-02": 95,
    "demo-pentest-07": 12,
    "demo-welcome-grace-01": 3,
}

# Reactions: emoji -> who (members of the room only).
DEMO_REACTIONS: dict[str, dict[str, list[str]]] = {
    "demo-welcome-grace-01": {":wave:": ["alice", "bob", "carol", "dave", "erin", "frank"]},
    "demo-platform-announcement-01": {
        ":tada:": ["carol", "dave", "erin", "frank", "grace"],
        ":rocket:": ["carol"],
    },
    "demo-code-freeze-01": {":+1:": ["bob", "carol", "dave"]},
    "demo-pg-failover-08": {":white_check_mark:": ["alice", "bob"]},
    "demo-pentest-08": {":lock:": ["alice"]},
    "demo-kestrel-renewal-01": {":tada:": ["alice", "erin"]},
}

# Pinned messages: what a team keeps at hand.
DEMO_PINNED = frozenset(
    {
        "demo-code-freeze-01",
        "demo-oncall-rotation-01",
        "demo-dev-setup-01",
        "demo-status-page-01",
        "demo-pg-postmortem-01",
    }
)
