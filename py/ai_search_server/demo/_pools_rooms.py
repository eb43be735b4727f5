"""Ambient exchanges for the work rooms: support triage, announcements, design, onboarding questions,
leads' and recruiters' logistics, and security housekeeping.

Roles: a username speaks as itself; ``A``/``B``/``C`` are distinct room members chosen at random.
Support snippets take ``{customer}``, ``{plan}`` and ``{ticket}`` slots. None of these touch the topics
the relevance judgments are about (duplicate charges, exports, SSO, the checkout latency incident).
"""

from __future__ import annotations

from ._pools_social import Snippet

__all__ = [
    "CUSTOMERS",
    "DESIGN_SNIPPETS",
    "GENERAL_SNIPPETS",
    "HIRING_SNIPPETS",
    "LEADERSHIP_SNIPPETS",
    "ONBOARDING_SNIPPETS",
    "SECURITY_SNIPPETS",
    "SUPPORT_SNIPPETS",
]

CUSTOMERS: list[str] = [
    "Mossgate Architects", "Quillon Legal", "Saltmarsh Ceramics", "Tundra Bike Co.", "Amberlane Dental",
    "Copperleaf Studios", "Halcyon Tutors", "Wrenfield Farms", "Blue Heron Yoga", "Northgate Plumbing",
    "Pinecrest Veterinary", "Lumen & Loom", "Driftwood Hostels", "Cinder Coffee Roasters", "Marigold Events",
    "Ironbark Fitness", "Seabright Translations", "Orchard Row Dental", "Tallgrass Media",
    "Granite Peak Guides",
]

SUPPORT_SNIPPETS: list[Snippet] = [
    (("frank", "{customer} ({plan}) says their VAT number is rejected at checkout although it's valid. ticket "
     "{ticket}"), ("B", "the validation service had it as 'invalid format' because of a space in the middle. "
     "tax-service normalises that since this week, ask them to retry")),
    (("frank", "{ticket}: {customer} wants the invoice PDFs in German"), ("B", "account settings → "
     "documents → language. it applies to new invoices only"), ("frank", "perfect, sent them the steps")),
    (("frank", "{customer} lost their webhook signing secret, can we show it again?"), ("B", "no, we only "
     "store a hash. they can roll a new one in the dashboard, the old one stays valid for 24h")),
    (("frank", "{customer} ({plan}) asks for a higher API rate limit, they sync every invoice every 5 "
     "minutes"), ("B", "that's a polling problem, not a limit problem. suggest webhooks for invoice.updated"),
     ("frank", "sent them the webhook guide, they'll try it")),
    (("frank", "ticket {ticket}: {customer}'s accountant says our monthly totals don't match their "
     "export"), ("B", "their export uses UTC and the dashboard uses the account timezone, 2 invoices on the "
     "month boundary. I'll write a reply they can forward")),
    (("frank", "{customer} wants to close their account and have all data deleted"), ("B", "deletion request "
     "form, then it runs after the 30 day grace period. invoices we must keep for tax law are anonymised, "
     "not deleted"), ("frank", "thanks, that's the answer they needed")),
    (("frank", "coupon not applied for {customer}: the customer typed SPRING25 and got full price"),
     ("B", "that coupon expired on the 1st. marketing extended it for everyone else, not in the admin "
     "panel though. fixed")),
    (("frank", "{customer} ({plan}) wants to move ownership of the account to a new finance lead"),
     ("B", "the current owner can transfer it in settings → team. if they left the company we need the "
     "verification form")),
    (("frank", "{ticket}: {customer} gets a 422 from the API when a line item has a negative amount"),
     ("B", "by design, discounts go in the discounts array. pointed them at the docs example")),
    (("frank", "{customer} asks if they can get a sandbox account for their developers"), ("B", "yes, any "
     "account can create a test mode key in developer settings. no separate account needed")),
    (("frank", "{customer} wants their invoice numbers to restart at 1 every year"), ("B", "possible with "
     "the per-entity sequences: prefix with the year, e.g. 2027-0001. setting under documents → "
     "numbering")),
    (("frank", "{customer}'s integration created the same customer record 40 times"), ("B", "their script "
     "doesn't search by email before creating. I'll merge the duplicates, but they need to fix the "
     "script"), ("frank", "told them, they're on it")),
    (("frank", "ticket {ticket}: webhooks arrive out of order for {customer}, invoice.paid before "
     "invoice.finalized"), ("B", "we don't guarantee order, each event has a sequence number. the docs have "
     "a section on this")),
    (("frank", "{customer} says the logo on their invoices is blurry"), ("B", "they uploaded a 120px PNG. "
     "anything under 400px wide looks bad in the PDF, asked them for a larger file or an SVG")),
    (("frank", "{customer} ({plan}) complains that our reminder emails sound too aggressive"),
     ("B", "the tone setting is per account: 'friendly', 'neutral', 'firm'. they're on firm"),
     ("frank", "ha, they didn't know. switched to friendly")),
    (("frank", "{customer} wants to change the currency of an active subscription from GBP to EUR"),
     ("B", "not in place: cancel at the period end and start a new subscription in EUR. I can do it for "
     "them if they confirm the date")),
    (("frank", "{ticket}: receipts for {customer} don't go to the secondary billing email"), ("B", "receipts "
     "go to the primary contact only. there's a 'cc on receipts' field they haven't filled")),
    (("frank", "{customer} is locked out after losing their 2FA device"), ("B", "identity check via the "
     "recovery form, then we reset 2FA. never do it over chat"), ("frank", "of course, sent the form")),
    (("frank", "{customer} asks if we support SEPA direct debit"), ("B", "through Paynova yes, for EUR "
     "accounts. they need to enable it in payment settings and collect mandates")),
    (("frank", "{customer} wants to bulk-change the due date on 300 draft invoices"), ("B", "the CSV "
     "update import can do it: export drafts, edit the due_date column, re-import")),
    (("frank", "{customer} ({plan}) asks about a tax-exempt customer of theirs"), ("B", "add the exemption "
     "certificate on the customer record, tax-service will skip the VAT line for them")),
    (("frank", "{ticket}: {customer} can't add a 6th team member"), ("B", "their plan has 5 seats. upgrade "
     "or remove someone, nothing broken")),
    (("frank", "{customer} wants custom fields on invoices (a project code)"), ("B", "custom fields exist, "
     "up to 5 per invoice, shown on the PDF if 'print' is ticked")),
    (("frank", "{customer} asks why a card payment was declined"), ("B", "Paynova says 'insufficient funds' "
     "from the issuing bank. nothing we can do, the cardholder should contact their bank")),
    (("frank", "{customer} accidentally finalized an invoice with the wrong amount"), ("B", "finalized "
     "invoices can't be edited. void it and issue a new one, or a credit note for the difference")),
    (("frank", "{customer} ({plan}) would like a yearly plan instead of monthly"), ("B", "they can switch in "
     "billing settings, the unused month is prorated")),
    (("frank", "ticket {ticket}: {customer} sees someone else's company name on a quote"), ("B", "checked: "
     "it's their own second entity, set up by their admin last month. no data leak"),
     ("frank", "phew, explained it to them")),
    (("frank", "{customer} asks whether we can send invoices by post"), ("B", "no postal sending. they can "
     "download PDFs in bulk and use a print service")),
    (("frank", "{customer} wants to know where their data is stored"), ("B", "EU region, two data centres "
     "in the same country. the data processing addendum lists the sub-processors")),
    (("frank", "{customer}: the invoice email lands in their customers' spam"), ("B", "they use a custom "
     "sending domain without DKIM. sent them the DNS records to add")),
]

GENERAL_SNIPPETS: list[Snippet] = [
    (("alice", "all-hands on thursday at 16:00: Q3 numbers, the roadmap for Q4 and an open Q&A. questions "
     "in advance go in the form"),),
    (("alice", "reminder: the office is closed on friday for the building's electrical maintenance"),
     ("B", "so it's a work-from-home friday, noted")),
    (("A", "the new benefits portal is live, you have until the end of the month to pick your options"),
     ("B", "is the gym subsidy in there now?"), ("A", "yes, under wellbeing")),
    (("alice", "shoutout to frank's team: customer satisfaction at 94% this month, best in a year"),
     ("B", "👏👏"), ("frank", "it's all on the engineers who answer our weird questions")),
    (("A", "lost and found box by reception is overflowing, please check it before friday"),
     ("B", "that's where my scarf went")),
    (("alice", "the engineering blog post about our move to the release train is up, share it if you "
     "like"), ("B", "great read, the diagram is nice")),
    (("A", "the kitchen will be renovated next week, use the 2nd floor one in the meantime"),),
    (("alice", "quarterly feedback cycle opens on monday: self-review plus two peers. two weeks to finish"),
     ("B", "is there a template this time?"), ("alice", "same as last quarter, it's in the people wiki")),
    (("A", "reminder to submit your holiday requests for december before the 15th"),),
    (("frank", "customer story of the week: {customer} cut their late payments by 40% with the reminder "
     "emails. they sent us a thank-you cake photo"), ("B", "cake photos count as revenue")),
    (("alice", "all-hands recording and slides are in the shared drive for whoever missed it"),),
    (("A", "heads-up: the building will test the fire alarm tomorrow at 10:00, a few short rings"),),
    (("alice", "we passed 2,000 paying accounts this week 🎉 thank you all"), ("B", "🎉🎉"),
     ("C", "cake?"), ("alice", "cake on friday")),
    (("A", "IT will replace the meeting room screens on wednesday, rooms 1–3 unavailable in the morning"),),
    (("alice", "new expense policy: meals while travelling no longer need receipts under 25€"),
     ("B", "the most popular policy change in history")),
    (("A", "the company-wide survey closes on friday, it's anonymous and takes 10 minutes"),),
]

DESIGN_SNIPPETS: list[Snippet] = [
    (("dave", "new icon set preview in the design file, 24px grid, 1.5px stroke"), ("B", "the invoice icon "
     "looks like a receipt from a supermarket, in a good way")),
    (("dave", "button radius: 6px or 8px? I have strong feelings and want them confirmed"), ("B", "6px, 8px "
     "starts to look playful"), ("dave", "confirmed, thank you")),
    (("B", "can we get a loading state for the invoice totals? they jump when the tax arrives"),
     ("dave", "yes, a fixed-width skeleton so nothing jumps")),
    (("dave", "usability test results for the invoice list filters: 5 of 6 people found the date filter, "
     "nobody found 'saved filters'"), ("B", "put saved filters next to the search box?"),
     ("dave", "trying that in the next round")),
    (("B", "do we have a rule for how we write dates in the UI?"), ("dave", "'12 Oct 2026' in lists, full "
     "date with weekday in detail views, always in the account's locale")),
    (("dave", "updated the color contrast checklist in the design system docs"), ("B", "bookmarked")),
    (("dave", "the illustrations for empty states are in, 6 of them, same line style as the icons"),
     ("B", "the one with the paper plane is adorable")),
]

ONBOARDING_SNIPPETS: list[Snippet] = [
    (("grace", "where do I find the architecture diagram?"), ("A", "docs/architecture.md, the big diagram is "
     "slightly outdated but the service boxes are right")),
    (("grace", "what's the etiquette for PR reviews here, who do I tag?"), ("A", "the owning team from the "
     "CODEOWNERS file gets tagged automatically, add one person you want specifically")),
    (("grace", "is there a glossary? I keep seeing 'finalize' vs 'issue'"), ("A", "docs/glossary.md. "
     "finalize = the invoice is locked; issue = it's sent to the customer. usually the same moment")),
    (("grace", "how do I get access to the logs in staging?"), ("A", "it comes with the staging role, "
     "open the log explorer and pick the staging workspace")),
    (("grace", "which meetings should I actually attend?"), ("A", "standup (async), the billing sync on "
     "wednesday, design review when it's about billing. everything else is optional")),
    (("grace", "the test suite takes 11 minutes locally, is that normal?"), ("A", "run `make test-fast` for "
     "the unit tests only, the full suite is for CI")),
    (("grace", "who do I ask about the Paynova integration?"), ("A", "carol knows it best. the integration "
     "notes are in docs/payments/paynova.md")),
    (("grace", "is there a checklist for the first month?"), ("A", "pinned in this channel: access, setup, "
     "first PR, first on-call shadow, a 30-day check-in")),
    (("grace", "what does 'ledger' mean here exactly, the database or the library?"), ("A", "both, sadly: "
     "ledger-db is the postgres cluster, the ledger library is the code that writes double-entry "
     "records into it")),
]

LEADERSHIP_SNIPPETS: list[Snippet] = [
    (("frank", "customer health review: 6 accounts at risk this month, mostly price sensitivity after the "
     "plan change"), ("alice", "let's look at them one by one on thursday")),
    (("alice", "board meeting prep: I need the support metrics by monday"), ("frank", "first response time "
     "median 1h12m, CSAT 94%, will send the full sheet")),
    (("erin", "the vendor security questionnaire for {customer} is done, 212 questions"), ("alice", "212 "
     "😮 thank you")),
    (("frank", "renewals in december: 14 accounts, 3 of them over $50k"), ("alice", "which of the three "
     "worry you?"), ("frank", "only one, and mostly because their champion left")),
    (("alice", "I'll be out wednesday for the leadership training, erin is my backup for approvals"),
     ("erin", "👍")),
    (("erin", "we got the security certification audit date: late february"), ("alice", "good, that gives "
     "us january for the evidence collection")),
    (("frank", "NPS this quarter: 47, up from 41"), ("alice", "nice, the reminder emails feature comes up a "
     "lot in the comments")),
]

HIRING_SNIPPETS: list[Snippet] = [
    (("alice", "interview schedule for BE-21 is out: system design with bob, coding with dave"),
     ("bob", "got it, tuesday 14:00")),
    (("dave", "can someone swap the thursday coding interview with me? I'm at the dentist"),
     ("bob", "I'll take it")),
    (("alice", "reminder: scorecards within 24h of the interview, before talking to each other"),),
    (("bob", "BE-17 withdrew, accepted another offer"), ("alice", "too bad, they were strong. closing the "
     "loop with the recruiter")),
    (("alice", "the new take-home for backend is ready, 3 hours max, with a rubric"), ("dave", "reviewed "
     "the rubric, looks fair")),
    (("dave", "BE-23 phone screen went well, moving to the on-site"), ("alice", "👍 scheduling")),
    (("alice", "interviewer training next week for anyone who hasn't done it yet"), ("bob", "I'll sign up "
     "the new people on my team once they join")),
]

SECURITY_SNIPPETS: list[Snippet] = [
    (("erin", "phishing exercise results: 7% clicked, 2% entered credentials. last quarter was 12%"),
     ("alice", "good trend. a short refresher for the people who entered credentials?")),
    (("erin", "MFA adoption: 100% for admins now, 91% for everyone"), ("alice", "let's enforce it for "
     "everyone in january")),
    (("erin", "laptop encryption report: 2 laptops not compliant, both owners contacted"),),
    (("erin", "security training completion: 100% of engineering, 80% of sales"), ("alice", "I'll nudge "
     "the sales lead")),
    (("erin", "annual policy review done, 3 small changes, mostly wording"), ("alice", "approved")),
]
