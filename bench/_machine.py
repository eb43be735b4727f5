"""The machine a benchmark run measured on, as JSON: what BENCHMARKS.md prints beside the figures.

Figures only mean something next to the hardware and the load they were taken under, so
``scripts/bench`` writes this at the start of every run (``bench/out/reports/_machine.json``):

    .venv/bin/python bench/_machine.py > bench/out/reports/_machine.json

Standard library only; every field falls back to "unknown" rather than failing the run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"
# Seconds `chromium --version` may take (it starts no browser, but a cold disk is slow).
CHROMIUM_VERSION_SECONDS = 20


def _first(path: str, prefix: str) -> str | None:
    """The value of the first ``prefix: value`` line of a /proc-style file, or None."""
    try:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def cpu_model() -> str:
    return _first("/proc/cpuinfo", "model name") or platform.processor() or UNKNOWN


def memory_gib() -> float | None:
    total_kib = _first("/proc/meminfo", "MemTotal")
    return round(int(total_kib.split()[0]) / 2**20, 1) if total_kib else None


def os_name() -> str:
    pretty = None
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{pretty or platform.system()}, {platform.system()} {platform.release()} {platform.machine()}"


def chromium_version() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        return "not installed"
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=CHROMIUM_VERSION_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    return done.stdout.strip() or UNKNOWN


def load_average() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def describe() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "chromium": chromium_version(),
        "load_average": load_average(),
    }


if __name__ == "__main__":
    json.dump(describe(), sys.stdout, indent=2)
    sys.stdout.write("\n")
