"""What the third review's decompression bombs cost ``ai-search import``: peak memory and temp disk.

Builds each bomb of ``tests/reliability/_bombs.py`` (small on disk: a 262 KB zip holding a 256 MiB
day file, a 2 MB tar.gz holding a 2 GiB messages file, damaged zips...), then runs the real command,
``ai-search import BOMB --quiet``, in a process of its own, once per bomb, and reports:

- its peak resident memory (its own ``VmHWM``: the interpreter and the imports count, the parent not);
- the most its temporary folder held (``TMPDIR`` pointed at a private folder, polled every 20 ms);
- its exit status, its seconds, whether a traceback reached the terminal, and the messages imported.

``--code DIR`` runs the command from another copy of ``py/`` (``git archive <commit> py | tar -x -C
DIR``) to measure the code before a change beside it.

    .venv/bin/python bench/bench_import_bombs.py [--code /tmp/base] [--bombs zip-string,tar-2gib]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.reliability._bombs import BOMBS, run_import  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--code", type=Path, default=ROOT / "py", help="the py/ folder to run (default: this one)"
    )
    parser.add_argument("--bombs", default=",".join(BOMBS), help=f"comma-separated, of {', '.join(BOMBS)}")
    parser.add_argument("--verbose", action="store_true", help="print each command's output")
    args = parser.parse_args()
    print(f"code: {args.code}")
    print(f"{'bomb':<22} {'archive':>10} {'exit':>4} {'seconds':>8} {'peak RSS':>10} {'peak temp':>10} "
          f"{'traceback':>9} {'messages':>8}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-bombs-") as folder:
        for name in args.bombs.split(","):
            suffix = ".tar.gz" if name.startswith("tar") else ".zip"
            archive = BOMBS[name](Path(folder) / f"{name}{suffix}")
            work = Path(folder) / f"{name}-run"
            run = run_import(archive, work, code=args.code)
            size = archive.stat().st_size
            archive.unlink()
            messages = 0
            if (work / "data" / "workspace.db").exists():
                with sqlite3.connect(work / "data" / "workspace.db") as conn:
                    messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            print(
                f"{name:<22} {size / 1024:>8.0f} K {run.status:>4} {run.seconds:>8.1f} "
                f"{run.peak_rss_mib:>6.0f} MiB {run.peak_temp_mib:>6.1f} MiB {run.traceback!s:>9} {messages:>8}"
            )
            if args.verbose:
                print(run.stdout + run.stderr)


if __name__ == "__main__":
    main()
