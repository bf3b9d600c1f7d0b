"""A2A client peer on the official Python SDK (PyPI ``a2a-sdk==1.3.0``), public API only.

Runs one scenario against an A2A server and prints ONE JSON object on stdout with what
it observed: every SDK object as ProtoJSON (the wire shape), every error the SDK raised
for an A2A JSON-RPC error as ``{"error": {"name", "code", "message"}}``, and the HTTP
requests the SDK made (``requests``: method, path, JSON-RPC method, ``A2A-Version``).
Exit 0 on success (also when a step got an A2A error: it is recorded); non-zero with a
message on stderr on anything else (timeout, transport failure, bad arguments).

With `--binding GRPC` the SDK's client talks to the card's gRPC interface instead (its
`grpc_channel_factory` opens a plain-text channel); each call it makes is recorded as
``{"grpc": rpc, "a2aVersion"}`` from its metadata.

Usage: python py_client.py URL SCENARIO [--webhook URL] [--step-timeout SECONDS]
       [--binding JSONRPC|HTTP+JSON|GRPC]
(the binding the SDK's client is allowed: the card's interface of that binding is used)
Scenarios: card send stream get list cancel subscribe ask message push-crud push-inline
push-delivery
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

SCENARIOS = (
    "card",
    "send",
    "stream",
    "get",
    "list",
    "cancel",
    "subscribe",
    "ask",
    "message",
    "push-crud",
    "push-inline",
    "push-delivery",
)
# A webhook URL that is never called in push-crud (all its configs are deleted before
# the task produces another event); public-looking so an SSRF policy accepts it.
CRUD_WEBHOOK = "https://webhook.example.com/a2a"

Json = dict[str, Any]
T = TypeVar("T")


class PeerFailure(Exception):
    """Anything that is not an A2A error answer: exit non-zero."""


def pj(message: ProtoMessage) -> Json:
    """A protobuf object as ProtoJSON (camelCase, enum names), as on the wire."""
    return json_format.MessageToDict(message)


def error_json(exc: A2AError) -> Json:
    return {
        "name": type(exc).__name__,
        "code": JSON_RPC_ERROR_CODE_MAP.get(type(exc)),
        "message": str(exc),
    }


def record_grpc(requests: list[Json], details: Any) -> None:
    """Record a gRPC call the SDK makes: the rpc and its `a2a-version` metadata."""
    metadata = dict(details.metadata or ())
    method = details.method.decode() if isinstance(details.method, bytes) else details.method
    requests.append({"grpc": method.rsplit("/", 1)[-1], "a2aVersion": metadata.get("a2a-version")})


class UnaryRecorder(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, requests: list[Json]) -> None:
        self.requests = requests

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        record_grpc(self.requests, details)
        return await continuation(details, request)


class StreamRecorder(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, requests: list[Json]) -> None:
        self.requests = requests

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        record_grpc(self.requests, details)
        return await continuation(details, request)


class Peer:
    def __init__(
        self, url: str, step_timeout: float, webhook: str | None, binding: str = "JSONRPC"
    ) -> None:
        self.url = url
        self.binding = binding
        self.step_timeout = step_timeout
        self.webhook = webhook
        self.requests: list[Json] = []
        self.http = httpx.AsyncClient(timeout=step_timeout, event_hooks={"request": [self._record]})
        self.card: AgentCard | None = None
        self._clients: dict[bool, Client] = {}

    async def _record(self, request: httpx.Request) -> None:
        rpc: str | None = None
        if request.method == "POST":
            try:
                body = json.loads(request.content)
            except ValueError:
                body = None
            if isinstance(body, dict) and isinstance(body.get("method"), str):
                rpc = body["method"]
        self.requests.append(
            {
                "http": request.method,
                "path": request.url.path,
                "rpc": rpc,
                "a2aVersion": request.headers.get("A2A-Version"),
            }
        )

    # -- steps --------------------------------------------------------------------------

    async def step(self, label: str, aw: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(aw, self.step_timeout)
        except TimeoutError:
            raise PeerFailure(f"step {label!r}: no answer within {self.step_timeout} s") from None

    async def attempt(
        self, label: str, factory: Callable[[], Awaitable[ProtoMessage | None]]
    ) -> Json:
        """Run a step that may legitimately fail with an A2A error; record either."""
        try:
            result = await self.step(label, factory())
        except A2AError as exc:
            return {"error": error_json(exc)}
        return {"result": None if result is None else pj(result)}

    async def collect(self, label: str, stream: AsyncIterator[StreamResponse]) -> list[Json]:
        events: list[Json] = []

        async def drain() -> None:
            async for event in stream:
                events.append(pj(event))

        try:
            await asyncio.wait_for(drain(), self.step_timeout)
        except TimeoutError:
            raise PeerFailure(
                f"stream {label!r} not closed within {self.step_timeout} s; got {events}"
            ) from None
        return events

    async def attempt_stream(self, label: str, stream: AsyncIterator[StreamResponse]) -> Json:
        events: list[Json] = []
        try:
            events.extend(await self.collect(label, stream))
        except A2AError as exc:
            return {"events": events, "error": error_json(exc)}
        return {"events": events}

    # -- SDK objects --------------------------------------------------------------------

    async def resolve_card(self) -> AgentCard:
        # ClientFactory sets the A2A-Version header on the shared httpx client; create it
        # first so the card request carries the header too, as with create_from_url.
        self._factory(streaming=True)
        resolver = A2ACardResolver(self.http, self.url)
        self.card = await self.step("resolve card", resolver.get_agent_card())
        return self.card

    def _factory(self, streaming: bool) -> ClientFactory:
        if self.binding == "GRPC":
            recorders = [UnaryRecorder(self.requests), StreamRecorder(self.requests)]
            config = ClientConfig(
                streaming=streaming,
                httpx_client=self.http,
                supported_protocol_bindings=["GRPC"],
                grpc_channel_factory=lambda url: grpc.aio.insecure_channel(
                    url, interceptors=recorders
                ),
            )
            return ClientFactory(config)
        return ClientFactory(
            ClientConfig(
                streaming=streaming,
                httpx_client=self.http,
                supported_protocol_bindings=[self.binding],
            )
        )

    async def client(self, streaming: bool) -> Client:
        if streaming not in self._clients:
            card = self.card or await self.resolve_card()
            self._clients[streaming] = self._factory(streaming).create(card)
        return self._clients[streaming]

    @staticmethod
    def request(
        text: str,
        *,
        task_id: str = "",
        context_id: str = "",
        return_immediately: bool = False,
        push: TaskPushNotificationConfig | None = None,
    ) -> SendMessageRequest:
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )
        config = SendMessageConfiguration(return_immediately=return_immediately)
        if push is not None:
            config.task_push_notification_config.CopyFrom(push)
        return SendMessageRequest(message=message, configuration=config)

    async def send(self, request: SendMessageRequest) -> Json:
        """Blocking (non-streaming) SendMessage: the one StreamResponse as ProtoJSON."""
        client = await self.client(streaming=False)
        events = await self.collect("SendMessage", client.send_message(request))
        if len(events) != 1:
            raise PeerFailure(f"non-streaming send_message yielded {len(events)} results")
        return events[0]

    async def send_task(self, request: SendMessageRequest) -> Json:
        result = await self.send(request)
        if "task" not in result:
            raise PeerFailure(f"expected a task, got {result}")
        task: Json = result["task"]
        return task

    async def stream(self, request: SendMessageRequest) -> Json:
        client = await self.client(streaming=True)
        return await self.attempt_stream("SendStreamingMessage", client.send_message(request))

    async def get_task(self, task_id: str, history_length: int | None = None) -> Json:
        client = await self.client(streaming=False)
        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return await self.attempt("GetTask", lambda: client.get_task(request))

    async def wait_terminal(self, task_id: str) -> Json:
        terminal = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}
        for _ in range(int(self.step_timeout * 10)):
            got = await self.get_task(task_id)
            if "result" not in got:
                raise PeerFailure(f"GetTask {task_id} failed: {got}")
            if got["result"]["status"]["state"] in terminal:
                result: Json = got["result"]
                return result
            await asyncio.sleep(0.1)
        raise PeerFailure(f"task {task_id} not terminal within {self.step_timeout} s")

    # -- scenarios ----------------------------------------------------------------------

    async def card_scenario(self) -> Json:
        card = await self.resolve_card()
        # One call through a client made from the resolved card, to show it works.
        sent = await self.send(self.request("echo card ok"))
        return {"card": pj(card), "sent": sent}

    async def send_scenario(self) -> Json:
        return {"result": await self.send(self.request("echo hello interop"))}

    async def stream_scenario(self) -> Json:
        return await self.stream(self.request("echo hello interop stream"))

    async def get_scenario(self) -> Json:
        task = await self.send_task(self.request("echo get me"))
        return {
            "sent": task,
            "got": await self.get_task(task["id"]),
            "gotHistory0": await self.get_task(task["id"], history_length=0),
            "gotHistory1": await self.get_task(task["id"], history_length=1),
            "unknown": await self.get_task(str(uuid.uuid4())),
        }

    async def list_scenario(self) -> Json:
        client = await self.client(streaming=False)
        first = await self.send_task(self.request("echo list one"))
        context_id = first["contextId"]
        second = await self.send_task(self.request("echo list two", context_id=context_id))
        third = await self.send_task(self.request("echo list three", context_id=context_id))

        def page(**kwargs: Any) -> Callable[[], Awaitable[ProtoMessage]]:
            return lambda: client.list_tasks(ListTasksRequest(context_id=context_id, **kwargs))

        all_tasks = await self.attempt("ListTasks", page())
        page1 = await self.attempt("ListTasks page 1", page(page_size=2))
        token = page1.get("result", {}).get("nextPageToken", "")
        page2 = await self.attempt("ListTasks page 2", page(page_size=2, page_token=token))
        with_artifacts = await self.attempt("ListTasks artifacts", page(include_artifacts=True))
        return {
            "taskIds": [first["id"], second["id"], third["id"]],
            "contextId": context_id,
            "all": all_tasks,
            "page1": page1,
            "page2": page2,
            "withArtifacts": with_artifacts,
        }

    async def cancel_scenario(self) -> Json:
        client = await self.client(streaming=False)
        started = await self.send_task(self.request("slow 20", return_immediately=True))
        task_id = started["id"]
        await asyncio.sleep(0.5)

        def cancel(tid: str) -> Callable[[], Awaitable[ProtoMessage]]:
            return lambda: client.cancel_task(CancelTaskRequest(id=tid))

        canceled = await self.attempt("CancelTask", cancel(task_id))
        after = await self.get_task(task_id)
        again = await self.attempt("CancelTask again", cancel(task_id))
        done = await self.send_task(self.request("echo done"))
        completed = await self.attempt("CancelTask completed", cancel(done["id"]))
        unknown = await self.attempt("CancelTask unknown", cancel(str(uuid.uuid4())))
        return {
            "started": started,
            "canceled": canceled,
            "after": after,
            "again": again,
            "completed": completed,
            "unknown": unknown,
        }

    async def subscribe_scenario(self) -> Json:
        client = await self.client(streaming=True)
        started = await self.send_task(self.request("slow 3", return_immediately=True))
        task_id = started["id"]
        sub = await self.attempt_stream(
            "SubscribeToTask", client.subscribe(SubscribeToTaskRequest(id=task_id))
        )
        terminal = await self.attempt_stream(
            "SubscribeToTask terminal", client.subscribe(SubscribeToTaskRequest(id=task_id))
        )
        unknown = await self.attempt_stream(
            "SubscribeToTask unknown",
            client.subscribe(SubscribeToTaskRequest(id=str(uuid.uuid4()))),
        )
        return {"started": started, "subscribe": sub, "terminal": terminal, "unknown": unknown}

    async def ask_scenario(self) -> Json:
        asked = await self.send_task(self.request("ask"))
        # Follow-up with the taskId only: the server must infer the contextId (§3.4).
        answered = await self.send(self.request("blue", task_id=asked["id"]))
        after = await self.send_or_error(self.request("too late", task_id=asked["id"]))
        # The same round trip over streams.
        stream_ask = await self.stream(self.request("ask"))
        tasks = [e["task"] for e in stream_ask["events"] if "task" in e]
        stream_follow: Json = {}
        if tasks:
            stream_follow = await self.stream(
                self.request("green", task_id=tasks[0]["id"], context_id=tasks[0]["contextId"])
            )
        return {
            "asked": asked,
            "answered": answered,
            "terminal": after,
            "streamAsk": stream_ask,
            "streamFollowUp": stream_follow,
        }

    async def send_or_error(self, request: SendMessageRequest) -> Json:
        try:
            return {"result": await self.send(request)}
        except A2AError as exc:
            return {"error": error_json(exc)}

    async def message_scenario(self) -> Json:
        return {
            "send": await self.send(self.request("message")),
            "stream": await self.stream(self.request("message")),
        }

    async def push_crud_scenario(self) -> Json:
        client = await self.client(streaming=False)
        task = await self.send_task(self.request("ask"))
        task_id = task["id"]
        auth = AuthenticationInfo(scheme="Bearer", credentials="secret-1")
        created = await self.attempt(
            "CreateTaskPushNotificationConfig",
            lambda: client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id, url=CRUD_WEBHOOK, token="tok-1", authentication=auth
                )
            ),
        )
        created_b = await self.attempt(
            "CreateTaskPushNotificationConfig with id",
            lambda: client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task_id, id="cfg-b", url=CRUD_WEBHOOK + "/b")
            ),
        )
        cfg_id = created.get("result", {}).get("id", "")

        def get(cid: str) -> Callable[[], Awaitable[ProtoMessage]]:
            return lambda: client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id=cid)
            )

        def delete(cid: str) -> Callable[[], Awaitable[None]]:
            return lambda: client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=cid)
            )

        def list_() -> Callable[[], Awaitable[ProtoMessage]]:
            return lambda: client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )

        got = await self.attempt("GetTaskPushNotificationConfig", get(cfg_id))
        listed = await self.attempt("ListTaskPushNotificationConfigs", list_())
        deleted = await self.attempt("DeleteTaskPushNotificationConfig", delete(cfg_id))
        listed_after = await self.attempt("ListTaskPushNotificationConfigs after", list_())
        got_deleted = await self.attempt("GetTaskPushNotificationConfig deleted", get(cfg_id))
        deleted_again = await self.attempt("DeleteTaskPushNotificationConfig again", delete(cfg_id))
        deleted_b = await self.attempt("DeleteTaskPushNotificationConfig b", delete("cfg-b"))
        unknown_task = await self.attempt(
            "ListTaskPushNotificationConfigs unknown task",
            lambda: client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=str(uuid.uuid4()))
            ),
        )
        await self.attempt(
            "CancelTask cleanup", lambda: client.cancel_task(CancelTaskRequest(id=task_id))
        )
        return {
            "taskId": task_id,
            "created": created,
            "createdWithId": created_b,
            "got": got,
            "listed": listed,
            "deleted": deleted,
            "listedAfterDelete": listed_after,
            "gotDeleted": got_deleted,
            "deletedAgain": deleted_again,
            "deletedB": deleted_b,
            "unknownTask": unknown_task,
        }

    async def push_inline_scenario(self) -> Json:
        """A push config sent inline with SendMessage (§8.1), then listed and deleted."""
        client = await self.client(streaming=False)
        push = TaskPushNotificationConfig(
            url=CRUD_WEBHOOK + "/inline",
            token="tok-inline",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="secret-inline"),
        )
        sent = await self.send_or_error(self.request("ask", push=push))
        if "result" not in sent or "task" not in sent["result"]:
            return {"sent": sent}
        task_id = sent["result"]["task"]["id"]
        listed = await self.attempt(
            "ListTaskPushNotificationConfigs",
            lambda: client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            ),
        )

        def delete(cid: str) -> Callable[[], Awaitable[None]]:
            return lambda: client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=cid)
            )

        for config in listed.get("result", {}).get("configs", []):
            await self.attempt("DeleteTaskPushNotificationConfig", delete(config["id"]))
        await self.attempt(
            "CancelTask cleanup", lambda: client.cancel_task(CancelTaskRequest(id=task_id))
        )
        return {"sent": sent, "listed": listed}

    async def push_delivery_scenario(self) -> Json:
        if not self.webhook:
            raise PeerFailure("push-delivery needs --webhook URL")
        client = await self.client(streaming=False)
        started = await self.send_task(self.request("slow 2", return_immediately=True))
        task_id = started["id"]
        created = await self.attempt(
            "CreateTaskPushNotificationConfig",
            lambda: client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id,
                    url=self.webhook or "",
                    token="tok-created",
                    authentication=AuthenticationInfo(
                        scheme="Bearer", credentials="secret-created"
                    ),
                )
            ),
        )
        finished = await self.wait_terminal(task_id)
        inline = await self.send(
            self.request(
                "echo pushed inline",
                push=TaskPushNotificationConfig(url=self.webhook, token="tok-inline"),
            )
        )
        return {"started": started, "created": created, "finished": finished, "inline": inline}

    async def run(self, scenario: str) -> Json:
        handlers: dict[str, Callable[[], Awaitable[Json]]] = {
            "card": self.card_scenario,
            "send": self.send_scenario,
            "stream": self.stream_scenario,
            "get": self.get_scenario,
            "list": self.list_scenario,
            "cancel": self.cancel_scenario,
            "subscribe": self.subscribe_scenario,
            "ask": self.ask_scenario,
            "message": self.message_scenario,
            "push-crud": self.push_crud_scenario,
            "push-inline": self.push_inline_scenario,
            "push-delivery": self.push_delivery_scenario,
        }
        try:
            observed = await handlers[scenario]()
        finally:
            for client in self._clients.values():
                await client.close()
            await self.http.aclose()
        return {"sdk": "a2a-sdk", "scenario": scenario, **observed, "requests": self.requests}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--webhook", default=None)
    parser.add_argument("--step-timeout", type=float, default=15.0)
    parser.add_argument("--binding", choices=("JSONRPC", "HTTP+JSON", "GRPC"), default="JSONRPC")
    args = parser.parse_args(argv)
    peer = Peer(args.url, args.step_timeout, args.webhook, args.binding)
    try:
        observed = asyncio.run(peer.run(args.scenario))
    except PeerFailure as exc:
        print(f"py_client {args.scenario}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"py_client {args.scenario}: {type(exc).__name__}: {exc!r}", file=sys.stderr)
        return 1
    print(json.dumps(observed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
