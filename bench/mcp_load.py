#!/usr/bin/env python3
"""Bounded tools/call load test for an MCP Streamable HTTP endpoint, with an SDK reference baseline.

Measures N ``tools/call`` requests (JSON-RPC over HTTP POST, JSON responses)
twice: sequentially (1 in flight) and with C concurrent workers, and reports
req/s and p50/p90/p99 latency.  Every response is checked (HTTP 200, same id,
``result`` present, ``isError`` not true); failures are counted, not ignored.

``--reference`` first starts a tiny stateless, JSON-only server built with the
official MCP Python SDK (``MCPServer`` + ``stateless_http=True`` +
``json_response=True``; the load hits its trivial tool ``noop``) on a free loopback port,
measures it with the same client, then measures URL (if given), and prints the
ratio - so both numbers come from the same machine, client and run.

``--wrk`` repeats each measurement with ``wrk`` (Debian package ``wrk``) and a
generated Lua script, which takes the Python client out of the numbers; wrk
runs for a fixed duration (--wrk-seconds), not a fixed request count.

Usage::

    python mcp_load.py --reference                       # SDK baseline only
    python mcp_load.py URL --tool NAME --args '{}' --user-id U --token T --reference [--wrk]
    python mcp_load.py --serve-reference 8765 [--ref-token T]   # just run the reference server

Only loopback targets are accepted.  Everything is bounded: -n requests per
phase and --max-seconds per phase; the reference server is stopped (by PID)
on exit.  Requires ``pip install "mcp>=2.3,<3" httpx``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any
from urllib.parse import urlsplit

REF_PATH = "/api/v1/mcp"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


# --------------------------------------------------------------------------- reference server


def serve_reference(port: int, token: str | None = None) -> None:
    """Official-SDK reference server: stateless, JSON responses only, tools echo/add/noop/boom.

    With `token`, a plain ASGI wrapper answers 401 unless X-User-Id is present and
    X-Auth-Token equals `token` (mimics our endpoint's header auth).
    """
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from pydantic import BaseModel

    mcp = MCPServer("sdk-reference", version="1", instructions="Reference server for conformance checks.")

    class Sum(BaseModel):
        total: float

    @mcp.tool(title="Echo", description="Echo the given text back.")
    def echo(text: str) -> str:
        return text

    def add(a: float, b: float):  # return annotation set below (string annotations cannot see local classes)
        return Sum(total=a + b)

    add.__annotations__["return"] = Sum
    mcp.tool(title="Add", description="Add two numbers (structured output).")(add)

    @mcp.tool(description="Trivial tool for load tests.")
    def noop() -> str:
        return "ok"

    @mcp.tool(description="Always fails (tool execution error).")
    def boom() -> str:
        raise ValueError("boom on purpose")

    sdk_app = mcp.streamable_http_app(
        streamable_http_path=REF_PATH, stateless_http=True, json_response=True, host="127.0.0.1"
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if token is not None and scope["type"] == "http":
            h = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            if not h.get("x-user-id") or h.get("x-auth-token") != token:
                body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Unauthorized"}}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await sdk_app(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, deadline_s: float = 20.0) -> bool:
    end = time.time() + deadline_s
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


# --------------------------------------------------------------------------- measurement


def pct(sorted_ms: list[float], p: float) -> float:
    if not sorted_ms:
        return float("nan")
    k = max(0, min(len(sorted_ms) - 1, round(p / 100.0 * len(sorted_ms) + 0.5) - 1))
    return sorted_ms[k]


class Target:
    def __init__(self, url: str, headers: dict[str, str], tool: str, args: dict[str, Any]) -> None:
        self.url, self.headers, self.tool, self.args = url, headers, tool, args
        self.version = "2025-11-25"

    def body(self, rid: int) -> bytes:
        return json.dumps(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": self.tool, "arguments": self.args},
            }
        ).encode()

    def http_headers(self) -> dict[str, str]:
        return {
            **self.headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": self.version,
        }


async def handshake(client: Any, t: Target) -> str:
    """Stateless servers need no session, but a real client initializes first; also learns the version."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": t.version,
            "capabilities": {},
            "clientInfo": {"name": "mcp-load", "version": "1"},
        },
    }
    h = {k: v for k, v in t.http_headers().items() if k != "MCP-Protocol-Version"}
    r = await client.post(t.url, headers=h, content=json.dumps(init).encode())
    r.raise_for_status()
    body = r.json()
    if "result" not in body:
        raise RuntimeError(f"initialize failed: {body}")
    t.version = body["result"]["protocolVersion"]
    if r.headers.get("mcp-session-id"):
        t.headers = {**t.headers, "Mcp-Session-Id": r.headers["mcp-session-id"]}
    await client.post(
        t.url, headers=t.http_headers(), content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    )
    return t.version


async def run_phase(t: Target, n: int, conc: int, max_seconds: float, warmup: int) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    async with httpx.AsyncClient(timeout=30.0, limits=limits) as client:
        await handshake(client, t)
        headers = t.http_headers()
        for i in range(warmup):
            await client.post(t.url, headers=headers, content=t.body(10_000_000 + i))

        lat: list[float] = []
        errors: dict[str, int] = {}
        next_id = 0
        deadline = time.perf_counter() + max_seconds

        async def worker() -> None:
            nonlocal next_id
            while next_id < n and time.perf_counter() < deadline:
                next_id += 1
                rid = next_id
                t0 = time.perf_counter()
                try:
                    r = await client.post(t.url, headers=headers, content=t.body(rid))
                    dt = (time.perf_counter() - t0) * 1000.0
                    why = None
                    if r.status_code != 200:
                        why = f"http {r.status_code}"
                    else:
                        b = r.json()
                        if b.get("id") != rid:
                            why = "id mismatch"
                        elif "result" not in b:
                            why = f"jsonrpc error {b.get('error', {}).get('code')}"
                        elif b["result"].get("isError"):
                            why = "isError"
                except Exception as e:
                    dt, why = (time.perf_counter() - t0) * 1000.0, type(e).__name__
                lat.append(dt)
                if why:
                    errors[why] = errors.get(why, 0) + 1

        t_start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        wall = time.perf_counter() - t_start
    s = sorted(lat)
    return {
        "requests": len(lat),
        "concurrency": conc,
        "wall_s": round(wall, 3),
        "rps": round(len(lat) / wall, 1) if wall else 0.0,
        "p50_ms": round(pct(s, 50), 2),
        "p90_ms": round(pct(s, 90), 2),
        "p99_ms": round(pct(s, 99), 2),
        "mean_ms": round(statistics.fmean(s), 2) if s else None,
        "max_ms": round(s[-1], 2) if s else None,
        "errors": errors,
        "truncated": len(lat) < n,
        "protocol_version": t.version,
    }


# --------------------------------------------------------------------------- wrk


WRK_LUA = r"""
-- generated by mcp_load.py: tools/call POSTs for a fixed duration, each body checked
bad = 0
local id = 0
local body_head = %(head)s
local body_tail = %(tail)s
local threads = {}
wrk.method = "POST"
%(headers)s
function setup(thread) table.insert(threads, thread) end
function request()
  id = id + 1
  return wrk.format(nil, nil, nil, body_head .. id .. body_tail)
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) or string.find(body, '"isError"%%s*:%%s*true') then
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  io.write(string.format("WRKRESULT requests=%%d duration_us=%%d p50_us=%%d p90_us=%%d p99_us=%%d non2xx=%%d socket_errors=%%d bad_bodies=%%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, b))
end
"""


def lua_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_wrk(t: Target, conc: int, seconds: int) -> dict[str, Any] | None:
    """wrk runs for a fixed duration (it cannot stop after N requests without skewing its clock)."""
    if not shutil.which("wrk"):
        return None
    threads = 1 if conc == 1 else min(2, conc)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 999999937,
            "method": "tools/call",
            "params": {"name": t.tool, "arguments": t.args},
        }
    )
    head, tail = body.split("999999937")
    hdrs = "\n".join(f"wrk.headers[{lua_str(k)}] = {lua_str(v)}" for k, v in t.http_headers().items())
    script = WRK_LUA % {"head": lua_str(head), "tail": lua_str(tail), "headers": hdrs}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mcp_call.lua")
        with open(path, "w") as f:
            f.write(script)
        cmd = [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(conc),
            "-d",
            f"{seconds}s",
            "--timeout",
            "10s",
            "-s",
            path,
            t.url,
        ]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30).stdout
        except subprocess.TimeoutExpired:
            return {"error": "wrk timed out"}
    m = re.search(r"WRKRESULT (.*)", out)
    if not m:
        return {"error": out[-300:]}
    kv = {k: int(v) for k, v in (p.split("=") for p in m.group(1).split())}
    dur = kv["duration_us"] / 1e6
    return {
        "requests": kv["requests"],
        "concurrency": conc,
        "wall_s": round(dur, 3),
        "rps": round(kv["requests"] / dur, 1) if dur else 0.0,
        "p50_ms": kv["p50_us"] / 1000,
        "p90_ms": kv["p90_us"] / 1000,
        "p99_ms": kv["p99_us"] / 1000,
        "errors": {k: kv[k] for k in ("non2xx", "socket_errors", "bad_bodies") if kv[k]},
    }


# --------------------------------------------------------------------------- main


def fmt(label: str, phase: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{label:10} {phase:14} ERROR {r['error']}"
    err = sum(r["errors"].values())
    return (
        f"{label:10} {phase:14} n={r['requests']:5d} c={r['concurrency']:2d} {r['rps']:8.1f} req/s  "
        f"p50={r['p50_ms']:7.2f} ms  p90={r['p90_ms']:7.2f} ms  p99={r['p99_ms']:7.2f} ms  errors={err}"
        + (f" {r['errors']}" if err else "")
        + (" TRUNCATED(time limit)" if r.get("truncated") else "")
    )


def measure(label: str, t: Target, a: argparse.Namespace, results: dict[str, Any]) -> None:
    for phase, conc in (("sequential", 1), (f"concurrent({a.concurrency})", a.concurrency)):
        try:
            r = asyncio.run(run_phase(t, a.requests, conc, a.max_seconds, a.warmup))
        except Exception as e:
            r = {"error": f"{type(e).__name__}: {e}"}
        results[f"{label}/{phase}/httpx"] = r
        print(fmt(label, phase, r), flush=True)
        if a.wrk:
            w = run_wrk(t, conc, a.wrk_seconds)
            if w is None:
                print(f"{label:10} {phase:14} wrk not installed (apt-get install wrk)")
            else:
                results[f"{label}/{phase}/wrk"] = w
                print(fmt(label, phase + "+wrk", w), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", nargs="?", default=os.environ.get("MCP_URL"))
    p.add_argument("--tool", default="noop")
    p.add_argument("--args", default="{}", help="JSON arguments for the tool")
    p.add_argument("--user-id", default=os.environ.get("MCP_USER_ID"))
    p.add_argument("--token", default=os.environ.get("MCP_AUTH_TOKEN"))
    p.add_argument("-H", "--header", action="append", default=[])
    p.add_argument("-n", "--requests", type=int, default=2000)
    p.add_argument("-c", "--concurrency", type=int, default=8)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--max-seconds", type=float, default=120.0, help="time cap per phase")
    p.add_argument(
        "--reference", action="store_true", help="also measure an SDK reference server started here"
    )
    p.add_argument("--wrk", action="store_true", help="repeat each phase with wrk + Lua (fixed duration)")
    p.add_argument("--wrk-seconds", type=int, default=10, help="duration of each wrk phase")
    p.add_argument("--json", help="write all results to this file")
    p.add_argument(
        "--serve-reference",
        type=int,
        metavar="PORT",
        help="only run the SDK reference server on 127.0.0.1:PORT (path /api/v1/mcp)",
    )
    p.add_argument("--ref-token", help="with --serve-reference: require X-User-Id + X-Auth-Token=REF_TOKEN")
    a = p.parse_args()

    if a.serve_reference:
        serve_reference(a.serve_reference, a.ref_token)
        return 0
    if not a.url and not a.reference:
        p.error("give a URL and/or --reference")
    if a.url and urlsplit(a.url).hostname not in LOOPBACK:
        p.error("load tests only target loopback addresses")

    headers: dict[str, str] = {}
    if a.user_id:
        headers["X-User-Id"] = a.user_id
    if a.token:
        headers["X-Auth-Token"] = a.token
    for h in a.header:
        k, _, v = h.partition(":")
        headers[k.strip()] = v.strip()

    results: dict[str, Any] = {
        "meta": {
            "n": a.requests,
            "concurrency": a.concurrency,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
        }
    }
    ref_proc = None
    try:
        if a.reference:
            import mcp

            port = free_port()
            ref_proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--serve-reference", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if not wait_port(port):
                print("reference server did not start", file=sys.stderr)
                return 1
            results["meta"]["mcp_sdk"] = getattr(mcp, "__version__", None) or _dist_version("mcp")
            print(
                f"# reference: official Python SDK {results['meta']['mcp_sdk']} MCPServer, stateless+JSON, pid {ref_proc.pid}, port {port}"
            )
            measure("reference", Target(f"http://127.0.0.1:{port}{REF_PATH}", {}, "noop", {}), a, results)
        if a.url:
            measure("target", Target(a.url, headers, a.tool, json.loads(a.args)), a, results)
    finally:
        if ref_proc is not None:
            ref_proc.terminate()
            try:
                ref_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                ref_proc.kill()
    if a.reference and a.url:
        for phase in ("sequential", f"concurrent({a.concurrency})"):
            ref, tgt = results[f"reference/{phase}/httpx"], results[f"target/{phase}/httpx"]
            if ref.get("rps") and tgt.get("rps"):
                print(
                    f"# {phase}: target/reference throughput = {tgt['rps'] / ref['rps']:.2f}x, p99 {tgt['p99_ms']:.2f} vs {ref['p99_ms']:.2f} ms"
                )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = any("error" in r or sum(r.get("errors", {}).values()) for k, r in results.items() if k != "meta")
    return 1 if bad else 0


def _dist_version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
