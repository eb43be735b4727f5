"""The demo workspace: seven people, eighteen rooms and three months of a small engineering team's chat.

``ai-search serve --demo`` loads it into an empty data dir, so search has something true to find::

    from ai_search_server.demo import DEMO_USERS, generate_demo_messages

    rows = generate_demo_messages()          # list of import rows, oldest first
    rows[0]   # {"id": "demo-…", "room": "general", "room_type": "c", "user": "alice",
              #  "ts": "2026-08-24T…Z", "text": "…", "members": ["alice", …]}

Everything is made up (people, company "Larkspur", customers, services), deterministic for a seed
(``random.Random``), standard library only. The rows are what ``ai-search import FILE.jsonl`` reads;
``python -m ai_search_server.demo > demo.jsonl`` writes them as JSON lines.

People (password ``demo-<username>``): alice (admin, engineering manager), bob (SRE, platform lead),
carol (billing backend), dave (frontend/design), erin (security), frank (customer success), grace
(backend, joined on day 56 before ``now``: no message of hers is older).

Rooms: public ``general``, ``random`` (everyone), ``engineering``, ``ops``, ``incidents``, ``releases``,
``design``, ``support-escalations``, ``onboarding``; private ``leadership`` (alice, erin, frank),
``hiring-committee`` (alice, bob, dave), ``security-review`` (alice, erin); direct messages named after
their two members, sorted and joined by ``__``: ``alice__bob``, ``alice__erin``, ``alice__grace``,
``bob__carol``, ``carol__grace``, ``dave__frank``. Public rooms still have members: search reads only
the rooms a person is subscribed to.

Scoping showcase (the same query, different results because of rooms):

- "postgres failover": bob sees the live incident in #incidents (pg-ledger-01 → pg-ledger-02,
  ERR_CONN_RESET), the game day in #ops and his DM with carol; grace and dave only see the postmortem
  summary in #engineering.
- "SRE candidate offer": alice, bob and dave see the SRE-14 debrief in #hiring-committee; frank and
  grace only see the public job posts in #general.
- "SSRF in media-proxy": erin and alice see the pentest findings in #security-review; carol only sees
  erin's heads-up in #engineering that media-proxy will refuse URLs outside an allowlist; frank nothing.
- "who leads the platform team": alice sees it first in her DM with bob and in #leadership; everyone
  else learns it from the announcement in #general.
- "duplicate charges refund": frank, carol, bob and alice see Bramblecrest's escalation in
  #support-escalations; dave and grace do not.

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
