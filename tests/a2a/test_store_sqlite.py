"""What only the SQLite store has: durability across reopen and across a killed process,
the schema version, idempotent open. Then `open_store` and the default store path.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from interlink.a2a.stores._base import StoreError
from interlink.a2a.stores._memory import MemoryTaskStore
from interlink.a2a.stores._sqlite import _MIGRATIONS, SCHEMA_VERSION, SqliteTaskStore
from interlink.a2a.stores._url import default_store_path, open_store
from tests.a2a.test_store import delivers_as_1_0, row, touch

# -- SQLite only -----------------------------------------------------------------------------


async def test_sqlite_keeps_everything_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    first = SqliteTaskStore(path)
    await first.open()
    await first.create(row("t1", tenant="acme"), [b"e1"])
    await first.put_push_config("acme", "t1", "hook", b"H")
    await touch(first, "acme", "t1", 2_000)
    before = await first.get("acme", "t1")
    await first.close()

    second = SqliteTaskStore(path)
    await second.open()
    try:
        assert await second.get("acme", "t1") == before
        assert [e.payload for e in await second.events("acme", "t1")] == [b"e1", b"at 2000"]
        assert await second.list_push_configs("acme", "t1") == [("hook", b"H")]
        (pending,) = await second.claim_deliveries(now=1, limit=10, lease=1)
        assert (pending.seq, pending.payload) == (2, b"at 2000")
        assert [r.task_id for r in await second.active()] == ["t1"]
    finally:
        await second.close()


_CRASH = """
import asyncio, os, sys
from interlink.a2a.stores._base import TaskRow
from interlink.a2a.stores._sqlite import SqliteTaskStore

async def main() -> None:
    store = SqliteTaskStore(sys.argv[1])
    await store.open()
    await store.create(TaskRow(tenant="", task_id="t1", context_id="c", owner="", state=
        "TASK_STATE_WORKING", status_time=1, version=0, last_seq=0, task=b"v1"), [b"e1"])
    await store.append("", "t1", expected_version=1, task=b"v2", state="TASK_STATE_WORKING",
        status_time=2, events=[b"e2"])
    print("acknowledged", flush=True)
    os._exit(0)  # no close, no checkpoint: a crash right after the acknowledgement

asyncio.run(main())
"""


async def test_sqlite_acknowledged_writes_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CRASH, str(path), stdout=subprocess.PIPE
    )
    out, _ = await process.communicate()
    assert out == b"acknowledged\n"
    store = SqliteTaskStore(path)
    await store.open()
    try:
        got = await store.get("", "t1")
        assert got is not None
        assert (got.version, got.task) == (2, b"v2")
        assert [e.payload for e in await store.events("", "t1")] == [b"e1", b"e2"]
    finally:
        await store.close()


async def test_sqlite_schema_version_and_idempotent_open(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    store = SqliteTaskStore(path)
    await store.open()
    await store.open()
    await store.create(row("t1"), [])
    await store.close()
    await store.close()
    with pytest.raises(StoreError):
        await store.get("", "t1")
    await store.open()  # reopen the same object
    try:
        assert await store.get("", "t1") is not None
        assert await store.count("") == 1
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()


async def test_sqlite_errors_are_store_errors(tmp_path: Path) -> None:
    store = SqliteTaskStore(tmp_path / "missing-dir" / "a2a.db")
    with pytest.raises(StoreError, match="unable to open"):
        await store.open()
    with pytest.raises(StoreError, match="not open"):
        await store.count("")


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        await SqliteTaskStore(path).open()


# -- choosing a store ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///abs/dir/x.db", "/abs/dir/x.db"),
        ("sqlite:relative.db", "relative.db"),
        ("sqlite:data/a2a.sqlite", "data/a2a.sqlite"),
        ("tasks.db", "tasks.db"),
        ("/var/lib/interlink/a2a.sqlite", "/var/lib/interlink/a2a.sqlite"),
    ],
)
def test_open_store_sqlite_forms(url: str, path: str) -> None:
    store = open_store(url)
    assert isinstance(store, SqliteTaskStore)
    assert store.path == Path(path)


def test_open_store_memory_and_errors() -> None:
    assert isinstance(open_store("memory:"), MemoryTaskStore)
    for bad in ("redis://x", "tasks.txt", "sqlite://host/x.db", "sqlite:", "", "http://x.db"):
        with pytest.raises(StoreError, match="memory:"):
            open_store(bad)


def test_default_store_path_is_per_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "Interlink Example Agent"
    monkeypatch.setenv("INTERLINK_DATA_DIR", str(tmp_path / "explicit"))
    assert default_store_path(name) == tmp_path / "explicit" / "a2a" / "interlink-example-agent.db"
    assert (tmp_path / "explicit" / "a2a").is_dir()
    monkeypatch.delenv("INTERLINK_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path("shouter") == tmp_path / "xdg" / "interlink" / "a2a" / "shouter.db"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/xdg")  # to be ignored (XDG spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    share = tmp_path / "home" / ".local" / "share" / "interlink" / "a2a"
    assert default_store_path("shouter") == share / "shouter.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_store_path("shouter") == share / "shouter.db"
    assert os.path.isdir(share)
    # different agents, different files; names without a usable slug still differ
    names = ["shouter", "Shouter 2", "Café", "Cafe", "", "エージェント", "代理", "../../etc/x"]
    paths = [default_store_path(n) for n in names]
    assert len(set(paths)) == len(paths)
    assert all(p.parent == share and p.suffix == ".db" for p in paths)
    assert default_store_path("../../etc/x").name == "etc-x.db"


_HOLDER = """
import asyncio, sys
from interlink.a2a.stores._sqlite import SqliteTaskStore

async def main() -> None:
    store = SqliteTaskStore(sys.argv[1])
    await store.open()
    print("open", flush=True)
    sys.stdin.read()  # until the test kills this process

asyncio.run(main())
"""


async def test_sqlite_serves_one_process_at_a_time(tmp_path: Path) -> None:
    """A second store on the file is refused, naming the holder; the lock of a process
    that died does not block; `close` (and a failed `open`) let it go."""
    path = tmp_path / "a2a.db"
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, str(path), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"open\n"
        second = SqliteTaskStore(path)
        with pytest.raises(StoreError, match=f"{path} is in use by pid {holder.pid} on ") as err:
            await second.open()
        assert "-c" in str(err.value)  # the holder's command line
        with pytest.raises(StoreError, match="is in use by pid"):
            second.lock()
    finally:
        holder.kill()  # no close: the OS drops the lock with the process
        await holder.wait()
    await second.open()
    try:
        third = SqliteTaskStore(path)  # in this process, too
        with pytest.raises(StoreError, match=f"in use by pid {os.getpid()} "):
            await third.open()
    finally:
        await second.close()
    third.lock()  # free again after close; `lock` alone holds it too ...
    with pytest.raises(StoreError, match="in use"):
        SqliteTaskStore(path).lock()
    await third.close()  # ... until close
    refused = SqliteTaskStore(path)
    await refused.open()
    await refused.close()


async def test_sqlite_get_reads_on_the_loop_and_falls_back_when_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteTaskStore(tmp_path / "a2a.db")
    await store.open()
    try:
        await store.create(row("t1"), [b"e1"])
        fresh = await store.get("", "t1")
        assert fresh is not None
        await touch(store, "", "t1", 2_000)  # committed on the writer's thread ...
        changed = await store.get("", "t1")  # ... and seen by the loop's reader at once
        assert changed is not None
        assert changed.version == fresh.version + 1
        assert changed.status_time == 2_000

        class Busy:
            def execute(self, *args: object) -> sqlite3.Cursor:
                raise sqlite3.OperationalError("database is locked")

        monkeypatch.setattr(store, "_reader", Busy())
        assert await store.get("", "t1") == changed  # read on the writer's thread instead
        assert await store.get("", "nope") is None
    finally:
        monkeypatch.undo()
        await store.close()


async def test_sqlite_configs_stored_before_the_column_are_1_0s(tmp_path: Path) -> None:
    path = tmp_path / "a2a.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statements in _MIGRATIONS[:2]:
        for statement in statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO tasks VALUES ('', 't1', 'c', 'a', 'TASK_STATE_WORKING', 1, 1, 1, X'54')"
    )
    conn.execute("INSERT INTO events VALUES ('', 't1', 1, X'45')")  # (b"E")
    conn.execute(
        "INSERT INTO push_configs (tenant, task_id, config_id, config)"
        " VALUES ('', 't1', 'h', X'48')"
    )
    conn.execute(
        "INSERT INTO outbox (tenant, task_id, config_id, config_ref, seq)"
        " VALUES ('', 't1', 'h', 1, 1)"
    )
    conn.close()
    await delivers_as_1_0(SqliteTaskStore(path))
