"""The REST API's parameter limits, each with its unit and the reason for its value."""

from __future__ import annotations

# Characters of one chat message (Rocket.Chat's default Message_MaxAllowedSize).
MAX_MESSAGE_TEXT_CHARS = 5000
# Characters of a room, user or token name given to the API: the store's longest room name and token
# label (store/rules.py), so every name a route takes is one the store can keep.
MAX_NAME_CHARS = 100
# Characters of an opaque id (user, room, message) given to the API.
MAX_ID_CHARS = 128
# Characters of a password; long enough for passphrases, short enough that hashing stays cheap.
MAX_PASSWORD_CHARS = 1024
# Characters of a JSON `selector` query parameter (autocomplete routes).
MAX_SELECTOR_CHARS = 1024
# Items one list route returns per page, and its default.
MAX_PAGE_ITEMS = 100
DEFAULT_PAGE_ITEMS = 50
# Users returned by users.autocomplete.
USER_AUTOCOMPLETE_LIMIT = 10
# Members named in one channels.create call.
MAX_CREATE_MEMBERS = 500
