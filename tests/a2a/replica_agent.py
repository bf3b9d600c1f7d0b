"""The agent the replica tests serve from several processes sharing one PostgreSQL store:
`interlink a2a serve tests/a2a/replica_agent.py:app --store postgresql://...`.

Commands (the message text):

- `tick N MS`: WORKING ("running in pid P"), then N chunks of one artifact (`c0 `,
  `c1 `, ...), one every MS milliseconds, then COMPLETED;
- `hang`: WORKING ("hanging in pid P"), then works until cancelled.

`cancel` publishes a WORKING status "cancel seen in pid P" before the task is canceled,
so a test can tell which process's executor the cancel reached.
"""

from __future__ import annotations

import asyncio
import os
import re

from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater, create_app
from interlink.a2a import types as t

ARTIFACT = "ticks"


def chunk(i: int) -> str:
    """The text of chunk `i` of a `tick` task."""
    return f"c{i} "


class ReplicaExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        text = context.text.strip()
        pid = os.getpid()
        if match := re.fullmatch(r"tick\s+(\d+)\s+(\d+)", text):
            count, pause = int(match.group(1)), int(match.group(2)) / 1000
            await task.working(f"running in pid {pid}")
            for i in range(count):
                if pause:
                    await asyncio.sleep(pause)
                await task.add_artifact(
                    text=chunk(i),
                    artifact_id=ARTIFACT,
                    name=ARTIFACT,
                    append=i > 0,
                    last_chunk=i == count - 1,
                )
            await task.complete("done")
        elif text == "hang":
            await task.working(f"hanging in pid {pid}")
            await asyncio.Event().wait()  # until the server cancels this coroutine
        else:
            await task.reject(f"unknown command {text!r}")

    async def cancel(self, context: RequestContext, events: EventSink) -> None:
        await TaskUpdater(context, events).working(f"cancel seen in pid {os.getpid()}")
        await super().cancel(context, events)


card = t.AgentCard(
    name="interlink replica test agent",
    description="`tick N MS` and `hang`, served by several processes on one store.",
    version="1",
    capabilities=t.AgentCapabilities(streaming=True, push_notifications=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[t.AgentSkill(id="tick", name="Tick", description="Ticks and hangs.", tags=["test"])],
)

app = create_app(ReplicaExecutor(), card)
