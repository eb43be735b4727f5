"""The workspace store: users, rooms, subscriptions, messages and tokens behind one interface.

``open_store(data_dir)`` opens (creating and migrating as needed) the embedded SQLite store at
``<data_dir>/workspace.db``; with a ``database_url`` it opens the PostgreSQL store on that database
instead (``postgres.py``), the data dir keeping only this machine's other files. Everything above
this package talks to the ``Store`` protocol and the frozen records, never to SQL.
"""

from __future__ import annotations

from pathlib import Path

from .base import (
    AlreadyTaken,
    InvalidValue,
    MessageListener,
    RecordNotFound,
    StorageFailure,
    Store,
    StoreError,
)
from .passwords import hash_token, new_token
from .records import (
    Attachment,
    ExternalKind,
    ExternalLink,
    ImportResult,
    ImportRow,
    LinkHow,
    Message,
    MessageEvent,
    Reaction,
    Role,
    Room,
    RoomType,
    Subscription,
    ThreadSummary,
    Token,
    TokenKind,
    User,
)
from .sqlite import SQLiteStore

__all__ = [
    "DATABASE_FILENAME",
    "AlreadyTaken",
    "Attachment",
    "ExternalKind",
    "ExternalLink",
    "ImportResult",
    "ImportRow",
    "InvalidValue",
    "LinkHow",
    "Message",
    "MessageEvent",
    "MessageListener",
    "Reaction",
    "RecordNotFound",
    "Role",
    "Room",
    "RoomType",
    "SQLiteStore",
    "StorageFailure",
    "Store",
    "StoreError",
    "Subscription",
    "ThreadSummary",
    "Token",
    "TokenKind",
    "User",
    "hash_token",
    "new_token",
    "open_store",
]

# The workspace file inside a data dir; its -wal and -shm companions sit beside it.
DATABASE_FILENAME = "workspace.db"


def open_store(data_dir: Path, *, database_url: str = "", pool_size: int | None = None) -> Store:
    """The workspace store: on PostgreSQL when ``database_url`` is given, else the SQLite file of
    ``data_dir``; created (with the data dir) and migrated when needed.

    Raises:
        StorageFailure: the directory or database cannot be created or reached, or has a newer schema.
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StorageFailure(f"cannot create the data directory {data_dir}: {error}") from error
    if database_url:
        # Imported here: an embedded deployment never loads psycopg.
        from .postgres import DEFAULT_POOL_SIZE, PostgresStore

        return PostgresStore(
            database_url, data_dir=data_dir, pool_size=DEFAULT_POOL_SIZE if pool_size is None else pool_size
        )
    return SQLiteStore(data_dir / DATABASE_FILENAME)
