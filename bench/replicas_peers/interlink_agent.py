"""The tick agent on interlink: `interlink a2a serve bench.replicas_peers.interlink_agent:app`."""

from __future__ import annotations

from bench.replicas_peers import ARTIFACT, arm_watchdog, parse_tick, run_ticks, tick_text
from interlink.a2a import AgentExecutor, EventSink, RequestContext, TaskUpdater, create_app
from interlink.a2a import types as t


class TickExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, events: EventSink) -> None:
        task = TaskUpdater(context, events)
        plan = parse_tick(context.text)
        await task.working()
        artifact = f"{context.task_id}-{ARTIFACT}"

        async def publish(seq: int) -> None:
            await task.add_artifact(
                text=tick_text(seq), artifact_id=artifact, name=ARTIFACT, append=seq > 0
            )

        published = await run_ticks(plan, publish)
        await task.complete(f"done {published}")


card = t.AgentCard(
    name="bench tick",
    description="`tick count=N ...`: N artifact chunks stamped with their publish time.",
    version="1.0.0",
    capabilities=t.AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[t.AgentSkill(id="tick", name="Tick", description="Ticks.", tags=["bench"])],
)

arm_watchdog()
app = create_app(TickExecutor(), card)
