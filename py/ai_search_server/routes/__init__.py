"""The REST routes, one module per noun; ``all_routes()`` is the registry the app, the OpenAPI
document and the MCP catalog read."""

from __future__ import annotations

from ..rest import ApiRoute
from . import answers, auth, chat, history, marks, oauth_tokens, rooms, search, shared_answers, threads, users

__all__ = ["all_routes"]


def all_routes() -> list[ApiRoute]:
    return [
        *auth.router.routes,
        *chat.router.routes,
        *threads.router.routes,
        *marks.router.routes,
        *history.router.routes,
        *rooms.router.routes,
        *users.router.routes,
        *oauth_tokens.router.routes,
        *answers.router.routes,
        *shared_answers.router.routes,
        *search.router.routes,
    ]
