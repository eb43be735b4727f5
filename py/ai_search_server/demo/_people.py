"""Hiring, onboarding, the platform-team reorg, on-call and team life.

Facts the judgments rely on: candidate SRE-14 (hired at level 3), FE-09 (no hire as senior), the Q1
headcount (2 backend + the SRE), grace's first weeks (make bootstrap, stale postmaster.pid, LARK-2231),
the service ownership map, bob leading the new platform team, on-call compensation, the October offsite
and the November potluck.
"""

from __future__ import annotations

from ._script import Thread, thread

__all__ = ["PEOPLE_THREADS"]

PEOPLE_THREADS: list[Thread] = [
    thread(
        "sre-role-open",
        "general",
        90,
        "10:30",
        (
            "alice",
            "we're opening an SRE role on bob's team. if you know someone who enjoys databases and "
            "calm on-call shifts, send them my way. referrals get the usual bonus",
        ),
        ("bob", "the job description is in the careers page draft. hybrid, 2 office days a week"),
    ),
    thread(
        "sre14-debrief",
        "hiring-committee",
        63,
        "15:30",
        ("alice", "debrief for candidate SRE-14 (SRE, on-site on Friday). scores first, then discussion"),
        (
            "bob",
            "strong hire. the debugging exercise was the best I've seen this year: found the bad DNS TTL "
            "in under 10 minutes and explained why the retries made it worse",
        ),
        (
            "dave",
            "hire. the collaboration interview went well, good questions about on-call load. a bit weak "
            "on networking fundamentals (couldn't explain TCP keepalives vs application heartbeats) but "
            "that's teachable",
        ),
        (
            "alice",
            "my notes match. one concern: SRE-14 wants fully remote and the platform team is hybrid. I "
            "think we can make an exception",
        ),
        ("bob", "level 3 feels right, maybe 4 after the first review cycle"),
        (
            "alice",
            "offer approved at level 3 with a level review after 6 months. the recruiter sends it today",
            "+1d@10:00",
        ),
        ("alice", "SRE-14 accepted! starts Monday Jan 11 on the platform team", "+8d@16:20"),
    ),
    thread(
        "fe09-debrief",
        "hiring-committee",
        14,
        "16:00",
        ("alice", "FE-09 debrief (senior frontend). dave, you reviewed the take-home"),
        (
            "dave",
            "the take-home was very good: accessible markup, tests, clean state handling. but the system "
            "design interview was weak: no idea how to cache the product catalog, kept reaching for a "
            "global store",
        ),
        ("bob", "no hire from me, same reason. a senior has to be able to own checkout-web's architecture"),
        ("alice", "agreed: no hire at senior. would we consider mid-level?"),
        ("dave", "I would, honestly. the code quality was there"),
        (
            "alice",
            "ok, I'll ask the recruiter whether FE-09 is open to a mid-level offer. dave, please write "
            "the feedback and be specific about the system design part",
        ),
    ),
    thread(
        "q1-headcount",
        "hiring-committee",
        10,
        "14:00",
        (
            "alice",
            "Q1 headcount approved: 2 backend engineers (billing and ledger). SRE-14 counts against this "
            "year's budget, not Q1",
        ),
        ("bob", "and the data engineer we talked about?"),
        ("alice", "not approved, pushed to Q2. finance wants to see the infra cost trend first"),
        ("dave", "is the referral bonus still 3k?"),
        ("alice", "yes, 3k once the new hire has been here 3 months"),
        ("bob", "I'll post the backend roles in #general so people can refer"),
    ),
    thread(
        "backend-roles",
        "general",
        7,
        "11:15",
        (
            "bob",
            "we're hiring 2 backend engineers for billing and the ledger, starting in Q1. if you know "
            "someone good, refer them, the referral bonus applies. descriptions are on the careers page",
        ),
        ("grace", "a former teammate of mine has done payments for years, sending her the link"),
        ("frank", "shared it with two people from my old job too"),
    ),
    thread(
        "welcome-grace",
        "general",
        56,
        "09:15",
        (
            "alice",
            "please welcome grace 👋 she joins today as a backend engineer on billing. carol is her "
            "onboarding buddy",
        ),
        ("grace", "hi all! excited to be here. I did payments backends before, so billing feels like home"),
        ("frank", "welcome grace! ping me whenever you want to hear what customers complain about 😄"),
        ("dave", "welcome! Thursday's lunch is on the team"),
        ("bob", "welcome aboard, grace!"),
    ),
    thread(
        "dev-setup",
        "onboarding",
        56,
        "11:00",
        (
            "carol",
            "grace: the setup guide is docs/dev-setup.md. short version: install docker and give it at "
            "least 8 GB of RAM, clone the monorepo, run `make bootstrap`, then `make seed` for test "
            "data",
        ),
        (
            "grace",
            "`make bootstrap` fails at the ledger step: `pg_ctl: could not start server` and before that "
            '`lock file "postmaster.pid" already exists`',
            "+1h",
        ),
        (
            "carol",
            "known one: an earlier run left the pid file in .data/pg. `rm .data/pg/postmaster.pid` and "
            "run it again. bootstrap should really clean that up itself",
        ),
        ("grace", "that worked. `make seed` loads 20k fake invoices, took 4 minutes"),
        (
            "carol",
            "perfect. next: request VPN access through the IT form, and read-only access to staging. "
            "read-only prod access needs 30 days and alice's approval",
        ),
        ("alice", "approving staging today"),
        (
            "grace",
            "PR #5177: make bootstrap now deletes a stale postmaster.pid when no postgres is running. my "
            "first PR 🎉",
            "+1d@10:20",
        ),
    ),
    thread(
        "first-ticket",
        "carol__grace",
        55,
        "14:00",
        (
            "carol",
            "for your first real ticket I picked LARK-2231: cursor pagination for GET /v2/invoices. small "
            "enough, and it touches the API, the ledger queries and the docs",
        ),
        ("grace", "sounds good. it's offset pagination today, right? what's wrong with it?"),
        (
            "carol",
            "offsets get slow for the big customers (page 400 of a 90M row table…) and skip rows when new "
            "invoices arrive while you page. a cursor on (created_at, id) fixes both",
        ),
        ("grace", "makes sense. should the cursor be opaque?"),
        ("carol", "yes: base64 of the two values, and the docs never promise its format"),
        (
            "grace",
            "LARK-2231 PR is up (#5203). it needs the index we talked about before we can turn it on "
            "for the largest accounts",
            "+3d@16:00",
        ),
        ("carol", "reviewing tomorrow morning. lovely tests"),
    ),
    thread(
        "ownership-map",
        "onboarding",
        40,
        "15:20",
        (
            "carol",
            "updated the service ownership map (docs/ownership.md): billing-api and the ledger library → "
            "billing (carol, grace); checkout-web and the design system → dave; auth-gateway, "
            "notification-worker, search-indexer, media-proxy → platform (bob); report-builder stays "
            "with billing until Q1, then moves to data",
        ),
        ("grace", "exactly what I was missing, thank you"),
        ("alice", "I linked it from the onboarding checklist"),
    ),
    thread(
        "grace-checkin",
        "alice__grace",
        42,
        "15:00",
        ("alice", "how are the first two weeks going? anything confusing or blocking?"),
        (
            "grace",
            "mostly great. the hardest part is knowing which service owns what: billing-api vs the "
            "ledger vs report-builder",
        ),
        ("alice", "fair. carol drew an ownership map last year, I'll ask her to update it. anything else?"),
        ("grace", "I'd like to join the on-call rotation eventually, maybe shadowing first?"),
        ("alice", "yes: shadow bob for one week in November, then join the rotation in January"),
    ),
    thread(
        "platform-dm",
        "alice__bob",
        38,
        "11:00",
        ("alice", "do you have 20 minutes today? I want to talk about the platform team idea"),
        (
            "bob",
            "thanks for the chat. yes, I'd like to lead it. one condition: we hire a second SRE before I "
            "stop being primary on-call",
            "+4h",
        ),
        ("alice", "fair. SRE-14 starts in January and I'll push for one more in Q2. announcement on {d+10}"),
    ),
    thread(
        "platform-leadership",
        "leadership",
        32,
        "17:00",
        (
            "alice",
            "heads-up before Monday's announcement: we're splitting a platform team out of engineering, "
            "led by bob. it owns auth-gateway, notification-worker, search-indexer, media-proxy, the "
            "databases and the on-call tooling",
        ),
        ("frank", "makes sense. who's support's escalation contact for platform issues?"),
        ("alice", "bob for platform, carol for billing, dave for checkout. I'll publish the list"),
        ("erin", "does security stay separate?"),
        ("alice", "yes, you keep reporting to me. the platform team gets a security champion (bob)"),
    ),
    thread(
        "platform-announcement",
        "general",
        28,
        "10:00",
        (
            "alice",
            "org update: from today we have a platform team, led by bob. it owns auth-gateway, "
            "notification-worker, search-indexer, media-proxy, the databases and the on-call tooling. "
            "escalations for those go to bob",
        ),
        ("carol", "congrats bob! 🎉"),
        ("frank", "updated the support escalation matrix accordingly"),
    ),
    thread(
        "oncall-rotation",
        "engineering",
        25,
        "15:00",
        (
            "bob",
            "the new on-call rotation starts Monday: weekly shifts, handoff Mondays at 10:00 UTC, a primary "
            "and a secondary. the rota is in the on-call calendar",
        ),
        ("carol", "and compensation?"),
        (
            "alice",
            "approved yesterday: a fixed weekly on-call stipend, plus a day off after any night page "
            "that takes more than an hour",
        ),
        ("grace", "I'm shadowing bob the week of {d+11}"),
        ("dave", "does frontend join? checkout-web pages happen too"),
        ("bob", "secondary only for now, so nobody is alone with a database failover at 3am"),
    ),
    thread(
        "offsite-plan",
        "random",
        66,
        "12:40",
        (
            "dave",
            "offsite poll results: the lake cabins won (9 votes) over the city hotel (4). {d+20}–{d+21}",
        ),
        ("frank", "is there a plan B if it rains? last year's kayak disaster still haunts me"),
        ("alice", "the cabins have a big common room with a projector, board games and a sauna"),
        ("bob", "I'm bringing the train-building board game, 5 players max though"),
        ("carol", "I'll collect dietary needs in a form, deadline Friday"),
    ),
    thread(
        "offsite-after",
        "random",
        42,
        "09:05",
        ("frank", "offsite photos are in the shared album. the sunrise one from the dock is ridiculous"),
        ("dave", "my legs still hurt from the ridge hike. 14 km was not 'easy'"),
        ("grace", "best first-month event ever, thank you all"),
        (
            "alice",
            "notes from the retro session are in the wiki. top 3: fewer meetings on Wednesdays, on-call "
            "compensation, a proper design review slot",
        ),
    ),
    thread(
        "design-review-slot",
        "design",
        41,
        "10:10",
        (
            "alice",
            "from the offsite retro: design reviews every Tuesday 15:00 UTC, 30 minutes, proposals "
            "shared 24h before. first one next week",
        ),
        ("dave", "finally. I'll bring the dark mode tokens as the first topic"),
        ("carol", "can API design proposals use the slot too?"),
        ("alice", "yes, anything user-facing, API included"),
    ),
    thread(
        "potluck",
        "random",
        6,
        "11:30",
        (
            "carol",
            "potluck on Thursday 12:30 in the big room! sign-up sheet is pinned. so far 3 desserts and "
            "zero mains 😅",
        ),
        ("bob", "chili, one vegetarian pot and one not"),
        ("grace", "dumplings from my grandma's recipe, about 60 of them"),
        ("dave", "a big salad, so there's something green"),
        ("frank", "my lemon bars, obviously"),
        ("erin", "the dumplings were gone in 6 minutes, grace that's a record", "+2d@14:10"),
        ("grace", "next time I make 100"),
    ),
    thread(
        "book-club",
        "random",
        76,
        "16:45",
        ("erin", "book club: this month it's the generation-ship novel, we meet on the 30th after work"),
        ("dave", "is it too late to join?"),
        ("erin", "never too late, the first 100 pages are enough to argue about"),
        ("carol", "I'm in, half way through already"),
    ),
]
