"""Time to the first streamed word of an answer, beside the time to a whole JSON answer.

Runs the real app under uvicorn on loopback (rate limits off, everything else as in production: Host
and Origin checks, authentication, source loading under the caller's permissions, the guarded
outbound client), with the local OpenAI-compatible test provider (``tests/server/_fake_openai.py``)
in a thread. The provider writes its answer in ``--chunks`` chunks spaced ``--chunk-delay`` apart, like
a model generating, and takes as long for a JSON answer. Measured from the browser side of the
proxy, with ``--runs`` requests per mode (median, min, max):

- stream, first delta: ``Accept: text/event-stream`` until the first ``event: delta`` arrives;
- stream, done: until ``event: done``;
- json: until the whole JSON answer is read;
- extractive, json and stream: no provider at all (the embedded default).

    .venv/bin/python bench/bench_answers.py                     # 7 runs, 20 chunks, 50 ms apart
    .venv/bin/python bench/bench_answers.py --runs 15 --chunk-delay 0 --json PATH
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT)]

sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
import uvloop  # noqa: E402
from tests.server._fake_openai import FakeOpenAI  # noqa: E402
from tests.server.conftest import build_workspace  # noqa: E402

from _figures import Baseline, Figure, Report  # noqa: E402
from ai_search_server.answers.answer_service import AnswerService  # noqa: E402
from ai_search_server.app import create_app  # noqa: E402
from ai_search_server.outbound import GuardedClient, OutboundPolicy  # noqa: E402
from ai_search_server.settings import load_settings  # noqa: E402
from ai_search_server.store import open_store  # noqa: E402

ANSWER = "/api/v1/ai.search.answer"
# Seconds uvicorn may take to start listening.
SERVER_START_SECONDS = 10.0


def timed(measure: Callable[[], None], runs: int) -> list[float]:
    measure()  # warm-up: connections, first imports
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        measure()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def summary(label: str, samples: list[float]) -> str:
    return (
        f"{label:<24} median {statistics.median(samples):8.1f} ms   "
        f"min {min(samples):8.1f}   max {max(samples):8.1f}   (n={len(samples)})"
    )


async def run(args: argparse.Namespace, provider_url: str, data_dir: Path) -> dict[str, list[float]]:
    store = open_store(data_dir)
    workspace = build_workspace(store)
    alice = workspace["alice"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    site = f"http://127.0.0.1:{port}"
    overrides = {"site_url": site, "llm_base_url": provider_url, "llm_model": "bench-model"}
    settings = load_settings(environ={}, overrides=overrides)
    extractive_settings = load_settings(environ={}, overrides={"site_url": site})
    body = {"query": "why did the deploy fail?", "messages": [{"_id": workspace.messages["ops-3"].id}]}
    headers = alice.headers

    async with GuardedClient(OutboundPolicy(allow_hosts=("127.0.0.1",))) as outbound:
        app = create_app(settings, store)
        llm_service = AnswerService.from_settings(settings, store, outbound)
        extractive_service = AnswerService.from_settings(extractive_settings, store, None)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the app did not start")
            await asyncio.sleep(0.01)
        # The client runs in a thread (a sync client), so it never competes with the server's loop.
        sse = {**headers, "Accept": "text/event-stream"}
        with httpx.Client(base_url=site, timeout=30) as http:

            def first_delta() -> None:
                with http.stream("POST", ANSWER, json=body, headers=sse) as r:
                    for chunk in r.iter_text():
                        if "event: delta" in chunk:
                            return
                raise RuntimeError("no delta")

            def stream_done() -> None:
                with http.stream("POST", ANSWER, json=body, headers=sse) as r:
                    text = "".join(r.iter_text())
                if "event: done" not in text:
                    raise RuntimeError(f"stream did not finish: {text[-200:]!r}")

            def whole_json() -> None:
                r = http.post(ANSWER, json=body, headers=headers)
                if r.status_code != 200:
                    raise RuntimeError(r.text)

            results: dict[str, list[float]] = {}
            for label, service, measure in (
                ("stream, first delta", llm_service, first_delta),
                ("stream, done", llm_service, stream_done),
                ("json", llm_service, whole_json),
                ("extractive, json", extractive_service, whole_json),
                ("extractive, stream done", extractive_service, stream_done),
            ):
                app.state.services.answers = service
                results[label] = await asyncio.to_thread(timed, measure, args.runs)
        server.should_exit = True
        await serving
    store.close()
    print(
        f"answer latency through the proxy on loopback; provider writes {args.chunks} chunks "
        f"{args.chunk_delay * 1000:.0f} ms apart (generation ~{args.chunk_delay * (args.chunks - 1) * 1000:.0f} ms)"
    )
    for label, samples in results.items():
        print(summary(label, samples))
    return results


def build_report(args: argparse.Namespace, results: dict[str, list[float]]) -> Report:
    generation_ms = args.chunk_delay * (args.chunks - 1) * 1000
    report = Report(
        "answers",
        "Answers: time to the first streamed token",
        method=(
            "POST /api/v1/ai.search.answer through the real app under uvicorn on loopback (rate limits "
            "off; Host and Origin checks, authentication, loading the cited message under the caller's "
            "permissions and the guarded outbound client as in production), with the local "
            "OpenAI-compatible test provider (tests/server/_fake_openai.py) in a thread writing its answer "
            f"in {args.chunks} chunks {args.chunk_delay * 1000:.0f} ms apart (about {generation_ms:.0f} ms "
            "of generation, like a model), and as slowly for a JSON answer. Timed from a client in "
            "another thread, one request at a time after one warm-up request per mode: until the first "
            "`event: delta` of the stream, until `event: done`, until a whole JSON answer is read; and "
            "the extractive answer (no provider, the default) for comparison."
        ),
        parameters={
            "runs per mode": args.runs,
            "chunks": args.chunks,
            "ms between chunks": args.chunk_delay * 1000,
        },
    )
    report.add(
        Figure(
            "time to first streamed token",
            "ms",
            results["stream, first delta"],
            baseline=Baseline("whole JSON answer", results["json"]),
            note="test provider; baseline: the same answer as JSON",
        )
    )
    report.add(Figure("streamed answer, until done", "ms", results["stream, done"]))
    report.add(Figure("JSON answer", "ms", results["json"]))
    report.add(Figure("extractive answer, JSON", "ms", results["extractive, json"], note="no provider"))
    report.add(
        Figure("extractive answer, streamed", "ms", results["extractive, stream done"], note="no provider")
    )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="requests per mode (median of these)")
    parser.add_argument("--chunks", type=int, default=20, help="chunks the provider streams")
    parser.add_argument("--chunk-delay", type=float, default=0.05, help="seconds between chunks")
    parser.add_argument("--json", type=Path, help="also write the figures here (bench/_figures.py Report)")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be 5 or more")
    fake = FakeOpenAI()
    fake.chunks = (*(f"word{i} " for i in range(args.chunks - 1)), "done [1].")
    fake.answer = "".join(fake.chunks)
    fake.chunk_delay_seconds = args.chunk_delay
    with fake.serve() as provider, tempfile.TemporaryDirectory() as tmp:
        # uvloop, as uvicorn picks by default: on the stdlib loop every response of a server started
        # with Server.serve() takes ~44 ms longer on this machine, which would swamp what is measured.
        results = uvloop.run(run(args, f"{provider.url}/v1", Path(tmp) / "data"))
    build_report(args, results).write(args.json)


if __name__ == "__main__":
    main()
