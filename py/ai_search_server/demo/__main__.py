"""Write the demo workspace as JSON lines: ``python -m ai_search_server.demo [SEED] > demo.jsonl``."""

from __future__ import annotations

import json
import sys

from . import DEFAULT_DEMO_SEED, generate_demo_messages


def main(argv: list[str]) -> int:
    seed = int(argv[0]) if argv else DEFAULT_DEMO_SEED
    for row in generate_demo_messages(seed):
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
