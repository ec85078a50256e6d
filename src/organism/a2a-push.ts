import type { LoadedOrganism, ResolvedListener } from '../config/types.js';
import type { Handler } from '../core/handler.js';
import { Errors } from '../errors/catalogue.js';
import { definePayload } from '../payload/define.js';
import type { PayloadTypeDef } from '../payload/types.js';

/**
 * A2A push notifications (issue 31) go through the journal: each one is a message to this
 * built-in listener, whose handler POSTs it to the client's URL. The journal makes it certified:
 * kept across restarts, tried again with backoff until the receiver answers 2xx (at least once),
 * the message id sent as the idempotency key. Present only in organisms with an `expose.a2a` listener.
 */
export const A2A_PUSH_LISTENER = 'system.a2a_push';
export const A2A_PUSH_TYPE = 'A2aPushNotification';

export const A2A_PUSH_DEF: PayloadTypeDef = definePayload(
  A2A_PUSH_TYPE,
  {
    url: { type: 'string', description: "The client's push notification URL" },
    taskId: { type: 'string', description: 'The A2A task (organism thread) it is about' },
    body: { type: 'string', description: 'The notification (a StreamResponse, JSON)' },
    contentType: { type: 'string', description: 'Its media type' },
    headers: { type: 'string', description: 'Headers the client asked for (its token, its authentication), JSON' },
  },
  { description: 'An A2A push notification on its way to the client' },
);

/** Tries of one notification: about 40 minutes of backoff (1 s doubling, at most 5 min) before it fails. */
const PUSH_RETRY = { maxAttempts: 12, backoff: 'exponential', initialSeconds: 1, maxSeconds: 300 } as const;
const PUSH_TIMEOUT_SECONDS = 15;

const pushHandler =
  (fetchImpl: typeof fetch): Handler =>
  async (payload, ctx) => {
    const headers = { ...(JSON.parse(String(payload['headers'] ?? '{}')) as Record<string, string>), 'content-type': String(payload['contentType']), 'idempotency-key': ctx.messageId };
    const res = await fetchImpl(String(payload['url']), { method: 'POST', headers, body: String(payload['body']), signal: ctx.signal });
    await res.arrayBuffer().catch(() => undefined);
    // A failure is thrown: the journal tries again with backoff (the listener's retry policy).
    if (!res.ok) throw Errors.REMOTE_AGENT_FAILED(String(payload['url']), `push notification answered ${res.status}`);
  };

function pushListener(fetchImpl: typeof fetch): ResolvedListener {
  return {
    config: {
      name: A2A_PUSH_LISTENER,
      description: 'A2A push notifications to the clients that asked for them (journaled, retried with backoff)',
      agent: false,
      peers: [],
      payload: A2A_PUSH_TYPE,
      handlerRef: 'builtin:a2a-push',
      prompt: null,
      model: null,
      maxOutputTokens: 1,
      timeoutSeconds: PUSH_TIMEOUT_SECONDS,
      maxMessagesPerReply: null,
      retry: PUSH_RETRY,
    },
    handler: pushHandler(fetchImpl),
    handlerVersion: 'builtin:a2a-push',
  };
}

/** What the pump runs: the configuration, plus the push listener and its payload type when some listener is served over A2A. */
export function withA2aPush(loaded: LoadedOrganism, fetchImpl: typeof fetch = fetch): Pick<LoadedOrganism, 'listeners' | 'payloadTypes'> {
  if (!loaded.config.listeners.some((l) => l.expose?.a2a)) return loaded;
  return { listeners: [...loaded.listeners, pushListener(fetchImpl)], payloadTypes: [...loaded.payloadTypes, A2A_PUSH_DEF] };
}
