"""The REST API's parameter limits, each with its unit and the reason for its value."""

from __future__ import annotations

from .store.rules import MAX_MESSAGE_TEXT_LENGTH, MAX_ROOM_NAME_LENGTH, MAX_TOKEN_LABEL_LENGTH

# Characters of one chat message: the store's limit (Rocket.Chat's default Message_MaxAllowedSize), so
# a text the route takes is one the store keeps, and a longer one is a 400 that names the parameter.
MAX_MESSAGE_TEXT_CHARS = MAX_MESSAGE_TEXT_LENGTH
# Characters of a room, user or token name given to the API: the shorter of the store's room name and
# token label limits, so every name a route takes is one the store can keep.
MAX_NAME_CHARS = min(MAX_ROOM_NAME_LENGTH, MAX_TOKEN_LABEL_LENGTH)
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
