"""A real PostgreSQL for the tests: one throwaway cluster per session, a fresh database per test.

The cluster is made with Debian's ``initdb`` in a temp dir and started with ``pg_ctl``, listening on
a unix socket in that dir only (``listen_addresses=''``): no TCP port, so parallel sessions and a
system PostgreSQL never clash. Durability is off (``fsync``, ``synchronous_commit``,
``full_page_writes``), which a throwaway cluster does not need and which makes it fast. PostgreSQL
refuses to run as root, so under root (CI) the cluster belongs to the ``postgres`` user Debian's
package creates.

Each test gets its own database, copied from a template that is already migrated (a file copy,
tens of milliseconds), and dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["PostgresCluster", "find_pg_bin", "running_cluster"]

# Seconds pg_ctl waits for the server to start or stop.
START_TIMEOUT_S = 60
# Debian installs the server's programs here, off PATH (postgresql-common wraps only the clients).
_DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"
_SUPERUSER = "ai_search"
_TEMPLATE = "ai_search_template"


def find_pg_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: PATH's, else Debian's newest; None without one."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    found = sorted(Path("/").glob(_DEBIAN_BIN_GLOB.lstrip("/")), key=lambda p: int(p.parent.name), reverse=True)
    return next((p for p in found if (p / "initdb").exists() and (p / "pg_ctl").exists()), None)


@dataclass
class PostgresCluster:
    """A running cluster: where its socket is, and fresh databases on demand."""

    root: Path
    socket_dir: Path
    _names: Iterator[int]

    def url(self, dbname: str) -> str:
        return f"postgresql://{_SUPERUSER}@/{dbname}?host={self.socket_dir}"

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(self.url("postgres"), autocommit=True)

    def cut_connections(self, url: str) -> None:
        """Ends every server process of ``url``'s database, as a restarted or failed-over server would."""
        dbname = conninfo_to_dict(url)["dbname"]
        with self._admin() as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (dbname,)
            )

    def prepare_template(self) -> None:
        """A database already migrated to the latest schema, for fresh databases to copy."""
        from ai_search_server.store.postgres import PostgresStore

        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {_TEMPLATE}")
        PostgresStore(self.url(_TEMPLATE), pool_size=1).close()

    @contextmanager
    def fresh_database(self) -> Iterator[str]:
        """The URL of a new database copied from the migrated template; dropped afterwards."""
        with self._database(_TEMPLATE) as url:
            yield url

    @contextmanager
    def empty_database(self) -> Iterator[str]:
        """The URL of a new database without any schema (for migration tests); dropped afterwards."""
        with self._database("template0") as url:
            yield url

    @contextmanager
    def _database(self, template: str) -> Iterator[str]:
        name = f"test_{os.getpid()}_{next(self._names)}"
        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY")
        try:
            yield self.url(name)
        finally:
            with self._admin() as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


#: Where util-linux keeps runuser when PATH has no sbin folder (a login without root's PATH, env -i).
_SBIN_PATH = "/usr/sbin:/sbin"


def _as_owner(command: list[str], owner: pwd.struct_passwd | None) -> list[str]:
    if owner is None:
        return command
    runuser = shutil.which("runuser") or shutil.which("runuser", path=_SBIN_PATH)
    if runuser is None:
        raise RuntimeError("running PostgreSQL as its own user under root needs util-linux's runuser")
    return [runuser, "-u", owner.pw_name, "--", *command]


@contextmanager
def running_cluster(pg_bin: Path) -> Iterator[PostgresCluster]:
    """Makes, starts and finally stops and deletes a cluster in a new temp dir."""
    try:
        owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    except KeyError:
        raise RuntimeError(
            "PostgreSQL refuses to run as root and there is no 'postgres' user to run it as"
            " (Debian's postgresql package makes one: scripts/setup --test)"
        ) from None
    # Not pytest's tmp dir: under root its parents are closed to the postgres user.
    root = Path(tempfile.mkdtemp(prefix="ai-search-pg-"))
    data, socket_dir = root / "data", root / "run"
    socket_dir.mkdir()
    if owner is not None:
        for path in (root, socket_dir):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    run = lambda command: subprocess.run(  # noqa: E731
        _as_owner(command, owner), check=True, capture_output=True, text=True, timeout=START_TIMEOUT_S
    )
    try:
        run(
            [str(pg_bin / "initdb"), "-D", str(data), "-U", _SUPERUSER, "--auth=trust", "--encoding=UTF8",
             "--locale=C", "--no-sync"]
        )
        options = (
            f"-c listen_addresses='' -c unix_socket_directories={socket_dir} -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        run([str(pg_bin / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"),
             "-w", "-t", str(START_TIMEOUT_S), "start"])
        try:
            cluster = PostgresCluster(root, socket_dir, itertools.count(1))
            cluster.prepare_template()
            yield cluster
        finally:
            run([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    except subprocess.CalledProcessError as error:
        raise RuntimeError(f"the test PostgreSQL failed: {error.cmd}: {error.stderr or error.stdout}") from error
    finally:
        shutil.rmtree(root, ignore_errors=True)
