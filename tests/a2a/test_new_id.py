"""`new_id` hands out random version-4 UUIDs from a batch of random bytes: each is a
valid UUID, none repeats across batches, and a forked child does not reuse its
parent's remaining batch."""

from __future__ import annotations

import os
import uuid

import pytest

from interlink.a2a import new_id
from interlink.a2a.server import _executor


def test_ids_are_version_4_uuids_in_canonical_form() -> None:
    ids = [new_id() for _ in range(3 * _executor._BATCH + 5)]  # across batch refills
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_batch() -> None:
    _executor._ids.clear()
    new_id()  # the parent now holds the rest of a fresh batch
    assert _executor._ids
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read)
        os.write(write, ("1" if not _executor._ids else "0").encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        cleared = pipe.read()
    os.waitpid(pid, 0)
    assert cleared == "1"
