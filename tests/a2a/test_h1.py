"""The sans-IO HTTP/1.1 of the A2A client (`client._h1`): a request's bytes, and the
events of an answer however its bytes are split. No sockets."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlink.a2a.client._h1 import (
    END,
    NEED_DATA,
    Head,
    LocalProtocolError,
    RemoteProtocolError,
    ResponseParser,
    request_bytes,
)
from interlink.a2a.client._h1pool import _split, _with_query

Events = list[Head | bytes | str]


def events(parser: ResponseParser) -> Events:
    """Every event available now: the head, the body joined, "END" / "NEED_DATA" last."""
    out: Events = []
    body = b""
    while True:
        event = parser.next_event()
        if isinstance(event, bytes):
            body += event
            continue
        if body:
            out.append(body)
            body = b""
        if event is NEED_DATA:
            out.append("NEED_DATA")
            return out
        if event is END:
            out.append("END")
            return out
        assert isinstance(event, Head)
        out.append(event)


def parse(*pieces: bytes, method: str = "GET", eof: bool = False, **limits: int) -> Events:
    """Feed `pieces` one by one; the events, their bodies joined."""
    parser = ResponseParser(method, **limits)
    out: Events = []
    for piece in pieces:
        parser.feed(piece)
        out += [e for e in events(parser) if e != "NEED_DATA"]
        if out and out[-1] == "END":
            return _joined(out)
    if eof:
        parser.feed_eof()
    out += events(parser)
    return _joined(out)


def _joined(out: Events) -> Events:
    joined: Events = []
    for event in out:
        if isinstance(event, bytes) and joined and isinstance(joined[-1], bytes):
            joined[-1] += event
        else:
            joined.append(event)
    return joined


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
)


def test_a_content_length_answer() -> None:
    head, body, end = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello")
    assert isinstance(head, Head)
    assert (head.status, head.reason, head.headers) == (
        200,
        b"OK",
        [(b"content-length", b"5"), (b"x-a", b"b")],
    )
    assert (body, end) == (b"hello", "END")


def test_a_chunked_answer_with_extensions_and_trailers() -> None:
    parser = ResponseParser("POST")
    parser.feed(CHUNKED)
    got = events(parser)
    assert got[1:] == [b"hello, world", "END"]
    assert parser.keep_alive


@given(st.lists(st.integers(min_value=1, max_value=len(CHUNKED) - 1), max_size=8))
def test_any_split_of_the_bytes_gives_the_same_answer(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [CHUNKED[a:b] for a, b in zip([0, *points], [*points, len(CHUNKED)], strict=True)]
    got = parse(*pieces, method="POST")
    assert got[1:] == [b"hello, world", "END"]


def test_interim_answers_are_skipped() -> None:
    head, body, end = parse(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
    )
    assert isinstance(head, Head)
    assert head.status == 201
    assert (body, end) == (b"ok", "END")


def test_answers_without_a_body() -> None:
    for status in (204, 304):
        _, end = parse(b"HTTP/1.1 %d X\r\nContent-Length: 9\r\n\r\n" % status)
        assert end == "END"
    _, end = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", method="HEAD")
    assert end == "END"


def test_a_body_up_to_eof_ends_the_connection() -> None:
    parser = ResponseParser("GET")
    parser.feed(b"HTTP/1.1 200 OK\r\n\r\nsome")
    assert events(parser)[1:] == [b"some", "NEED_DATA"]
    parser.feed(b" more")
    parser.feed_eof()
    assert events(parser) == [b" more", "END"]
    assert not parser.keep_alive


@pytest.mark.parametrize(
    ("head", "keep"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
            False,
        ),
    ],
)
def test_keep_alive(head: bytes, keep: bool) -> None:
    parser = ResponseParser("GET")
    parser.feed(head)
    assert events(parser)[-1] == "END"
    assert parser.keep_alive is keep


def test_bare_lf_line_ends_and_folded_headers_are_read() -> None:
    head, body, end = parse(b"HTTP/1.1 200 OK\nX-Long: a\n  b\nContent-Length: 2\n\nok")
    assert isinstance(head, Head)
    assert head.headers[0] == (b"x-long", b"a b")
    assert (body, end) == (b"ok", "END")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", "invalid Content"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported Transfer-Encoding"),
        (b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "invalid header line"),
        (b"HTTP/2 200 OK\r\n\r\n", "invalid status line"),
        (b"HTTP/1.1 101 Switching\r\n\r\n", "switched protocols"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab", "does not end in CRLF"),
    ],
)
def test_broken_answers_are_the_servers_fault(answer: bytes, error: str) -> None:
    with pytest.raises(RemoteProtocolError, match=error):
        parse(answer)


@pytest.mark.parametrize(
    "status_line",
    [b"HTTP/1.1 099 Low", b"HTTP/1.1 000 Zero", b"HTTP/1.1 20 Short", b"HTTP/1.1 2000 Long",
     b"HTTP/1.1 +20 Sign", b"HTTP/1.1 1xx Interim"],
)  # fmt: skip
def test_a_status_not_of_three_digits_from_100_is_refused(status_line: bytes) -> None:
    with pytest.raises(RemoteProtocolError, match="invalid status line"):
        parse(status_line + b"\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    "value",
    [b"a\rb", b"a\r", b"\ra", b"a\x00b", b"a\x1bb", b"a\x7f", b"a\x0bb", b"a\x0cb"],
)
def test_a_control_character_in_a_header_value_is_refused(value: bytes) -> None:
    """A bare CR, or any CTL but HTAB: a protocol error, never a value passed on (a
    proxy or a log behind us might read a CR as a line end)."""
    with pytest.raises(RemoteProtocolError, match="control character"):
        parse(b"HTTP/1.1 200 OK\r\nX-A: " + value + b"\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(RemoteProtocolError, match="control character"):  # (folded in)
        parse(b"HTTP/1.1 200 OK\r\nX-A: a\r\n " + value + b"\r\nContent-Length: 0\r\n\r\n")


def test_tabs_and_obs_text_in_a_header_value_are_read() -> None:
    head, end = parse(b"HTTP/1.1 200 OK\r\nX-A: a\tb \xe9\r\nContent-Length: 0\r\n\r\n")
    assert isinstance(head, Head)
    assert end == "END"
    assert head.headers[0] == (b"x-a", b"a\tb \xe9")


def test_identical_content_lengths_are_one() -> None:
    _, body, end = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok")
    assert (body, end) == (b"ok", "END")


def test_eof_before_any_byte_is_told_apart() -> None:
    parser = ResponseParser("POST")
    parser.feed_eof()
    with pytest.raises(RemoteProtocolError, match="without sending a response"):
        parser.next_event()
    assert parser.received == 0
    parser = ResponseParser("POST")
    parser.feed(b"HTTP/1.1 200")
    parser.feed_eof()
    with pytest.raises(RemoteProtocolError, match="middle of the response head"):
        parser.next_event()


@pytest.mark.parametrize(
    ("cut", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", "6 bytes of the Content-Length"),
        (CHUNKED[:90], "incomplete chunked read"),
    ],
)
def test_eof_in_the_body(cut: bytes, error: str) -> None:
    parser = ResponseParser("GET")
    parser.feed(cut)
    events(parser)
    parser.feed_eof()
    with pytest.raises(RemoteProtocolError, match=error):
        events(parser)


def test_the_head_is_bounded() -> None:
    big = b"HTTP/1.1 200 OK\r\nX: " + b"a" * 2000
    with pytest.raises(RemoteProtocolError, match="head is larger than 1024 bytes"):
        parse(big, max_head=1024)
    with pytest.raises(RemoteProtocolError, match="head is larger than 1024 bytes"):
        parse(big + b"\r\n\r\n", max_head=1024)
    with pytest.raises(RemoteProtocolError, match="chunk size line is too long"):
        parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"0" * 2000, max_head=1024)


def test_the_body_is_bounded() -> None:
    with pytest.raises(RemoteProtocolError, match="body is larger than 10 bytes"):
        parse(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", max_body=10)
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    with pytest.raises(RemoteProtocolError, match="body is larger than 10 bytes"):
        parse(chunked + b"6\r\nabcdef\r\n", b"6\r\nabcdef\r\n", max_body=10)
    with pytest.raises(RemoteProtocolError, match="body is larger than 10 bytes"):
        parse(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 11, max_body=10)


def test_an_unbounded_body_for_streams() -> None:
    parser = ResponseParser("POST", max_body=None)
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n")
    assert isinstance(parser.next_event(), Head)


def test_a_request() -> None:
    data = request_bytes(
        "POST", "/rpc?a=1", "example.com:8080", [(b"Content-Type", b"application/json")], b"{}"
    )
    assert data == (
        b"POST /rpc?a=1 HTTP/1.1\r\nHost: example.com:8080\r\nContent-Type: application/json\r\n"
        b"Accept: */*\r\nContent-Length: 2\r\n\r\n{}"
    )
    get = request_bytes("GET", "/", "h", [(b"Accept", b"text/event-stream")], None)
    assert get == b"GET / HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n"


@pytest.mark.parametrize(
    "header",
    [(b"X-A", b"one\r\nX-Injected: 1"), (b"Bad Name", b"x"), (b"X", b"nul\0")],
)
def test_a_header_that_breaks_the_framing_is_refused(header: tuple[bytes, bytes]) -> None:
    with pytest.raises(LocalProtocolError, match="illegal header"):
        request_bytes("GET", "/", "h", [header], None)


def test_a_request_line_that_breaks_the_framing_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="illegal request line"):
        request_bytes("GET", "/a b", "h", [], None)


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("http://127.0.0.1:8000/", []),
        ("http://Example.COM/a/b?x=1", [("key", "v w")]),
        ("https://example.com:443/v1/tasks", [("historyLength", "3"), ("a", "é&")]),
        ("http://[::1]:9/x?key=old&y=2", [("key", "new")]),
        ("http://h/p", [("tag", "a"), ("tag", "b")]),
    ],
)
def test_the_target_is_what_httpx_sends(url: str, query: list[tuple[str, str]]) -> None:
    """The pool sends the path, query and `Host` httpx makes of the URL and the query
    parameters (merged into the URL's own, as `httpx.URL.copy_merge_params` does: a
    client's `build_request` drops the URL's query when given parameters)."""
    expected = httpx.Request("GET", httpx.URL(url).copy_merge_params(tuple(query)))
    _, target, authority, bare = _split(url)
    assert _with_query(target, query).encode() == expected.url.raw_path
    assert authority.encode() == expected.headers["host"].encode()
    assert bare == str(expected.url.copy_with(query=None))
