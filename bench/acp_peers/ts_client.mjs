// The TypeScript SDK ACP client of `python -m bench acp`: npm @agentclientprotocol/sdk 2.4.0.
//
// `node ts_client.mjs [--turns N] [--updates K] [--spawns S] [--warmup W]` spawns
// `ts_agent.mjs` and runs the same workload as `_measure.py`, printing the same JSON
// line. The SDK has no spawn helper, so the agent is spawned here and its pipes wrapped
// with `acp.ndJsonStream`. The SDK may resolve a `session/prompt` before the turn's
// `session/update` handlers have run; a turn then waits for the rest of its updates
// (it counts only once all K are handled) and `early_answers` counts such turns.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import * as acp from "@agentclientprotocol/sdk";

const STARTUP_TIMEOUT_MS = 30_000;
const TURNS_TIMEOUT_MS = 300_000;
const CLOSE_TIMEOUT_MS = 10_000;
const AGENT = fileURLToPath(new URL("./ts_agent.mjs", import.meta.url));
const CAPABILITIES = { fs: { readTextFile: false, writeTextFile: false } };

function peakRssMib(pid = "self") {
  const status = readFileSync(`/proc/${pid}/status`, "ascii");
  return Number(/VmHWM:\s+(\d+)/.exec(status)[1]) / 1024;
}

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function spawnAgent(updates) {
  const child = spawn(process.execPath, [AGENT, "--updates", String(updates)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let handled = 0;
  let allHandled = null; // resolves once `handled` reaches `updates`
  const connection = acp
    .client({ name: "bench-client" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      if (params.update.sessionUpdate === "agent_message_chunk") {
        handled += 1;
        if (handled === updates && allHandled) allHandled();
      }
    })
    .connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const agent = connection.agent;
  let sessionId;
  return {
    pid: child.pid,
    async initialize() {
      await agent.request(acp.methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: CAPABILITIES,
      });
    },
    async newSession() {
      const response = await agent.request(acp.methods.agent.session.new, {
        cwd: "/",
        mcpServers: [],
      });
      sessionId = response.sessionId;
    },
    // Runs one turn; returns how many updates had been handled when the answer arrived.
    async prompt(text) {
      handled = 0;
      const done = new Promise((resolve) => {
        allHandled = resolve;
      });
      await agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      const atAnswer = handled;
      if (handled < updates) await within(CLOSE_TIMEOUT_MS, done, "updates of the turn");
      allHandled = null;
      if (handled !== updates) throw new Error(`${handled} updates handled, expected ${updates}`);
      return atAnswer;
    },
    async close() {
      connection.close();
      child.stdin.end();
      try {
        await within(CLOSE_TIMEOUT_MS, exited, "agent exit");
      } catch {
        child.kill("SIGKILL");
        await exited;
      }
    },
  };
}

async function measure(opts) {
  const startup = [];
  for (let i = 0; i < opts.spawns; i++) {
    const start = performance.now();
    const agent = spawnAgent(opts.updates);
    try {
      await within(STARTUP_TIMEOUT_MS, agent.initialize(), "initialize");
      startup.push((performance.now() - start) / 1000);
    } finally {
      await agent.close();
    }
  }

  const agent = spawnAgent(opts.updates);
  let early = 0;
  let elapsed;
  let agentRss;
  try {
    const turns = async () => {
      await agent.initialize();
      await agent.newSession();
      for (let i = 0; i < opts.warmup; i++) await agent.prompt(`warm-up ${i}`);
      const start = performance.now();
      for (let i = 0; i < opts.turns; i++) {
        if ((await agent.prompt(`turn ${i}`)) < opts.updates) early += 1;
      }
      elapsed = (performance.now() - start) / 1000;
    };
    await within(TURNS_TIMEOUT_MS, turns(), "turns");
    agentRss = peakRssMib(agent.pid);
  } finally {
    await agent.close();
  }
  return {
    turns_per_s: opts.turns / elapsed,
    updates_per_s: (opts.turns * opts.updates) / elapsed,
    startup_s: startup,
    agent_rss_mib: agentRss,
    client_rss_mib: peakRssMib(),
    early_answers: early,
  };
}

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "200" },
    updates: { type: "string", default: "20" },
    spawns: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
  },
});
const opts = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Number(v)]));
process.stdout.write(`${JSON.stringify(await measure(opts))}\n`);
