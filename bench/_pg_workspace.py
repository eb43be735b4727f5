"""A workspace database of its own on a PostgreSQL server, for the benches' ``--database URL``.

``--database`` names a server (and a database on it the bench may connect to); each data set gets a
database of its own there (``ai_search_bench_<name>``), made on first use and reused afterwards,
so a set is loaded once, as ``bench/out/`` keeps SQLite's.

    url = bench_database("postgresql://ai@/postgres?host=/tmp/pg", "relevance_demo")
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["bench_database"]

_NAME = re.compile(r"[a-z0-9_]{1,40}")


def bench_database(server_url: str, name: str) -> str:
    """The conninfo of database ``ai_search_bench_<name>`` on ``server_url``'s server, made if missing."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"a bench database name is 1-40 of a-z, 0-9 and _, got {name!r}")
    dbname = f"ai_search_bench_{name}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    params = conninfo_to_dict(server_url)
    params["dbname"] = dbname
    return make_conninfo(**params)
