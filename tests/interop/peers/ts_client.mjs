#!/usr/bin/env node
// ACP client on the official TypeScript SDK (npm @agentclientprotocol/sdk 2.4.0).
//
// Spawns an agent, runs one interop scenario and prints ONE JSON object on stdout with
// what it observed (format in README.md next to this file). Exit 0 on success, also when
// the agent answered a step with a JSON-RPC error (recorded as "error"); exit 1 with a
// message on stderr on any other failure (timeout, crash, bad arguments).
//
// Usage: node ts_client.mjs [--cwd DIR] [--scenario echo|tool|tool-reject|cancel|all]
//                           [--prompt TEXT] [--step-timeout SECONDS] [--no-fs] -- CMD [ARGS...]

import { spawn } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const CLIENT_NAME = "ts-sdk-client";
const SCENARIOS = ["echo", "tool", "tool-reject", "cancel", "all"];
const DEFAULT_PROMPTS = {
  echo: "hello interop world",
  tool: "tool notes.txt",
  "tool-reject": "tool notes.txt",
  cancel: "slow",
};
const SDK_VERSION = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"))
  .dependencies["@agentclientprotocol/sdk"];

class PeerFailure extends Error {}

class StepError extends Error {
  constructor(method, error) {
    super(method);
    this.method = method;
    this.error = error;
  }
}

function usage(message) {
  process.stderr.write(
    `${CLIENT_NAME}: ${message}\nusage: ts_client.mjs [--cwd DIR] [--scenario ${SCENARIOS.join("|")}]` +
      " [--prompt TEXT] [--step-timeout SECONDS] [--no-fs] -- AGENT_CMD [ARGS...]\n",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0) usage("missing '-- AGENT_CMD [ARGS...]'");
  const command = argv.slice(split + 1);
  if (command.length === 0) usage("empty agent command after '--'");
  const opts = { cwd: process.cwd(), scenario: "echo", prompt: null, stepTimeout: 20, fs: true };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    const arg = own[i];
    const value = () => {
      if (i + 1 >= own.length) usage(`${arg} needs a value`);
      return own[++i];
    };
    if (arg === "--cwd") opts.cwd = value();
    else if (arg === "--scenario") opts.scenario = value();
    else if (arg === "--prompt") opts.prompt = value();
    else if (arg === "--step-timeout") opts.stepTimeout = Number(value());
    else if (arg === "--no-fs") opts.fs = false;
    else usage(`unknown option ${arg}`);
  }
  if (!SCENARIOS.includes(opts.scenario)) usage(`unknown scenario ${opts.scenario}`);
  if (!(opts.stepTimeout > 0)) usage("--step-timeout must be a positive number");
  opts.cwd = path.resolve(opts.cwd);
  return { opts, command };
}

function withTimeout(promise, seconds, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PeerFailure(`${what}: no answer within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Records what the agent sends and answers its requests. */
class Recorder {
  constructor(cwd) {
    this.cwd = cwd;
    this.sessions = new Map();
  }

  track(sessionId, answer = "allow") {
    let resolveFirst;
    const firstUpdate = new Promise((resolve) => (resolveFirst = resolve));
    const state = {
      updates: [],
      permissionRequests: [],
      fsReads: [],
      answer,
      cancelled: false,
      firstUpdate,
      resolveFirst,
    };
    this.sessions.set(sessionId, state);
    return state;
  }

  session(sessionId) {
    return this.sessions.get(sessionId) ?? this.track(sessionId);
  }

  onUpdate(params) {
    // Handlers may run concurrently; recording synchronously keeps arrival order.
    const state = this.session(params.sessionId);
    state.updates.push(params.update);
    state.resolveFirst();
  }

  onPermission(params) {
    const state = this.session(params.sessionId);
    state.permissionRequests.push(params);
    const chosen = pickOption(params.options, state.answer);
    if (state.cancelled || chosen === null) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: chosen } };
  }

  async onReadTextFile(params) {
    this.session(params.sessionId).fsReads.push(params);
    const target = params.path;
    if (!path.isAbsolute(target)) {
      throw acp.RequestError.invalidParams({ path: target, reason: "not absolute" });
    }
    const root = realpathSync(this.cwd);
    let resolved;
    try {
      resolved = realpathSync(target);
    } catch (error) {
      if (error.code === "ENOENT") throw acp.RequestError.resourceNotFound(target);
      throw error;
    }
    const rel = path.relative(root, resolved);
    if (rel.startsWith("..") || path.isAbsolute(rel)) {
      throw acp.RequestError.invalidParams({ path: target, reason: "outside the cwd" });
    }
    let content = await readFile(resolved, "utf8");
    if (params.line != null || params.limit != null) {
      const lines = content.match(/[^\n]*\n|[^\n]+$/g) ?? [];
      const start = Math.max((params.line ?? 1) - 1, 0);
      const end = params.limit != null ? start + params.limit : undefined;
      content = lines.slice(start, end).join("");
    }
    return { content };
  }
}

function pickOption(options, wanted) {
  const byId = options.find((o) => o.optionId === wanted);
  if (byId) return byId.optionId;
  const byKind = options.find((o) => o.kind.startsWith(`${wanted}_`));
  return byKind ? byKind.optionId : null;
}

function messageText(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
}

function recordError(out, exc) {
  const { code, message, data } = exc.error;
  out.error = { code, message, data: data ?? null };
  out.errorMethod = exc.method;
}

/** Lets notification handlers that were already dispatched finish running. */
function settle() {
  return new Promise((resolve) => setImmediate(resolve));
}

class Runner {
  constructor(agent, recorder, opts) {
    this.agent = agent;
    this.recorder = recorder;
    this.opts = opts;
    this.header = {};
  }

  async step(method, promise) {
    try {
      return await withTimeout(promise, this.opts.stepTimeout, method);
    } catch (error) {
      if (error instanceof acp.RequestError) throw new StepError(method, error);
      throw error;
    }
  }

  async initialize() {
    // The SDK's agent side rejects anything pipelined behind `initialize` (-32600);
    // every step here waits for the previous answer anyway.
    const response = await this.step(
      "initialize",
      this.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: this.opts.fs, writeTextFile: false }, terminal: false },
        clientInfo: { name: CLIENT_NAME, version: SDK_VERSION },
      }),
    );
    if (response.protocolVersion !== acp.PROTOCOL_VERSION) {
      throw new PeerFailure(`agent answered unsupported protocolVersion ${response.protocolVersion}`);
    }
    this.header = { protocolVersion: response.protocolVersion };
    if (response.agentInfo != null) this.header.agentInfo = response.agentInfo;
    if (response.agentCapabilities != null) this.header.agentCapabilities = response.agentCapabilities;
    return { ...this.header };
  }

  async newSession(out, answer = "allow") {
    const response = await this.step(
      "session/new",
      this.agent.request(acp.methods.agent.session.new, { cwd: this.opts.cwd, mcpServers: [] }),
    );
    const sessionId = response.sessionId;
    this.recorder.track(sessionId, answer);
    out.sessionId = sessionId;
    return sessionId;
  }

  prompt(sessionId, text) {
    return this.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });
  }

  async run(scenario, promptText) {
    const out = { ...this.header };
    try {
      if (scenario === "cancel") {
        await this.cancel(out, promptText ?? DEFAULT_PROMPTS.cancel);
      } else {
        const answer = scenario === "tool-reject" ? "reject" : "allow";
        const sessionId = await this.newSession(out, answer);
        const response = await this.step(
          "session/prompt",
          this.prompt(sessionId, promptText ?? DEFAULT_PROMPTS[scenario]),
        );
        out.stopReason = response.stopReason;
        if (scenario !== "echo") {
          const state = this.recorder.session(sessionId);
          out.permissionRequests = state.permissionRequests;
          out.fsReads = state.fsReads;
        }
      }
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      recordError(out, error);
    }
    // The prompt response can resolve before update handlers ran (SDK quirk).
    await settle();
    if (out.sessionId !== undefined) {
      const updates = this.recorder.session(out.sessionId).updates;
      out.updates = [...updates];
      out.text = messageText(updates);
    }
    return out;
  }

  async cancel(out, text) {
    const sessionId = await this.newSession(out);
    const state = this.recorder.session(sessionId);
    const turn = this.prompt(sessionId, text);
    const first = await this.step(
      "session/update",
      Promise.race([state.firstUpdate.then(() => "update"), turn.then(() => "stop")]),
    );
    if (first === "stop") {
      throw new PeerFailure(`prompt ${JSON.stringify(text)} ended before an update`);
    }
    const before = state.updates.length;
    state.cancelled = true;
    const sent = performance.now();
    await this.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    const response = await this.step("session/prompt", turn);
    await settle();
    out.stopReason = response.stopReason;
    out.updatesBeforeCancel = before;
    out.updatesAfterCancel = state.updates.length - before;
    out.secondsAfterCancel = Math.round(performance.now() - sent) / 1000;
  }
}

async function main() {
  const { opts, command } = parseArgs(process.argv.slice(2));
  const recorder = new Recorder(opts.cwd);
  // Full parent environment; the agent's stderr goes straight to ours (never blocks).
  const child = spawn(command[0], command.slice(1), {
    stdio: ["pipe", "pipe", "inherit"],
    env: process.env,
  });
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? (signal ? `signal ${signal}` : null)));
  });
  const spawnError = new Promise((_, reject) => child.on("error", reject));
  child.stdin.on("error", () => {}); // EPIPE when the agent dies: surfaces as a closed connection

  const app = acp
    .client({ name: CLIENT_NAME })
    .onNotification(acp.methods.client.session.update, ({ params }) => recorder.onUpdate(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => recorder.onPermission(params))
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => recorder.onReadTextFile(params));
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const closedEarly = connection.closed.then(() => {
    throw new PeerFailure("agent closed the connection");
  });

  const runner = new Runner(connection.agent, recorder, opts);
  const work = (async () => {
    let result;
    try {
      result = await runner.initialize();
    } catch (error) {
      if (!(error instanceof StepError)) throw error;
      result = {};
      recordError(result, error);
      return result;
    }
    if (opts.scenario === "all") {
      for (const name of ["echo", "tool", "cancel"]) result[name] = await runner.run(name, null);
    } else {
      Object.assign(result, await runner.run(opts.scenario, opts.prompt));
    }
    return result;
  })();
  let result;
  try {
    result = await Promise.race([work, closedEarly, spawnError]);
  } finally {
    closedEarly.catch(() => {});
    connection.close();
    child.stdin.end();
  }
  // Close = stdin EOF, wait, terminate, kill.
  let code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 2000))]);
  if (code === undefined) {
    child.kill("SIGTERM");
    code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 2000))]);
    if (code === undefined) {
      child.kill("SIGKILL");
      code = await exited;
    }
  }
  result.agentExitCode = code;
  return result;
}

try {
  const result = await main();
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
} catch (error) {
  process.stderr.write(`${CLIENT_NAME}: ${error?.stack ?? error}\n`);
  process.exit(1);
}
