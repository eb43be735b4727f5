"""Runs the page's I/O glue on MicroPython (in Node, without a DOM) and writes what each case gives as
JSON; tests/unit/test_glue_io_micropython.py computes the same on CPython and compares.

Written into MicroPython's file system with the packages and run by `main`. The browser is Node's
own (`fetch`, `Response`, `ReadableStream`, `AbortSignal`), with a `fetch` of the test's making that
answers each case's scenario (`globalThis.scenario`) and counts what the page cancelled. Follows the
portable convention itself.
"""

import json
import sys

import js

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TASKS = []  # kept until the process ends
# The modules under test, imported one by one on MicroPython.
MODULES = (
    "storage",
    "api",
    "auth",
    "signin",
    "url_state",
    "clipboard",
    "message_view",
    "answer_actions",
    "embed_bridge",
)


def _client(api: "Any") -> "Any":
    return api.ApiClient(lambda: ("u1", "t0k"), on_unauthorized=lambda: None)


async def _stream(api: "Any", scenario: "Any", stop_after: int) -> "Any":
    from ai_search_web.ffi import to_js

    js.globalThis.scenario = to_js(scenario)
    js.globalThis.cancelled = 0
    events: list[Any] = []
    out: dict[str, Any] = {"events": events}
    stream = _client(api).events("ai.search.answer", {"query": "q"})
    try:
        async for event in stream:
            events.append([event.event, event.data])
            if len(events) == stop_after:
                break
    except api.ApiError as error:
        out["error"] = [error.error_type, error.status]
    await stream.aclose()
    await _settle()
    out["cancelled"] = int(js.globalThis.cancelled)
    return out


async def _settle() -> None:
    import asyncio

    for _ in range(3):  # a cancel reaches the stream's source a few JS turns later
        await asyncio.sleep(0)


async def _get(api: "Any", scenario: "Any", params: "Any") -> "Any":
    from ai_search_web.ffi import to_js, to_py

    js.globalThis.scenario = to_js(scenario)
    try:
        data = await _client(api).get("ai.search", params)
    except api.ApiError as error:
        return {"error": [error.error_type, error.status, error.retry_after]}
    call = to_py(js.globalThis.lastCall)
    return {"data": data, "url": call["url"], "headers": call["headers"], "method": call["method"]}


async def _credentials(api: "Any") -> "Any":
    """The ``credentials`` mode of a GET, of the login and of another POST."""
    from ai_search_web.ffi import to_js, to_py

    js.globalThis.scenario = to_js({"kind": "json", "status": 200, "text": "{}", "headers": {}})
    client = _client(api)
    out = {}
    await client.get("ai.search", {"q": "x"})
    out["ai.search"] = to_py(js.globalThis.lastCall)["credentials"]
    for route in ("login", "logout"):
        await client.post(route, {"user": "a", "password": "b"})
        out[route] = to_py(js.globalThis.lastCall)["credentials"]
    return out


def _signed_in(auth: "Any", text: str) -> "Any":
    found = auth.SignedIn.from_json(text)
    if found is None:
        return None
    again = auth.SignedIn.from_json(found.to_json())
    return {
        "fields": [found.user_id, found.auth_token, found.username, found.name],
        "json": json.loads(found.to_json()),
        "round_trip": again == found and (again != found) is False and hash(again) == hash(found),
        "other": found == auth.SignedIn(found.user_id, found.auth_token, found.username, "Other"),
    }


def _imports() -> "Any":
    failed = {}
    for name in MODULES:
        try:
            __import__("ai_search_web." + name)
        except Exception as error:  # the result: which module, and what MicroPython said
            failed[name] = type(error).__name__ + ": " + str(error)
    return failed


async def _replies() -> "Any":
    """The widget's wait for its host's reply to an open-message: the reply given (by a JS timer,
    as a message event would), and none (the wait ends after HOST_REPLY_MS)."""
    from ai_search_web.embed_bridge import EmbedBridge, _Reply
    from ai_search_web.ffi import create_proxy

    bridge = EmbedBridge(None, "https://host.example", "", intercept=True)
    given = bridge._replies[1] = _Reply()
    js.setTimeout(create_proxy(lambda *_args: given.give(True)), 20)
    js.setTimeout(create_proxy(lambda *_args: given.give(False)), 30)  # only the first counts
    taken = await bridge._reply(1, given)
    silent = bridge._replies[2] = _Reply()
    waited = await bridge._reply(2, silent)
    return {"taken": taken, "silent": waited, "left": len(bridge._replies)}


def _raises() -> bool:
    try:
        {}["missing"]
    except KeyError:
        return True
    return False


def _storage() -> "Any":
    """Both stores' failures, each a synchronous JavaScript throw; then a Python exception, which a
    throw through MicroPython's frames would have broken."""
    from ai_search_web import storage

    storage.write(storage.SESSION, "k", "abc")  # dropped: the store cannot be reached
    out: dict[str, Any] = {
        "blocked": [storage.read(storage.SESSION, "k"), storage.read(storage.SESSION, "x")]
    }
    storage.write(storage.LOCAL, "k", "abc")
    out["kept"] = storage.read(storage.LOCAL, "k")
    storage.write(storage.LOCAL, "k", "far too long")  # dropped: over the quota
    out["over_the_quota"] = storage.read(storage.LOCAL, "k")
    storage.write(storage.LOCAL, "k", None)
    out["removed"] = storage.read(storage.LOCAL, "k")
    out["python_raises_after"] = _raises()
    return out


async def run(cases: "Any") -> "Any":
    out: dict[str, Any] = {"import_failures": _imports()}
    from ai_search_web import api, auth

    out["storage"] = _storage()
    out["replies"] = await _replies()
    out["query"] = [api.encode_query([tuple(pair) for pair in pairs]) for pairs in cases["query"]]
    out["query_dict"] = [api.encode_query(params) for params in cases["query_dict"]]
    out["retry_after"] = [api.retry_after_seconds(value) for value in cases["retry_after"]]
    # Loops, not comprehensions: MicroPython has no `await` inside one.
    out["streams"] = streams = []
    for scenario, stop in cases["streams"]:
        streams.append(await _stream(api, scenario, stop))
    out["gets"] = gets = []
    for scenario, params in cases["gets"]:
        gets.append(await _get(api, scenario, params))
    out["signed_in"] = [_signed_in(auth, text) for text in cases["signed_in"]]
    out["credentials"] = await _credentials(api)
    return out


async def main(source: str, target: str) -> None:
    """Run the cases of ``source`` into ``target``; then tell Node (``finished``: nothing, or what
    went wrong)."""
    failure = ""
    try:
        with open(source) as handle:
            cases = json.loads(handle.read())
        results = await run(cases)
        with open(target, "w") as handle:
            handle.write(json.dumps(results))
    except Exception as error:  # the result: Node reports it and fails
        import io

        buffer = io.StringIO()
        sys.print_exception(error, buffer)  # type: ignore[attr-defined]
        failure = buffer.getvalue()
    js.globalThis.finished(failure)


def start(source: str, target: str) -> None:
    import asyncio

    TASKS.append(asyncio.create_task(main(source, target)))
