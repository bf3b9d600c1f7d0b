"""Choosing a `TaskStore` from a URL, and where the default SQLite file lives.

Accepted: `memory:`; `sqlite:///abs/path.db`, `sqlite:relative.db` or a bare path ending
in `.db` / `.sqlite`; `postgresql://user@host/db?schema=name` (schema `interlink` by
default; needs the `postgres` extra). The store is returned unopened: the caller awaits
`open()` and `close()`.
"""

from __future__ import annotations

import os
from pathlib import Path

from interlink.a2a._store import StoreError, TaskStore

__all__ = ["default_store_path", "open_store"]

_FORMS = "'memory:', 'sqlite:///abs/path.db', 'sqlite:relative.db' or a path ending in .db/.sqlite"


def open_store(url: str) -> TaskStore:
    """The store that `url` names (not opened yet); `StoreError` for anything else."""
    if url == "memory:":
        from interlink.a2a._store_memory import MemoryTaskStore

        return MemoryTaskStore()
    if url.startswith(("postgresql://", "postgres://")):
        # `schema=` is ours; every other query parameter is asyncpg's (sslmode, ...).
        from urllib.parse import parse_qsl, urlencode, urlsplit

        try:
            from interlink.a2a._store_postgres import PostgresTaskStore
        except ImportError as exc:
            raise StoreError(f"{exc}: pip install 'interlink[postgres]'") from exc

        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schemas = [value for key, value in query if key == "schema"]
        rest = urlencode([(key, value) for key, value in query if key != "schema"])
        dsn = parts._replace(query=rest).geturl()
        return PostgresTaskStore(dsn, schema=schemas[-1] if schemas else "interlink")
    path: str | None = None
    if url.startswith("sqlite://"):
        # sqlite:///abs/path.db: an empty authority, then the absolute path
        rest = url[len("sqlite://") :]
        if rest.startswith("/"):
            path = rest
    elif url.startswith("sqlite:"):
        path = url[len("sqlite:") :]
    elif url.endswith((".db", ".sqlite")) and ":" not in url.split("/", 1)[0]:
        path = url
    if not path:
        raise StoreError(f"unknown task store {url!r}: expected {_FORMS}")
    from interlink.a2a._store_sqlite import SqliteTaskStore

    return SqliteTaskStore(Path(path).expanduser())


def default_store_path() -> Path:
    """`a2a.db` in `$INTERLINK_DATA_DIR`, else `$XDG_DATA_HOME/interlink`, else
    `~/.local/share/interlink`; the directory is created."""
    if data_dir := os.environ.get("INTERLINK_DATA_DIR"):
        directory = Path(data_dir).expanduser()
    elif xdg := os.environ.get("XDG_DATA_HOME"):
        directory = Path(xdg).expanduser() / "interlink"
    else:
        directory = Path.home() / ".local" / "share" / "interlink"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "a2a.db"
