"""A person at a browser, for OAuth tests of outside clients: a client opens our authorization URL
through the browser launcher (``$BROWSER``), and this signs in and allows on our pages, then follows
the redirect to the client's callback, as a browser would.

    BROWSER=tests/tools/oauth_person.py OAUTH_PERSON_USERNAME=alice OAUTH_PERSON_PASSWORD=... client

The forms are posted with the headers a browser sends for a same-origin form (``Origin``,
``Sec-Fetch-Site``); ``tests/browser/test_oauth_pages.py`` runs the same pages in Chromium. What it
did goes to ``$OAUTH_PERSON_LOG`` (one line per step) when that is set.
"""

from __future__ import annotations

import html
import os
import re
import sys
from urllib.parse import urlsplit

import httpx

_TICKET = re.compile(r'name="ticket" value="([^"]+)"')
# Seconds one step may take: loopback, so far above what it needs.
STEP_TIMEOUT_SECONDS = 20.0


def _log(line: str) -> None:
    path = os.environ.get("OAUTH_PERSON_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


def main(url: str) -> int:
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    same_site = {"Origin": origin, "Sec-Fetch-Site": "same-origin"}
    username, password = os.environ["OAUTH_PERSON_USERNAME"], os.environ["OAUTH_PERSON_PASSWORD"]
    with httpx.Client(timeout=STEP_TIMEOUT_SECONDS) as http:
        page = http.get(url)
        _log(f"sign-in page {page.status_code}")
        consent = http.post(
            url, data={"step": "sign-in", "username": username, "password": password}, headers=same_site
        )
        ticket = _TICKET.search(consent.text)
        _log(f"consent page {consent.status_code} ticket={'yes' if ticket else 'no'}")
        if ticket is None:
            return 1
        answer = {"step": "consent", "ticket": html.unescape(ticket.group(1)), "decision": "allow"}
        redirect = http.post(url, data=answer, headers=same_site)
        location = redirect.headers.get("location", "")
        _log(f"redirect {redirect.status_code} to {urlsplit(location).netloc}{urlsplit(location).path}")
        if redirect.status_code != 302:
            return 1
        landed = http.get(location)
        _log(f"callback {landed.status_code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
