// The TypeScript SDK ACP agent of `python -m bench acp`: npm @agentclientprotocol/sdk 2.4.0.
//
// `node ts_agent.mjs --updates K` answers `initialize`, `session/new` and
// `session/prompt` (K `agent_message_chunk` updates, then `end_turn`) on stdin/stdout,
// written on the SDK's app API (`acp.agent()...connect(acp.ndJsonStream(...))`).

import { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";

import * as acp from "@agentclientprotocol/sdk";

const { values } = parseArgs({ options: { updates: { type: "string", default: "20" } } });
const updates = Number(values.updates);
let sessions = 0;

const app = acp
  .agent({ name: "bench-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => ({
    protocolVersion: params.protocolVersion,
  }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `sess-${++sessions}` }))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    for (let i = 0; i < updates; i++) {
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: `chunk ${i} ` },
        },
      });
    }
    return { stopReason: "end_turn" };
  });

const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
await connection.closed;
