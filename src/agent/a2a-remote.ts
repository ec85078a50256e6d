import { randomUUID } from 'node:crypto';
import { type Message as A2aMessage, type Part, Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { A2AError } from '@a2a-js/sdk/errors';
import type { ListenerConfig, RemoteA2aConfig } from '../config/types.js';
import type { Handler, HandlerContext, Outgoing } from '../core/handler.js';
import { Errors } from '../errors/catalogue.js';
import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import { abortableSleep, isRetryableStatus, retryDelay } from '../llm/retry.js';

/** What a remote agent's handler needs of the organism. */
export interface RemoteA2aDeps {
  readonly registry: () => PayloadRegistry;
  /** The payload types a listener accepts (empty for `api`): a text answer fills the text field of one of them. */
  readonly acceptedBy: (listener: string) => readonly PayloadType[];
  /** Live only (never journaled): the remote agent's streamed status text, as the organism's `llm_delta` events. */
  readonly onUpdate: (ctx: HandlerContext, taskId: string, text: string) => void;
  /** Read at call time (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  readonly fetch?: typeof fetch;
}

const TERMINAL_FAILURES = new Set([TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/** The one string field a text answer fills: the type's only field, or its only required one. */
function textField(type: PayloadType): string | null {
  const required = type.fields.filter((f) => !f.optional);
  const candidates = type.fields.length === 1 ? type.fields : required.length === 1 ? required : [];
  const field = candidates[0];
  return candidates.length === 1 && field && field.type.kind === 'string' ? field.name : null;
}

/** The HTTP status in an SDK client error (`Status: 503`, `...: 404`), or null (a network failure). */
function statusOf(err: unknown): number | null {
  const m = /(?:Status: |: )(\d{3})\b/.exec(err instanceof Error ? err.message : String(err));
  return m ? Number(m[1]) : null;
}

/** Worth another try, as for LLM providers: network failures and 408/409/429/5xx; never an A2A protocol error or an abort. */
function retryable(err: unknown, signal: AbortSignal): boolean {
  if (signal.aborted || err instanceof A2AError) return false;
  const status = statusOf(err);
  return status === null || isRetryableStatus(status);
}

/**
 * The handler of a `handler: a2a:<url>` listener: each delivery is a message to the remote A2A
 * agent (the SDK's client, JSON-RPC, streaming); its status texts are live events, its result
 * (the task's artifacts, or its answer message) the listener's reply. Failures are retried with
 * backoff up to `max_retries` as for LLM providers; the listener's `timeout_seconds` bounds it all.
 */
export function createRemoteA2aHandler(listener: ListenerConfig, remote: RemoteA2aConfig, deps: RemoteA2aDeps): Handler {
  let client: { token: string | null; client: Promise<Client> } | null = null;
  const fetchImpl = deps.fetch ?? fetch;
  const clientFor = (token: string | null): Promise<Client> => {
    if (client && client.token === token) return client.client;
    const authFetch: typeof fetch = (input, init) => {
      if (token === null) return fetchImpl(input, init);
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      return fetchImpl(input, { ...init, headers });
    };
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }) });
    const made = factory.createFromUrl(`${remote.url}/`);
    client = { token, client: made };
    // A card that could not be read is read again at the next try.
    made.catch(() => {
      if (client?.client === made) client = null;
    });
    return made;
  };

  return async (payload, ctx) => {
    const env = deps.env ?? process.env;
    const token = remote.tokenEnv ? (env[remote.tokenEnv] ?? null) : null;
    if (remote.tokenEnv && !token) throw Errors.REMOTE_AGENT_FAILED(remote.url, `the token variable ${remote.tokenEnv} (token_env) is unset`);
    for (let attempt = 1; ; attempt++) {
      try {
        return await callOnce(await clientFor(token), listener, payload, ctx, deps);
      } catch (err) {
        if (attempt > remote.maxRetries || !retryable(err, ctx.signal)) {
          if (ctx.signal.aborted) throw err;
          throw err instanceof Error && 'code' in err && typeof (err as { code: unknown }).code === 'string' && (err as { code: string }).code.startsWith('REMOTE_')
            ? err
            : Errors.REMOTE_AGENT_FAILED(remote.url, err instanceof Error ? err.message : String(err));
        }
        ctx.log.warn('remote A2A agent failed; retrying', { url: remote.url, attempt, error: err instanceof Error ? err.message : String(err) });
        await abortableSleep(retryDelay(attempt, err), ctx.signal);
      }
    }
  };
}

async function callOnce(client: Client, listener: ListenerConfig, payload: Record<string, unknown>, ctx: HandlerContext, deps: RemoteA2aDeps): Promise<Outgoing> {
  const registry = deps.registry();
  const type = registry.get(ctx.payloadType);
  const field = type ? textField(type) : null;
  const parts: Part[] = [{ content: { $case: 'data', value: payload }, mediaType: 'application/json', filename: '', metadata: { payloadType: ctx.payloadType } }];
  if (field && typeof payload[field] === 'string') parts.push({ content: { $case: 'text', value: payload[field] as string }, mediaType: 'text/plain', filename: '', metadata: undefined });
  const message: A2aMessage = {
    messageId: randomUUID(),
    // One remote context per organism thread: the remote agent sees one conversation.
    contextId: ctx.threadId,
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: { organismThreadId: ctx.threadId, organismMessageId: ctx.messageId, from: ctx.from, to: listener.name },
    extensions: [],
    referenceTaskIds: [],
  };
  let result: Part[] | null = null;
  let state: TaskState | null = null;
  let detail = '';
  let taskId = '';
  const read = (event: StreamResponse): void => {
    const p = event.payload;
    if (!p) return;
    if (p.$case === 'message') result = p.value.parts;
    else if (p.$case === 'task') {
      taskId = p.value.id;
      state = p.value.status?.state ?? state;
      const artifactParts = p.value.artifacts.flatMap((a) => a.parts);
      if (artifactParts.length > 0) result = artifactParts;
    } else if (p.$case === 'artifactUpdate') {
      result = p.value.append && result ? [...result, ...(p.value.artifact?.parts ?? [])] : (p.value.artifact?.parts ?? []);
    } else if (p.$case === 'statusUpdate') {
      taskId = p.value.taskId;
      state = p.value.status?.state ?? state;
      const text = (p.value.status?.message?.parts ?? []).flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('\n');
      if (text) {
        detail = text;
        deps.onUpdate(ctx, taskId, text);
      }
      if (state === TaskState.TASK_STATE_COMPLETED && !result && p.value.status?.message) result = p.value.status.message.parts;
    }
  };
  for await (const event of client.sendMessageStream({ tenant: '', message, configuration: undefined, metadata: undefined }, { signal: ctx.signal })) read(event);
  if (state !== null && TERMINAL_FAILURES.has(state)) throw Errors.REMOTE_AGENT_FAILED(listener.name, `task ${taskId} ended ${TaskState[state]}${detail ? `: ${detail}` : ''}`);
  if (!result) throw Errors.REMOTE_AGENT_FAILED(listener.name, `task ${taskId} ended without a result`);
  return replyOf(result, ctx, registry, deps);
}

/** The reply a remote result becomes: its data part (a payload, or `{"Type": {...}}`), else its text in the asker's one-text-field type. */
function replyOf(parts: readonly Part[], ctx: HandlerContext, registry: PayloadRegistry, deps: RemoteA2aDeps): Outgoing {
  const data = parts.find((p) => p.content?.$case === 'data');
  if (data?.content?.$case === 'data' && typeof data.content.value === 'object' && data.content.value !== null && !Array.isArray(data.content.value)) {
    const value = data.content.value as Record<string, unknown>;
    const keys = Object.keys(value);
    const named = typeof data.metadata?.['payloadType'] === 'string' ? (data.metadata['payloadType'] as string) : undefined;
    if (keys.length === 1 && registry.has(keys[0] as string) && typeof value[keys[0] as string] === 'object')
      return { payloadType: keys[0] as string, payload: value[keys[0] as string] as Record<string, unknown> };
    return named && registry.has(named) ? { payloadType: named, payload: value } : { payload: value };
  }
  const text = parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
  const candidates = ctx.from === 'api' ? registry.defs().flatMap((d) => registry.get(d.name) ?? []) : deps.acceptedBy(ctx.from);
  const type = candidates.find((t) => textField(t) !== null);
  if (!type) return { payload: { text } };
  return { payloadType: type.name, payload: { [textField(type) as string]: text } };
}
