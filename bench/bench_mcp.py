"""tools/call throughput of our MCP endpoint beside the official SDK reference server, in one run.

Starts our server (the real app under uvicorn, a fresh workspace with one user, one room, one message
and a personal access token) in a child process, then runs the load tool ``bench/mcp_load.py`` with
``--reference`` (and ``--wrk`` when wrk is installed) ``--runs`` times; each time it starts the SDK's
reference server and measures it and ours with the same client, on the same machine, back to back.
Prints requests/s and p50/p99 of a read tool (``get_chat_getMessage``) and the ratio to the reference,
as the median over the runs.

    .venv/bin/python bench/bench_mcp.py                   # 5 runs: httpx (1000 requests) + wrk (5 s) phases, c=8
    .venv/bin/python bench/bench_mcp.py -n 5000 --no-wrk --runs 7 --json PATH

Rate limits are off in the measured server (the MCP endpoint allows 60 requests a minute per user),
as they are in the reference server; every other layer (middleware, PAT lookup, permissions, the
in-process REST call with its own authentication) runs as in production. Both servers and the load
run on loopback and share the machine's cores, so only the ratio carries over to another machine.
Any failed call (non-200, JSON-RPC error, isError) fails the benchmark.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# The tools/call load generator (with the SDK reference server) beside this script.
LOAD_SCRIPT = Path(__file__).resolve().parent / "mcp_load.py"
READ_TOOL = "get_chat_getMessage"
# Runs of every phase (the report shows their median).
RUNS = 5
# Requests per httpx phase, and seconds per wrk phase, in each run.
REQUESTS = 1000
WRK_SECONDS = 5

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import Baseline, Figure, Report, Target  # noqa: E402
from _harness import BenchServer  # noqa: E402


def _row(label: str, result: dict[str, Any] | None) -> str:
    if not result or "error" in result:
        return f"  {label:<28} {(result or {}).get('error', 'not measured')}"
    errors = sum(result.get("errors", {}).values())
    return (
        f"  {label:<28} {result['rps']:8.1f} req/s   p50 {result['p50_ms']:6.2f} ms   "
        f"p99 {result['p99_ms']:6.2f} ms   errors {errors}"
    )


def report(results: dict[str, Any], concurrency: int, runs: int) -> None:
    print(f"\nMCP tools/call ({READ_TOOL}) vs the SDK reference server (noop tool), median of {runs} runs:")
    for phase in ("sequential", f"concurrent({concurrency})"):
        for client in ("httpx", "wrk"):
            ours, ref = results.get(f"target/{phase}/{client}"), results.get(f"reference/{phase}/{client}")
            if ours is None and ref is None:
                continue
            print(_row(f"ours      {phase} {client}", ours))
            print(_row(f"reference {phase} {client}", ref))
            if ours and ref and ours.get("rps") and ref.get("rps"):
                print(f"  {'ratio ours/reference':<28} {ours['rps'] / ref['rps']:8.2f}x")


def median_results(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase, the median of each measured quantity over the runs (errors summed)."""
    merged: dict[str, Any] = {}
    for key in runs[0]:
        if key == "meta":
            continue
        phases = [run.get(key) or {"error": "missing"} for run in runs]
        failed = [phase["error"] for phase in phases if "error" in phase]
        if failed:
            merged[key] = {"error": failed[0]}
            continue
        merged[key] = {
            q: statistics.median(phase[q] for phase in phases) for q in ("rps", "p50_ms", "p99_ms")
        }
        merged[key]["errors"] = {"all": sum(sum(phase["errors"].values()) for phase in phases)}
    return merged


# (figure name, phase, client, quantity, unit, better). The target (throughput at least the
# reference's) is checked on the concurrent throughput of the best client run: wrk, else httpx.
FIGURES: list[tuple[str, str, str, str, str, str]] = [
    ("tools/call throughput, wrk, {c} connections", "concurrent({c})", "wrk", "rps", "req/s", "higher"),
    ("tools/call p50 latency, wrk, {c} connections", "concurrent({c})", "wrk", "p50_ms", "ms", "lower"),
    ("tools/call p99 latency, wrk, {c} connections", "concurrent({c})", "wrk", "p99_ms", "ms", "lower"),
    ("tools/call throughput, wrk, 1 connection", "sequential", "wrk", "rps", "req/s", "higher"),
    ("tools/call p50 latency, wrk, 1 connection", "sequential", "wrk", "p50_ms", "ms", "lower"),
    ("tools/call throughput, httpx, {c} in flight", "concurrent({c})", "httpx", "rps", "req/s", "higher"),
    ("tools/call throughput, httpx, 1 in flight", "sequential", "httpx", "rps", "req/s", "higher"),
    ("tools/call p99 latency, httpx, 1 in flight", "sequential", "httpx", "p99_ms", "ms", "lower"),
]


def build_report(runs: list[dict[str, Any]], args: argparse.Namespace, use_wrk: bool) -> Report:
    c = args.concurrency
    sdk = runs[0].get("meta", {}).get("mcp_sdk") or "?"
    result = Report(
        "mcp",
        "MCP: tools/call against the official SDK reference server",
        method=(
            f"Our MCP endpoint (POST /api/v1/mcp, the real app under uvicorn in a child process, rate "
            f"limits off, a personal access token) answering the read tool `{READ_TOOL}` (authentication, "
            "permission check, the in-process REST call, one message from SQLite), beside the official "
            f"MCP Python SDK {sdk} reference server (MCPServer, stateless, JSON responses, its trivial "
            "`noop` tool), measured by the load tool bench/mcp_load.py with the same clients, on the "
            "same machine, back to back. Each run starts a fresh reference server and measures, for both "
            f"servers, one request in flight and {c} in flight, with an httpx client ({args.requests} "
            "requests after 50 warm-up)"
            + (
                f" and with wrk and a Lua script ({args.wrk_seconds} s; every body checked)"
                if use_wrk
                else ""
            )
            + ". Baseline = the reference server in the same run; the ratio is ours / reference. The "
            "httpx phases are bound by the Python client on this machine; wrk takes the client out."
        ),
        parameters={
            "runs": len(runs),
            "httpx requests per phase": args.requests,
            "concurrency": c,
            "wrk seconds per phase": args.wrk_seconds if use_wrk else "not run",
            "MCP SDK": sdk,
            "tool": READ_TOOL,
        },
    )
    headline_client = "wrk" if use_wrk else "httpx"
    for name, phase, client, quantity, unit, better in FIGURES:
        if client == "wrk" and not use_wrk:
            continue
        key = phase.format(c=c)
        ours = [run[f"target/{key}/{client}"][quantity] for run in runs]
        reference = [run[f"reference/{key}/{client}"][quantity] for run in runs]
        targeted = client == headline_client and quantity == "rps" and phase != "sequential"
        result.add(
            Figure(
                name.format(c=c),
                unit,
                ours,
                baseline=Baseline("official SDK reference", reference),
                target=Target(">=") if targeted else None,
                better=better,  # type: ignore[arg-type]
            )
        )
    return result


def failures(run: dict[str, Any]) -> list[str]:
    """The phases of one mcp_load run that failed or counted failed calls."""
    return [
        f"{key}: {phase.get('error') or phase.get('errors')}"
        for key, phase in run.items()
        if key != "meta" and ("error" in phase or sum(phase.get("errors", {}).values()))
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=REQUESTS, help="requests per httpx phase")
    parser.add_argument("-c", "--concurrency", type=int, default=8)
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of every phase (median of these)")
    parser.add_argument("--wrk-seconds", type=int, default=WRK_SECONDS, help="duration of each wrk phase")
    parser.add_argument("--no-wrk", action="store_true", help="skip the wrk phases")
    parser.add_argument("--load-script", type=Path, default=LOAD_SCRIPT, help="path of mcp_load.py")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    parser.add_argument("--raw", type=Path, help="write every run's raw mcp_load results here")
    args = parser.parse_args()

    if not args.load_script.is_file():
        raise SystemExit(f"the load tool is not at {args.load_script} (--load-script PATH)")
    use_wrk = not args.no_wrk and shutil.which("wrk") is not None
    if not args.no_wrk and not use_wrk:
        print("# wrk not installed (apt-get install -y wrk): httpx phases only", file=sys.stderr)

    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp, BenchServer(messages=1) as server:
        for n in range(args.runs):
            out = Path(tmp) / f"load-{n}.json"
            command = [
                sys.executable,
                str(args.load_script),
                f"{server.url}/api/v1/mcp",
                "--tool",
                READ_TOOL,
                "--args",
                json.dumps({"msgId": server.message_ids[0]}),
                f"--user-id={server.user_id}",
                f"--token={server.token}",
                "--reference",
                "-n",
                str(args.requests),
                "-c",
                str(args.concurrency),
                "--json",
                str(out),
            ]
            if use_wrk:
                command += ["--wrk", "--wrk-seconds", str(args.wrk_seconds)]
            print(
                f"# run {n + 1}/{args.runs}: " + " ".join(command[:3]) + " ...", file=sys.stderr, flush=True
            )
            status = subprocess.run(command, check=False, stdout=sys.stderr).returncode
            run: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
            problems = failures(run) or ([] if status == 0 else [f"mcp_load exited with status {status}"])
            if not run or problems:
                print(
                    f"bench_mcp: run {n + 1} failed: {'; '.join(problems) or 'no results'}", file=sys.stderr
                )
                return 1
            runs.append(run)
    if args.raw:
        args.raw.write_text(json.dumps(runs, indent=1))
    report(median_results(runs), args.concurrency, len(runs))
    build_report(runs, args, use_wrk).write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
