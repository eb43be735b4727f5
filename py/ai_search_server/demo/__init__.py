"""The demo workspace: seven people, eighteen rooms and three months of a small engineering team's chat.

``ai-search serve --demo`` loads it into an empty data dir, so search has something true to find::

    from ai_search_server.demo import DEMO_USERS, generate_demo_messages

    rows = generate_demo_messages()          # list of import rows, oldest first
    rows[0]   # {"id": "demo-<room>-0001", "room": "…", "room_type": "c" | "p" | "d", "user": "…",
              #  "ts": "2026-08-24T…Z", "text": "…", "members": [… on the first row of each room]}

Everything is made up (people, company "Larkspur", customers, services), deterministic for a seed
(``random.Random``), standard library only. The rows are what ``ai-search import FILE.jsonl`` reads;
``python -m ai_search_server.demo > demo.jsonl`` writes them as JSON lines.

People (password ``demo-<username>``): alice (admin, engineering manager), bob (SRE, platform lead),
carol (billing backend), dave (frontend/design), erin (security), frank (customer success), grace
(backend, joined 56 days before ``now``: no message of hers is older).

Rooms: public ``general``, ``random`` (everyone), ``engineering``, ``ops``, ``incidents``, ``releases``,
``design``, ``support-escalations``, ``onboarding``; private ``leadership`` (alice, erin, frank),
``hiring-committee`` (alice, bob, dave), ``security-review`` (alice, erin); direct messages named after
their two members, sorted and joined by ``__``: ``alice__bob``, ``alice__erin``, ``alice__grace``,
``bob__carol``, ``carol__grace``, ``dave__frank``. Public rooms still have members: search reads only
the rooms a person is subscribed to.

Scoping showcase (the same query, different results because of rooms; judged in the bench file):

- "postgres failover": bob sees the live incident in #incidents (pg-ledger-01 -> pg-ledger-02,
  ERR_CONN_RESET), the game day in #ops and his DM with carol; grace and dave only see the postmortem
  in #engineering (q01 vs q02).
- "did we make an offer to the SRE candidate": alice, bob and dave see the SRE-14 debrief in
  #hiring-committee; frank and grace only see the public job post in #general (q14 vs q15).
- "SSRF media-proxy": erin and alice see the pentest findings in #security-review; carol only sees
  erin's heads-up in #engineering that media-proxy will refuse URLs outside an allowlist; frank sees
  nothing (q23 vs q24).
- "who is leading the new platform team": alice knew first (her DM with bob, then #leadership); frank
  has #leadership and #general; grace only the #general announcement and the ownership map (q21, q22).
- "Bramblecrest refund": frank, carol, bob and alice see the duplicate-charges escalation in
  #support-escalations; dave and grace see nothing of it.

The judged queries built on these facts are in ``bench/relevance_judgments.json``.
"""

from __future__ import annotations

from ._generate import DEFAULT_DEMO_NOW, DEFAULT_DEMO_SEED, DEMO_SPAN_DAYS, generate_demo_messages
from ._workspace import DEMO_ROOMS, DEMO_USERS, DemoRoom, DemoUser, direct_room_name, rooms_of

__all__ = [
    "DEFAULT_DEMO_NOW",
    "DEFAULT_DEMO_SEED",
    "DEMO_ROOMS",
    "DEMO_SPAN_DAYS",
    "DEMO_USERS",
    "DemoRoom",
    "DemoUser",
    "direct_room_name",
    "generate_demo_messages",
    "rooms_of",
]
