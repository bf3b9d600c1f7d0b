"""An agent whose tasks go on until cancelled, for stopping a server with streams open:
`slow` reports once, then waits; `big N` answers N bytes first. `app` serves it
(`interlink a2a serve tests/a2a/stopping_app.py:app`)."""

from __future__ import annotations

import asyncio

from interlink.a2a import (
    A2AApp,
    AgentExecutor,
    EventSink,
    RequestContext,
    TaskUpdater,
    create_app,
)
from interlink.a2a import types as t


class Endless(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        await task.working("started")
        kind, _, size = context.text.partition(" ")
        if kind == "big":
            await task.add_artifact(text="x" * int(size), name="answer")
        await asyncio.Event().wait()  # until cancelled (the server stops)


def make_app() -> A2AApp:
    card = t.AgentCard(
        name="endless",
        description="Works until the server stops; `big N` first sends an N-byte answer.",
        version="1",
        capabilities=t.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[t.AgentSkill(id="endless", name="endless", description="never ends", tags=["t"])],
    )
    return create_app(Endless(), card)


app = make_app()
