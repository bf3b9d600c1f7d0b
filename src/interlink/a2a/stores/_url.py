"""Choosing a `TaskStore` from a URL, and where the default SQLite file lives.

Accepted: `memory:`; `sqlite:///abs/path.db`, `sqlite:relative.db` or a bare path ending
in `.db` / `.sqlite`; `postgresql://user@host/db?schema=name` (schema `interlink` by
default; needs the `postgres` extra). The store is returned unopened: the caller awaits
`open()` and `close()`.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

from interlink.a2a.stores._base import StoreError, TaskStore

__all__ = ["default_store_path", "open_store"]

_FORMS = "'memory:', 'sqlite:///abs/path.db', 'sqlite:relative.db' or a path ending in .db/.sqlite"


def open_store(url: str) -> TaskStore:
    """The store that `url` names (not opened yet); `StoreError` for anything else."""
    if url == "memory:":
        from interlink.a2a.stores._memory import MemoryTaskStore

        return MemoryTaskStore()
    if url.startswith(("postgresql://", "postgres://")):
        # `schema=` is ours; every other query parameter is asyncpg's (sslmode, ...).
        from urllib.parse import parse_qsl, urlencode, urlsplit

        try:
            from interlink.a2a.stores._postgres import PostgresTaskStore
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
    from interlink.a2a.stores._sqlite import SqliteTaskStore

    return SqliteTaskStore(Path(path).expanduser())


def default_store_path(agent_name: str) -> Path:
    """The SQLite file of the agent called `agent_name` (its card's name):
    `a2a/<slug of the name>.db` in `$INTERLINK_DATA_DIR`, else in
    `$XDG_DATA_HOME/interlink`, else in `~/.local/share/interlink`; the directory is
    created.

    One file per agent, because one SQLite file serves one process at a time (see
    `SqliteTaskStore`): two agents served at once each get their own. The card's name is
    what stays the same across restarts, working directories and ways of naming the
    target (`examples/a2a_agent.py:app`, an absolute path, a module), so a restarted
    agent finds its tasks again."""
    if data_dir := os.environ.get("INTERLINK_DATA_DIR"):
        directory = Path(data_dir).expanduser()
    elif (xdg := os.environ.get("XDG_DATA_HOME")) and os.path.isabs(xdg):
        directory = Path(xdg) / "interlink"  # (a relative one is to be ignored: XDG spec)
    else:
        directory = Path.home() / ".local" / "share" / "interlink"
    directory /= "a2a"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{_slug(agent_name)}.db"


def _slug(name: str) -> str:
    """`Interlink Example Agent` -> `interlink-example-agent`; a name with no ASCII
    letters or digits left gets a hash of itself, so that two such names still differ."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:64].rstrip("-")
    if slug and slug == re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].rstrip("-"):
        return slug
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{slug or 'agent'}-{digest}"
