#!/usr/bin/env python3
"""MCP conformance probe for a Streamable HTTP endpoint (stateless, JSON responses).

Two layers of checks:

* SDK layer (default): drives the *official* MCP Python SDK client (PyPI ``mcp``
  2.x) against the server: initialize, ping, tools/list (all pages), one
  tools/call.  Everything the SDK parses is validated by the SDK's own pydantic
  protocol models, and ``structuredContent`` is checked by the SDK against the
  tool's ``outputSchema``.  Tool names are checked with the SDK's SEP-986
  validator and every input/output schema with ``jsonschema``'s meta-schema.

* Wire layer (``--wire``): raw HTTP requests for transport rules the SDK client
  never exercises (202 for notifications, 405 for GET/DELETE, Origin -> 403,
  bad MCP-Protocol-Version -> 400, batch rejection, JSON-RPC error codes, id
  echo, the 2026-era ``server/discover`` probe).  These checks are ours, derived
  from the spec text; each line names the revision the rule comes from.
  With ``--schema PATH`` (the spec repo's ``schema/<rev>/schema.json``) raw
  results are also validated against the official JSON Schema.

It also has a ``proxy`` sub-command: a loopback reverse proxy that adds the
auth headers to every request, so tools that cannot send custom headers (the
official ``@modelcontextprotocol/conformance`` runner) can test an endpoint
that requires X-User-Id / X-Auth-Token.

Usage::

    python mcp_probe.py URL [--user-id U] [--token T] [-H 'Name: value']...
                        [--tool NAME --args JSON] [--mode legacy|auto]
                        [--wire] [--schema schema.json] [--json]
    python mcp_probe.py proxy --target URL --listen 127.0.0.1:9100 [--user-id U] [--token T] [--offer-version V]

Environment fallbacks: MCP_URL, MCP_USER_ID, MCP_AUTH_TOKEN, MCP_HEADERS
(``Name: value`` pairs separated by ``;``).

Exit status: 0 when no check FAILed, 1 otherwise, 2 on usage errors.
Requires: ``pip install "mcp>=2.3,<3" httpx`` (uvicorn/starlette come with mcp).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, WARN, INFO, SKIP = "PASS", "FAIL", "WARN", "INFO", "SKIP"


# --------------------------------------------------------------------------- results


@dataclass
class Check:
    status: str
    name: str
    detail: str = ""
    rule: str = ""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    quiet: bool = False

    def add(self, status: str, name: str, detail: str = "", rule: str = "") -> None:
        c = Check(status, name, detail, rule)
        self.checks.append(c)
        if not self.quiet:
            tail = f"  [{rule}]" if rule else ""
            print(f"{status:4} {name}: {detail}{tail}", flush=True)

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)


def _leaf(e: BaseException) -> BaseException:
    """Innermost exception of an (anyio) ExceptionGroup, for readable failure lines."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def _short(obj: Any, n: int = 160) -> str:
    s = obj if isinstance(obj, str) else json.dumps(obj, default=str)
    return s if len(s) <= n else s[: n - 3] + "..."


# --------------------------------------------------------------------------- headers


def build_headers(args: argparse.Namespace) -> dict[str, str]:
    headers: dict[str, str] = {}
    for pair in filter(None, (os.environ.get("MCP_HEADERS", "").split(";"))):
        k, _, v = pair.partition(":")
        if k.strip():
            headers[k.strip()] = v.strip()
    if args.user_id:
        headers["X-User-Id"] = args.user_id
    if args.token:
        headers["X-Auth-Token"] = args.token
    for h in args.header or []:
        k, sep, v = h.partition(":")
        if not sep:
            raise SystemExit(f"bad -H value {h!r}; expected 'Name: value'")
        headers[k.strip()] = v.strip()
    return headers


# --------------------------------------------------------------------------- schema helpers


def _schema_errors(schema: Any) -> str | None:
    """None if `schema` is a valid JSON Schema for its declared (default 2020-12) dialect."""
    from jsonschema import Draft202012Validator, exceptions, validators

    if not isinstance(schema, dict):
        return f"not an object: {type(schema).__name__}"
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as e:
        return f"invalid {cls.__name__} schema: {e.message}"
    return None


class SpecSchema:
    """Validates raw JSON against one definition in the spec's schema.json."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            self.root = json.load(f)
        self.key = "$defs" if "$defs" in self.root else "definitions"

    def errors(self, definition: str, instance: Any) -> str | None:
        from jsonschema import validators

        if definition not in self.root[self.key]:
            return None
        schema = {"$schema": self.root.get("$schema"), "$ref": f"#/{self.key}/{definition}", self.key: self.root[self.key]}
        cls = validators.validator_for(schema)
        errs = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
        if not errs:
            return None
        e = errs[0]
        return f"{definition}: {e.message} at /{'/'.join(map(str, e.absolute_path))} ({len(errs)} error(s))"


# --------------------------------------------------------------------------- SDK layer


async def sdk_checks(args: argparse.Namespace, headers: dict[str, str], rep: Report) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp.shared.tool_name_validation import validate_tool_name
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS

    http_log: list[str] = []

    async def on_response(resp: Any) -> None:
        req = resp.request
        http_log.append(
            f"{req.method} -> {resp.status_code} ct={resp.headers.get('content-type', '-')}"
            f" sent-version={req.headers.get('mcp-protocol-version', '-')}"
            f" session={resp.headers.get('mcp-session-id', '-')}"
        )

    timeout = httpx2.Timeout(args.timeout, read=args.timeout)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks={"response": [on_response]}) as http:
        transport = streamable_http_client(args.url, http_client=http)
        client = Client(transport, mode=args.mode, read_timeout_seconds=args.timeout, cache=None)
        t0 = time.perf_counter()
        try:
            await client.__aenter__()
        except BaseException as e:
            e = _leaf(e)
            rep.add(FAIL, "initialize", f"{type(e).__name__}: {_short(str(e) or repr(e), 300)}", "lifecycle")
            for line in http_log:
                rep.add(INFO, "http", line)
            return
        try:
            ms = (time.perf_counter() - t0) * 1000
            pv = client.protocol_version
            info = client.server_info
            caps = client.server_capabilities
            ok_version = pv in (HANDSHAKE_PROTOCOL_VERSIONS if args.mode == "legacy" else KNOWN_PROTOCOL_VERSIONS)
            rep.add(
                PASS if ok_version else FAIL,
                "initialize",
                f"protocolVersion={pv} serverInfo={info.name if info else None}/{info.version if info else None}"
                f" ({ms:.0f} ms, mode={args.mode})",
                "lifecycle: server answers with a version it supports",
            )
            if info is None or not info.name or info.version is None:
                rep.add(FAIL if args.mode == "legacy" else WARN, "initialize.serverInfo", "missing name/version", "InitializeResult.serverInfo")
            if caps is None or caps.tools is None:
                rep.add(FAIL, "initialize.capabilities.tools", "server does not declare the tools capability", "tools: servers MUST declare tools")
            else:
                rep.add(PASS, "initialize.capabilities", _short(caps.model_dump(by_alias=True, exclude_none=True)))
            if client.instructions:
                rep.add(INFO, "initialize.instructions", _short(client.instructions, 80))

            # ---- ping (removed in 2026-07-28; the SDK only sends it on handshake-era connections)
            if pv in HANDSHAKE_PROTOCOL_VERSIONS:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        await client.send_ping()
                    rep.add(PASS, "ping", "empty result", "ping: MUST respond promptly with {}")
                except MCPError as e:
                    rep.add(FAIL, "ping", f"JSON-RPC error {e.code}: {e.message}", "ping is part of the base protocol")

            # ---- tools/list, every page
            tools: list[Any] = []
            cursor: str | None = None
            pages = 0
            try:
                while True:
                    page = await client.list_tools(cursor=cursor)
                    pages += 1
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor or pages >= args.max_pages:
                        break
                rep.add(PASS, "tools/list", f"{len(tools)} tool(s) in {pages} page(s)", "tools/list + pagination")
                if cursor:
                    rep.add(WARN, "tools/list.pagination", f"stopped after {pages} pages; nextCursor still set")
            except MCPError as e:
                rep.add(FAIL, "tools/list", f"JSON-RPC error {e.code}: {e.message}")
            except Exception as e:  # pydantic ValidationError etc.
                rep.add(FAIL, "tools/list", f"{type(e).__name__}: {_short(str(e), 300)}", "result must match ListToolsResult")

            names = [t.name for t in tools]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                rep.add(WARN, "tools/list.unique-names", f"duplicates: {dupes}", "2025-11-25: names SHOULD be unique")
            bad_schema = 0
            for t in tools:
                v = validate_tool_name(t.name)
                if not v.is_valid or v.warnings:
                    rep.add(WARN, f"tool[{t.name}].name", "; ".join(v.warnings) or "invalid", "2025-11-25 SEP-986 tool-name rules")
                if err := _schema_errors(t.input_schema):
                    bad_schema += 1
                    rep.add(FAIL, f"tool[{t.name}].inputSchema", err, "inputSchema MUST be a valid JSON Schema")
                elif t.input_schema.get("type") != "object":
                    bad_schema += 1
                    rep.add(FAIL, f"tool[{t.name}].inputSchema", f"root type is {t.input_schema.get('type')!r}", "inputSchema.type MUST be 'object' (<=2025-11-25)")
                if t.output_schema is not None:
                    if err := _schema_errors(t.output_schema):
                        bad_schema += 1
                        rep.add(FAIL, f"tool[{t.name}].outputSchema", err, "outputSchema MUST be a valid JSON Schema")
                    elif t.output_schema.get("type") != "object":
                        bad_schema += 1
                        rep.add(FAIL, f"tool[{t.name}].outputSchema", f"root type is {t.output_schema.get('type')!r}", "outputSchema root type 'object' (2025-06-18..2025-11-25)")
                if not t.description:
                    rep.add(WARN, f"tool[{t.name}].description", "missing (optional in the schema, but the official conformance tools-list check requires it)")
            if tools and not bad_schema:
                rep.add(PASS, "tools/list.schemas", f"all {len(tools)} inputSchema/outputSchema valid, root type object")

            # ---- tools/call
            target = args.tool
            call_args: dict[str, Any] = json.loads(args.args) if args.args else {}
            if target is None:
                for t in tools:  # first tool that needs no arguments
                    if not t.input_schema.get("required"):
                        target = t.name
                        break
            if target is None:
                rep.add(SKIP, "tools/call", "no --tool given and every tool has required arguments")
            else:
                t0 = time.perf_counter()
                try:
                    res = await client.call_tool(target, call_args)
                    ms = (time.perf_counter() - t0) * 1000
                    detail = f"{target}({_short(call_args, 60)}) -> isError={res.is_error} content={len(res.content)} block(s)"
                    if res.structured_content is not None:
                        detail += f" structuredContent={_short(res.structured_content, 60)}"
                    status = FAIL if (res.is_error and not args.expect_error) else PASS
                    rep.add(status, "tools/call", f"{detail} ({ms:.0f} ms)", "CallToolResult; SDK checked structuredContent vs outputSchema")
                    if res.structured_content is not None and not any(getattr(c, "type", None) == "text" for c in res.content):
                        rep.add(WARN, "tools/call.text-fallback", "structuredContent without a TextContent copy", "2025-06-18: SHOULD also return serialized JSON as text")
                    tool = next((t for t in tools if t.name == target), None)
                    if tool is not None and tool.output_schema is not None and res.structured_content is None and not res.is_error:
                        rep.add(FAIL, "tools/call.structuredContent", "tool declares outputSchema but returned none", "2025-06-18: MUST provide conforming structured results")
                except MCPError as e:
                    rep.add(FAIL, "tools/call", f"JSON-RPC error {e.code}: {e.message}")
                except Exception as e:
                    rep.add(FAIL, "tools/call", f"{type(e).__name__}: {_short(str(e), 300)}", "result/outputSchema validation")

            # ---- unknown tool (behaviour differs between implementations: report only)
            try:
                res = await client.call_tool("__mcp_probe_no_such_tool__", {})
                rep.add(INFO, "tools/call(unknown)", f"result isError={res.is_error} (spec example uses JSON-RPC -32602; SDK servers return isError)")
            except MCPError as e:
                rep.add(INFO if e.code == -32602 else WARN, "tools/call(unknown)", f"JSON-RPC error {e.code}: {_short(e.message, 80)}", "tools: unknown tool -> protocol error -32602")
            except Exception as e:
                rep.add(WARN, "tools/call(unknown)", f"{type(e).__name__}: {_short(str(e), 200)}")
        finally:
            try:
                await client.__aexit__(None, None, None)
            except BaseException as e:
                rep.add(WARN, "close", f"{type(e).__name__}: {_short(str(e), 200)}")
    if args.verbose:
        for line in http_log:
            rep.add(INFO, "http", line)
    sessions = {line.split("session=")[1] for line in http_log}
    if sessions - {"-"}:
        rep.add(INFO, "transport.session", f"server issued Mcp-Session-Id (not stateless): {sorted(sessions - {'-'})[:2]}")
    if any("text/event-stream" in line for line in http_log):
        rep.add(WARN, "transport.json-only", "server answered at least one POST with an SSE stream")
    elif http_log:
        rep.add(PASS, "transport.json-only", f"{len(http_log)} HTTP exchange(s), none answered with SSE")


# --------------------------------------------------------------------------- wire layer


async def wire_checks(args: argparse.Namespace, headers: dict[str, str], rep: Report) -> None:
    import httpx

    spec = SpecSchema(args.schema) if args.schema else None
    version = args.version
    accept = "application/json, text/event-stream"
    base = {**headers, "Content-Type": "application/json", "Accept": accept}

    async with httpx.AsyncClient(timeout=args.timeout) as http:

        async def post(body: Any, extra: dict[str, str] | None = None, raw: bytes | None = None, drop: tuple[str, ...] = ()) -> httpx.Response:
            h = {k: v for k, v in {**base, **(extra or {})}.items() if k not in drop}
            content = raw if raw is not None else json.dumps(body).encode()
            try:
                return await http.post(args.url, headers=h, content=content)
            except httpx.HTTPError as e:  # connection dropped/reset: report as pseudo-status 599
                return httpx.Response(599, content=f"transport error: {type(e).__name__}".encode())

        def body_of(r: httpx.Response) -> Any:
            try:
                return r.json()
            except Exception:
                return None

        def err_code(r: httpx.Response) -> int | None:
            b = body_of(r)
            return b.get("error", {}).get("code") if isinstance(b, dict) and isinstance(b.get("error"), dict) else None

        # W1 initialize over raw HTTP (no MCP-Protocol-Version header on initialize)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "mcp-probe", "version": "1"}}}
        r = await post(init)
        if r.status_code == 599:
            rep.add(FAIL, "wire.initialize", r.text + " (wire checks skipped)")
            return
        b = body_of(r)
        ct = r.headers.get("content-type", "")
        ok = r.status_code == 200 and ct.startswith("application/json") and isinstance(b, dict) and b.get("id") == 1 and "result" in b
        rep.add(PASS if ok else FAIL, "wire.initialize", f"HTTP {r.status_code} ct={ct or '-'} id={b.get('id') if isinstance(b, dict) else '-'}", "2025-03-26+: request -> 200 application/json or SSE")
        negotiated = b["result"].get("protocolVersion") if ok else version
        if ok:
            if negotiated != version:
                rep.add(INFO, "wire.initialize.version", f"asked {version}, server chose {negotiated}", "lifecycle: same version if supported, else another it supports")
            if r.headers.get("mcp-session-id"):
                rep.add(INFO, "wire.initialize.session", "server issued Mcp-Session-Id (stateful)")
            if spec and (e := spec.errors("InitializeResult", b["result"])):
                rep.add(FAIL, "wire.initialize.schema", e, "schema.json")
            elif spec:
                rep.add(PASS, "wire.initialize.schema", "InitializeResult valid against spec schema.json")
            if b.get("jsonrpc") != "2.0":
                rep.add(FAIL, "wire.jsonrpc", f"jsonrpc={b.get('jsonrpc')!r}")
        vh = {"MCP-Protocol-Version": negotiated}

        # W2/W3 notifications -> 202, empty body
        for name, msg in (
            ("notifications/initialized", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ("notifications/cancelled", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 424242, "reason": "probe"}}),
        ):
            r = await post(msg, vh)
            ok = r.status_code == 202 and not r.content
            rep.add(PASS if ok else FAIL, f"wire.{name}", f"HTTP {r.status_code} body={len(r.content)}B", "2025-03-26+: accepted notification -> 202 Accepted, no body")

        # W4 a JSON-RPC *response* posted by the client is also answered 202
        r = await post({"jsonrpc": "2.0", "id": "probe-resp-1", "result": {}}, vh)
        rep.add(PASS if r.status_code == 202 else WARN, "wire.client-response", f"HTTP {r.status_code}", "2025-03-26..2025-11-25: accepted response -> 202 (or an error status if not accepted)")

        # W5 id echo (string id), ping result {}
        r = await post({"jsonrpc": "2.0", "id": "probe-ping-Ä", "method": "ping"}, vh)
        b = body_of(r)
        ok = isinstance(b, dict) and b.get("id") == "probe-ping-Ä" and b.get("result") == {}
        rep.add(PASS if ok else FAIL, "wire.ping.id-echo", f"HTTP {r.status_code} body={_short(b, 80)}", "JSON-RPC: same id, same type; ping -> {}")

        # W6 tools/list raw + schema
        r = await post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, vh)
        b = body_of(r)
        if isinstance(b, dict) and "result" in b:
            if spec and (e := spec.errors("ListToolsResult", b["result"])):
                rep.add(FAIL, "wire.tools/list.schema", e, "schema.json")
            elif spec:
                rep.add(PASS, "wire.tools/list.schema", "ListToolsResult valid against spec schema.json")
        else:
            rep.add(FAIL, "wire.tools/list", f"HTTP {r.status_code} {_short(b)}")

        # W7 tools/call raw + schema
        if args.tool:
            r = await post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": args.tool, "arguments": json.loads(args.args or "{}")}}, vh)
            b = body_of(r)
            if isinstance(b, dict) and "result" in b and spec:
                e = spec.errors("CallToolResult", b["result"])
                rep.add(FAIL if e else PASS, "wire.tools/call.schema", e or "CallToolResult valid against spec schema.json", "schema.json")

        # W8 no MCP-Protocol-Version header -> server SHOULD assume 2025-03-26, i.e. still answer
        r = await post({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        rep.add(PASS if r.status_code == 200 else WARN, "wire.version-header.absent", f"HTTP {r.status_code}", "2025-06-18+: no header -> SHOULD assume 2025-03-26")

        # W9 malformed / unsupported MCP-Protocol-Version -> 400 (same three values as the upstream conformance repo)
        for bad in ("invalid-protocol-version", "2000-01-01", "2099-01-01"):
            r = await post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, {"MCP-Protocol-Version": bad})
            rep.add(PASS if r.status_code == 400 else FAIL, f"wire.version-header[{bad}]", f"HTTP {r.status_code}", "2025-06-18+: invalid/unsupported MCP-Protocol-Version -> MUST 400")

        # W10 2026-era discovery probe (what mcp>=2 clients in auto mode send first)
        disc = {"jsonrpc": "2.0", "id": 6, "method": "server/discover",
                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
        r = await post(disc, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
        b = body_of(r)
        if r.status_code == 200 and isinstance(b, dict) and "result" in b:
            rep.add(
                INFO,
                "wire.server/discover",
                f"server speaks the 2026-07-28 era: {_short(b['result'].get('supportedVersions'))}",
            )
            modern = SpecSchema(args.modern_schema) if args.modern_schema else None
            await modern_wire_checks(post, body_of, modern, rep)
        elif r.status_code == 400:
            rep.add(PASS, "wire.server/discover", f"HTTP 400 code={err_code(r)} -> modern clients fall back to initialize", "2025-06-18+: unsupported version -> 400; 2026-07-28 back-compat")
        elif 400 < r.status_code < 500 or (r.status_code == 200 and err_code(r) is not None):
            rep.add(WARN, "wire.server/discover", f"HTTP {r.status_code} code={err_code(r)}: clients fall back, but the version header should have produced 400", "2025-06-18+: unsupported MCP-Protocol-Version -> MUST 400")
        else:
            rep.add(FAIL, "wire.server/discover", f"HTTP {r.status_code} {_short(b)}", "a 2025-era server must reject the 2026 probe with 4xx, not 5xx/200-garbage")

        # W11 GET (server->client SSE stream) : 405 expected for stateless JSON-only servers
        try:
            async with http.stream("GET", args.url, headers={**headers, "Accept": "text/event-stream", **vh}, timeout=httpx.Timeout(3.0)) as g:
                gct = g.headers.get("content-type", "")
                st = g.status_code
        except httpx.ReadTimeout:
            st, gct = -1, "timeout"
        except httpx.HTTPError as e:
            st, gct = 599, f"transport error: {type(e).__name__}"
        if st == 405:
            rep.add(PASS, "wire.GET", "405 Method Not Allowed", "2025-03-26+: GET -> text/event-stream or 405")
        elif st == 200 and gct.startswith("text/event-stream"):
            rep.add(WARN, "wire.GET", "opens an SSE stream; a stateless JSON-only server should answer 405", "2025-03-26+: GET -> text/event-stream or 405")
        else:
            rep.add(FAIL, "wire.GET", f"HTTP {st} ct={gct}", "2025-03-26+: GET MUST return text/event-stream or 405")

        # W12 DELETE (session termination) : 405 when there are no sessions
        try:
            r = await http.delete(args.url, headers={**headers, **vh})
        except httpx.HTTPError as e:
            r = httpx.Response(599, content=f"transport error: {type(e).__name__}".encode())
        rep.add(PASS if r.status_code == 405 else WARN, "wire.DELETE", f"HTTP {r.status_code}", "2025-03-26+: server MAY answer DELETE with 405")

        # W13 Origin validation
        r = await post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, {**vh, "Origin": "http://evil.example.com"})
        rep.add(PASS if r.status_code == 403 else FAIL, "wire.origin.invalid", f"HTTP {r.status_code}", "2025-03-26: MUST validate Origin; 2025-11-25: invalid Origin -> MUST 403")
        r = await post({"jsonrpc": "2.0", "id": 8, "method": "ping"}, {**vh, "Origin": args.good_origin})
        rep.add(PASS if r.status_code == 200 else WARN, "wire.origin.allowed", f"Origin {args.good_origin} -> HTTP {r.status_code}")

        # W14 Accept header handling
        r = await post({"jsonrpc": "2.0", "id": 9, "method": "ping"}, {**vh, "Accept": "text/html"})
        rep.add(PASS if r.status_code == 406 else WARN, "wire.accept.unacceptable", f"Accept: text/html -> HTTP {r.status_code}", "client MUST list json+sse; 406 is the usual server answer")
        r = await post({"jsonrpc": "2.0", "id": 10, "method": "ping"}, {**vh, "Accept": "application/json"})
        rep.add(INFO, "wire.accept.json-only", f"Accept: application/json -> HTTP {r.status_code} (lenient servers accept it)")

        # W15 batch
        batch = [{"jsonrpc": "2.0", "id": 11, "method": "ping"}, {"jsonrpc": "2.0", "id": 12, "method": "ping"}]
        r = await post(batch, vh)
        b = body_of(r)
        if isinstance(b, list):
            rep.add(INFO if negotiated == "2025-03-26" else WARN, "wire.batch", f"HTTP {r.status_code}: batch processed ({len(b)} responses)", "batching: allowed 2025-03-26, removed 2025-06-18")
        else:
            rep.add(PASS if negotiated != "2025-03-26" else WARN, "wire.batch", f"rejected: HTTP {r.status_code} code={err_code(r)}", "2025-06-18+: body MUST be a single message (2025-03-26 allowed arrays)")

        # W16 JSON-RPC error codes
        for name, raw, body, want in (
            ("parse-error", b'{"jsonrpc": "2.0", "id": 13, "method": ', None, -32700),
            ("invalid-request", None, {"jsonrpc": "2.0", "id": 14}, -32600),
            ("method-not-found", None, {"jsonrpc": "2.0", "id": 15, "method": "no/such/method"}, -32601),
            ("invalid-params", None, {"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"arguments": {}}}, -32602),
            ("bad-cursor", None, {"jsonrpc": "2.0", "id": 17, "method": "tools/list", "params": {"cursor": "\u0000not-a-cursor"}}, -32602),
        ):
            r = await post(body, vh, raw=raw)
            code = err_code(r)
            if spec and code is not None:
                env = next((d for d in ("JSONRPCErrorResponse", "JSONRPCError") if d in spec.root[spec.key]), None)
                if env and (e := spec.errors(env, body_of(r))):
                    rep.add(WARN, f"wire.error.{name}.schema", e, "schema: id is string|integer, never null (2025-11-25: omit id when unknown)")
            if code == want:
                rep.add(PASS, f"wire.error.{name}", f"HTTP {r.status_code} code={code}", f"JSON-RPC: {want}")
            else:
                sev = INFO if name == "bad-cursor" else WARN
                rep.add(sev, f"wire.error.{name}", f"HTTP {r.status_code} code={code} (expected {want}) {_short(body_of(r), 100)}", f"JSON-RPC: {want}")

        # W17 auth headers required?
        if headers:
            stripped = {"Content-Type": "application/json", "Accept": accept, **vh}
            try:
                r = await http.post(args.url, headers=stripped, content=json.dumps({"jsonrpc": "2.0", "id": 18, "method": "ping"}))
                rep.add(INFO, "wire.auth.missing", f"request without custom headers -> HTTP {r.status_code}")
            except httpx.HTTPError as e:
                rep.add(INFO, "wire.auth.missing", f"transport error {type(e).__name__}")


# --------------------------------------------------------------------------- 2026-07-28 wire checks

_MODERN = "2026-07-28"


def _modern(method: str, params: dict[str, Any] | None = None, version: str = _MODERN) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-probe", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**(params or {}), "_meta": meta}}


async def modern_wire_checks(post: Any, body_of: Any, spec: SpecSchema | None, rep: Report) -> None:
    """The 2026-07-28 transport rules of a server that answers server/discover: results with
    resultType and cache hints, and each refusal with its status and code (--modern-schema checks
    every answer against that revision's schema.json)."""
    mirrored = {"MCP-Protocol-Version": _MODERN}
    for method, definition, cached in (
        ("server/discover", "DiscoverResult", True),
        ("tools/list", "ListToolsResult", True),
    ):
        r = await post(_modern(method), {**mirrored, "Mcp-Method": method})
        b = body_of(r)
        result = b.get("result") if isinstance(b, dict) else None
        ok = (
            r.status_code == 200
            and isinstance(result, dict)
            and result.get("resultType") == "complete"
            and (
                not cached
                or (
                    isinstance(result.get("ttlMs"), int) and result.get("cacheScope") in ("public", "private")
                )
            )
        )
        rep.add(
            PASS if ok else FAIL,
            f"modern.{method}",
            f"HTTP {r.status_code} {_short(b, 120)}",
            "2026-07-28: resultType; ttlMs/cacheScope",
        )
        if ok and spec and (e := spec.errors(definition, result)):
            rep.add(FAIL, f"modern.{method}.schema", e, "2026-07-28 schema.json")
        elif ok and spec:
            rep.add(PASS, f"modern.{method}.schema", f"{definition} valid against the 2026-07-28 schema")

    list_body = _modern("tools/list")
    bare = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    cases = (
        ("missing-meta", bare, {**mirrored, "Mcp-Method": "tools/list"}, 400, -32602, "JSONRPCErrorResponse"),
        ("method-header-mismatch", list_body, {**mirrored, "Mcp-Method": "tools/call"}, 400, -32020, "HeaderMismatchError"),
        ("method-header-missing", list_body, mirrored, 400, -32020, "HeaderMismatchError"),
        ("version-header-mismatch", list_body, {"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, 400, -32020, "HeaderMismatchError"),
        ("unsupported-version", _modern("tools/list", version="1900-01-01"), {"MCP-Protocol-Version": "1900-01-01", "Mcp-Method": "tools/list"}, 400, -32022, "UnsupportedProtocolVersionError"),
        ("unknown-method", _modern("no/such"), {**mirrored, "Mcp-Method": "no/such"}, 404, -32601, "JSONRPCErrorResponse"),
        ("ping-removed", _modern("ping"), {**mirrored, "Mcp-Method": "ping"}, 404, -32601, "JSONRPCErrorResponse"),
    )  # fmt: skip
    for name, body, extra, status, code, definition in cases:
        r = await post(body, extra)
        b = body_of(r)
        got = (
            b.get("error", {}).get("code")
            if isinstance(b, dict) and isinstance(b.get("error"), dict)
            else None
        )
        ok = r.status_code == status and got == code
        rep.add(
            PASS if ok else FAIL,
            f"modern.{name}",
            f"HTTP {r.status_code} code={got}",
            f"2026-07-28: {status} {code}",
        )
        if ok and spec and (e := spec.errors(definition, b)):
            rep.add(FAIL, f"modern.{name}.schema", e, "2026-07-28 schema.json")


# --------------------------------------------------------------------------- proxy


def _offer_version(body: bytes, version: str | None) -> bytes:
    """An initialize body offering ``version`` instead of the client's own, so a client that always
    offers its latest handshake revision is driven at an older one (the server answers the version
    offered, and the client, which speaks it too, keeps it). Anything else passes unchanged."""
    if version is None:
        return body
    try:
        message = json.loads(body)
    except ValueError:
        return body
    if (
        isinstance(message, dict)
        and message.get("method") == "initialize"
        and isinstance(message.get("params"), dict)
    ):
        message["params"]["protocolVersion"] = version
        return json.dumps(message).encode()
    return body


def _record(path: str, body: bytes, version: str | None) -> None:
    """One line per POST: its JSON-RPC method (``-`` for anything else) and its version header."""
    try:
        message = json.loads(body)
        method = message.get("method", "-") if isinstance(message, dict) else "-"
    except ValueError:
        method = "-"
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{method} {version or '-'}\n")


def run_proxy(args: argparse.Namespace) -> None:
    """Loopback reverse proxy that adds auth headers; keeps Host/Origin as sent by the client."""
    import httpx
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import StreamingResponse

    headers = build_headers(args)
    hop = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "proxy-connection"}
    client = httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, read=None))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        req = Request(scope, receive)
        body = _offer_version(await req.body(), args.offer_version)
        if args.record and req.method == "POST":
            _record(args.record, body, req.headers.get("mcp-protocol-version"))
        fwd = [(k, v) for k, v in req.headers.items() if k.lower() not in hop]
        fwd = [(k, v) for k, v in fwd if k.lower() not in {h.lower() for h in headers}] + list(headers.items())
        target = args.target + (("?" + scope["query_string"].decode()) if scope.get("query_string") else "")
        upstream = await client.send(client.build_request(req.method, target, headers=fwd, content=body), stream=True)
        out = {k: v for k, v in upstream.headers.items() if k.lower() not in hop}

        async def gen():
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()

        await StreamingResponse(gen(), status_code=upstream.status_code, headers=out)(scope, receive, send)

    host, _, port = args.listen.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        raise SystemExit("proxy only listens on loopback")
    print(f"proxy http://{args.listen} -> {args.target} adding {sorted(headers)}", flush=True)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--user-id", default=os.environ.get("MCP_USER_ID"), help="X-User-Id value (env MCP_USER_ID)")
    common.add_argument("--token", default=os.environ.get("MCP_AUTH_TOKEN"), help="X-Auth-Token value (env MCP_AUTH_TOKEN)")
    common.add_argument("-H", "--header", action="append", help="extra header 'Name: value' (repeatable)")
    common.add_argument("--timeout", type=float, default=20.0, help="per-request timeout, seconds")

    if argv[:1] == ["proxy"]:
        p = argparse.ArgumentParser(prog="mcp_probe.py proxy", parents=[common])
        p.add_argument("--target", required=True, help="upstream MCP endpoint URL")
        p.add_argument("--listen", default="127.0.0.1:9100")
        p.add_argument(
            "--offer-version", help="rewrite the protocolVersion an initialize offers (older revisions)"
        )
        p.add_argument("--record", help="append each POST's method and MCP-Protocol-Version to this file")
        run_proxy(p.parse_args(argv[1:]))
        return 0

    p = argparse.ArgumentParser(prog="mcp_probe.py", parents=[common], description=__doc__.split("\n\n")[0])
    p.add_argument("url", nargs="?", default=os.environ.get("MCP_URL"), help="MCP endpoint, e.g. http://127.0.0.1:8000/api/v1/mcp")
    p.add_argument("--tool", help="tool to call (default: first tool without required arguments)")
    p.add_argument(
        "--modern-schema", help="the 2026-07-28 schema.json: check that revision's answers against it"
    )
    p.add_argument("--args", help="JSON object of tool arguments")
    p.add_argument("--expect-error", action="store_true", help="the called tool is expected to return isError=true")
    p.add_argument("--mode", default="legacy", choices=["legacy", "auto"], help="SDK negotiation: legacy=initialize handshake, auto=server/discover then fallback")
    p.add_argument("--wire", action="store_true", help="also run raw-HTTP transport checks")
    p.add_argument("--version", default="2025-11-25", help="protocolVersion offered in the raw initialize (--wire)")
    p.add_argument("--good-origin", help="an Origin the server should accept (--wire; default: the URL's own origin)")
    p.add_argument("--schema", help="path to the spec's schema.json for raw-result validation (--wire)")
    p.add_argument("--max-pages", type=int, default=50)
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.add_argument("-v", "--verbose", action="store_true", help="log every HTTP exchange of the SDK layer")
    args = p.parse_args(argv)
    if not args.url:
        p.error("URL required (argument or MCP_URL)")

    if not args.good_origin:
        from urllib.parse import urlsplit

        u = urlsplit(args.url)
        args.good_origin = f"{u.scheme}://{u.netloc.rpartition('@')[2]}"
    headers = build_headers(args)
    rep = Report(quiet=False)
    print(f"# probing {args.url} with headers {sorted(headers)}", flush=True)

    async def run() -> None:
        await sdk_checks(args, headers, rep)
        if args.wire:
            await wire_checks(args, headers, rep)

    try:
        asyncio.run(asyncio.wait_for(run(), timeout=max(60.0, args.timeout * 10)))
    except TimeoutError:
        rep.add(FAIL, "probe", "overall time limit exceeded")
    counts = {s: sum(c.status == s for c in rep.checks) for s in (PASS, FAIL, WARN, INFO, SKIP)}
    print("# summary: " + ", ".join(f"{v} {k.lower()}" for k, v in counts.items()), flush=True)
    print(f"{counts[PASS]} passed, {counts[FAIL]} failed", flush=True)
    if args.json:
        print(json.dumps([c.__dict__ for c in rep.checks], indent=1))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
