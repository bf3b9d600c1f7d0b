// A peer A2A server on the official JS SDK (@a2a-js/sdk), public API only, without
// Express: `DefaultRequestHandler` + `InMemoryTaskStore` + `JsonRpcTransportHandler` on
// node:http, writing SSE as the SDK's own Express handler does (`data: <json>\n\n`,
// `event: error` after the first event, plain JSON before it).
// `node js_server.mjs PORT`. Agent: `echo X`, `slow`, `ask`, `message` (as py_server.py).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { TaskState, Role } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
} from '@a2a-js/sdk/server';

const port = Number(process.argv[2]);
const url = `http://127.0.0.1:${port}/`;
const card = {
  name: 'js sdk peer',
  description: 'echo, slow, ask, message',
  version: '1.0.0',
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes.', tags: ['peer'], examples: [],
    inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

const part = (text) => ({ content: { $case: 'text', value: text }, filename: '', mediaType: '' });
const agentMessage = (text, taskId, contextId) => ({
  messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [part(text)],
  extensions: [], referenceTaskIds: [],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const canceled = new Set();

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const user = ctx.userMessage;
    const text = user.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('').trim();
    const status = (state, message) => bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, status: { state, message, timestamp: new Date().toISOString() },
    }));
    if (text === 'message' && !ctx.task) {
      bus.publish(AgentEvent.message(agentMessage('direct', '', contextId)));
      bus.finished();
      return;
    }
    const task = ctx.task ?? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED },
      artifacts: [], history: [user] };
    bus.publish(AgentEvent.task(task));
    const artifact = (t, name) => bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true,
      artifact: { artifactId: randomUUID(), name, description: '', parts: [part(t)], extensions: [] },
    }));
    if (ctx.task && ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      artifact(`got ${text}`, 'answer');
      status(TaskState.TASK_STATE_COMPLETED);
    } else if (text === 'ask') {
      status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage('say more', taskId, contextId));
    } else if (text === 'slow') {
      status(TaskState.TASK_STATE_WORKING, agentMessage('0', taskId, contextId));
      for (let i = 1; i < 7; i++) {
        await sleep(300);
        if (canceled.has(taskId)) { bus.finished(); return; }
        status(TaskState.TASK_STATE_WORKING, agentMessage(String(i), taskId, contextId));
      }
      status(TaskState.TASK_STATE_COMPLETED);
    } else {
      status(TaskState.TASK_STATE_WORKING);
      artifact(text.replace(/^echo /, ''), 'echo');
      status(TaskState.TASK_STATE_COMPLETED);
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    canceled.add(taskId);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED } }));
    bus.finished();
  },
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const transport = new JsonRpcTransportHandler(handler);
const SSE = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' };

const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(await handler.getAgentCard()));
    return;
  }
  if (req.method !== 'POST' || req.url !== '/') { res.writeHead(404).end(); return; }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
    return;
  }
  const error = (e) => ({ jsonrpc: '2.0', id: body?.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
  try {
    const version = req.headers['a2a-version'] || undefined;
    const context = new ServerCallContext({ requestedVersion: version, headers: req.headers });
    validateVersion(version ?? '0.3', card, 'JSONRPC');
    const out = await transport.handle(body, context);
    if (typeof out?.[Symbol.asyncIterator] !== 'function') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(out));
      return;
    }
    const it = out[Symbol.asyncIterator]();
    let first;
    try { first = await it.next(); } catch (e) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(error(e)));
      return;
    }
    res.writeHead(200, SSE);
    try {
      if (!first.done) res.write(`data: ${JSON.stringify(first.value)}\n\n`);
      for (let r = await it.next(); !r.done; r = await it.next()) res.write(`data: ${JSON.stringify(r.value)}\n\n`);
    } catch (e) {
      res.write(`event: error\ndata: ${JSON.stringify(error(e))}\n\n`);
    }
    res.end();
  } catch (e) {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(error(e)));
  }
});
server.listen(port, '127.0.0.1', () => console.error(`listening on ${url}`));
process.on('SIGINT', () => { server.close(); process.exit(0); });
process.on('SIGTERM', () => { server.close(); process.exit(0); });
