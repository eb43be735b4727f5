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
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The team's shared tools sit beside the project root (../shared).
LOAD_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "tools" / "mcp_load.py"
READ_TOOL = "get_chat_getMessage"
# Seconds the child server may take to open its workspace and start listening.
SERVER_START_SECONDS = 30.0


def serve(port: int, data_dir: Path, ready_file: Path) -> None:
    """Child mode: a one-user workspace, the app without rate limits, uvicorn on loopback."""
    import uvicorn

    from ai_search_server.app import create_app
    from ai_search_server.settings import load_settings
    from ai_search_server.store import open_store

    store = open_store(data_dir)
    user = store.create_user("bench", name="Bench")
    room = store.create_room("c", "bench", members=[user.id])
    message = store.post_message(room.id, user.id, "the deploy went fine")
    _token, pat = store.create_token(user.id, "pat", label="bench")
    settings = load_settings(
        environ={}, overrides={"site_url": f"http://127.0.0.1:{port}", "mcp_enabled": True}
    )
    app = create_app(settings, store, limiter=None)
    ready_file.write_text(json.dumps({"user_id": user.id, "token": pat, "msg_id": message.id}))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, server_header=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(port: int, ready_file: Path, child: subprocess.Popen[bytes]) -> dict[str, str]:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"our server exited with status {child.returncode}")
        if ready_file.is_file():
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    creds: dict[str, str] = json.loads(ready_file.read_text())
                    return creds
        time.sleep(0.1)
    raise SystemExit(f"our server did not start within {SERVER_START_SECONDS:.0f} s")


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
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve:
        serve(args.serve, args.data, args.ready_file)
        return 0
    if not args.load_script.is_file():
        raise SystemExit(f"the load tool is not at {args.load_script} (--load-script PATH)")
    use_wrk = not args.no_wrk and shutil.which("wrk") is not None
    if not args.no_wrk and not use_wrk:
        print("# wrk not installed (apt-get install -y wrk): httpx phases only", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        port, ready_file = _free_port(), Path(tmp) / "ready.json"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, ["py", os.environ.get("PYTHONPATH")])),
        }
        child = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                str(port),
                "--data",
                str(Path(tmp) / "data"),
                "--ready-file",
                str(ready_file),
            ],
            env=env,
        )
        try:
            creds = _wait_ready(port, ready_file, child)
            out = Path(tmp) / "load.json"
            command = [
                sys.executable,
                str(args.load_script),
                f"http://127.0.0.1:{port}/api/v1/mcp",
                "--tool",
                READ_TOOL,
                "--args",
                json.dumps({"msgId": creds["msg_id"]}),
                "--user-id",
                creds["user_id"],
                "--token",
                creds["token"],
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
        finally:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
    report(results, args.concurrency)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
