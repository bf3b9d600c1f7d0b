"""`interlink a2a check`'s case logic against a deliberately wrong server (an in-process
httpx transport), its SSE reader, its contact policy and its command line."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from interlink.check import Outcome, Result
from interlink.check._a2a_bindings import Rest, RestReply, contactable, grpc_target
from interlink.check._a2a_grpc import Grpc
from interlink.check._a2a_runner import Options, card_url_for, run_check
from interlink.check._a2a_wire import MAX_BODY, Refused, Stream, Wire, is_loopback
from tests.interop.a2a.conftest import ROOT

BASE = "http://127.0.0.1:9/"
ELSEWHERE = "http://192.0.2.10/a2a"  # TEST-NET-1: must never be contacted


def _card(**extra: object) -> dict[str, object]:
    card: dict[str, object] = {
        "name": "broken",
        "description": "answers wrongly on purpose",
        "supportedInterfaces": [
            {"url": BASE, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": ELSEWHERE, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ],
        "version": "1",
        "capabilities": {"streaming": False},
        "default_input_modes": ["text/plain"],  # snake_case: a §5.5 violation
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
    }
    card.update(extra)
    return card


class Broken:
    """Tasks complete at once; ListTasks has no nextPageToken; an unknown task is -32603;
    A2A-Version is ignored; invalid JSON is answered as if it were fine."""

    def __init__(self, card: dict[str, object], files: dict[str, object] | None = None) -> None:
        self.card = card
        self.files = files or {}
        self.tasks: dict[str, dict[str, object]] = {}
        self.hosts: list[str] = []
        self.stamp = "yesterday"  # not ISO 8601 (§5.6.1)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.hosts.append(request.url.host)
        if request.method == "GET":
            return httpx.Response(200, json=self.files.get(request.url.path, self.card))
        try:
            body = json.loads(request.content)
        except ValueError:
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})
        rid, method, params = body.get("id"), body.get("method"), body.get("params") or {}

        def ok(result: object) -> httpx.Response:
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": rid, "result": result})

        if method == "SendMessage":
            task: dict[str, object] = {
                "id": str(uuid.uuid4()),
                "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": self.stamp},
            }
            self.tasks[str(task["id"])] = task
            return ok({"task": task})
        if method == "GetTask" and params.get("id") in self.tasks:
            return ok(self.tasks[params["id"]])
        if method == "ListTasks":
            return ok({"tasks": list(self.tasks.values())})
        error = {"code": -32603, "message": "internal"}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": rid, "error": error})


def _results(server: Broken, *only: str) -> dict[str, Result]:
    options = Options(url=BASE, timeout=2, only=only)
    report = asyncio.run(run_check(options, httpx.MockTransport(server)))
    return {r.case.id: r for r in report.results}


def _outcomes(server: Broken, *only: str) -> dict[str, Outcome]:
    return {case_id: r.outcome for case_id, r in _results(server, *only).items()}


def test_a_wrong_server_fails_the_cases_it_breaks_and_nothing_errors() -> None:
    server = Broken(_card())
    got = _outcomes(server)
    for case_id in (
        "card.camel_case",
        "version.unsupported",
        "version.empty_is_0_3",
        "jsonrpc.parse_error",
        "jsonrpc.method_not_found",
        "send.timestamp",
        "send.unknown_task",
        "get.unknown",
        "list.next_page_token",
        "cancel.terminal",
        "stream.unsupported",
        "push.unsupported",
        "extended.card",
    ):
        assert got[case_id] is Outcome.FAIL, case_id
    assert got["get.task"] is Outcome.PASS
    assert got["card.required"] is Outcome.PASS  # snake_case still decodes
    assert Outcome.ERROR not in got.values()
    # the second interface is on another host: reported, never contacted
    assert got["binding.equivalence"] is Outcome.SKIP
    assert set(server.hosts) == {"127.0.0.1"}


def test_an_interface_elsewhere_is_not_contacted() -> None:
    interfaces = [{"url": ELSEWHERE, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    server = Broken(_card(supportedInterfaces=interfaces))
    options = Options(url=BASE, timeout=2)
    report = asyncio.run(run_check(options, httpx.MockTransport(server)))
    by_id = {r.case.id: r for r in report.results}
    assert by_id["get.task"].outcome is Outcome.SKIP
    assert "elsewhere, not contacted: " + ELSEWHERE in by_id["get.task"].detail
    assert "another host: not contacted" in by_id["card.interfaces"].detail
    assert set(server.hosts) == {"127.0.0.1"}


def _signed(card: dict[str, object], jku: str, tamper: bool = False) -> dict[str, object]:
    """`card` signed with a fresh P-256 key (ES256) over its JCS form without defaults
    (its empty capabilities.extensions removed, §8.4.1); the JWKS for `jku`."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    header = {"alg": "ES256", "typ": "JOSE", "kid": "k1", "jku": jku}
    protected = b64(json.dumps(header).encode())
    payload = json.dumps(card, sort_keys=True, separators=(",", ":")).encode()
    der = key.sign(f"{protected}.{b64(payload)}".encode(), ec.ECDSA(hashes.SHA256()))
    r, s = utils.decode_dss_signature(der)
    raw = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    served = json.loads(json.dumps(card))
    served["capabilities"]["extensions"] = []  # a default value, not signed
    served["signatures"] = [{"protected": protected, "signature": b64(raw)}]
    if tamper:
        served["name"] = "someone else"
    jwk = {"kty": "EC", "crv": "P-256", "kid": "k1"}
    jwk |= {"x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
    return {"card": served, "jwks": {"keys": [jwk]}}


@pytest.mark.parametrize(
    ("jku", "tamper", "expected"),
    [
        (BASE + "keys/jwks.json", False, Outcome.PASS),
        (BASE + "keys/jwks.json", True, Outcome.FAIL),
        ("http://192.0.2.10/jwks.json", False, Outcome.SKIP),  # not contacted
    ],
)
def test_card_signature_is_verified_with_the_key_at_jku(
    jku: str, tamper: bool, expected: Outcome
) -> None:
    card = _card()
    card["defaultInputModes"] = card.pop("default_input_modes")
    signed = _signed(card, jku, tamper)
    server = Broken(signed["card"], {"/keys/jwks.json": signed["jwks"]})  # type: ignore[arg-type]
    got = _outcomes(server, "card.signature", "card.signature_valid")
    assert got == {"card.signature": Outcome.PASS, "card.signature_valid": expected}
    assert set(server.hosts) == {"127.0.0.1"}


def test_a_server_that_never_answers_is_a_fail_and_the_run_ends() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=_card())
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    options = Options(url=BASE, timeout=0.2, only=("get.unknown", "jsonrpc.id_echo"))
    report = asyncio.run(asyncio.wait_for(run_check(options, httpx.MockTransport(hang)), 10))
    assert [r.outcome for r in report.results] == [Outcome.FAIL, Outcome.FAIL]
    assert all("no answer" in r.detail for r in report.results)


def test_contact_policy_and_card_url() -> None:
    wire = Wire(httpx.URL("http://agent.example:8080/a2a"), 1)
    assert wire.allowed("http://agent.example:8080/other")
    assert wire.allowed("http://127.0.0.1:5/")
    assert wire.allowed("http://[::1]:5/")
    assert wire.allowed("http://localhost:5/")
    assert not wire.allowed("http://agent.example:8081/")  # another origin
    assert not wire.allowed("http://10.0.0.1/")
    assert not wire.allowed("file:///etc/passwd")
    assert is_loopback("127.1.2.3")
    assert not is_loopback("192.0.2.10")
    asyncio.run(wire.aclose())
    assert card_url_for("http://h:1/a/b?x=1") == "http://h:1/.well-known/agent-card.json"
    assert card_url_for("http://h:1/cards/me.json") == "http://h:1/cards/me.json"
    # a gRPC interface is "hostname:port" (a2a.proto), judged as that host and port
    assert grpc_target("127.0.0.1:50051") == ("127.0.0.1:50051", False)
    assert grpc_target("https://agent.example/a2a/grpc") == ("agent.example:443", True)
    assert contactable(wire, "GRPC", "127.0.0.1:50051")
    assert not contactable(wire, "GRPC", "10.0.0.1:50051")
    assert not contactable(wire, "GRPC", "agent.example:50051")  # another port
    with pytest.raises(Refused):
        Grpc(wire, "10.0.0.1:50051")  # (the binding asks the policy too)


def test_rest_binding_puts_parameters_where_section_11_says() -> None:
    wire = Wire(httpx.URL(BASE), 1)
    rest = Rest(wire, BASE + "rest/")
    config = {"taskId": "a/b", "id": "c 1"}
    assert rest.request("GetTaskPushNotificationConfig", config) == (
        "GET",
        BASE + "rest/tasks/a%2Fb/pushNotificationConfigs/c%201",
        None,
    )
    listed = {"contextId": "x", "pageSize": 1, "includeArtifacts": True}
    assert rest.request("ListTasks", listed)[1] == (
        BASE + "rest/tasks?contextId=x&pageSize=1&includeArtifacts=true"
    )
    created = {"taskId": "t", "url": "http://127.0.0.1/hook"}
    assert rest.request("CreateTaskPushNotificationConfig", created) == (
        "POST",
        BASE + "rest/tasks/t/pushNotificationConfigs",
        b'{"url": "http://127.0.0.1/hook"}',
    )
    asyncio.run(wire.aclose())


def test_rest_errors_take_their_code_from_reason_and_status() -> None:
    def reply(status: int, reason: str) -> RestReply:
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "domain": "a2a-protocol.org"}
        body = {"error": {"code": status, "message": "m", "details": [info | {"reason": reason}]}}
        return RestReply(status, httpx.Headers(), json.dumps(body).encode(), body)

    assert reply(404, "TASK_NOT_FOUND").code == -32001
    assert reply(400, "TASK_NOT_FOUND").code == (
        "HTTP 400 with reason TASK_NOT_FOUND (§5.4 maps it to 404)"
    )
    assert reply(400, "VERSION_NOT_SUPPORTED").code == -32009
    assert RestReply(204, httpx.Headers(), b"").result == {}


async def _stream_of(*chunks: bytes) -> Stream:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())
    return Stream(response, timeout=1)


async def test_sse_reader_splits_lines_across_chunks_and_skips_comments() -> None:
    stream = await _stream_of(
        b": keep-alive\r\n\r",
        b'\nid: 7\r\nevent: x\r\ndata: {"a":\r',
        b"\ndata: 1}\r\n\r\ndata: last",
    )
    first = await stream.next()
    assert first is not None
    assert (first.id, first.event, first.data) == ("7", "x", '{"a":\n1}')
    last = await stream.next()
    assert last is not None
    assert last.data == "last"
    assert last.id is None
    assert await stream.next() is None
    assert stream.closed


async def test_sse_reader_bounds_an_event() -> None:
    stream = await _stream_of(b"data: " + b"x" * (MAX_BODY + 1))
    with pytest.raises(ValueError, match="over"):
        await stream.next()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interlink", "a2a", "check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give the agent's URL"),
        (("ftp://127.0.0.1/",), "not an http(s) URL"),
        (("http://127.0.0.1:9/", "--only", "nothing.such"), "selects no case"),
        (("http://127.0.0.1:9/", "--timeout", "0"), "must be positive"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    proc = _cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_list_names_every_case_with_its_level() -> None:
    proc = _cli("--list")
    assert proc.returncode == 0
    rows = [line.split()[:2] for line in proc.stdout.splitlines()]
    assert ["push.delivery", "MUST"] in rows
    assert ["subscribe.resume", "MAY"] in rows
    assert len(rows) == len({r[0] for r in rows}) > 60


def test_an_unreachable_url_fails_the_card_and_exits_1() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = _cli(f"http://127.0.0.1:{port}/", "--json", "--timeout", "2")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    served = next(c for c in report["cases"] if c["id"] == "card.served")
    assert served["outcome"] == "FAIL"
    assert "ConnectError" in served["detail"]
    assert {c["outcome"] for c in report["cases"] if c["id"] != "card.served"} == {"SKIP"}


class TwoBindings(Broken):
    """Broken's JSON-RPC at `/` and an HTTP+JSON binding at `/rest` that disagrees: it
    shows every task as working, and its errors are bare `{"error": ...}` without
    ErrorInfo."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if not path.startswith("/rest/"):
            return super().__call__(request)
        self.hosts.append(request.url.host)
        task_id = path.removeprefix("/rest/tasks/")
        if request.method == "GET" and task_id in self.tasks:
            task = dict(self.tasks[task_id], status={"state": "TASK_STATE_WORKING"})
            return httpx.Response(200, json=task)
        return httpx.Response(404, json={"error": {"code": 404, "message": "no"}})


def test_bindings_that_disagree_fail_equivalence_and_rest_errors_need_error_info() -> None:
    rest = {"url": BASE + "rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
    jsonrpc = {"url": BASE, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    server = TwoBindings(_card(supportedInterfaces=[jsonrpc, rest]))
    server.stamp = "2026-01-02T03:04:05.678Z"
    options = Options(
        url=BASE,
        timeout=2,
        only=("binding", "rest.get.unknown", "rest.error_details", "card.interfaces"),
    )
    report = asyncio.run(run_check(options, httpx.MockTransport(server)))
    got = {r.case.id: r.outcome for r in report.results}
    detail = {r.case.id: r.detail for r in report.results}
    assert "HTTP+JSON http://127.0.0.1:9/rest shows the task as" in detail["binding.equivalence"]
    assert got == {
        "card.interfaces": Outcome.PASS,  # both answer their binding
        "binding.equivalence": Outcome.FAIL,  # WORKING over HTTP+JSON, COMPLETED over JSON-RPC
        "rest.get.unknown": Outcome.FAIL,  # 404, but no ErrorInfo TASK_NOT_FOUND (§11.6)
        "rest.error_details": Outcome.PASS,  # a Status with no details is well-formed
    }


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("status", "outcome", "detail"),
    [
        ("NOT_FOUND", Outcome.PASS, "TaskNotFoundError (-32001)"),
        ("INTERNAL", Outcome.FAIL, "reason TASK_NOT_FOUND (§5.4 maps it to NOT_FOUND)"),
    ],
)
async def test_a_grpc_error_is_judged_by_its_status_and_error_info(
    status: str, outcome: Outcome, detail: str
) -> None:
    """A gRPC server (grpcio's generic handler, on loopback) that answers every GetTask
    with `status` and an ErrorInfo TASK_NOT_FOUND: only NOT_FOUND is TaskNotFoundError."""
    import grpc
    import grpc.aio

    from interlink.a2a._grpc import _status

    async def get_task(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        code = getattr(grpc.StatusCode, status)
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}
        details = _status.encode(code.value[0], "no", [info | {"domain": "a2a-protocol.org"}])
        await context.abort(code, "no", trailing_metadata=((_status.KEY, details),))
        raise AssertionError("unreachable")

    server = grpc.aio.server()
    method: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(get_task)
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("lf.a2a.v1.A2AService", {"GetTask": method})]
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        interfaces = [{"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC"}]
        broken = Broken(_card(supportedInterfaces=interfaces))
        options = Options(url=BASE, timeout=5, only=("grpc.get.unknown", "card.interfaces"))
        report = await run_check(options, httpx.MockTransport(broken))
    finally:
        await server.stop(None)
    got = {r.case.id: r for r in report.results}
    assert got["card.interfaces"].outcome is Outcome.PASS, got["card.interfaces"].detail
    assert got["grpc.get.unknown"].outcome is outcome
    assert detail in got["grpc.get.unknown"].detail


def test_without_the_grpc_extra_the_grpc_cases_skip_and_say_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "interlink.check._a2a_grpc", None)  # (import fails)
    interfaces = [{"url": "127.0.0.1:9", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]
    got = _results(Broken(_card(supportedInterfaces=interfaces)), "grpc.get", "card.interfaces")
    assert {r.outcome for r in got.values()} == {Outcome.SKIP, Outcome.PASS}
    assert got["card.interfaces"].outcome is Outcome.PASS  # (reported, not asked)
    for case_id in ("grpc.get.unknown", "grpc.get.task", "card.interfaces"):
        assert "needs interlink[grpc]" in got[case_id].detail, got[case_id].detail
