#!/usr/bin/env node
// ACP agent on the official TypeScript SDK (npm @agentclientprotocol/sdk 2.4.0).
//
// Implements interlink's interop scenario contract (see README.md next to this file):
// `tool <path>` reads a file through the client after asking permission, `slow`
// streams "working" until cancelled, anything else is echoed back word by word.
//
// Run: node ts_agent.mjs   (speaks ACP v1 on stdin/stdout, diagnostics on stderr)

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const AGENT_NAME = "ts-sdk-agent";
const TOOL_CALL_ID = "call_1";
const SLOW_MS = 10_000;
const SLOW_INTERVAL_MS = 500;

// The SDK's export map hides its package.json; report the version pinned next to us.
const SDK_VERSION = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"))
  .dependencies["@agentclientprotocol/sdk"];

/** Chunks that keep their spaces, so that chunks.join("") === text. */
export function splitWords(text) {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** Characters as Python counts them (code points, not UTF-16 units). */
function charCount(text) {
  return [...text].length;
}

/** @type {Map<string, {cwd: string, turn: AbortController | null}>} */
const sessions = new Map();
let canReadFiles = false;

class Cancelled extends Error {}

/**
 * Resolves with `promise` unless `turnSignal` aborts first (then rejects Cancelled).
 * The request signal (aborted by `$/cancel_request`) rejects with an AbortError, which
 * the SDK answers with -32800.
 */
function untilCancelled(promise, turnSignal, requestSignal) {
  return new Promise((resolve, reject) => {
    const onTurn = () => reject(new Cancelled());
    const onRequest = () => reject(requestSignal.reason ?? new DOMException("aborted", "AbortError"));
    if (turnSignal.aborted) return onTurn();
    if (requestSignal.aborted) return onRequest();
    turnSignal.addEventListener("abort", onTurn, { once: true });
    requestSignal.addEventListener("abort", onRequest, { once: true });
    promise.then(resolve, reject).finally(() => {
      turnSignal.removeEventListener("abort", onTurn);
      requestSignal.removeEventListener("abort", onRequest);
    });
  });
}

function sleep(ms, ...signals) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s.addEventListener("abort", done, { once: true });
  });
}

async function say(client, sessionId, text) {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

async function toolUpdate(client, sessionId, fields) {
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call_update", toolCallId: TOOL_CALL_ID, ...fields },
  });
}

function throwIfRequestAborted(signal) {
  if (signal.aborted) throw signal.reason ?? new DOMException("aborted", "AbortError");
}

async function runSlow(client, sessionId, turn, signal) {
  const deadline = Date.now() + SLOW_MS;
  await say(client, sessionId, "working");
  while (Date.now() < deadline) {
    await sleep(SLOW_INTERVAL_MS, turn, signal);
    if (turn.aborted) break;
    throwIfRequestAborted(signal);
    await say(client, sessionId, "working");
  }
  return turn.aborted ? "cancelled" : "end_turn";
}

async function runTool(client, sessionId, session, turn, signal, relPath) {
  const title = `Read ${relPath}`;
  const stopReason = () => (turn.aborted ? "cancelled" : "end_turn");
  const fail = async (reason) => {
    const fields = { status: "failed" };
    if (reason !== undefined) {
      fields.content = [{ type: "content", content: { type: "text", text: reason } }];
    }
    await toolUpdate(client, sessionId, fields);
    return stopReason();
  };

  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call", toolCallId: TOOL_CALL_ID, title, kind: "read", status: "pending" },
  });
  let answer;
  try {
    answer = await untilCancelled(
      client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId: TOOL_CALL_ID, title, kind: "read", status: "pending" },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      }),
      turn,
      signal,
    );
  } catch (error) {
    if (error instanceof Cancelled) return fail();
    throw error;
  }
  const outcome = answer.outcome;
  if (outcome.outcome !== "selected" || outcome.optionId !== "allow" || turn.aborted) {
    return fail();
  }
  if (!canReadFiles) return fail("client cannot read text files");
  let read;
  try {
    read = await untilCancelled(
      client.request(acp.methods.client.fs.readTextFile, {
        sessionId,
        path: path.join(session.cwd, relPath),
      }),
      turn,
      signal,
    );
  } catch (error) {
    if (error instanceof Cancelled) return fail();
    if (error instanceof acp.RequestError) return fail(`${error.code}: ${error.message}`);
    throw error;
  }
  const text = read.content;
  await toolUpdate(client, sessionId, {
    status: "completed",
    content: [{ type: "content", content: { type: "text", text } }],
  });
  await say(client, sessionId, `read ${charCount(text)} characters`);
  return stopReason();
}

const app = acp
  .agent({ name: AGENT_NAME })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    canReadFiles = params.clientCapabilities?.fs?.readTextFile === true;
    // We speak exactly version 1: answer it whatever was requested.
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      authMethods: [],
      agentInfo: { name: AGENT_NAME, version: SDK_VERSION },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { cwd: params.cwd, turn: null });
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.turn?.abort();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    if (session === undefined) throw acp.RequestError.sessionNotFound(sessionId);
    const texts = params.prompt.filter((b) => b.type === "text").map((b) => b.text);
    const first = texts[0] ?? "";
    const controller = new AbortController();
    session.turn = controller;
    const turn = controller.signal;
    try {
      let stopReason;
      if (first.startsWith("tool ") && first.slice(5).trim() !== "") {
        stopReason = await runTool(client, sessionId, session, turn, signal, first.slice(5).trim());
      } else if (first.trim() === "slow") {
        stopReason = await runSlow(client, sessionId, turn, signal);
      } else {
        for (const chunk of splitWords(texts.join(""))) await say(client, sessionId, chunk);
        stopReason = "end_turn";
      }
      return { stopReason };
    } finally {
      if (session.turn === controller) session.turn = null;
    }
  });

const connection = app.connect(
  acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
);
// EOF on stdin closes the connection; leave without waiting for timers of a running turn.
await connection.closed;
process.exit(0);
