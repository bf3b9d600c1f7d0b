"""The NDJSON framer: unit cases and properties over arbitrary chunkings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlink.jsonrpc import LineFramer, Oversize


def feed_all(framer: LineFramer, chunks: list[bytes]) -> list[bytes | Oversize]:
    out: list[bytes | Oversize] = []
    for chunk in chunks:
        out += framer.feed(chunk)
    out += framer.close()
    return out


def model(stream: bytes, limit: int) -> list[bytes | Oversize]:
    """What the framer must yield for a whole stream, written the obvious way."""
    out: list[bytes | Oversize] = []
    for segment in stream.split(b"\n"):
        if len(segment) > limit:
            out.append(Oversize(len(segment)))
            continue
        if segment.endswith(b"\r"):
            segment = segment[:-1]
        if segment and not segment.isspace():
            out.append(segment)
    return out


def test_lines_split_across_chunks() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a":') == []
    assert framer.buffered == 5
    assert framer.feed(b'1}\n{"b"') == [b'{"a":1}']
    assert framer.feed(b":2}\r\n\n  \n") == [b'{"b":2}']
    assert framer.close() == []


def test_a_last_line_without_newline_counts() -> None:
    framer = LineFramer()
    assert framer.feed(b"x\ny") == [b"x"]
    assert framer.close() == [b"y"]
    assert framer.close() == []


def test_oversize_in_one_chunk_is_reported_and_skipped() -> None:
    framer = LineFramer(max_size=4)
    assert framer.feed(b"1234\n12345\nok\n") == [b"1234", Oversize(5), b"ok"]


def test_oversize_across_chunks_keeps_memory_bounded() -> None:
    framer = LineFramer(max_size=10)
    out = framer.feed(b"x" * 8)
    out += framer.feed(b"x" * 8)
    assert framer.buffered == 0  # discarding, not holding
    for _ in range(100):
        out += framer.feed(b"y" * 1000)
        assert framer.buffered == 0
    out += framer.feed(b"zz\nnext\n")
    assert out == [Oversize(16 + 100_000 + 2), b"next"]


def test_oversize_at_end_of_stream() -> None:
    framer = LineFramer(max_size=3)
    assert framer.feed(b"abcdef") == []
    assert framer.close() == [Oversize(6)]


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineFramer(0)


@settings(max_examples=300)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    crlf=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=30),
    limit=st.integers(min_value=1, max_value=50) | st.integers(min_value=2000, max_value=10**5),
    copies=st.integers(min_value=1, max_value=60),  # (many: chunks the framer splits in C)
)
def test_any_chunking_gives_the_same_lines(
    lines: list[bytes], crlf: bool, cuts: list[int], limit: int, copies: int
) -> None:
    stream = (b"\r\n" if crlf else b"\n").join(lines * copies)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert feed_all(LineFramer(limit), chunks) == model(stream, limit)


@settings(max_examples=300)
@given(garbage=st.lists(st.binary(max_size=300), max_size=20), limit=st.integers(1, 100))
def test_garbage_never_raises_and_lines_respect_the_limit(garbage: list[bytes], limit: int) -> None:
    framer = LineFramer(limit)
    for item in feed_all(framer, garbage):
        if isinstance(item, bytes):
            assert 0 < len(item) <= limit
            assert b"\n" not in item
        else:
            assert item.size > limit
    assert feed_all(LineFramer(limit), garbage) == model(b"".join(garbage), limit)


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("size", [1, 700, 1500, 5000])
def test_large_chunks_give_the_same_lines(crlf: bool, size: int) -> None:
    """Chunks of many lines (split in C) holding a line's start from the last chunk."""
    lines = [b'{"id":%d}' % i + b" " * (i % 40) for i in range(400)] + [b"", b" \t", b"\r"]
    stream = (b"\r\n" if crlf else b"\n").join(lines * 2)
    chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
    assert feed_all(LineFramer(10**5), chunks) == model(stream, 10**5)


def test_a_held_cr_before_a_chunk_of_many_lines_is_stripped() -> None:
    many = b"".join(b'\n{"id":%d}' % i for i in range(200))
    assert feed_all(LineFramer(), [b'{"id":"a"}\r', many]) == model(b'{"id":"a"}\r' + many, 2**20)
