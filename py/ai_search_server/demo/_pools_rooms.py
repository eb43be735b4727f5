"""Ambient exchanges for the smaller work rooms: announcements, design, onboarding questions, leads'
and recruiters' logistics, and security housekeeping.

Roles: a username speaks as itself; ``A``/``B``/``C`` are distinct room members chosen at random.
``{customer}`` is filled with a made-up customer. None of these touch the topics the relevance
judgments are about.
"""

from __future__ import annotations

from ._pools_social import Snippet

__all__ = [
    "DESIGN_SNIPPETS",
    "GENERAL_SNIPPETS",
    "HIRING_SNIPPETS",
    "LEADERSHIP_SNIPPETS",
    "ONBOARDING_SNIPPETS",
    "SECURITY_SNIPPETS",
]

GENERAL_SNIPPETS: list[Snippet] = [
    (
        (
            "alice",
            "all-hands on thursday at 16:00: Q3 numbers, the roadmap for Q4 and an open Q&A. questions "
            "in advance go in the form",
        ),
    ),
    (
        ("alice", "reminder: the office is closed on friday for the building's electrical maintenance"),
        ("B", "so it's a work-from-home friday, noted"),
    ),
    (
        ("A", "the new benefits portal is live, you have until the end of the month to pick your options"),
        ("B", "is the gym subsidy in there now?"),
        ("A", "yes, under wellbeing"),
    ),
    (
        ("alice", "shoutout to frank's team: customer satisfaction at 94% this month, best in a year"),
        ("B", "👏👏"),
        ("frank", "it's all on the engineers who answer our weird questions"),
    ),
    (
        ("A", "lost and found box by reception is overflowing, please check it before friday"),
        ("B", "that's where my scarf went"),
    ),
    (
        (
            "alice",
            "the engineering blog post about our move to the release train is up, share it if you like",
        ),
        ("B", "great read, the diagram is nice"),
    ),
    (("A", "the kitchen will be renovated next week, use the 2nd floor one in the meantime"),),
    (
        (
            "alice",
            "quarterly feedback cycle opens on monday: self-review plus two peers. two weeks to finish",
        ),
        ("B", "is there a template this time?"),
        ("alice", "same as last quarter, it's in the people wiki"),
    ),
    (("A", "reminder to submit your holiday requests for december before the 15th"),),
    (
        (
            "frank",
            "customer story of the week: {customer} cut their late payments by 40% with the reminder "
            "emails. they sent us a thank-you cake photo",
        ),
        ("B", "cake photos count as revenue"),
    ),
    (("alice", "all-hands recording and slides are in the shared drive for whoever missed it"),),
    (("A", "heads-up: the building will test the fire alarm tomorrow at 10:00, a few short rings"),),
    (
        ("alice", "we passed 2,000 paying accounts this week 🎉 thank you all"),
        ("B", "🎉🎉"),
        ("C", "cake?"),
        ("alice", "cake on friday"),
    ),
    (("A", "IT will replace the meeting room screens on wednesday, rooms 1–3 unavailable in the morning"),),
    (
        ("alice", "new expense policy: meals while travelling no longer need receipts under 25€"),
        ("B", "the most popular policy change in history"),
    ),
    (("A", "the company-wide survey closes on friday, it's anonymous and takes 10 minutes"),),
    (
        (
            "alice",
            "welcome to the new workspace everyone! channels for ops, incidents, releases and design "
            "are set up, please join the ones you need",
        ),
        ("B", "finally, the old one was a mess"),
        ("C", "the channel naming is so much better"),
    ),
    (
        ("A", "the coffee roaster from down the street is doing a tasting in the lounge at 15:00"),
        ("B", "I'll be there"),
    ),
    (("alice", "reminder: monday is a public holiday, no standup, no trains"),),
    (
        ("A", "please don't book the big meeting room for 1:1s, it's the only one for 10+ people"),
        ("B", "sorry, that was me last week"),
    ),
    (
        (
            "alice",
            "the team handbook got a refresh: on-call, time off, expenses and the release process are "
            "all in one place now",
        ),
        ("B", "the search in it actually works now too"),
    ),
    (
        (
            "frank",
            "we're collecting customer quotes for the website, if you've heard something nice from a "
            "customer, send it my way",
        ),
    ),
]

DESIGN_SNIPPETS: list[Snippet] = [
    (
        ("dave", "new icon set preview in the design file, 24px grid, 1.5px stroke"),
        ("B", "the invoice icon looks like a receipt from a supermarket, in a good way"),
    ),
    (
        ("dave", "button radius: 6px or 8px? I have strong feelings and want them confirmed"),
        ("B", "6px, 8px starts to look playful"),
        ("dave", "confirmed, thank you"),
    ),
    (
        ("B", "can we get a loading state for the invoice totals? they jump when the tax arrives"),
        ("dave", "yes, a fixed-width skeleton so nothing jumps"),
    ),
    (
        (
            "dave",
            "usability test results for the invoice list filters: 5 of 6 people found the date filter, "
            "nobody found 'saved filters'",
        ),
        ("B", "put saved filters next to the search box?"),
        ("dave", "trying that in the next round"),
    ),
    (
        ("B", "do we have a rule for how we write dates in the UI?"),
        (
            "dave",
            "'12 Oct 2026' in lists, full date with weekday in detail views, always in the account's locale",
        ),
    ),
    (("dave", "updated the color contrast checklist in the design system docs"), ("B", "bookmarked")),
    (
        ("B", "could the customer list show the outstanding balance as a column?"),
        ("dave", "yes, sortable, and in red only when something is overdue"),
    ),
    (
        ("dave", "the brand team sent the new illustration guidelines, I'll align the empty states"),
        ("B", "do they cover dark backgrounds?"),
        ("dave", "not yet, asked them"),
    ),
    (
        ("dave", "tooltip or inline help text for the tax fields? I lean inline"),
        ("B", "inline, tooltips are invisible on touch screens"),
    ),
    (
        ("B", "the invoice preview is cut off on small laptops"),
        ("dave", "it has a fixed height, I'll make it scale to the viewport"),
    ),
    (
        ("dave", "the illustrations for empty states are in, 6 of them, same line style as the icons"),
        ("B", "the one with the paper plane is adorable"),
    ),
]

ONBOARDING_SNIPPETS: list[Snippet] = [
    (
        ("grace", "where do I find the architecture diagram?"),
        ("A", "docs/architecture.md, the big diagram is slightly outdated but the service boxes are right"),
    ),
    (
        ("grace", "what's the etiquette for PR reviews here, who do I tag?"),
        (
            "A",
            "the owning team from the "
            "CODEOWNERS file gets tagged automatically, add one person you want specifically",
        ),
    ),
    (
        ("grace", "is there a glossary? I keep seeing 'finalize' vs 'issue'"),
        (
            "A",
            "docs/glossary.md. "
            "finalize = the invoice is locked; issue = it's sent to the customer. usually the same moment",
        ),
    ),
    (
        ("grace", "how do I get access to the logs in staging?"),
        ("A", "it comes with the staging role, open the log explorer and pick the staging workspace"),
    ),
    (
        ("grace", "which meetings should I actually attend?"),
        (
            "A",
            "standup (async), the billing sync on "
            "wednesday, design review when it's about billing. everything else is optional",
        ),
    ),
    (
        ("grace", "how do I know which team to page for a billing-api alert at night?"),
        (
            "A",
            "billing "
            "alerts go to the on-call rotation, not to the team. the runbook says when to wake someone up",
        ),
    ),
    (
        ("grace", "who do I ask about the Paynova integration?"),
        ("A", "carol knows it best. the integration notes are in docs/payments/paynova.md"),
    ),
    (
        ("grace", "is there a checklist for the first month?"),
        ("A", "pinned in this channel: access, setup, first PR, first on-call shadow, a 30-day check-in"),
    ),
    (
        ("grace", "how do I get a test Paynova card that gets declined?"),
        ("A", "card number ending in 0002 is always declined in test mode, 9995 gives insufficient funds"),
    ),
    (
        ("grace", "is there a reading list for the payments domain?"),
        ("A", "the pinned doc in #engineering: card networks, SEPA, and why refunds are harder than charges"),
    ),
    (
        ("grace", "who approves my time off requests?"),
        ("A", "alice, through the HR tool. put it in the team calendar too"),
    ),
    (
        ("grace", "what does 'ledger' mean here exactly, the database or the library?"),
        (
            "A",
            "both, sadly: "
            "ledger-db is the postgres cluster, the ledger library is the code that writes double-entry "
            "records into it",
        ),
    ),
]

LEADERSHIP_SNIPPETS: list[Snippet] = [
    (
        (
            "frank",
            "customer health review: 6 accounts at risk this month, mostly price sensitivity after the "
            "plan change",
        ),
        ("alice", "let's look at them one by one on thursday"),
    ),
    (
        ("alice", "board meeting prep: I need the support metrics by monday"),
        ("frank", "first response time median 1h12m, CSAT 94%, will send the full sheet"),
    ),
    (
        ("erin", "the vendor security questionnaire for {customer} is done, 212 questions"),
        ("alice", "212 😮 thank you"),
    ),
    (
        ("frank", "renewals in december: 14 accounts, 3 of them over $50k"),
        ("alice", "which of the three worry you?"),
        ("frank", "only one, and mostly because their champion left"),
    ),
    (
        ("alice", "I'll be out wednesday for the leadership training, erin is my backup for approvals"),
        ("erin", "👍"),
    ),
    (
        ("erin", "we got the security certification audit date: late february"),
        ("alice", "good, that gives us january for the evidence collection"),
    ),
    (
        ("alice", "the budget for next year's training: 1,500€ per person, conferences included"),
        ("frank", "can support use it for a customer success certification?"),
        ("alice", "yes, anything related to the job"),
    ),
    (
        ("frank", "two big prospects asked about an on-premise version"),
        ("alice", "not on the roadmap. what they usually need is data residency, which we have"),
    ),
    (
        ("erin", "insurance renewal for cyber coverage needs our incident log for the year"),
        ("alice", "bob can export it from the incident tracker"),
    ),
    (
        ("frank", "NPS this quarter: 47, up from 41"),
        ("alice", "nice, the reminder emails feature comes up a lot in the comments"),
    ),
]

HIRING_SNIPPETS: list[Snippet] = [
    (
        ("alice", "interview schedule for BE-21 is out: system design with bob, coding with dave"),
        ("bob", "got it, tuesday 14:00"),
    ),
    (
        ("dave", "can someone swap the thursday coding interview with me? I'm at the dentist"),
        ("bob", "I'll take it"),
    ),
    (("alice", "reminder: scorecards within 24h of the interview, before talking to each other"),),
    (
        ("bob", "BE-17 withdrew, accepted another offer"),
        ("alice", "too bad, they were strong. closing the loop with the recruiter"),
    ),
    (
        ("alice", "the new take-home for backend is ready, 3 hours max, with a rubric"),
        ("dave", "reviewed the rubric, looks fair"),
    ),
    (("dave", "BE-23 phone screen went well, moving to the on-site"), ("alice", "👍 scheduling")),
    (
        ("dave", "FE-12 take-home received, reviewing it tomorrow"),
        ("alice", "thanks, aim for feedback within 2 days"),
    ),
    (
        ("bob", "can we add a pairing exercise to the backend loop instead of the whiteboard one?"),
        ("alice", "yes, let's try it with the next two candidates"),
    ),
    (
        ("alice", "interviewer training next week for anyone who hasn't done it yet"),
        ("bob", "I'll sign up the new people on my team once they join"),
    ),
]

SECURITY_SNIPPETS: list[Snippet] = [
    (
        ("erin", "phishing exercise results: 7% clicked, 2% entered credentials. last quarter was 12%"),
        ("alice", "good trend. a short refresher for the people who entered credentials?"),
    ),
    (
        ("erin", "MFA adoption: 100% for admins now, 91% for everyone"),
        ("alice", "let's enforce it for everyone in january"),
    ),
    (("erin", "laptop encryption report: 2 laptops not compliant, both owners contacted"),),
    (
        ("erin", "security training completion: 100% of engineering, 80% of sales"),
        ("alice", "I'll nudge the sales lead"),
    ),
    (
        (
            "erin",
            "the bug bounty scope draft is in the doc: public API and the dashboard, no social engineering",
        ),
        ("alice", "looks good, let's start private with 20 researchers"),
    ),
    (
        ("erin", "password manager rollout: 38 of 41 people onboarded"),
        ("alice", "I'll chase the last 3 at the all-hands"),
    ),
    (("erin", "annual policy review done, 3 small changes, mostly wording"), ("alice", "approved")),
]
