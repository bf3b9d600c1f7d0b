"""Executors for the A2A server tests."""

from __future__ import annotations

import asyncio

from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater
from interlink.a2a import types as t


class Scripted(AgentExecutor):
    """Behaviour by message text: `echo X`, `slow`, `ask`, `message`, `boom`, `crash`, `chunks N`,
    `twice` (publishes after completing), `silent` (publishes nothing), `big N`."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.cancels: list[str] = []
        self.after_terminal: list[BaseException] = []
        self.refused = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        text = context.text
        if context.task is not None and context.task.status.state == "TASK_STATE_INPUT_REQUIRED":
            await task.working()
            await task.add_artifact(text=f"got {text}", name="answer")
            await task.complete()
        elif text == "message":
            await task.reply("direct")
        elif text == "ask":
            await task.requires_input("say more")
        elif text == "slow":
            await task.working("started")
            self.started.set()
            await self.release.wait()
            await task.complete()
        elif text == "boom":
            await task.working()
            raise ValueError("the agent broke")
        elif text == "crash":  # before publishing anything, with words not for clients
            int("9" * 5000)
        elif text == "twice":
            await task.complete()
            try:
                await task.working()
            except Exception as exc:
                self.after_terminal.append(exc)
                self.refused.set()
        elif text == "silent":
            return
        elif text.startswith("chunks "):
            await task.working()
            for i in range(int(text.split()[1])):
                await task.add_artifact(text=f"{i},", artifact_id="a", append=i > 0)
            await task.complete()
        elif text.startswith("big "):
            await task.working()
            self.started.set()
            await self.release.wait()
            payload = "x" * 65536
            for i in range(int(text.split()[1])):
                await task.add_artifact(text=payload, artifact_id=f"a{i}")
                await asyncio.sleep(0.001)  # an agent does some work between events
            await task.complete()
        else:
            await task.working()
            await task.add_artifact(text=text.removeprefix("echo "), name="echo")
            await task.complete()

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        self.cancels.append(context.task_id)
        await super().cancel(context, events)


def card(**capabilities: object) -> t.AgentCard:
    caps = {"streaming": True, "push_notifications": True, **capabilities}
    return t.AgentCard(
        name="test agent",
        description="Behaves as its message says (see Scripted).",
        version="1",
        capabilities=t.AgentCapabilities(**caps),  # type: ignore[arg-type]
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[SKILL],
    )


SKILL = t.AgentSkill(id="script", name="Script", description="Scripted answers.", tags=["test"])


def message(text: str, **ids: str) -> dict[str, object]:
    return {
        "message": {
            "messageId": f"m-{text}-{len(ids)}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **ids,
        }
    }
