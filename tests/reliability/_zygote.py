"""A fork server for the kill -9 cycles: ``ai-search serve`` without paying the imports every time.

Starting ``python -m ai_search_server serve`` costs about a second of imports, most of a kill cycle.
This process imports the server once, then forks a child per ``serve`` command that runs the real
CLI entry point (``cli.main(["serve", ...])``): the same settings, store, app and uvicorn as the
command line, in a fresh process whose SQLite files are opened after the fork. The test SIGKILLs the
child by its pid; ``wait`` reaps it. One command per line on stdin, one answer per line on stdout::

    serve DATA_DIR PORT   ->  <pid>
    wait PID              ->  <exit status>
    quit

Run with ``OPENBLAS_NUM_THREADS=1`` (``Zygote`` does): a thread pool started by an import would not
survive the fork.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Self

__all__ = ["Zygote"]

ROOT = Path(__file__).resolve().parents[2]


class Zygote:
    """The test's handle on the fork server (a subprocess); a context manager."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self._log = log.open("ab")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
            text=True,
            bufsize=1,
        )

    def _ask(self, line: str) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the fork server died (exit {self._proc.poll()}); see {self._log.name}")
        return answer.strip()

    def serve(self, data_dir: Path, port: int) -> int:
        return int(self._ask(f"serve {data_dir} {port}"))

    def wait(self, pid: int) -> int:
        return int(self._ask(f"wait {pid}"))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.write("quit\n")
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._log.close()


def main() -> None:
    # Everything the served process would import, loaded once before any fork.
    import uvicorn  # noqa: F401

    from ai_search_server import cli
    from ai_search_server.app import create_app  # noqa: F401
    from ai_search_server.store import open_store  # noqa: F401

    for line in sys.stdin:
        command, *args = line.split()
        if command == "quit":
            return
        if command == "serve":
            data_dir, port = args
            pid = os.fork()
            if pid == 0:
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                os.dup2(2, 1)  # the child's prints go to the log, not to the test's pipe
                status = 1
                try:
                    status = cli.main(["serve", "--data", data_dir, "--port", port])
                finally:
                    os._exit(status)
            print(pid, flush=True)
        elif command == "wait":
            _pid, status = os.waitpid(int(args[0]), 0)
            print(status, flush=True)


if __name__ == "__main__":
    main()
