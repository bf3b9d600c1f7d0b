"""A2A 0.3 client peer on the official Python SDK (PyPI ``a2a-sdk==0.3.26``), public API
only: ``A2ACardResolver``, ``ClientFactory`` and the ``Client`` it makes, over JSON-RPC or
(``--transport rest``) HTTP+JSON, the interface of the card it picks.

Runs every scenario against one A2A server and prints ONE JSON object: for each scenario
what it observed (0.3 objects as the SDK's pydantic models dump them: camelCase, `kind`,
lower-case states), errors as ``{"error": {"code", "message", "data"}}`` (over HTTP+JSON
the SDK gives only the HTTP status: ``{"error": {"http": status}}``), and
``requests`` (every HTTP request the SDK made: method, path, JSON-RPC method,
``A2A-Version``). With ``--push WEBHOOK``, only the push scenario: a task asks, a push
config to the webhook is set on it (token ``tok-v03``), the follow-up completes it;
``pushed`` is that task. Exit 0 on success (also when a step got an A2A error: it is
recorded); non-zero with a message on stderr on anything else.

Needs a2a-sdk 0.3.26 first on PYTHONPATH (it cannot share a venv with 1.x):
``pip install --target DIR 'a2a-sdk[http-server]==0.3.26'``, then
``PYTHONPATH=DIR python py_v03_client.py URL [--transport rest] [--step-timeout SECONDS]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.types import (
    GetTaskPushNotificationConfigParams,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationConfig,
    Role,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TextPart,
    TransportProtocol,
)
from pydantic import BaseModel

Json = dict[str, Any]
T = TypeVar("T")


class PeerFailure(Exception):
    """Anything that is not an A2A error answer: exit non-zero."""


def dump(model: BaseModel) -> Json:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Peer:
    def __init__(self, url: str, step_timeout: float, transport: str) -> None:
        self.url = url
        self.rest = transport == "rest"
        self.step_timeout = step_timeout
        self.requests: list[Json] = []
        self.http = httpx.AsyncClient(timeout=step_timeout, event_hooks={"request": [self._record]})

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

    async def step(self, label: str, aw: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(aw, self.step_timeout)
        except TimeoutError:
            raise PeerFailure(f"step {label!r}: no answer within {self.step_timeout} s") from None

    async def attempt(self, label: str, aw: Awaitable[BaseModel | None]) -> Json:
        try:
            result = await self.step(label, aw)
        except A2AClientJSONRPCError as exc:
            return {"error": exc.error.model_dump(mode="json", exclude_none=True)}
        except A2AClientHTTPError as exc:
            return {"error": {"http": exc.status_code}}
        return {"result": None if result is None else dump(result)}

    async def events(self, label: str, stream: AsyncIterator[Any]) -> Json:
        """A stream's events as the server sent them (the Task for the first, then each
        update), or the error that ended it."""
        events: list[Json] = []

        async def drain() -> None:
            async for item in stream:
                if isinstance(item, Message):
                    events.append(dump(item))
                else:
                    task, update = item
                    events.append(dump(task if update is None else update))

        try:
            await asyncio.wait_for(drain(), self.step_timeout)
        except TimeoutError:
            raise PeerFailure(f"stream {label!r} not over in {self.step_timeout} s") from None
        except A2AClientJSONRPCError as exc:
            return {"events": events, "error": exc.error.model_dump(mode="json", exclude_none=True)}
        except A2AClientHTTPError as exc:
            return {"events": events, "error": {"http": exc.status_code}}
        return {"events": events}

    @staticmethod
    def message(text: str, task_id: str | None = None, context_id: str | None = None) -> Message:
        return Message(
            message_id=str(uuid.uuid4()),
            role=Role.user,
            parts=[Part(root=TextPart(text=text))],
            task_id=task_id,
            context_id=context_id,
        )

    async def clients(self) -> tuple[Json, Client, Client]:
        """The card, and a client and a streaming client on the interface it picks."""
        card = await self.step("card", A2ACardResolver(self.http, self.url).get_agent_card())
        transports: list[str | TransportProtocol] = [
            TransportProtocol.http_json if self.rest else TransportProtocol.jsonrpc
        ]
        factory = ClientFactory(
            ClientConfig(streaming=False, httpx_client=self.http, supported_transports=transports)
        )
        streaming = ClientFactory(
            ClientConfig(streaming=True, httpx_client=self.http, supported_transports=transports)
        )
        return dump(card), factory.create(card), streaming.create(card)

    async def push(self, webhook: str) -> Json:
        card, client, _ = await self.clients()
        asked = (await self.events("ask", client.send_message(self.message("ask"))))["events"][0]
        config = TaskPushNotificationConfig(
            task_id=asked["id"],
            push_notification_config=PushNotificationConfig(url=webhook, token="tok-v03"),
        )
        made = await self.attempt("push set", client.set_task_callback(config))
        answered = await self.events(
            "answer", client.send_message(self.message("red", task_id=asked["id"]))
        )
        await self.http.aclose()
        return {"card": card, "pushSet": made, "pushed": answered["events"][0]}

    async def run(self) -> Json:
        card, client, stream_client = await self.clients()
        out: Json = {"card": card}

        sent = await self.events("send", client.send_message(self.message("echo hello v03")))
        out["send"] = sent
        task = sent["events"][0]
        out["message"] = await self.events("message", client.send_message(self.message("message")))
        out["stream"] = await self.events(
            "stream", stream_client.send_message(self.message("echo hello v03 stream"))
        )
        out["get"] = await self.attempt("get", client.get_task(TaskQueryParams(id=task["id"])))
        out["getHistory1"] = await self.attempt(
            "get", client.get_task(TaskQueryParams(id=task["id"], history_length=1))
        )
        out["getUnknown"] = await self.attempt(
            "get", client.get_task(TaskQueryParams(id="no-such-task"))
        )

        asked = await self.events("ask", client.send_message(self.message("ask")))
        asked_task = asked["events"][0]
        out["ask"] = asked
        out["answer"] = await self.events(
            "answer",
            client.send_message(
                self.message("blue", task_id=asked_task["id"], context_id=asked_task["contextId"])
            ),
        )
        out["askStream"] = await self.events(
            "ask stream", stream_client.send_message(self.message("ask"))
        )
        asked2 = out["askStream"]["events"][0]
        out["answerStream"] = await self.events(
            "answer stream",
            stream_client.send_message(self.message("green", task_id=asked2["id"])),
        )

        later = MessageSendConfiguration(blocking=False)
        slow = await self.events(
            "slow", client.send_message(self.message("slow 20"), configuration=later)
        )
        slow_task = slow["events"][0]
        out["slow"] = slow_task
        out["cancel"] = await self.attempt(
            "cancel", client.cancel_task(TaskIdParams(id=slow_task["id"]))
        )
        out["cancelAgain"] = await self.attempt(
            "cancel again", client.cancel_task(TaskIdParams(id=slow_task["id"]))
        )
        out["cancelCompleted"] = await self.attempt(
            "cancel completed", client.cancel_task(TaskIdParams(id=task["id"]))
        )

        working = await self.events(
            "slow 3", client.send_message(self.message("slow 3"), configuration=later)
        )
        out["resubscribe"] = await self.events(
            "resubscribe",
            stream_client.resubscribe(TaskIdParams(id=working["events"][0]["id"])),
        )
        out["resubscribeTerminal"] = await self.events(
            "resubscribe terminal", stream_client.resubscribe(TaskIdParams(id=task["id"]))
        )

        config = TaskPushNotificationConfig(
            task_id=asked2["id"],
            push_notification_config=PushNotificationConfig(
                url="https://webhook.example.com/a2a", token="tok-1"
            ),
        )
        out["pushSet"] = await self.attempt("push set", client.set_task_callback(config))
        if self.rest:  # (its REST transport needs the config's id: the task's, by default)
            which = GetTaskPushNotificationConfigParams(
                id=asked2["id"], push_notification_config_id=asked2["id"]
            )
            out["pushGet"] = await self.attempt("push get", client.get_task_callback(which))
        else:
            out["pushGet"] = await self.attempt(
                "push get", client.get_task_callback(TaskIdParams(id=asked2["id"]))
            )
        out["requests"] = self.requests
        await self.http.aclose()
        return out


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--transport", choices=["jsonrpc", "rest"], default="jsonrpc")
    parser.add_argument("--step-timeout", type=float, default=15.0)
    parser.add_argument("--push", metavar="WEBHOOK", help="run only the push scenario")
    args = parser.parse_args()
    try:
        peer = Peer(args.url, args.step_timeout, args.transport)
        out = await (peer.push(args.push) if args.push else peer.run())
    except PeerFailure as exc:
        print(f"py_v03_client: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
