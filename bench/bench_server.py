"""Requests per second of ``chat.getMessage`` on loopback, with wrk, against the real server.

The server runs in a child process (uvicorn, one worker) over a generated workspace; wrk reads one
message again and again with a personal access token, so every request does the whole path:
middleware, token lookup, scoping check, message load, JSON. Rate limits are off (see _harness).

    .venv/bin/python bench/bench_server.py [--messages 100000] [--seconds 10] [--connections 8] [--runs 5]
        [--json PATH]

Prints the median requests/s and latency percentiles over the runs, and the server's resident memory
(at start, and after each run). Any non-2xx answer fails the benchmark: it would measure errors.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import Figure, Report, Target
from _harness import BenchServer

# The memory budget for the server at 100k messages without the embedding model.
MEMORY_TARGET_MB = 300
MEMORY_TARGET_MESSAGES = 100_000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def parse_wrk(output: str) -> dict[str, float]:
    def ms(value: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
        return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    out = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}  # type: ignore[union-attr]
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+(\S+)", output, re.M)
        out[f"p{pct}_ms"] = ms(match.group(1)) if match else float("nan")
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    out["errors"] = float(non2xx.group(1)) if non2xx else 0.0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=MEMORY_TARGET_MESSAGES)
    parser.add_argument("--seconds", type=int, default=10, help="duration of each wrk run")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5, help="wrk runs (median of these)")
    parser.add_argument("--embedder", default="none", help="embedder setting of the server (default: none)")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")
    with BenchServer(messages=args.messages, settings={"embedder": args.embedder}) as server:
        url = f"{server.url}/api/v1/chat.getMessage?msgId={server.message_ids[len(server.message_ids) // 2]}"
        headers = [arg for k, v in server.headers.items() for arg in ("-H", f"{k}: {v}")]
        memory_at_start = rss_mb(server.pid)
        runs, memory = [], []
        for n in range(args.runs):
            cmd = ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "--latency", *headers, url]
            result = parse_wrk(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            memory.append(rss_mb(server.pid))
            print(
                f"# run {n + 1}: {result['rps']:.0f} req/s, p50 {result['p50_ms']:.2f} ms, "
                f"p99 {result['p99_ms']:.2f} ms, non-2xx {result['errors']:.0f}, RSS {memory[-1]:.0f} MB",
                file=sys.stderr,
            )
            runs.append(result)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"chat.getMessage on loopback, {args.messages} messages, wrk -t1 -c{args.connections} "
        f"-d{args.seconds}s, median of {args.runs} runs:"
    )
    print(
        f"  {med['rps']:.0f} req/s   p50 {med['p50_ms']:.2f} ms   p99 {med['p99_ms']:.2f} ms   "
        f"non-2xx {med['errors']:.0f}"
    )
    print(
        f"  server resident memory: {memory_at_start:.0f} MB at start, median {statistics.median(memory):.0f} MB "
        f"after the runs (embedder: {args.embedder})"
    )
    memory_target = (
        Target("<=", MEMORY_TARGET_MB)
        if args.messages >= MEMORY_TARGET_MESSAGES and args.embedder == "none"
        else None
    )
    report = Report(
        "server",
        "Server: chat.getMessage throughput and memory",
        method=(
            "The real app (Starlette on uvicorn, one worker, rate limits off) in a child process over a "
            f"generated workspace of {args.messages:,} messages in one room, keyword index level before "
            f"the first request (embedder: {args.embedder}). wrk (one thread, {args.connections} "
            f"connections, {args.seconds} s a run) reads one message with a personal access token again "
            "and again, so every request takes the whole path: middleware, token lookup, room scoping, "
            "message load, JSON. A run is one wrk run: its requests/s and latency percentiles, and the "
            "server's resident memory (VmRSS) right after it. Client and server share the machine's cores."
        ),
        parameters={
            "messages": args.messages,
            "wrk": f"-t1 -c{args.connections} -d{args.seconds}s",
            "runs": args.runs,
            "embedder": args.embedder,
            "resident memory at start (MB)": round(memory_at_start),
        },
    )
    report.add(Figure("chat.getMessage throughput", "req/s", [r["rps"] for r in runs], better="higher"))
    report.add(Figure("chat.getMessage p50 latency", "ms", [r["p50_ms"] for r in runs]))
    report.add(Figure("chat.getMessage p99 latency", "ms", [r["p99_ms"] for r in runs]))
    report.add(
        Figure(
            f"server resident memory at {args.messages:,} messages",
            "MB",
            memory,
            target=memory_target,
            note=f"after each run; {memory_at_start:.0f} MB at start; embedder {args.embedder}",
        )
    )
    errors = sum(r["errors"] for r in runs)
    if errors:
        print(f"bench_server: {errors:.0f} non-2xx answers: the figures measure errors", file=sys.stderr)
        return 1
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
