"""Screenshots of the search page for docs/: 1280x800 and 360x740, light and dark.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Runs the real app with the demo workspace (in-process, loopback, keyword-only retrieval) and
Debian's chromium, signed in as bob, in a fixed locale and time zone so that runs agree. Each shot
shows one moment with everything on it: a search with a filter chip, its results, an AI answer
(extractive: no language model is configured here), and the suggestion list open for the next
filter being typed. A second shot per size and scheme shows a thread reply opened in its thread
(beside the results at 1280 px, in their place at 360 px): ``context-<width>-<scheme>.png``; a third
an answer with a follow-up (at 1280 px with a citation of it opened in context, its supporting span
marked): ``answer-<width>-<scheme>.png``. Writes ``page-<width>-<scheme>.png`` and prints where.

Three more show a first visit at 1280 px, light: ``page-loading.png`` while the page's Python is
still loading (the page bundle on MicroPython, PyScript's configuration on Pyodide, held back, so the
page is the keystroke stage's: the core's grammar on MicroPython, a chip for the finished ``in:``
filter and suggestions for ``from:ca``), ``page-loaded.png`` a moment after it is let through, the
same text now the whole page's, and
``page-loading-status.png``, a visit whose stage is held back too (the fallback alone: its
suggestions closed, the one sentence the status says then).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from _browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS  # noqa: E402
from _harness import demo_app_server  # noqa: E402

SIZES = {1280: 800, 360: 740}
# Widths at which the context view sits beside the results (static/app.css: 960px and up).
WIDE_PX = 960
SCHEMES = ("light", "dark")
QUERY = "in:engineering postgres"
TYPED = " from:ca"
# Its first result is a reply in the ledger-db failover thread (files, a reaction), beside two more
# conversations.
THREAD_QUERY = "patroni"
# An extractive answer, a follow-up to it, and (at 1280 px) its first citation opened in context.
ANSWER_QUERY = "why did billing-api keep failing after the failover"
FOLLOW_UP = "and who fixed it?"
SESSION_KEY = "ai-search.session"  # py/ai_search_web/auth.py
LOCALE, TIME_ZONE = "en-US", "UTC"


def shoot(pw: object, url: str, session: dict[str, str], out: Path) -> list[Path]:
    profile = tempfile.mkdtemp(prefix="screenshots-")
    written = []
    try:
        context = pw.chromium.launch_persistent_context(  # type: ignore[attr-defined]
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, locale=LOCALE,
            timezone_id=TIME_ZONE,
        )  # fmt: skip
        page = context.new_page()
        page.add_init_script(
            f"sessionStorage.setItem({json.dumps(SESSION_KEY)}, {json.dumps(json.dumps(session))})"
        )
        for width, height in SIZES.items():
            for scheme in SCHEMES:
                page.set_viewport_size({"width": width, "height": height})
                page.emulate_media(color_scheme=scheme)
                page.goto(f"{url}/?q={QUERY.replace(' ', '+')}")
                page.wait_for_selector("#result-list .result", timeout=WAIT_MS)
                page.click("#ask")
                page.wait_for_selector("#answer[data-provider]:not([data-provider=''])", timeout=WAIT_MS)
                page.focus("#search-box")
                page.keyboard.press("End")
                page.keyboard.type(TYPED)
                page.wait_for_selector("#suggestions[data-by=python] [role=option]", timeout=WAIT_MS)
                page.evaluate("window.scrollTo(0, 0)")
                page.mouse.move(0, height - 1)  # no hover on whatever the last click left under it
                path = out / f"page-{width}-{scheme}.png"
                page.screenshot(path=str(path))
                written.append(path)

                page.goto(f"{url}/?q={THREAD_QUERY}")
                page.wait_for_selector("#result-list .result", timeout=WAIT_MS)
                page.click("#result-1")
                page.wait_for_selector("#context[data-state=ready]", timeout=WAIT_MS)
                page.mouse.move(0, height - 1)
                path = out / f"context-{width}-{scheme}.png"
                page.screenshot(path=str(path))
                written.append(path)

                page.goto(f"{url}/?q={ANSWER_QUERY.replace(' ', '+')}")
                page.wait_for_selector("#result-list .result", timeout=WAIT_MS)
                page.click("#ask")
                page.wait_for_selector("#follow-up-form:not([hidden])", timeout=WAIT_MS)
                page.fill("#follow-up", FOLLOW_UP)
                page.press("#follow-up", "Enter")
                page.wait_for_selector("#answer-thread li", timeout=WAIT_MS)
                page.wait_for_selector("#follow-up-form:not([hidden])", timeout=WAIT_MS)
                if width >= WIDE_PX:
                    page.click("#answer-body a.cite")
                    page.wait_for_selector("#context[data-state=ready] .is-hit mark", timeout=WAIT_MS)
                page.evaluate("document.getElementById('answer').scrollIntoView()")
                page.mouse.move(0, height - 1)
                path = out / f"answer-{width}-{scheme}.png"
                page.screenshot(path=str(path))
                written.append(path)
        context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return written


LOADING_TYPED = "in:engineering from:ca"
# What the page's Python waits for beyond the stage: the page bundle (MicroPython), PyScript's
# configuration (Pyodide: PyScript starts nothing without it).
PAGE_PYTHON_FILES = ("**/py/page-bundle.json*", "**/pyscript.toml")


def _loading_page(pw: Any, profile: str, session: dict[str, str], held: list[Any], *patterns: str) -> Any:
    context = pw.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, locale=LOCALE,
        timezone_id=TIME_ZONE, viewport={"width": 1280, "height": 800}, color_scheme="light",
    )  # fmt: skip
    page = context.new_page()
    page.add_init_script(f"sessionStorage.setItem({json.dumps(SESSION_KEY)}, {json.dumps(json.dumps(session))})")
    for pattern in patterns:  # held until let through
        page.route(pattern, lambda route: held.append(route))
    return page


def shoot_loading(pw: Any, url: str, session: dict[str, str], out: Path) -> list[Path]:
    profiles = [tempfile.mkdtemp(prefix="screenshots-") for _ in range(2)]
    try:
        held: list[Any] = []
        page = _loading_page(pw, profiles[0], session, held, *PAGE_PYTHON_FILES)
        page.goto(url)
        page.wait_for_selector("html[data-keys=ready]", timeout=WAIT_MS)
        page.focus("#search-box")
        page.keyboard.type(LOADING_TYPED)  # a finished filter, then the next
        page.wait_for_selector("#suggestions[data-by=keys] [role=option]", timeout=WAIT_MS)
        page.mouse.move(0, 799)
        loading = out / "page-loading.png"
        page.screenshot(path=str(loading))
        page.keyboard.press("Backspace")  # the list again, for the page's Python to take over
        page.keyboard.type("a")
        for route in held:
            route.continue_()
        for pattern in PAGE_PYTHON_FILES:
            page.unroute(pattern)
        page.wait_for_selector("#suggestions[data-by=python] [role=option]", timeout=WAIT_MS)
        loaded = out / "page-loaded.png"
        page.screenshot(path=str(loaded))
        page.context.close()

        page = _loading_page(pw, profiles[1], session, [], *PAGE_PYTHON_FILES, "**/py/keys-bundle.json*")
        page.goto(url)
        page.wait_for_selector("html[data-fallback=ready]", timeout=WAIT_MS)
        page.focus("#search-box")
        page.keyboard.type(LOADING_TYPED)
        page.wait_for_selector("#suggestions[data-by=fallback] [role=option]", timeout=WAIT_MS)
        page.keyboard.press("Escape")  # the list closed: the status line's sentence
        page.mouse.move(0, 799)
        status = out / "page-loading-status.png"
        page.screenshot(path=str(status))
        page.context.close()
    finally:
        for profile in profiles:
            shutil.rmtree(profile, ignore_errors=True)
    return [loading, loaded, status]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="where the PNGs go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import httpx
    from playwright.sync_api import sync_playwright

    with demo_app_server() as url, sync_playwright() as pw:
        data = httpx.post(f"{url}/api/v1/login", json={"user": "bob", "password": "demo-bob"}).json()["data"]
        name = data.get("me", {}).get("name") or ""
        session = {"userId": data["userId"], "authToken": data["authToken"], "username": "bob", "name": name}
        for path in [*shoot(pw, url, session, args.out), *shoot_loading(pw, url, session, args.out)]:
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
