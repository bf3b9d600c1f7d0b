#!/usr/bin/env node
// A2A client peer on the official JS SDK (npm `@a2a-js/sdk@1.3.0`), public API only.
//
// Runs one scenario against an A2A server and prints ONE JSON object on stdout with what
// it observed, in the same shape as py_client.py: every SDK object as ProtoJSON (the SDK's
// own `toJSON`), every A2A error the SDK threw as {"error": {"name", "code", "message"}},
// and the HTTP requests the SDK made (`requests`: method, path, JSON-RPC method,
// `A2A-Version`). Exit 0 on success (also when a step got an A2A error: it is recorded);
// non-zero with a message on stderr on anything else (timeout, transport failure, usage).
//
// With `--binding GRPC` the SDK's client talks to the card's gRPC interface instead
// (`@a2a-js/sdk/client/grpc`, a plain-text channel, its default); a grpc-js client
// interceptor, passed through the factory's `grpcCallOptions`, records each call it makes
// as {"grpc": rpc, "a2aVersion"} from its metadata.
//
// Usage: node js_client.mjs URL SCENARIO [--webhook URL] [--step-timeout SECONDS]
//        [--binding JSONRPC|HTTP+JSON|GRPC]
// (the one transport the client factory gets: the card's interface of that binding is used)

import { randomUUID } from 'node:crypto';
import { InterceptingCall } from '@grpc/grpc-js';
import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { A2AError } from '@a2a-js/sdk/errors';

const SCENARIOS = [
  'card', 'send', 'stream', 'get', 'list', 'cancel', 'subscribe', 'ask', 'message',
  'push-crud', 'push-inline', 'push-delivery',
];
// Never called in push-crud (its configs are deleted before the task emits another event);
// public-looking so an SSRF policy accepts it.
const CRUD_WEBHOOK = 'https://webhook.example.com/a2a';
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED']);
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];

class PeerFailure extends Error {}

function parseArgs(argv) {
  const positional = [];
  const opts = { webhook: null, stepTimeout: 15, binding: 'JSONRPC' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--webhook') opts.webhook = argv[++i];
    else if (arg === '--step-timeout') opts.stepTimeout = Number(argv[++i]);
    else if (arg === '--binding') opts.binding = argv[++i];
    else if (arg.startsWith('--')) throw new PeerFailure(`unknown option ${arg}`);
    else positional.push(arg);
  }
  if (positional.length !== 2 || !SCENARIOS.includes(positional[1])) {
    throw new PeerFailure(`usage: js_client.mjs URL {${SCENARIOS.join('|')}} [--webhook URL]`);
  }
  if (!(opts.stepTimeout > 0)) throw new PeerFailure('--step-timeout must be > 0');
  if (!BINDINGS.includes(opts.binding)) {
    throw new PeerFailure(`--binding must be one of ${BINDINGS.join(', ')}`);
  }
  return { url: positional[0], scenario: positional[1], ...opts };
}

/** The A2A error an SDK call threw (stream errors carry it as `cause`), or null. */
function a2aError(exc) {
  if (exc instanceof A2AError) return exc;
  if (exc instanceof Error && exc.cause instanceof A2AError) return exc.cause;
  return null;
}

function errorJson(err) {
  // (an error of the HTTP+JSON or gRPC transport has no JSON-RPC code: its reason names it;
  // one of the gRPC transport also has the call's status code)
  const json = { name: err.name, code: err.envelopeCode ?? null, reason: err.reason, message: err.message };
  if (err.transport === 'grpc') json.grpcStatus = err.status;
  return json;
}

/** A Message | Task result of sendMessage as a SendMessageResponse-shaped object. */
function resultJson(result) {
  return 'messageId' in result ? { message: Message.toJSON(result) } : { task: Task.toJSON(result) };
}

class Peer {
  constructor(url, stepTimeout, webhook, binding = 'JSONRPC') {
    this.url = url;
    this.stepMs = stepTimeout * 1000;
    this.webhook = webhook;
    this.requests = [];
    const fetchImpl = (input, init) => this.record(input, init);
    this.resolver = new DefaultAgentCardResolver({ fetchImpl });
    const transports = {
      JSONRPC: () => new JsonRpcTransportFactory({ fetchImpl }),
      'HTTP+JSON': () => new RestTransportFactory({ fetchImpl }),
      GRPC: () => new GrpcTransportFactory({
        grpcCallOptions: { interceptors: [(options, nextCall) => this.recordGrpc(options, nextCall)] },
      }),
    };
    this.factory = new ClientFactory({
      transports: [transports[binding]()],
      cardResolver: this.resolver,
    });
    this.card = null;
    this.client = null;
  }

  record(input, init) {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    let rpc = null;
    if (typeof init?.body === 'string') {
      try {
        const body = JSON.parse(init.body);
        if (typeof body?.method === 'string') rpc = body.method;
      } catch {
        // not JSON: leave rpc null
      }
    }
    this.requests.push({
      http: init?.method ?? 'GET',
      path: url.pathname,
      rpc,
      a2aVersion: headers.get('A2A-Version'),
    });
    return fetch(input, init);
  }

  /** A grpc-js client interceptor: record the rpc and its `a2a-version` metadata. */
  recordGrpc(options, nextCall) {
    const rpc = options.method_definition.path.split('/').pop();
    return new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        const [version] = metadata.get('a2a-version');
        this.requests.push({ grpc: rpc, a2aVersion: version === undefined ? null : String(version) });
        next(metadata, listener);
      },
    });
  }

  options() {
    return { signal: AbortSignal.timeout(this.stepMs) };
  }

  async step(label, promise) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new PeerFailure(`step '${label}': no answer within ${this.stepMs / 1000} s`)),
        this.stepMs,
      );
    });
    try {
      return await Promise.race([promise, timeout]);
    } catch (exc) {
      if (exc instanceof Error && exc.name === 'TimeoutError') {
        throw new PeerFailure(`step '${label}': aborted after ${this.stepMs / 1000} s`);
      }
      throw exc;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Run a step that may legitimately fail with an A2A error; record either. */
  async attempt(label, call, toJson) {
    try {
      const result = await this.step(label, call());
      return { result: result === undefined ? null : toJson(result) };
    } catch (exc) {
      const err = a2aError(exc);
      if (err === null) throw exc;
      return { error: errorJson(err) };
    }
  }

  async attemptStream(label, iterable) {
    const events = [];
    const drain = async () => {
      for await (const event of iterable) events.push(StreamResponse.toJSON(event));
    };
    try {
      await this.step(label, drain());
    } catch (exc) {
      if (exc instanceof PeerFailure) {
        throw new PeerFailure(`${exc.message}; got ${JSON.stringify(events)}`);
      }
      const err = a2aError(exc);
      if (err === null) throw exc;
      return { events, error: errorJson(err) };
    }
    return { events };
  }

  async resolveCard() {
    this.card = await this.step('resolve card', this.resolver.resolve(this.url));
    return this.card;
  }

  async getClient() {
    if (this.client === null) {
      const card = this.card ?? (await this.resolveCard());
      this.client = await this.factory.createFromAgentCard(card);
    }
    return this.client;
  }

  static request(text, { taskId, contextId, returnImmediately, push } = {}) {
    const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
    if (taskId) message.taskId = taskId;
    if (contextId) message.contextId = contextId;
    const configuration = {};
    if (returnImmediately) configuration.returnImmediately = true;
    if (push) configuration.taskPushNotificationConfig = push;
    return SendMessageRequest.fromJSON({ message, configuration });
  }

  /** Blocking (non-streaming) SendMessage, as a SendMessageResponse-shaped object. */
  async send(request) {
    const client = await this.getClient();
    return resultJson(await this.step('SendMessage', client.sendMessage(request, this.options())));
  }

  async sendOrError(request) {
    try {
      return { result: await this.send(request) };
    } catch (exc) {
      const err = a2aError(exc);
      if (err === null) throw exc;
      return { error: errorJson(err) };
    }
  }

  async sendTask(request) {
    const result = await this.send(request);
    if (!result.task) throw new PeerFailure(`expected a task, got ${JSON.stringify(result)}`);
    return result.task;
  }

  async stream(request) {
    const client = await this.getClient();
    return this.attemptStream('SendStreamingMessage', client.sendMessageStream(request, this.options()));
  }

  async getTask(id, historyLength) {
    const client = await this.getClient();
    const req = historyLength === undefined ? { id } : { id, historyLength };
    return this.attempt(
      'GetTask',
      () => client.getTask(GetTaskRequest.fromJSON(req), this.options()),
      Task.toJSON,
    );
  }

  async waitTerminal(taskId) {
    const deadline = Date.now() + this.stepMs;
    while (Date.now() < deadline) {
      const got = await this.getTask(taskId);
      if (!got.result) throw new PeerFailure(`GetTask ${taskId} failed: ${JSON.stringify(got)}`);
      if (TERMINAL.has(got.result.status.state)) return got.result;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new PeerFailure(`task ${taskId} not terminal within ${this.stepMs / 1000} s`);
  }

  // -- scenarios ------------------------------------------------------------------------

  async card_() {
    const card = await this.resolveCard();
    const client = await this.getClient();
    // One call through a client made from the resolved card, to show it works.
    const sent = await this.send(Peer.request('echo card ok'));
    return { card: AgentCard.toJSON(card), clientProtocolVersion: client.protocolVersion, sent };
  }

  async send_() {
    return { result: await this.send(Peer.request('echo hello interop')) };
  }

  async stream_() {
    return this.stream(Peer.request('echo hello interop stream'));
  }

  async get_() {
    const task = await this.sendTask(Peer.request('echo get me'));
    return {
      sent: task,
      got: await this.getTask(task.id),
      gotHistory0: await this.getTask(task.id, 0),
      gotHistory1: await this.getTask(task.id, 1),
      unknown: await this.getTask(randomUUID()),
    };
  }

  async list_() {
    const client = await this.getClient();
    const first = await this.sendTask(Peer.request('echo list one'));
    const contextId = first.contextId;
    const second = await this.sendTask(Peer.request('echo list two', { contextId }));
    const third = await this.sendTask(Peer.request('echo list three', { contextId }));
    const page = (extra) => () =>
      client.listTasks(ListTasksRequest.fromJSON({ contextId, ...extra }), this.options());
    const all = await this.attempt('ListTasks', page({}), ListTasksResponse.toJSON);
    const page1 = await this.attempt('ListTasks page 1', page({ pageSize: 2 }), ListTasksResponse.toJSON);
    const pageToken = page1.result?.nextPageToken ?? '';
    const page2 = await this.attempt(
      'ListTasks page 2',
      page({ pageSize: 2, pageToken }),
      ListTasksResponse.toJSON,
    );
    const withArtifacts = await this.attempt(
      'ListTasks artifacts',
      page({ includeArtifacts: true }),
      ListTasksResponse.toJSON,
    );
    return {
      taskIds: [first.id, second.id, third.id],
      contextId,
      all,
      page1,
      page2,
      withArtifacts,
    };
  }

  async cancel_() {
    const client = await this.getClient();
    const started = await this.sendTask(Peer.request('slow 20', { returnImmediately: true }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const cancel = (id) => () => client.cancelTask(CancelTaskRequest.fromJSON({ id }), this.options());
    const canceled = await this.attempt('CancelTask', cancel(started.id), Task.toJSON);
    const after = await this.getTask(started.id);
    const again = await this.attempt('CancelTask again', cancel(started.id), Task.toJSON);
    const done = await this.sendTask(Peer.request('echo done'));
    const completed = await this.attempt('CancelTask completed', cancel(done.id), Task.toJSON);
    const unknown = await this.attempt('CancelTask unknown', cancel(randomUUID()), Task.toJSON);
    return { started, canceled, after, again, completed, unknown };
  }

  async subscribe_() {
    const client = await this.getClient();
    const started = await this.sendTask(Peer.request('slow 3', { returnImmediately: true }));
    const sub = (id) => client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id }), this.options());
    const subscribe = await this.attemptStream('SubscribeToTask', sub(started.id));
    const terminal = await this.attemptStream('SubscribeToTask terminal', sub(started.id));
    const unknown = await this.attemptStream('SubscribeToTask unknown', sub(randomUUID()));
    return { started, subscribe, terminal, unknown };
  }

  async ask_() {
    const asked = await this.sendTask(Peer.request('ask'));
    // Follow-up with the taskId only: the server must infer the contextId (§3.4).
    const answered = await this.send(Peer.request('blue', { taskId: asked.id }));
    const terminal = await this.sendOrError(Peer.request('too late', { taskId: asked.id }));
    const streamAsk = await this.stream(Peer.request('ask'));
    const tasks = streamAsk.events.filter((e) => e.task).map((e) => e.task);
    let streamFollowUp = {};
    if (tasks.length > 0) {
      streamFollowUp = await this.stream(
        Peer.request('green', { taskId: tasks[0].id, contextId: tasks[0].contextId }),
      );
    }
    return { asked, answered, terminal, streamAsk, streamFollowUp };
  }

  async message_() {
    return {
      send: await this.send(Peer.request('message')),
      stream: await this.stream(Peer.request('message')),
    };
  }

  async pushCrud() {
    const client = await this.getClient();
    const task = await this.sendTask(Peer.request('ask'));
    const taskId = task.id;
    const cfgJson = TaskPushNotificationConfig.toJSON;
    const created = await this.attempt(
      'CreateTaskPushNotificationConfig',
      () => client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({
          taskId,
          url: CRUD_WEBHOOK,
          token: 'tok-1',
          authentication: { scheme: 'Bearer', credentials: 'secret-1' },
        }),
        this.options(),
      ),
      cfgJson,
    );
    const createdWithId = await this.attempt(
      'CreateTaskPushNotificationConfig with id',
      () => client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId, id: 'cfg-b', url: `${CRUD_WEBHOOK}/b` }),
        this.options(),
      ),
      cfgJson,
    );
    const cfgId = created.result?.id ?? '';
    const get = (id) => () => client.getTaskPushNotificationConfig(
      GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id }),
      this.options(),
    );
    const del = (id) => () => client.deleteTaskPushNotificationConfig(
      DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id }),
      this.options(),
    );
    const list = (tid) => () => client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: tid }),
      this.options(),
    );
    const listJson = ListTaskPushNotificationConfigsResponse.toJSON;
    const none = () => null;
    const got = await this.attempt('GetTaskPushNotificationConfig', get(cfgId), cfgJson);
    const listed = await this.attempt('ListTaskPushNotificationConfigs', list(taskId), listJson);
    const deleted = await this.attempt('DeleteTaskPushNotificationConfig', del(cfgId), none);
    const listedAfterDelete = await this.attempt('List after delete', list(taskId), listJson);
    const gotDeleted = await this.attempt('Get deleted', get(cfgId), cfgJson);
    const deletedAgain = await this.attempt('Delete again', del(cfgId), none);
    const deletedB = await this.attempt('Delete b', del('cfg-b'), none);
    const unknownTask = await this.attempt('List unknown task', list(randomUUID()), listJson);
    await this.attempt(
      'CancelTask cleanup',
      () => client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }), this.options()),
      Task.toJSON,
    );
    return {
      taskId,
      created,
      createdWithId,
      got,
      listed,
      deleted,
      listedAfterDelete,
      gotDeleted,
      deletedAgain,
      deletedB,
      unknownTask,
    };
  }

  /** A push config sent inline with SendMessage (§8.1), then listed and deleted. */
  async pushInline() {
    const client = await this.getClient();
    const push = {
      url: `${CRUD_WEBHOOK}/inline`,
      token: 'tok-inline',
      authentication: { scheme: 'Bearer', credentials: 'secret-inline' },
    };
    const sent = await this.sendOrError(Peer.request('ask', { push }));
    if (!sent.result?.task) return { sent };
    const taskId = sent.result.task.id;
    const listed = await this.attempt(
      'ListTaskPushNotificationConfigs',
      () => client.listTaskPushNotificationConfig(
        ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }),
        this.options(),
      ),
      ListTaskPushNotificationConfigsResponse.toJSON,
    );
    for (const config of listed.result?.configs ?? []) {
      await this.attempt(
        'DeleteTaskPushNotificationConfig',
        () => client.deleteTaskPushNotificationConfig(
          DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: config.id }),
          this.options(),
        ),
        () => null,
      );
    }
    await this.attempt(
      'CancelTask cleanup',
      () => client.cancelTask(CancelTaskRequest.fromJSON({ id: taskId }), this.options()),
      Task.toJSON,
    );
    return { sent, listed };
  }

  async pushDelivery() {
    if (!this.webhook) throw new PeerFailure('push-delivery needs --webhook URL');
    const client = await this.getClient();
    const started = await this.sendTask(Peer.request('slow 2', { returnImmediately: true }));
    const created = await this.attempt(
      'CreateTaskPushNotificationConfig',
      () => client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({
          taskId: started.id,
          url: this.webhook,
          token: 'tok-created',
          authentication: { scheme: 'Bearer', credentials: 'secret-created' },
        }),
        this.options(),
      ),
      TaskPushNotificationConfig.toJSON,
    );
    const finished = await this.waitTerminal(started.id);
    const inline = await this.send(
      Peer.request('echo pushed inline', { push: { url: this.webhook, token: 'tok-inline' } }),
    );
    return { started, created, finished, inline };
  }

  async run(scenario) {
    const handlers = {
      card: () => this.card_(),
      send: () => this.send_(),
      stream: () => this.stream_(),
      get: () => this.get_(),
      list: () => this.list_(),
      cancel: () => this.cancel_(),
      subscribe: () => this.subscribe_(),
      ask: () => this.ask_(),
      message: () => this.message_(),
      'push-crud': () => this.pushCrud(),
      'push-inline': () => this.pushInline(),
      'push-delivery': () => this.pushDelivery(),
    };
    const observed = await handlers[scenario]();
    return { sdk: '@a2a-js/sdk', scenario, ...observed, requests: this.requests };
  }
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (exc) {
    process.stderr.write(`js_client: ${exc.message}\n`);
    return 2;
  }
  try {
    const observed = await new Peer(args.url, args.stepTimeout, args.webhook, args.binding).run(
      args.scenario,
    );
    process.stdout.write(`${JSON.stringify(observed)}\n`);
    return 0;
  } catch (exc) {
    const detail = exc instanceof Error ? `${exc.name}: ${exc.message}` : String(exc);
    const cause = exc instanceof Error && exc.cause ? ` (cause: ${exc.cause})` : '';
    process.stderr.write(`js_client ${args.scenario}: ${detail}${cause}\n`);
    return 1;
  }
}

process.exitCode = await main();
// Open sockets (e.g. an aborted stream) must not keep the process alive.
setTimeout(() => process.exit(process.exitCode), 100).unref();
