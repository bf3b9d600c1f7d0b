"""An example A2A agent: `interlink a2a serve examples/a2a_agent.py:app`.

- `echo ...` (and any text not listed here): a task whose artifact echoes the text,
  streamed in several chunks;
- `slow N`: works N seconds, a status update each second; cancellable;
- `ask`: moves the task to input-required and completes it on the follow-up message;
- `message`: answers with a direct Message instead of a task.
"""

from __future__ import annotations

import asyncio
import re

from interlink import __version__
from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater, create_app
from interlink.a2a import types as t


class ExampleExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        text = context.text.strip()
        if (
            context.task is not None
            and str(context.task.status.state) == "TASK_STATE_INPUT_REQUIRED"
        ):
            await task.working()
            await task.add_artifact(text=f"thanks, you said: {text}", name="answer")
            await task.complete("done")
        elif text == "message":
            await task.reply("a direct message: no task was created")
        elif text == "ask":
            await task.requires_input("What should I do? Send a follow-up message to this task.")
        elif match := re.fullmatch(r"slow\s+(\d+)", text):
            seconds = int(match.group(1))
            await task.working(f"working for {seconds} s")
            for second in range(1, seconds + 1):
                await asyncio.sleep(1)
                await task.working(f"{second}/{seconds} s done")
            await task.add_artifact(text=f"worked {seconds} s", name="result")
            await task.complete()
        else:
            await task.working()
            chunks = re.findall(r"\S+\s*|\s+", text.removeprefix("echo ").strip()) or [""]
            artifact = None
            for i, chunk in enumerate(chunks):
                artifact = await task.add_artifact(
                    text=chunk,
                    artifact_id=artifact,
                    name="echo",
                    append=i > 0,
                    last_chunk=i == len(chunks) - 1,
                )
            await task.complete()


card = t.AgentCard(
    name="interlink example agent",
    description="Echoes text in chunks; also `slow N`, `ask` and `message`.",
    version=__version__,
    capabilities=t.AgentCapabilities(streaming=True, push_notifications=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[
        t.AgentSkill(
            id="echo",
            name="Echo",
            description="Echoes the text back as an artifact, in chunks.",
            tags=["example"],
            examples=["echo hello world", "slow 3", "ask", "message"],
        )
    ],
)

app = create_app(ExampleExecutor(), card)
