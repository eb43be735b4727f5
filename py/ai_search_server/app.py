"""The ASGI application: routes from the registry, the page, the OpenAPI document, middleware.

Middleware, outermost first (a request passes them in this order)::

    SecurityHeadersMiddleware   CSP, nosniff; frame-ancestors: embedders on /embed, 'none' elsewhere
    OriginMiddleware            Host allow-list (421), Origin allow-list on /api/ (403), CORS
    FailedAuthMiddleware        429 once an address spent its failed-authentication budget
    BodyLimitMiddleware         request bodies over the cap answer 413, too slow ones 408
    Router                      /api/v1/<route>, /api/v1/mcp, OAuth (/authorize, /token, /register, /revoke, /.well-known/*), /openapi.json,
                                the page, the widget page

Use ``create_app(settings, store)``; ``cli.serve`` builds both from the command line.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from ai_search import MAX_SEARCH_QUERY_LENGTH

from . import __version__, errors
from .body_limit import BodyLimitMiddleware
from .mcp import MCP_PATH, McpEndpoint
from .oauth import OAuthEndpoints
from .openapi import build_openapi
from .origin_middleware import OriginMiddleware
from .origins import OriginPolicy, normalize_origin
from .outbound import OutboundPolicy, OutboundRefused, check_configured_url
from .ratelimit import FailedAuthMiddleware, RateLimiter
from .redaction import SecretRedactor
from .rest import ApiRoute, error_response, make_endpoint
from .routes import all_routes
from .security_headers import SecurityHeadersMiddleware
from .services import Services, outbound_policy
from .settings import IGNORED_WILDCARD_SETTINGS, UPSTREAM_URL_SETTINGS, Settings, SettingsError
from .static import (
    BUNDLES,
    PAGE_CONFIG,
    PROJECT_ROOT,
    Bundle,
    PageFiles,
    keys_listing,
    made_response,
    page_source,
    python_files,
    versioned_config,
    versioned_static,
)
from .store.base import Store

__all__ = [
    "EMBED_ORIGINS_PLACEHOLDER",
    "EMBED_PAGE_PATH",
    "MAX_QUERY_PLACEHOLDER",
    "PAGE_PYTHON_PLACEHOLDER",
    "create_app",
    "embed_origins",
    "origin_policy",
]

log = logging.getLogger(__name__)

# The widget page (embed.html, docs/widget.md): the only response other sites may frame.
EMBED_PAGE_PATH = "/embed"
# Replaced in embed.html by the origins its bridge may talk to (space-separated, HTML-escaped).
EMBED_ORIGINS_PLACEHOLDER = "__AI_SEARCH_EMBED_ORIGINS__"
# Replaced in index.html and embed.html by the search box's maxlength: the words a search may hold
# (MAX_SEARCH_QUERY_LENGTH, the limit ai.search checks), so page and server share one number.
MAX_QUERY_PLACEHOLDER = "__AI_SEARCH_MAX_QUERY_CHARS__"
# Replaced in index.html and embed.html by the page_python setting (<html data-python=…>), which
# static/keys-boot.mjs reads: "micropython" runs the page after the keystroke stage, "pyodide"
# leaves it to static/pyscript-boot.mjs.
PAGE_PYTHON_PLACEHOLDER = "__AI_SEARCH_PAGE_PYTHON__"
# The pages' blocks for one interpreter only (``<!-- pyodide -->`` … ``<!-- /pyodide -->``): the
# other interpreter's block is left out, so its files are neither preloaded nor run.
_RUNTIME_BLOCK = re.compile(r"[ \t]*<!-- (micropython|pyodide) -->.*?<!-- /\1 -->\n?", re.DOTALL)


def _page_html(root: Path, name: str, **replacements: str) -> str:
    text = page_source(root, name).replace(MAX_QUERY_PLACEHOLDER, str(MAX_SEARCH_QUERY_LENGTH))
    for placeholder, value in replacements.items():
        text = text.replace(placeholder, value)
    return text


def origin_policy(settings: Settings) -> OriginPolicy:
    return OriginPolicy(
        site_url=settings.site_url,
        cors_allowed_origins=tuple(settings.cors_allowed_origins),
        embed_allowed_origins=tuple(settings.embed_allowed_origins),
        allowed_hosts=tuple(settings.allowed_hosts) or None,
    )


def embed_origins(settings: Settings) -> tuple[str, ...]:
    """The origins the widget page may talk to: its own site and every valid embed allow-list entry.

    The origins frame-ancestors names, normalised as browsers serialise ``event.origin`` and
    ``location.origin``, so that the widget page compares them as plain strings.
    """
    entries = (settings.site_url, *settings.embed_allowed_origins)
    origins = (normalize_origin(entry) for entry in entries if entry)
    return tuple(dict.fromkeys(origin for origin in origins if origin is not None))


def check_upstream_urls(settings: Settings, policy: OutboundPolicy) -> None:
    """What only the outbound policy can judge of the upstream URLs (the settings checked the rest
    when they were built): a literal metadata or link-local address the allow-list does not name.

    Raises:
        SettingsError: naming the first upstream URL setting no call could ever use.
    """
    for name in UPSTREAM_URL_SETTINGS:
        url = getattr(settings, name)
        if not url:
            continue
        try:
            check_configured_url(url, policy)
        except OutboundRefused as exc:
            raise SettingsError(f"setting {name!r}: {exc}") from None


def warn_about_ignored_origins(settings: Settings) -> None:
    """A '*' in cors_allowed_origins never authorises a browser origin (the settings let it pass)."""
    for name in IGNORED_WILDCARD_SETTINGS:
        if "*" in getattr(settings, name):
            log.warning("setting %r: '*' never authorises a browser origin; it is ignored", name)


def create_app(
    settings: Settings,
    store: Store,
    *,
    limiter: RateLimiter | None = None,
    extra_routes: Sequence[ApiRoute] = (),
    root: Path = PROJECT_ROOT,
    close_store: bool = False,
) -> Starlette:
    """Build the app around an open store; ``limiter`` None: no rate limits.

    ``close_store``: the app's shutdown closes the store too (a worker process of ``serve --workers``,
    which opened it for this app alone); otherwise whoever opened it closes it.
    """
    warn_about_ignored_origins(settings)
    outbound = outbound_policy(settings)  # the settings checked its allow-list when they were built
    check_upstream_urls(settings, outbound)
    SecretRedactor.warn_about_short_secrets(settings)
    services = Services.build(settings, store, policy=outbound, limiter=limiter)
    api_routes = [*all_routes(), *extra_routes]

    async def openapi(_request: Request) -> Response:
        return JSONResponse(build_openapi(api_routes, version=__version__, site_url=settings.site_url))

    def stage(html_text: str) -> str:
        """The page for this server's interpreter, with its bundles' and its own static files' URLs
        at their digests."""
        python = settings.page_python
        html_text = _RUNTIME_BLOCK.sub(lambda block: block[0] if block[1] == python else "", html_text)
        html_text = html_text.replace(PAGE_PYTHON_PLACEHOLDER, python)
        for bundle in BUNDLES:
            html_text = html_text.replace(bundle.placeholder, bundle.url(root))
        return versioned_static(html_text, root)

    async def page(request: Request) -> Response:
        return made_response(
            request.headers, stage(_page_html(root, "index.html")), "text/html; charset=utf-8"
        )

    allowed_embedders = html.escape(" ".join(embed_origins(settings)))

    async def embed_page(request: Request) -> Response:
        html_text = stage(_page_html(root, "embed.html", **{EMBED_ORIGINS_PLACEHOLDER: allowed_embedders}))
        return made_response(request.headers, html_text, "text/html; charset=utf-8")

    async def page_python(request: Request) -> Response:
        # Each Python file's URL carries its digest, so browsers keep those files without asking.
        listing = json.dumps({"files": python_files(root)}, separators=(",", ":"))
        return made_response(request.headers, listing, "application/json")

    async def keys_python(request: Request) -> Response:
        # The keystroke stage's files (static/keys-boot.mjs), at their digests as above.
        listing = json.dumps(keys_listing(root), separators=(",", ":"))
        return made_response(request.headers, listing, "application/json")

    def bundle_endpoint(bundle: Bundle) -> Callable[[Request], Awaitable[Response]]:
        async def python_bundle(request: Request) -> Response:
            # MicroPython's files in one body; immutable when asked for at its current digest.
            digest, body = bundle.body(root)
            current = request.query_params.get("v") == digest
            return made_response(request.headers, body, "application/json", immutable=current)

        return python_bundle

    async def page_config(request: Request) -> Response:
        text = versioned_config((root / PAGE_CONFIG).read_text(encoding="utf-8"), root)
        return made_response(request.headers, text, "text/plain; charset=utf-8")

    async def unknown_api(request: Request) -> Response:
        return error_response(
            errors.NotFound(f"Unknown API route {request.url.path}", error_type="error-unknown-route")
        )

    routes: list[BaseRoute] = [
        Route(r.path, make_endpoint(r, services), methods=[r.method], name=r.name) for r in api_routes
    ]
    oauth = OAuthEndpoints(services, MCP_PATH)
    routes += [
        Route(MCP_PATH, McpEndpoint(services, api_routes, origin_policy(settings)), name="mcp"),
        # OAuth for MCP clients: metadata, sign-in and consent, tokens (404 while MCP or OAuth is off).
        *oauth.routes(),
        Route("/api/{rest:path}", unknown_api, methods=["GET", "POST", "PUT", "DELETE"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/", page, methods=["GET"]),
        Route(EMBED_PAGE_PATH, embed_page, methods=["GET"]),
        Route("/py/files.json", page_python, methods=["GET"]),
        Route("/py/keys.json", keys_python, methods=["GET"]),
        *(Route(bundle.path, bundle_endpoint(bundle), methods=["GET"]) for bundle in BUNDLES),
        Route(f"/{PAGE_CONFIG}", page_config, methods=["GET"]),
        Mount(
            "/static",
            PageFiles(directory=root / "static", immutable_prefixes=("/static/vendor/",), versioned=True),
        ),
        # Only the browser's packages: the server's own code is not the page's business.
        Mount("/py/ai_search", PageFiles(directory=root / "py" / "ai_search", versioned=True)),
        Mount("/py/ai_search_web", PageFiles(directory=root / "py" / "ai_search_web", versioned=True)),
        *services.search.http_routes(),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # The services as they are now: a test may have swapped one in after create_app.
        search = services.search
        await search.start()
        yield
        await search.aclose()
        await services.outbound.aclose()
        await oauth.aclose()
        if services.limiter is not None:
            await services.limiter.aclose()
        if close_store:
            store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.services = services
    app.state.api_routes = api_routes
    policy = origin_policy(settings)
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=settings.max_request_body_bytes,
        body_timeout_seconds=settings.request_body_timeout_seconds,
    )
    if limiter is not None:
        # Outside the body limit: an address out of guesses gets no upload read.
        app.add_middleware(
            FailedAuthMiddleware, limiter=limiter, trusted_proxy_hops=settings.trusted_proxy_hops
        )
    app.add_middleware(OriginMiddleware, policy=policy)
    app.add_middleware(
        SecurityHeadersMiddleware,
        frame_ancestors=tuple(settings.embed_allowed_origins),
        frameable_paths=(EMBED_PAGE_PATH,),
    )
    return app
