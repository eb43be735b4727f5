"""tools/call throughput of our MCP endpoint beside the official SDK reference server, in one run.

Starts our server (the real app under uvicorn, a fresh workspace with one user, one room, one message
and a personal access token) in a child process, then runs the shared load tool ``mcp_load.py`` with
``--reference`` (and ``--wrk`` when wrk is installed), which measures the SDK's reference server and
ours with the same client, on the same machine, back to back. Prints requests/s and p50/p99 of a read
tool (``get_chat_getMessage``) and the ratio to the reference.

    .venv/bin/python bench/bench_mcp.py                   # httpx + wrk phases, 2000 requests, c=8
    .venv/bin/python bench/bench_mcp.py -n 5000 --no-wrk

Rate limits are off in the measured server (the MCP endpoint allows 60 requests a minute per user),
as they are in the reference server; every other layer (middleware, PAT lookup, permissions, the
in-process REST call with its own authentication) runs as in production. Both servers and the load
run on loopback and share the machine's cores, so only the ratio carries over to another machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# The team's shared tools sit beside the project root (../shared).
LOAD_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "tools" / "mcp_load.py"
READ_TOOL = "get_chat_getMessage"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import BenchServer  # noqa: E402


def _row(label: str, result: dict[str, Any] | None) -> str:
    if not result or "error" in result:
        return f"  {label:<28} {(result or {}).get('error', 'not measured')}"
    errors = sum(result.get("errors", {}).values())
    return (
        f"  {label:<28} {result['rps']:8.1f} req/s   p50 {result['p50_ms']:6.2f} ms   "
        f"p99 {result['p99_ms']:6.2f} ms   errors {errors}"
    )


def report(results: dict[str, Any], concurrency: int) -> None:
    print(f"\nMCP tools/call ({READ_TOOL}) vs the SDK reference server (noop tool), one run:")
    for phase in ("sequential", f"concurrent({concurrency})"):
        for client in ("httpx", "wrk"):
            ours, ref = results.get(f"target/{phase}/{client}"), results.get(f"reference/{phase}/{client}")
            if ours is None and ref is None:
                continue
            print(_row(f"ours      {phase} {client}", ours))
            print(_row(f"reference {phase} {client}", ref))
            if ours and ref and ours.get("rps") and ref.get("rps"):
                print(f"  {'ratio ours/reference':<28} {ours['rps'] / ref['rps']:8.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=2000, help="requests per httpx phase")
    parser.add_argument("-c", "--concurrency", type=int, default=8)
    parser.add_argument("--wrk-seconds", type=int, default=10, help="duration of each wrk phase")
    parser.add_argument("--no-wrk", action="store_true", help="skip the wrk phases")
    parser.add_argument(
        "--load-script", type=Path, default=LOAD_SCRIPT, help="path of the shared mcp_load.py"
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args()

    if not args.load_script.is_file():
        raise SystemExit(f"the load tool is not at {args.load_script} (--load-script PATH)")
    use_wrk = not args.no_wrk and shutil.which("wrk") is not None
    if not args.no_wrk and not use_wrk:
        print("# wrk not installed (apt-get install -y wrk): httpx phases only", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp, BenchServer(messages=1) as server:
        out = Path(tmp) / "load.json"
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
        print("# " + " ".join(command[:3]) + " ...", flush=True)
        status = subprocess.run(command, check=False).returncode
        results: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {}
    report(results, args.concurrency)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
