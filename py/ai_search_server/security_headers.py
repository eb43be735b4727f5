"""The headers every response carries: the Content-Security-Policy, ``nosniff``, ``Referrer-Policy``
and, where nothing may frame the page, ``X-Frame-Options``.

:class:`SecurityHeadersMiddleware` is the outermost layer of ``app.create_app``'s stack, so every
answer, including the 403/413/421 of the layers below it and a route's 429, carries them.
:func:`build_csp` writes the policy; a setting may add sources (``csp_extra``) but never one that
re-opens script injection.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .origins import normalize_origin

__all__ = ["SecurityHeadersMiddleware", "build_csp"]


# The page's Content-Security-Policy, directive by directive, and why each source is there. Measured
# against the runtime the page loads (pyodide 314.0.x under PyScript 0.7.31; static/pyscript-boot.mjs starts it):
# - Pyodide's only eval() calls are in the dynamic linker (EM_ASM/EM_JS of side modules, i.e.
#   packages with .so files, which the page never loads), in emscripten_run_script and in a Node-only
#   path, so no string is ever compiled. So 'unsafe-eval' is not needed; only WebAssembly
#   compilation is, which 'wasm-unsafe-eval' allows without allowing eval().
# - PyScript's one Function(...) builds the hooks of PyScript *workers*; the page runs none, and its
#   boot module (static/pyscript-boot.mjs) empties that set before PyScript reads it.
# - The page's one worker, the Pyodide snapshot maker, is a file of our own. So worker-src is 'self'.
# - The page styles elements only through its stylesheets and the CSSOM (element.style, which CSP
#   does not govern). No 'unsafe-inline'.
# - img-src data: serves the `data:,` favicon and inline SVG icons; data: is no network request, so it
#   opens no exfiltration path, while img-src/connect-src 'self' close the Markdown-image one.
_CSP_DIRECTIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("default-src", ("'self'",)),
    ("script-src", ("'self'", "'wasm-unsafe-eval'")),
    ("worker-src", ("'self'",)),
    ("connect-src", ("'self'",)),
    ("img-src", ("'self'", "data:")),
    ("style-src", ("'self'",)),
    ("object-src", ("'none'",)),
    ("base-uri", ("'none'",)),
    ("form-action", ("'self'",)),
)
# Sources csp_extra may never add: each one re-opens script injection. Loosening the policy is a code
# change with a reviewer, not a setting.
_CSP_FORBIDDEN_SOURCES = {"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*"}
_CSP_SCRIPT_DIRECTIVES = {"default-src", "script-src", "script-src-elem", "script-src-attr", "worker-src"}
_CSP_DIRECTIVE_NAME = re.compile(r"^[a-z][a-z-]*$")
_CSP_SOURCE = re.compile(r"^[^\s;,]+$")
_CSP_SCHEME_ONLY = re.compile(r"^[a-z][a-z0-9+.-]*:$", re.IGNORECASE)


def build_csp(
    *, frame_ancestors: Sequence[str] = (), extra: Mapping[str, Sequence[str]] | None = None
) -> str:
    """The Content-Security-Policy header value of every response.

    ``frame_ancestors`` are the origins allowed to embed the widget: ``'self'`` plus them, or ``'none'``
    when there are none. ``extra`` appends sources to a directive (or adds a directive); a ``'none'``
    it extends is replaced.

    Raises:
        ValueError: a frame ancestor is not an http(s) origin (``*`` included), or ``extra`` names a bad
            directive, a malformed source, a source that re-opens script injection, or a scheme-only
            source in a script directive.
    """
    ancestors: list[str] = []
    for entry in frame_ancestors:
        origin = normalize_origin(entry)
        if origin is None:
            raise ValueError(f"frame ancestor {entry!r} is not an http or https origin")
        ancestors.append(origin)
    directives = {name: list(sources) for name, sources in _CSP_DIRECTIVES}
    directives["frame-ancestors"] = ["'self'", *ancestors] if ancestors else ["'none'"]
    for name, sources in (extra or {}).items():
        if not _CSP_DIRECTIVE_NAME.match(name):
            raise ValueError(f"CSP directive name {name!r} is not valid")
        for source in sources:
            if not _CSP_SOURCE.match(source):
                raise ValueError(f"CSP source {source!r} for {name} is empty or holds a space, ';' or ','")
            if source.lower() in _CSP_FORBIDDEN_SOURCES or (
                name in _CSP_SCRIPT_DIRECTIVES and _CSP_SCHEME_ONLY.match(source)
            ):
                raise ValueError(f"CSP source {source} for {name} would allow injected script; refused")
        current = directives.setdefault(name, [])
        if current == ["'none'"] and sources:
            current.clear()
        current.extend(source for source in sources if source not in current)
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class SecurityHeadersMiddleware:
    """CSP, ``nosniff``, ``Referrer-Policy`` (and ``X-Frame-Options`` when nothing may frame us).

    Added to every HTTP response, HTML or not, unless the app already set that header for a route on
    purpose. ``Referrer-Policy: no-referrer``: a result links out of the product, and the page URL holds
    the search query and room filters, which must not leak to the linked site.

    ``frameable_paths`` None: every response may be framed by ``frame_ancestors``. A collection: only
    those exact paths may (the widget page, ``/embed``); every other response, the full search page
    included, gets ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``, so the page with the
    sign-in form can never be clickjacked, whatever the embed allow-list says. ``X-Frame-Options``
    cannot name origins, so a frameable path with an allow-list omits it (``frame-ancestors`` rules).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        frame_ancestors: Sequence[str],
        csp_extra: Mapping[str, Sequence[str]] | None = None,
        report_only: bool = False,
        frameable_paths: Collection[str] | None = None,
    ) -> None:
        self.app = app
        self.frameable_paths = None if frameable_paths is None else frozenset(frameable_paths)
        self.headers = self._headers(frame_ancestors, csp_extra, report_only)
        self.unframed_headers = (
            self.headers if self.frameable_paths is None else self._headers((), csp_extra, report_only)
        )

    @staticmethod
    def _headers(
        frame_ancestors: Sequence[str], csp_extra: Mapping[str, Sequence[str]] | None, report_only: bool
    ) -> dict[str, str]:
        csp_name = "Content-Security-Policy-Report-Only" if report_only else "Content-Security-Policy"
        headers = {
            csp_name: build_csp(frame_ancestors=frame_ancestors, extra=csp_extra),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        if not frame_ancestors:
            # For browsers without CSP frame-ancestors; it cannot express an allow-list, so only "none".
            headers["X-Frame-Options"] = "DENY"
        return headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        framed = self.frameable_paths is None or scope["path"] in self.frameable_paths
        chosen = self.headers if framed else self.unframed_headers

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in chosen.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
