"""The ``ai-search`` command: serve, users, tokens, import.

Every subcommand takes ``--data DIR`` (default ``./data`` under the working directory, or
``$AI_SEARCH_DATA``); the folder holds ``workspace.db`` and an optional ``config.toml`` of settings.
``--database postgresql://...`` (or the ``database_url`` setting) keeps the workspace on PostgreSQL
instead; the data dir then holds the search index and the config only.

    ai-search serve [--host 127.0.0.1] [--port 8000] [--data DIR] [--demo] [--workers N]
    ai-search pipeline serve [--host 127.0.0.1] [--port 8001] [--data DIR]   (the index, for many proxies)
    ai-search users create USERNAME --password P [--name N] [--role admin|user]
    ai-search users password USERNAME --password P
    ai-search tokens create USERNAME [--name LABEL]
    ai-search import PATH [--source-url URL] [--map-users FILE] [--map-rooms FILE]   (JSONL, or an export)
    ai-search feedback export [--since DATE] [--format jsonl|csv]
    ai-search sync rocketchat [--url URL --user-id ID --token-file F | --token -] [--watch [--interval S]]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from .imports.mapping import SourceMapping
    from .store.base import Store

__all__ = ["main"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Where `ai-search pipeline serve` listens unless told: beside a proxy's default port.
DEFAULT_PIPELINE_PORT = 8001
DEFAULT_DATA_DIR = "data"
# Characters read from a --token-file or from standard input (a Rocket.Chat token is 43).
MAX_TOKEN_INPUT_CHARS = 4096


class CliError(Exception):
    """A problem the person at the terminal can fix; printed without a traceback, exit status 2."""


def _data_dir(args: argparse.Namespace) -> Path:
    raw = args.data or os.environ.get("AI_SEARCH_DATA") or DEFAULT_DATA_DIR
    path = Path(raw).expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the data dir {path}: {exc.strerror}") from None
    return path


def _settings(data_dir: Path, overrides: dict[str, Any] | None = None) -> Settings:
    config = data_dir / "config.toml"
    return load_settings(config_file=config if config.is_file() else None, overrides=overrides)


def _open_store(args: argparse.Namespace) -> Store:
    """The workspace: ``--database`` (or the database_url setting) when given, else the data dir's SQLite."""
    # Imported here: the subcommands that need no store (--help) start without loading it.
    from .store import StorageFailure, open_store

    data_dir = _data_dir(args)
    settings = _settings(data_dir, _database_override(args))
    try:
        return open_store(data_dir, database_url=settings.database_url, pool_size=settings.database_pool_size)
    except StorageFailure as exc:
        raise CliError(str(exc)) from None


def _database_override(args: argparse.Namespace) -> dict[str, Any]:
    url = getattr(args, "database", None)
    return {} if not url else {"database_url": url}


# -- serve ---------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .app import create_app
    from .login_throttle import DeviceKeyError, load_device_key
    from .ratelimit import RateLimiter
    from .serving import server_options
    from .workers import ServePlan, check_workers, serve_workers

    data_dir = _data_dir(args)
    overrides: dict[str, Any] = _database_override(args)
    if args.demo:
        overrides["mcp_enabled"] = True
    settings = _settings(data_dir, overrides)
    if not settings.site_url:
        host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        settings = load_settings(
            config_file=(data_dir / "config.toml") if (data_dir / "config.toml").is_file() else None,
            overrides={**overrides, "site_url": f"http://{host}:{args.port}"},
        )
    try:
        check_workers(args.workers, settings)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    print(f"ai-search: data dir {data_dir}", file=sys.stderr)
    # Opened here also with workers: the database is reached and migrated (and the demo loaded) once,
    # and a problem is one sentence at the terminal rather than one per worker.
    store = _open_store(args)
    if args.demo:
        _load_demo(store)
    try:  # made once here, before any worker starts; a problem is one sentence at the terminal
        load_device_key(settings.login_device_secret, store.data_dir)
    except DeviceKeyError as exc:
        store.close()
        raise CliError(str(exc)) from None
    if args.workers > 1:
        store.close()
        print(f"ai-search: serving {settings.site_url}/ with {args.workers} workers", file=sys.stderr)
        serve_workers(ServePlan(data_dir, settings), host=args.host, port=args.port, workers=args.workers)
        return 0
    limiter = RateLimiter(settings.rate_limit_storage)
    app = create_app(settings, store, limiter=limiter)
    print(f"ai-search: serving {settings.site_url}/", file=sys.stderr)
    options = server_options(max_connections=settings.max_connections)
    uvicorn.run(app, host=args.host, port=args.port, log_level=settings.log_level, **options)
    store.close()
    return 0


def cmd_pipeline_serve(args: argparse.Namespace) -> int:
    """The embedded pipeline as its own process: the index, shared by every proxy pointed at it."""
    import uvicorn

    from .pipeline_process import check_pipeline_keys, create_pipeline_app
    from .ratelimit import RateLimiter
    from .serving import server_options

    data_dir = _data_dir(args)
    settings = _settings(data_dir, _database_override(args))
    check_pipeline_keys(settings)  # before the store: the first thing an operator must fix
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    print(f"ai-search: pipeline data dir {data_dir} (the index: {data_dir / 'index.db'})", file=sys.stderr)
    store = _open_store(args)
    host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    site_url = f"http://{host}:{args.port}"
    app = create_pipeline_app(
        settings,
        store,
        data_dir,
        site_url=site_url,
        limiter=RateLimiter(settings.rate_limit_storage),
        progress=sys.stderr.isatty(),
    )
    print(
        f"ai-search: serving the pipeline at {site_url}/pipeline/v1 (proxies: pipeline_base_url = that,"
        " pipeline_id = embedded)",
        file=sys.stderr,
    )
    options = server_options(max_connections=settings.max_connections)
    uvicorn.run(app, host=args.host, port=args.port, log_level=settings.log_level, **options)
    store.close()
    return 0


def _load_demo(store: Store) -> None:
    """Fill an empty workspace with the demo data; an existing one is left as it is."""
    from .demo import DEMO_USERS, generate_demo_messages
    from .importer import import_rows

    if store.count_messages() == 0:
        print("ai-search: loading the demo workspace…", file=sys.stderr)
        for demo_user in DEMO_USERS:
            if store.get_user_by_username(demo_user.username) is None:
                store.create_user(
                    demo_user.username,
                    name=demo_user.name,
                    password=demo_user.password,
                    roles=(demo_user.role,),
                )
        import_rows(store, generate_demo_messages())
    print("ai-search: demo users (username / password):", file=sys.stderr)
    for demo_user in DEMO_USERS:
        print(f"    {demo_user.username:<10} {demo_user.password:<16} {demo_user.role}", file=sys.stderr)


# -- users, tokens, import -----------------------------------------------------------------------


def cmd_users_create(args: argparse.Namespace) -> int:
    from .store.base import AlreadyTaken, InvalidValue

    store = _open_store(args)
    try:
        user = store.create_user(args.username, name=args.name, password=args.password, roles=(args.role,))
    except AlreadyTaken:
        raise CliError(f"a user named {args.username!r} already exists") from None
    except InvalidValue as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close()
    print(f"created user {user.username} ({user.id}) with role {args.role}")
    return 0


def _user_named(store: Any, username: str) -> Any:
    user = store.get_user_by_username(username)
    if user is None:
        raise CliError(f"no user named {username!r} (create one with: ai-search users create)")
    return user


def cmd_users_password(args: argparse.Namespace) -> int:
    """Set the password of an existing user: how someone an import brought in (no password) signs in."""
    from .store.base import InvalidValue

    store = _open_store(args)
    try:
        user = _user_named(store, args.username)
        try:
            store.set_password(user.id, args.password)
        except (InvalidValue, ValueError) as exc:
            raise CliError(str(exc)) from None
    finally:
        store.close()
    print(f"set the password of {user.username} ({user.id})")
    return 0


def cmd_tokens_create(args: argparse.Namespace) -> int:
    from .store.base import AlreadyTaken

    store = _open_store(args)
    try:
        user = _user_named(store, args.username)
        label = args.name or _free_label(store, user.id)
        try:
            _token, plain = store.create_token(user.id, "pat", label=label)
        except AlreadyTaken:
            raise CliError(
                f"{args.username} already has a token named {label!r}; pick another --name"
            ) from None
    finally:
        store.close()
    print(f"X-User-Id: {user.id}")
    print(f"X-Auth-Token: {plain}")
    return 0


def _free_label(store: Store, user_id: str) -> str:
    taken = {t.label for t in store.list_tokens(user_id, "pat")}
    n = 1
    while f"cli-{n}" in taken:
        n += 1
    return f"cli-{n}"


def cmd_import(args: argparse.Namespace) -> int:
    from .import_dispatch import ImportFailed, import_path
    from .retrieval.wiring import index_now
    from .services import outbound_policy

    path = Path(args.file)
    if not path.exists():
        raise CliError(f"no such file or folder: {path}")
    source_url = _source_url(args.source_url)
    mapping = _mapping(args)
    data_dir = _data_dir(args)
    settings = _settings(data_dir)
    store = _open_store(args)
    try:
        try:
            report = import_path(store, path, progress=not args.quiet, source_url=source_url, mapping=mapping)
        except ImportFailed as exc:
            raise CliError(str(exc)) from None
        print(report.summary())
        # Index now, with progress, rather than leave it to the next server start.
        index_now(settings, store, data_dir, policy=outbound_policy(settings), progress=not args.quiet)
    finally:
        store.close()
    return 0


def cmd_feedback_export(args: argparse.Namespace) -> int:
    from .answers.export import export_feedback, parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError:
        raise CliError(
            f"--since must be a date (YYYY-MM-DD) or an ISO date-time, not {args.since!r}"
        ) from None
    store = _open_store(args)
    try:
        count = export_feedback(store, sys.stdout, since=since, fmt=args.format)
    finally:
        store.close()
    print(f"ai-search: {count} rating(s) exported", file=sys.stderr)
    return 0


def _source_url(raw: str | None) -> str | None:
    """The source system's address for links back (``https://acme.slack.com``), checked here so a
    typo fails before the import rather than as thousands of refused links."""
    if not raw:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise CliError(f"--source-url must be an http(s) address such as https://acme.slack.com, not {raw!r}")
    return raw.strip().rstrip("/")


def _mapping(args: argparse.Namespace) -> SourceMapping:
    """The admin's ``--map-users`` and ``--map-rooms`` files (imports/mapping.py), read whole before
    anything is imported, so a mistake in them costs nothing."""
    from .imports.mapping import MappingError, read_mapping

    try:
        return read_mapping(users=args.map_users, rooms=args.map_rooms)
    except MappingError as exc:
        raise CliError(str(exc)) from None


def _add_mapping_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--map-users",
        type=Path,
        metavar="FILE",
        help="people of the source who are accounts here, one 'SOURCE-ID-OR-USERNAME = USERNAME' a line;"
        " anyone else becomes an account of their own (alice-2 when alice is taken here), and a mapped"
        " account is never renamed or deactivated by the source",
    )
    parser.add_argument(
        "--map-rooms",
        type=Path,
        metavar="FILE",
        help="conversations of the source that are rooms here, one 'SOURCE-ID-OR-NAME = ROOM' a line;"
        " any other becomes a room of its own (leadership-Xq3F9a1c when leadership is taken here), and a"
        " mapped room only gains members",
    )


# -- sync ----------------------------------------------------------------------------------------


def cmd_sync_rocketchat(args: argparse.Namespace) -> int:
    from .imports.mapping import MappingError, check_mapping
    from .imports.rocketchat_api import Credentials, RocketChatError
    from .mirror_job import MirrorJob, run_mirror_job

    data_dir = _data_dir(args)
    settings = _settings(data_dir)
    url = _source_url(args.url or settings.rocketchat_url or None)
    if url is None:
        raise CliError(
            "which Rocket.Chat? give --url https://chat.example.com (or the setting rocketchat_url)"
        )
    user_id = args.user_id or settings.rocketchat_user_id
    token = _rocketchat_token(args) or settings.rocketchat_token
    if not user_id or not token:
        raise CliError(
            "the sync needs an admin's personal access token: --user-id and --token-file, --token - "
            "(standard input) or AI_SEARCH_ROCKETCHAT_TOKEN (or the settings rocketchat_user_id and "
            "rocketchat_token); Rocket.Chat makes one under My Account > Personal Access Tokens"
        )
    interval = args.interval or settings.rocketchat_sync_interval_seconds
    if interval < 1:
        raise CliError("--interval is a number of seconds, at least 1")
    mapping = _mapping(args)
    store = _open_store(args)
    try:
        check_mapping(store, mapping)
    except MappingError as exc:
        store.close()
        raise CliError(str(exc)) from None
    job = MirrorJob(
        settings=settings,
        store=store,
        data_dir=data_dir,
        url=url,
        credentials=Credentials(user_id, token),
        interval_seconds=interval,
        watch=args.watch,
        quiet=args.quiet,
        mapping=mapping,
    )
    try:
        stopped = run_mirror_job(job)
    except RocketChatError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C before the job listens for it
        stopped = True
    finally:
        store.close()
    if stopped:
        print("ai-search: sync stopped; the next run resumes where this one was", file=sys.stderr)
    return 0


def _rocketchat_token(args: argparse.Namespace) -> str | None:
    """The token from ``--token-file``, from standard input (``--token -``), or from ``--token`` itself,
    with a warning: a command line is readable by every user of the machine (``ps``, ``/proc``), a
    file or a pipe is not. None: no flag, so the setting (``AI_SEARCH_ROCKETCHAT_TOKEN``) says."""
    if args.token_file:
        source = f"--token-file {args.token_file}"
        try:
            with open(args.token_file, encoding="utf-8") as file:
                raw = file.read(MAX_TOKEN_INPUT_CHARS + 1)
        except OSError as exc:
            raise CliError(f"{source}: cannot be read ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise CliError(f"{source}: not UTF-8 text") from None
    elif args.token == "-":
        source = "standard input"
        if sys.stdin.isatty():  # typed: not echoed
            import getpass

            raw = getpass.getpass("Rocket.Chat personal access token: ")
        else:
            raw = sys.stdin.read(MAX_TOKEN_INPUT_CHARS + 1)
    elif args.token:
        print(
            "ai-search: warning: a token given as --token VALUE can be read by every user of this machine "
            "(ps, /proc); use --token-file PATH, --token - (standard input) or AI_SEARCH_ROCKETCHAT_TOKEN",
            file=sys.stderr,
        )
        return str(args.token)
    else:
        return None
    token = next((line.strip() for line in raw.splitlines() if line.strip()), "")
    if len(raw) > MAX_TOKEN_INPUT_CHARS:
        raise CliError(
            f"{source}: more than {MAX_TOKEN_INPUT_CHARS:,} characters; it should hold the token alone"
        )
    if not token:
        raise CliError(f"{source}: holds no token")
    return token


# -- parser --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--data", metavar="DIR", help="data dir (default: ./data or $AI_SEARCH_DATA)")
    data.add_argument(
        "--database",
        metavar="URL",
        help="the workspace on PostgreSQL, postgresql://user@host/db (default: the database_url setting;"
        " none: SQLite in the data dir)",
    )

    parser = argparse.ArgumentParser(prog="ai-search", description="AI search for team-chat workspaces.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", parents=[data], help="start the server")
    serve.add_argument("--host", default=DEFAULT_HOST)
    serve.add_argument("--port", type=int, default=DEFAULT_PORT)
    serve.add_argument(
        "--demo", action="store_true", help="load the demo workspace into an empty data dir and turn on MCP"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve with N processes on the one port (default 1; N > 1 needs rate_limit_storage in Redis)",
    )
    serve.set_defaults(func=cmd_serve)

    pipeline = sub.add_parser(
        "pipeline", help="the search index as a process of its own, shared by proxies"
    ).add_subparsers(dest="action", required=True)
    pserve = pipeline.add_parser(
        "serve",
        parents=[data],
        help="keep the index (keyword and vectors) following the store and serve only the pipeline contract",
    )
    pserve.add_argument("--host", default=DEFAULT_HOST)
    pserve.add_argument("--port", type=int, default=DEFAULT_PIPELINE_PORT)
    pserve.set_defaults(func=cmd_pipeline_serve)

    users = sub.add_parser("users", help="manage users").add_subparsers(dest="action", required=True)
    create = users.add_parser("create", parents=[data], help="create a user")
    create.add_argument("username")
    create.add_argument("--password", required=True)
    create.add_argument("--name")
    create.add_argument("--role", choices=("admin", "user"), default="user")
    create.set_defaults(func=cmd_users_create)
    password = users.add_parser(
        "password",
        parents=[data],
        help="set an existing user's password (people an import brought in have none)",
    )
    password.add_argument("username")
    password.add_argument("--password", required=True)
    password.set_defaults(func=cmd_users_password)

    tokens = sub.add_parser("tokens", help="manage personal access tokens").add_subparsers(
        dest="action", required=True
    )
    tcreate = tokens.add_parser(
        "create", parents=[data], help="create a personal access token; prints the two header lines"
    )
    tcreate.add_argument("username")
    tcreate.add_argument("--name", help="a label for the token (default: cli-N)")
    tcreate.set_defaults(func=cmd_tokens_create)

    imp = sub.add_parser(
        "import",
        parents=[data],
        help="import a JSONL history, or a Slack, Mattermost or Zulip export (recognised by content)",
    )
    imp.add_argument("file", metavar="PATH", help="a .jsonl file, an export's .zip, .tar.gz or folder")
    imp.add_argument(
        "--source-url",
        metavar="URL",
        help="the source's address, for links back to each message (https://acme.slack.com)",
    )
    _add_mapping_options(imp)
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    imp.set_defaults(func=cmd_import)

    feedback = sub.add_parser("feedback", help="answer ratings").add_subparsers(dest="action", required=True)
    export = feedback.add_parser(
        "export", parents=[data], help="print the ratings people gave answers (to stdout), oldest first"
    )
    export.add_argument("--since", metavar="DATE", help="only ratings given or changed from this date on")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl", help="default: jsonl")
    export.set_defaults(func=cmd_feedback_export)

    sync = sub.add_parser("sync", help="mirror a live workspace").add_subparsers(dest="source", required=True)
    rocketchat = sync.add_parser(
        "rocketchat",
        parents=[data],
        help="mirror a Rocket.Chat workspace (users, rooms, members, messages) through its REST API",
    )
    rocketchat.add_argument("--url", help="the server, https://chat.example.com (default: rocketchat_url)")
    rocketchat.add_argument("--user-id", help="an admin's user id, X-User-Id (default: rocketchat_user_id)")
    token = rocketchat.add_mutually_exclusive_group()
    token.add_argument(
        "--token-file",
        metavar="PATH",
        help="read that admin's personal access token from this file (its first line that is not blank)",
    )
    token.add_argument(
        "--token",
        metavar="PAT",
        help="the token itself, or - to read it from standard input; a value given here is visible to every"
        " user of the machine (ps), so prefer --token-file, - or AI_SEARCH_ROCKETCHAT_TOKEN"
        " (default: the setting rocketchat_token)",
    )
    rocketchat.add_argument("--watch", action="store_true", help="keep mirroring, every --interval seconds")
    rocketchat.add_argument(
        "--interval",
        type=int,
        help="seconds between runs with --watch (default: rocketchat_sync_interval_seconds)",
    )
    _add_mapping_options(rocketchat)
    rocketchat.add_argument("--quiet", action="store_true", help="no progress bar")
    rocketchat.set_defaults(func=cmd_sync_rocketchat)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except (CliError, SettingsError) as exc:
        print(f"ai-search: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    raise SystemExit(main())
