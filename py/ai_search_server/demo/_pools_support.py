"""Support triage in #support-escalations: made-up customers and the questions they send.

frank speaks as himself; ``B`` is an engineer of the room. Snippets take ``{customer}``, ``{plan}``
and ``{ticket}`` slots. None of them is about what the judgments cover (duplicate charges, exports,
SSO, the checkout latency incident): those live in scripted threads.
"""

from __future__ import annotations

from ._pools_social import Snippet

__all__ = ["CUSTOMERS", "SUPPORT_SNIPPETS"]

CUSTOMERS: list[str] = [
    "Mossgate Architects",
    "Quillon Legal",
    "Saltmarsh Ceramics",
    "Tundra Bike Co.",
    "Amberlane Dental",
    "Copperleaf Studios",
    "Halcyon Tutors",
    "Wrenfield Farms",
    "Blue Heron Yoga",
    "Northgate Plumbing",
    "Pinecrest Veterinary",
    "Lumen & Loom",
    "Driftwood Hostels",
    "Cinder Coffee Roasters",
    "Marigold Events",
    "Ironbark Fitness",
    "Seabright Translations",
    "Orchard Row Dental",
    "Tallgrass Media",
    "Granite Peak Guides",
]

SUPPORT_SNIPPETS: list[Snippet] = [
    (
        (
            "frank",
            "{customer} ({plan}) says their VAT number is rejected at checkout although it's valid. ticket "
            "{ticket}",
        ),
        (
            "B",
            "the validation service had it as 'invalid format' because of a space in the middle. "
            "tax-service normalises that since this week, ask them to retry",
        ),
    ),
    (
        ("frank", "{ticket}: {customer} wants the invoice PDFs in German"),
        ("B", "account settings → documents → language. it applies to new invoices only"),
        ("frank", "perfect, sent them the steps"),
    ),
    (
        ("frank", "{customer} lost their webhook signing secret, can we show it again?"),
        (
            "B",
            "no, we only "
            "store a hash. they can roll a new one in the dashboard, the old one stays valid for 24h",
        ),
    ),
    (
        (
            "frank",
            "{customer} ({plan}) asks for a higher API rate limit, they sync every invoice every 5 minutes",
        ),
        ("B", "that's a polling problem, not a limit problem. suggest webhooks for invoice.updated"),
        ("frank", "sent them the webhook guide, they'll try it"),
    ),
    (
        (
            "frank",
            "ticket {ticket}: {customer}'s accountant says our monthly totals don't match their export",
        ),
        (
            "B",
            "their export uses UTC and the dashboard uses the account timezone, 2 invoices on the "
            "month boundary. I'll write a reply they can forward",
        ),
    ),
    (
        ("frank", "{customer} wants to close their account and have all data deleted"),
        (
            "B",
            "deletion request "
            "form, then it runs after the 30 day grace period. invoices we must keep for tax law are anonymised, "
            "not deleted",
        ),
        ("frank", "thanks, that's the answer they needed"),
    ),
    (
        ("frank", "coupon not applied for {customer}: the customer typed SPRING25 and got full price"),
        (
            "B",
            "that coupon expired on the 1st. marketing extended it for everyone else, not in the admin "
            "panel though. fixed",
        ),
    ),
    (
        ("frank", "{customer} ({plan}) wants to move ownership of the account to a new finance lead"),
        (
            "B",
            "the current owner can transfer it in settings → team. if they left the company we need the "
            "verification form",
        ),
    ),
    (
        ("frank", "{ticket}: {customer} gets a 422 from the API when a line item has a negative amount"),
        ("B", "by design, discounts go in the discounts array. pointed them at the docs example"),
    ),
    (
        ("frank", "{customer} asks if they can get a sandbox account for their developers"),
        (
            "B",
            "yes, any account can create a test mode key in developer settings. no separate account needed",
        ),
    ),
    (
        ("frank", "{customer} wants their invoice numbers to restart at 1 every year"),
        (
            "B",
            "possible with "
            "the per-entity sequences: prefix with the year, e.g. 2027-0001. setting under documents → "
            "numbering",
        ),
    ),
    (
        ("frank", "{customer}'s integration created the same customer record 40 times"),
        (
            "B",
            "their script "
            "doesn't search by email before creating. I'll merge the duplicates, but they need to fix the "
            "script",
        ),
        ("frank", "told them, they're on it"),
    ),
    (
        (
            "frank",
            "ticket {ticket}: webhooks arrive out of order for {customer}, invoice.paid before "
            "invoice.finalized",
        ),
        ("B", "we don't guarantee order, each event has a sequence number. the docs have a section on this"),
    ),
    (
        ("frank", "{customer} says the logo on their invoices is blurry"),
        (
            "B",
            "they uploaded a 120px PNG. "
            "anything under 400px wide looks bad in the PDF, asked them for a larger file or an SVG",
        ),
    ),
    (
        ("frank", "{customer} ({plan}) complains that our reminder emails sound too aggressive"),
        ("B", "the tone setting is per account: 'friendly', 'neutral', 'firm'. they're on firm"),
        ("frank", "ha, they didn't know. switched to friendly"),
    ),
    (
        ("frank", "{customer} wants to change the currency of an active subscription from GBP to EUR"),
        (
            "B",
            "not in place: cancel at the period end and start a new subscription in EUR. I can do it for "
            "them if they confirm the date",
        ),
    ),
    (
        ("frank", "{ticket}: receipts for {customer} don't go to the secondary billing email"),
        (
            "B",
            "receipts go to the primary contact only. there's a 'cc on receipts' field they haven't filled",
        ),
    ),
    (
        ("frank", "{customer} is locked out after losing their 2FA device"),
        ("B", "identity check via the recovery form, then we reset 2FA. never do it over chat"),
        ("frank", "of course, sent the form"),
    ),
    (
        ("frank", "{customer} asks if we support SEPA direct debit"),
        (
            "B",
            "through Paynova yes, for EUR "
            "accounts. they need to enable it in payment settings and collect mandates",
        ),
    ),
    (
        ("frank", "{customer} wants to bulk-change the due date on 300 draft invoices"),
        ("B", "the CSV update import can do it: export drafts, edit the due_date column, re-import"),
    ),
    (
        ("frank", "{customer} ({plan}) asks about a tax-exempt customer of theirs"),
        (
            "B",
            "add the exemption "
            "certificate on the customer record, tax-service will skip the VAT line for them",
        ),
    ),
    (
        ("frank", "{ticket}: {customer} can't add a 6th team member"),
        ("B", "their plan has 5 seats. upgrade or remove someone, nothing broken"),
    ),
    (
        ("frank", "{customer} wants custom fields on invoices (a project code)"),
        ("B", "custom fields exist, up to 5 per invoice, shown on the PDF if 'print' is ticked"),
    ),
    (
        ("frank", "{customer} asks why a card payment was declined"),
        (
            "B",
            "Paynova says 'insufficient funds' "
            "from the issuing bank. nothing we can do, the cardholder should contact their bank",
        ),
    ),
    (
        ("frank", "{customer} accidentally finalized an invoice with the wrong amount"),
        (
            "B",
            "finalized "
            "invoices can't be edited. void it and issue a new one, or a credit note for the difference",
        ),
    ),
    (
        ("frank", "{customer} ({plan}) would like a yearly plan instead of monthly"),
        ("B", "they can switch in billing settings, the unused month is prorated"),
    ),
    (
        ("frank", "ticket {ticket}: {customer} sees someone else's company name on a quote"),
        ("B", "checked: it's their own second entity, set up by their admin last month. no data leak"),
        ("frank", "phew, explained it to them"),
    ),
    (
        ("frank", "{customer} asks whether we can send invoices by post"),
        ("B", "no postal sending. they can download PDFs in bulk and use a print service"),
    ),
    (
        ("frank", "{customer} wants to know where their data is stored"),
        (
            "B",
            "EU region, two data centres "
            "in the same country. the data processing addendum lists the sub-processors",
        ),
    ),
    (
        ("frank", "{customer} ({plan}) asks for a copy of every invoice from last year in one file"),
        ("B", "bulk download in the invoice list: filter by year, select all, 'download PDFs' gives a zip"),
    ),
    (
        ("frank", "{ticket}: {customer} says the payment link in their email leads to a 404"),
        ("B", "the invoice was voided after the email went out. the link works for open invoices only"),
        ("frank", "makes sense, explained it"),
    ),
    (
        ("frank", "{customer} wants their customers to pay by bank transfer with a reference"),
        (
            "B",
            "enable "
            "'bank transfer' in payment settings, the invoice number becomes the reference automatically",
        ),
    ),
    (
        ("frank", "{customer} asks if we can import their old invoices from their previous tool"),
        ("B", "the CSV import handles it, historical invoices are imported as already paid"),
    ),
    (
        ("frank", "{customer} ({plan}) reports the dashboard's revenue chart doesn't match their bank"),
        (
            "B",
            "the chart shows invoiced revenue, their bank shows collected money. the 'collected' toggle on "
            "the chart gives the other view",
        ),
    ),
    (
        ("frank", "ticket {ticket}: {customer} can't find where to change the invoice footer text"),
        ("B", "settings → documents → footer. it takes markdown-light, bold and links"),
    ),
    (
        ("frank", "{customer} asks whether a quote can be turned into an invoice"),
        ("B", "yes, 'convert to invoice' on the quote page, line items and discounts come along"),
    ),
    (
        ("frank", "{customer} wants to add a second company with a different VAT number"),
        ("B", "that's a second legal entity in settings, available on Growth and Scale"),
    ),
    (
        ("frank", "{customer} asks if the API has an official client library"),
        ("B", "an official one for Python and one for JavaScript, others are community-maintained"),
    ),
    (
        ("frank", "{ticket}: {customer} sees an old logo on reminder emails"),
        (
            "B",
            "email templates cache "
            "the logo for 24h. it'll update tomorrow, or they can re-save the template now",
        ),
    ),
    (
        ("frank", "{customer}: the invoice email lands in their customers' spam"),
        ("B", "they use a custom sending domain without DKIM. sent them the DNS records to add"),
    ),
]
