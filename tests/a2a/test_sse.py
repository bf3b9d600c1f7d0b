"""The SSE parser: field rules, line endings, EOF, and any chunking of a stream."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.a2a import TaskNotFound
from interlink.a2a.client._sse import SSEError, SSEEvent, SSEParser, UnexpectedResponse, read_events


def parse(*chunks: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events + parser.close()


def test_fields_and_comments() -> None:
    stream = (
        b": keep-alive\n\n"
        b"id: 1\nevent: update\ndata: a\ndata:b\nretry: 1500\nunknown: x\n\n"
        b"data: no id\n\n"
        b"id\ndata: empty id\n\n"
    )
    assert parse(stream) == [
        SSEEvent("a\nb", "update", "1", 1500),
        SSEEvent("no id"),
        SSEEvent("empty id", id=""),
    ]


def test_line_endings_and_bom() -> None:
    expected = [SSEEvent("x", id="7"), SSEEvent("y")]
    for sep in (b"\n", b"\r", b"\r\n"):
        body = b"id: 7" + sep + b"data: x" + sep + sep + b"data: y" + sep + sep
        assert parse(b"\xef\xbb\xbf" + body) == expected
        assert parse(*[bytes([c]) for c in body]) == expected


def test_last_event_without_blank_line_is_dispatched_at_eof() -> None:
    assert parse(b"data: one\n\ndata: two") == [SSEEvent("one"), SSEEvent("two")]
    assert parse(b"data: one\n\ndata: two\n") == [SSEEvent("one"), SSEEvent("two")]


def test_ignored_values() -> None:
    parser = SSEParser()
    events = parser.feed(b"id: a\0b\nretry: 1x\ndata: d\n\nid: 3\n\n")
    assert events == [SSEEvent("d")]
    assert parser.retry is None
    assert parser.last_event_id == "3"  # an id without data still counts


def test_event_size_limit() -> None:
    parser = SSEParser(max_event_size=10)
    with pytest.raises(SSEError):
        parser.feed(b"data: 0123456789abc\n")
    with pytest.raises(SSEError):
        SSEParser(max_event_size=10).feed(b"data: 0123456789abc")


_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\0"), max_size=20)
_EVENT = st.tuples(
    st.none() | st.from_regex(r"[0-9a-z]{1,4}", fullmatch=True),
    st.none() | st.sampled_from(["update", "error2"]),
    st.lists(_LINE, min_size=1, max_size=3),
)


@given(
    events=st.lists(_EVENT, max_size=6),
    sep=st.sampled_from([b"\n", b"\r", b"\r\n"]),
    comments=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_any_chunking_gives_the_same_events(
    events: list[tuple[str | None, str | None, list[str]]],
    sep: bytes,
    comments: bool,
    cuts: list[int],
) -> None:
    stream = b""
    expected = []
    for event_id, name, lines in events:
        if comments:
            stream += b": ping" + sep
        if event_id is not None:
            stream += b"id: " + event_id.encode() + sep
        if name is not None:
            stream += b"event: " + name.encode() + sep
        for line in lines:
            stream += b"data: " + line.encode() + sep
        stream += sep
        expected.append(SSEEvent("\n".join(lines), name or "message", event_id))
    assert parse(stream) == expected
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert parse(*chunks) == expected


def test_line_ends_mixed_across_chunks() -> None:
    """LF-only chunks (read on a fast path) and chunks with CRs give the same events."""
    stream = b"data: a\r\ndata:b\n\nid: 7\rdata\r\rdata:  c\n: x\n\ndata: d\n\n"
    expected = [SSEEvent("a\nb"), SSEEvent("", id="7"), SSEEvent(" c"), SSEEvent("d")]
    assert parse(stream) == expected
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == expected
    assert parse(stream[:9], stream[9:20], stream[20:]) == expected


# -- the reader over httpx ---------------------------------------------------------------


def _response(body: bytes, content_type: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": content_type}, content=body)


async def _all(response: httpx.Response) -> list[SSEEvent]:
    return [e async for e in read_events(response)]


ERROR = (
    b'{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found",'
    b'"data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND",'
    b'"domain":"a2a-protocol.org"}]}}'
)


async def test_reader_yields_events() -> None:
    response = _response(b'id: 1\ndata: {"a":1}\n\n: ping\n\ndata: 2', "text/event-stream")
    assert await _all(response) == [SSEEvent('{"a":1}', id="1"), SSEEvent("2")]


async def test_error_before_the_stream_is_raised_typed() -> None:
    with pytest.raises(TaskNotFound) as info:
        await _all(_response(ERROR, "application/json"))
    assert info.value.from_peer


async def test_error_event_is_raised_typed() -> None:
    body = b'id: 1\ndata: {"x":1}\n\nevent: error\ndata: ' + ERROR + b"\n\n"
    seen: list[SSEEvent] = []

    async def read() -> None:
        async for event in read_events(_response(body, "text/event-stream")):
            seen.append(event)

    with pytest.raises(TaskNotFound):
        await read()
    assert seen == [SSEEvent('{"x":1}', id="1")]


async def test_plain_success_and_garbage() -> None:
    ok = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert await _all(_response(ok, "application/json")) == [SSEEvent(ok.decode())]
    with pytest.raises(UnexpectedResponse):
        await _all(_response(b"<html>", "text/html"))
