import { randomUUID } from 'node:crypto';
import { type AgentCard, type Artifact, type Message as A2aMessage, type Part, Role, type SendMessageRequest, type StreamResponse, TaskState, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import {
  type AgentExecutor,
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type PushNotificationSender,
  type PushNotificationStore,
  V1PushNotificationSerializer,
  type RequestContext,
  ServerCallContext,
  type TaskStore,
  type User,
} from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { acceptedTypes } from '../../config/accepted-types.js';
import type { ListenerConfig } from '../../config/types.js';
import type { Message } from '../../core/message.js';
import { OrganismError } from '../../errors/catalogue.js';
import type { ServiceOrganism as Organism } from '../service-organism.js';
import { resolveInjectPayload } from '../../payload/inject.js';
import type { PayloadType } from '../../payload/payload-type.js';
import { followThread, type ThreadUpdate } from './follow.js';
import { A2A_PUSH_LISTENER } from '../../organism/a2a-push.js';

/** The A2A protocol version served (the JSON-RPC binding of A2A v1.0). */
export const A2A_PROTOCOL_VERSION = '1.0';

/** Served as well, on the same endpoint, to clients that send no `A2A-Version` (LangGraph, older SDKs). */
export const LEGACY_PROTOCOL_VERSION = '0.3';

const JSON_MEDIA = 'application/json';
const TEXT_MEDIA = 'text/plain';

/** A listener served over A2A: exposed with `expose.a2a`, else null. */
export function a2aListener(organism: Organism, name: string): ListenerConfig | null {
  const listener = organism.config.listeners.find((l) => l.name === name);
  return listener?.expose?.a2a ? listener : null;
}

/** The payload types a listener accepts, as the registry knows them. */
export function listenerTypes(organism: Organism, listener: ListenerConfig): PayloadType[] {
  return acceptedTypes(listener).flatMap((name) => organism.registry.get(name) ?? []);
}

/** The one field of a type that a text part fills: its only field, or its only required one, a string. Null: none. */
export function textField(type: PayloadType): string | null {
  const required = type.fields.filter((f) => !f.optional);
  const candidates = type.fields.length === 1 ? type.fields : required.length === 1 ? required : [];
  const field = candidates[0];
  return candidates.length === 1 && field && field.type.kind === 'string' ? field.name : null;
}

/** The agent card of an exposed listener, its JSON-RPC endpoint at `<base>/a2a/<listener>`. */
export function agentCardOf(organism: Organism, listener: ListenerConfig, base: string): AgentCard {
  const types = listenerTypes(organism, listener);
  const textual = types.some((t) => textField(t) !== null);
  const modes = textual ? [JSON_MEDIA, TEXT_MEDIA] : [JSON_MEDIA];
  return {
    name: listener.name,
    description: listener.description || `The ${listener.name} listener of the ${organism.name} organism`,
    version: organism.name,
    // One endpoint: v1.0 method names with `A2A-Version: 1.0`, v0.3 ones (`message/send`, ...) without it.
    supportedInterfaces: [A2A_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION].map((protocolVersion) => ({
      url: `${base}/a2a/${encodeURIComponent(listener.name)}`,
      protocolBinding: 'JSONRPC',
      protocolVersion,
      tenant: '',
    })),
    provider: { organization: organism.name, url: base },
    capabilities: { streaming: true, pushNotifications: true, extensions: [] },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { scheme: 'Bearer', bearerFormat: '', description: 'An organism API token (auth.tokens in organism.yaml): operator to send, viewer or operator to read the card' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: modes,
    defaultOutputModes: [JSON_MEDIA, TEXT_MEDIA],
    skills: types.map((type) => ({
      id: type.name,
      name: type.name,
      description: [
        type.description,
        `Input: a data part holding a ${type.name} payload (JSON Schema: ${JSON.stringify(type.jsonSchema())})`,
        textField(type) ? `or a text part (its ${textField(type)} field)` : '',
      ]
        .filter((s) => s)
        .join('. '),
      tags: ['organism', listener.agent ? 'agent' : 'tool'],
      examples: [JSON.stringify(type.exampleValue())],
      inputModes: textField(type) ? [JSON_MEDIA, TEXT_MEDIA] : [JSON_MEDIA],
      outputModes: [JSON_MEDIA, TEXT_MEDIA],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/**
 * The inject an A2A message becomes: its data part (the payload, bare fields or `{"Type": {...}}`),
 * else its text parts in the one text field of the first accepted type that has one. Throws the
 * organism's 4xx error (naming the field) when the payload does not fit the listener.
 */
export function injectOf(organism: Organism, listener: ListenerConfig, message: A2aMessage | undefined): { payloadType: string; payload: Record<string, unknown>; body: unknown } {
  const types = listenerTypes(organism, listener);
  const parts = message?.parts ?? [];
  const data = parts.find((p) => p.content?.$case === 'data');
  let body: unknown;
  if (data?.content?.$case === 'data') body = data.content.value;
  else {
    const texts = parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
    if (texts.length === 0)
      throw new RequestMalformedError(`message.parts: a message to ${listener.name} needs a data part (a ${types.map((t) => t.name).join(' or ')} payload) or a text part`);
    const type = types.find((t) => textField(t) !== null);
    if (!type)
      throw new RequestMalformedError(
        `message.parts: ${listener.name} takes no text (no payload type of one text field); send a data part with a ${types.map((t) => t.name).join(' or ')} payload`,
      );
    body = { [type.name]: { [textField(type) as string]: texts.join('\n') } };
  }
  try {
    return { ...resolveInjectPayload(body, types, organism.registry, listener.name), body };
  } catch (err) {
    if (err instanceof OrganismError) throw new RequestMalformedError(`message.parts[data]: ${err.detail}`);
    throw err;
  }
}

/** A message of the thread as A2A parts: its payload as a data part, and as text when its type has one text field. */
function partsOf(organism: Organism, m: Message): Part[] {
  const meta = { payloadType: m.payloadType, from: m.from, to: m.to, messageId: m.id };
  const parts: Part[] = [{ content: { $case: 'data', value: m.payload }, mediaType: JSON_MEDIA, filename: '', metadata: meta }];
  const type = organism.registry.get(m.payloadType);
  const field = type ? textField(type) : null;
  const text = field ? m.payload[field] : undefined;
  if (typeof text === 'string') parts.push({ content: { $case: 'text', value: text }, mediaType: TEXT_MEDIA, filename: '', metadata: meta });
  return parts;
}

function agentMessage(taskId: string, contextId: string, parts: Part[], metadata?: Record<string, unknown>): A2aMessage {
  return { messageId: randomUUID(), taskId, contextId, role: Role.ROLE_AGENT, parts, metadata, extensions: [], referenceTaskIds: [] };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: TEXT_MEDIA, filename: '', metadata: undefined };
}

/** Tasks one process keeps in memory (per generation; the threads keep them all). */
export const TASKS_KEPT = 5_000;

/** A task running here: its bus, so a cancel can finish it. */
interface LiveTask {
  readonly bus: ExecutionEventBus;
  readonly contextId: string;
  done: boolean;
  stop(): void;
}

/**
 * Runs A2A tasks as organism threads: the task id is the thread id; the message is injected
 * into the listener; the thread's messages stream as `working` status updates; the first reply
 * to `api` is the task's artifact and completes it; a failed thread fails it, a killed one
 * cancels it.
 */
export class OrganismExecutor implements AgentExecutor {
  private readonly live = new Map<string, LiveTask>();

  constructor(
    private readonly organism: Organism,
    private readonly listener: string,
  ) {}

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request;
    const listener = a2aListener(this.organism, this.listener);
    if (!listener) throw new RequestMalformedError(`listener ${this.listener} is not served over A2A`);
    const { body } = injectOf(this.organism, listener, request.userMessage);
    const history = [...(request.task?.history ?? []), request.userMessage];
    if (!request.task)
      bus.publish({
        kind: 'task',
        data: {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history,
          metadata: { threadId: taskId },
        },
      });

    let settle: () => void = () => {};
    const finished = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const status = (state: TaskState, message?: A2aMessage): void => {
      bus.publish({ kind: 'statusUpdate', data: { taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined } });
    };
    const live: LiveTask = {
      bus,
      contextId,
      done: false,
      stop: () => {
        live.done = true;
        unsubscribe();
        this.live.delete(taskId);
        settle();
      },
    };
    const onUpdate = (u: ThreadUpdate): void => {
      if (live.done) return;
      if (u.kind === 'message') {
        if (u.message.from === 'api' && u.message.hops === 0) return; // the caller's own message
        status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, partsOf(this.organism, u.message), { organismEvent: 'message' }));
      } else if (u.kind === 'delta') {
        // A model's streamed text is not sent: the SDK keeps every status message in the task's
        // history, and a token each would grow it (and its per-update copies) without bound.
        return;
      } else if (u.kind === 'reply') {
        const parts = partsOf(this.organism, u.message);
        const artifact: Artifact = { artifactId: u.message.id, name: u.message.payloadType, description: `The reply of ${u.message.from}`, parts, metadata: undefined, extensions: [] };
        bus.publish({ kind: 'artifactUpdate', data: { taskId, contextId, artifact, append: false, lastChunk: true, metadata: undefined } });
        status(TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, parts));
        live.stop();
      } else {
        if (u.status === 'killed') status(TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, [textPart('the thread was killed')]));
        else if (u.status === 'error') status(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, [textPart(u.error ?? 'the thread failed')]));
        else status(TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, [textPart(`the thread completed without a reply from ${this.listener}`)]));
        live.stop();
      }
    };
    const unsubscribe = followThread(this.organism, taskId, onUpdate);
    this.live.set(taskId, live);
    try {
      await this.organism.inject(listener.name, body, { threadId: taskId, metadata: { a2aContextId: contextId } });
    } catch (err) {
      live.stop();
      throw err;
    }
    status(TaskState.TASK_STATE_WORKING);
    await finished;
  }

  /** tasks/cancel: kills the thread (its end cancels the task); a thread already gone is canceled at once. */
  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    await killQuietly(this.organism, taskId);
    const live = this.live.get(taskId);
    if (live && !live.done) {
      bus.publish({
        kind: 'statusUpdate',
        data: { taskId, contextId: live.contextId, status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined },
      });
      live.stop();
    }
  }
}

async function killQuietly(organism: Organism, threadId: string): Promise<void> {
  try {
    const thread = await organism.thread(threadId);
    if (thread && thread.status !== 'killed') await organism.killThread(threadId, 'a2a');
  } catch {
    // already finished or unknown: nothing to kill
  }
}

/**
 * The SDK's in-memory task store, with what it cannot know: a task whose process restarted
 * (or that ran in another process of a cluster) is read back from its thread, and a task the
 * SDK cancels without a running executor (no event bus here) has its thread killed.
 */
class ThreadTaskStore implements TaskStore {
  // Two generations of the SDK's in-memory store, so memory stays bounded on a long-running
  // server: past `keep` tasks the older generation is dropped (its tasks are read back from their threads).
  private current = new InMemoryTaskStore(() => 'organism');
  private previous = new InMemoryTaskStore(() => 'organism');
  private ids = new Set<string>();

  constructor(
    private readonly organism: Organism,
    private readonly keep = TASKS_KEPT,
  ) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    if (task.status?.state === TaskState.TASK_STATE_CANCELED) await killQuietly(this.organism, task.id);
    if (!this.ids.has(task.id)) {
      if (this.ids.size >= this.keep) {
        this.previous = this.current;
        this.current = new InMemoryTaskStore(() => 'organism');
        this.ids = new Set();
      }
      this.ids.add(task.id);
    }
    await this.current.save(task, context);
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const kept = (await this.current.load(taskId, context)) ?? (await this.previous.load(taskId, context));
    if (kept) return kept;
    const thread = await this.organism.thread(taskId).catch(() => null);
    if (!thread || thread.metadata['a2aContextId'] === undefined) return undefined;
    const state =
      thread.status === 'completed'
        ? TaskState.TASK_STATE_COMPLETED
        : thread.status === 'error'
          ? TaskState.TASK_STATE_FAILED
          : thread.status === 'killed'
            ? TaskState.TASK_STATE_CANCELED
            : TaskState.TASK_STATE_WORKING;
    return {
      id: taskId,
      contextId: thread.metadata['a2aContextId'] ?? '',
      status: { state, message: undefined, timestamp: new Date(thread.lastActivity).toISOString() },
      artifacts: [],
      history: [],
      metadata: { threadId: taskId },
    };
  }

  /** The most recent tasks of this process (up to `keep`); older ones are threads (`GET /api/v1/threads`). */
  list(params: Parameters<TaskStore['list']>[0], context: ServerCallContext) {
    return this.current.list(params, context);
  }
}

/** The thread a task's push notifications are journaled in (not the task's own: a killed thread takes no more messages). */
export const pushThreadOf = (taskId: string): string => `${taskId}.push`;

/**
 * Push notifications through the journal: each task update a client asked to be pushed is a
 * message to the built-in `system.a2a_push` listener (see organism/a2a-push.ts), which POSTs it
 * and is tried again with backoff until the client's URL answers 2xx; the message id is sent as
 * the idempotency key. The SDK's own sender posts once, from memory: a restart or a receiver
 * that is down loses the notification, which the issue does not allow (hence this one).
 */
class JournalPushSender implements PushNotificationSender {
  private readonly serializer = new V1PushNotificationSerializer();

  constructor(
    private readonly organism: Organism,
    private readonly store: PushNotificationStore,
  ) {}

  async send(response: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const p = response.payload;
    if (!p) return;
    const taskId = p.$case === 'task' ? p.value.id : p.value.taskId;
    if (!taskId) return;
    const configs = await this.store.load(taskId, context);
    if (configs.length === 0) return;
    const { body, contentType } = this.serializer.serialize(response, task);
    for (const config of configs) {
      const headers: Record<string, string> = {};
      if (config.token) headers['x-a2a-notification-token'] = config.token;
      if (config.authentication?.scheme) headers['authorization'] = `${config.authentication.scheme} ${config.authentication.credentials}`.trim();
      await this.organism.inject(A2A_PUSH_LISTENER, { url: config.url, taskId, body, contentType, headers: JSON.stringify(headers) }, { threadId: pushThreadOf(taskId), waitMs: 1_000 });
    }
  }
}

class TokenUser implements User {
  constructor(private readonly name: string) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.name;
  }
}

/** Validates the message against the listener before the SDK starts a task (a bad payload is a JSON-RPC error, not a failed task). */
class ListenerRequestHandler extends DefaultRequestHandler {
  constructor(
    private readonly check: (params: SendMessageRequest) => void,
    ...args: ConstructorParameters<typeof DefaultRequestHandler>
  ) {
    super(...args);
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    this.check(params);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    this.check(params);
    yield* super.sendMessageStream(params, context);
  }
}

/** One A2A server per exposed listener: the SDK's request handler and JSON-RPC transport over the organism. */
export class A2aServers {
  private readonly servers = new Map<string, { transport: JsonRpcTransportHandler; legacy: LegacyJsonRpcTransportHandler }>();
  private readonly store: ThreadTaskStore;
  private readonly buses = new DefaultExecutionEventBusManager(() => 'organism');
  private readonly pushConfigs = new InMemoryPushNotificationStore(() => 'organism');
  private readonly push: JournalPushSender;

  constructor(private readonly organism: Organism) {
    this.store = new ThreadTaskStore(organism);
    this.push = new JournalPushSender(organism, this.pushConfigs);
  }

  /** The JSON-RPC transport of a listener: v1.0, or v0.3 when `legacy`. */
  transport(listener: ListenerConfig, base: string, legacy: boolean): Pick<JsonRpcTransportHandler, 'handle'> {
    let server = this.servers.get(listener.name);
    if (!server) {
      const name = listener.name;
      const check = (params: SendMessageRequest): void => {
        const current = a2aListener(this.organism, name);
        if (!current) throw new RequestMalformedError(`listener ${name} is not served over A2A`);
        injectOf(this.organism, current, params.message);
      };
      const handler = new ListenerRequestHandler(
        check,
        agentCardOf(this.organism, listener, base),
        this.store,
        new OrganismExecutor(this.organism, name),
        this.buses,
        this.pushConfigs,
        this.push,
      );
      server = { transport: new JsonRpcTransportHandler(handler), legacy: new LegacyJsonRpcTransportHandler(handler) };
      this.servers.set(name, server);
    }
    return legacy ? server.legacy : server.transport;
  }

  context(principal: string, requestedVersion: string): ServerCallContext {
    return new ServerCallContext({ user: new TokenUser(principal), requestedVersion });
  }

  /** The JSON-RPC error body of a failure before a stream started. */
  static errorOf(err: unknown, legacy: boolean): unknown {
    return legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(err) : JsonRpcTransportHandler.mapToJSONRPCError(err);
  }
}

export type { StreamResponse };
