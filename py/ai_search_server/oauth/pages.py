"""The sign-in, consent and error pages of the authorization endpoint: HTML written here, no script.

Every value that comes from outside (the client's registered name, its redirect URI, the person's
name, an error's description) goes through ``html.escape``: a client registers its own name, so it is
untrusted text. The pages load the site's stylesheets and nothing else (``static/app.css`` for the
colours, light and dark by ``prefers-color-scheme``; ``static/oauth.css`` for their layout), under
the site's CSP; the forms post to the page's own URL.

Names are also set in ``<bdi>`` (:func:`_name`), a bidi isolate: registration refuses bidi controls
in a client's name (``models.client_name_problem``), but a name stored before that rule, or a
person's, must not reorder the sentence around it (an unclosed U+202E read "asks to use ai-search as
you" backwards). ``<bdi>`` isolates by the browser's own stylesheet, so the CSP needs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from urllib.parse import urlsplit

__all__ = ["ConsentView", "consent_page", "error_page", "sign_in_page"]

# The page's stylesheet (its colours, light and dark), then the pages' own layout.
_STYLESHEETS = ("/static/app.css", "/static/oauth.css")


def _document(title: str, body: str) -> str:
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="referrer" content="same-origin">\n'
        f"<title>{escape(title)} · ai-search</title>\n"
        '<link rel="icon" href="data:,">\n'
        + "".join(f'<link rel="stylesheet" href="{href}">\n' for href in _STYLESHEETS)
        + '</head>\n<body>\n<main class="card">\n'
        '<p class="brand">ai-search</p>\n'
        f"{body}"
        "</main>\n</body>\n</html>\n"
    )


def _name(text: str) -> str:
    """A name someone else chose, escaped and isolated: its direction is its own (``dir=auto``, as
    ``<bdi>`` has), and no bidi control in it reaches the text after it."""
    return f"<bdi>{escape(text)}</bdi>"


def _destination(redirect_uri: str) -> str:
    """Where the browser goes after consent, as a person checks it: the host (or the app's scheme)."""
    parts = urlsplit(redirect_uri)
    return parts.netloc or f"{parts.scheme}:"


@dataclass(frozen=True, slots=True)
class ConsentView:
    """What the pages show about one authorization request."""

    action: str  # the form's target: the authorization URL itself, query included
    client_name: str
    redirect_uri: str
    rocketchat: bool  # Rocket.Chat sign-in is on: say which password works


def sign_in_page(view: ConsentView, *, username: str = "", error: str = "") -> str:
    alert = f'<p class="alert" role="alert">{escape(error)}</p>\n' if error else ""
    hint = (
        "Use your workspace account, or your Rocket.Chat username and password."
        if view.rocketchat
        else "Use your workspace account."
    )
    body = (
        "<h1>Sign in to connect</h1>\n"
        f'<p class="lead"><strong class="client">{_name(view.client_name)}</strong> asks to use '
        "ai-search as you. Sign in first; you choose whether to allow it next.</p>\n"
        f"{alert}"
        f'<form method="post" action="{escape(view.action)}">\n'
        '<input type="hidden" name="step" value="sign-in">\n'
        '<label for="username">Username</label>\n'
        f'<input id="username" name="username" autocomplete="username" autocapitalize="none" '
        f'spellcheck="false" required maxlength="100" value="{escape(username)}"'
        f"{'' if username else ' autofocus'}>\n"
        '<label for="password">Password</label>\n'
        '<input id="password" name="password" type="password" autocomplete="current-password" required '
        f'maxlength="1024"{" autofocus" if username else ""}>\n'
        f'<p class="hint">{escape(hint)}</p>\n'
        '<button type="submit" class="primary">Sign in</button>\n'
        "</form>\n"
    )
    return _document("Sign in", body)


def consent_page(view: ConsentView, *, person: str, username: str, ticket: str) -> str:
    body = (
        f"<h1>Allow {_name(view.client_name)}?</h1>\n"
        f'<p class="lead">Signed in as <strong>{_name(person)}</strong> (@{_name(username)}).</p>\n'
        f'<p><strong class="client">{_name(view.client_name)}</strong> will be able to, as you:</p>\n'
        "<ul>\n"
        "<li>search and read the rooms and messages you can read</li>\n"
        "<li>post messages and create rooms where you may</li>\n"
        "</ul>\n"
        '<p class="fine">The name is the one the application gave itself; ai-search has not checked it. '
        "Allow only an application you are connecting right now.</p>\n"
        '<p class="fine">It sees nothing you cannot see. It keeps this access until you remove it '
        "(<code>users.removeOAuthToken</code>), or until it goes unused for a while.</p>\n"
        f'<p class="fine">After you answer, your browser goes to '
        f'<strong class="destination">{escape(_destination(view.redirect_uri))}</strong>.</p>\n'
        f'<form method="post" action="{escape(view.action)}" class="actions">\n'
        '<input type="hidden" name="step" value="consent">\n'
        f'<input type="hidden" name="ticket" value="{escape(ticket)}">\n'
        '<button type="submit" name="decision" value="deny">Deny</button>\n'
        '<button type="submit" name="decision" value="allow" class="primary" autofocus>Allow</button>\n'
        "</form>\n"
    )
    return _document("Allow access", body)


def error_page(title: str, description: str) -> str:
    body = (
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="alert" role="alert">{escape(description)}</p>\n'
        '<p class="fine">Go back to the application you came from and connect again. Nothing was '
        "shared.</p>\n"
    )
    return _document(title, body)
