import pg from 'pg';
import type { Message } from '../../src/core/message.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { newId } from '../../src/util/ids.js';

/** A journal entry for the cluster tests: an inject from the API, or a message `parent`'s listener sends. */
export const message = (threadId: string, to: string, text: string, parent: Message | null = null): Message => ({
  id: newId(),
  threadId,
  from: parent ? parent.to : 'api',
  to,
  payloadType: 'Text',
  payload: { text },
  timestamp: Date.now(),
  parentId: parent?.id ?? null,
  hops: parent ? parent.hops + 1 : 0,
  metadata: {},
  attempt: 1,
});

/** One LLM call's usage recorded by `m`'s delivery: `tokens` prompt tokens and one completion token, unpriced. */
export const usageOf = (m: Message, tokens: number): UsageEvent => ({
  id: newId(),
  timestamp: Date.now(),
  threadId: m.threadId,
  agentId: m.to,
  messageId: m.id,
  model: 'm',
  provider: 'p',
  promptTokens: tokens,
  completionTokens: 1,
  totalTokens: tokens + 1,
  cacheReadTokens: null,
  cacheWriteTokens: null,
  reasoningTokens: null,
  providerLatencyMs: 1,
  totalLatencyMs: 1,
  cost: null,
  metadata: {},
});

/**
 * The query strings this process sends while `work` runs that name one of `ids`, contain one of
 * `also`, or are a ROLLBACK (every pg client's query is watched, then put back).
 */
export async function sentFor<T>(ids: readonly string[], work: () => Promise<T>, also: readonly string[] = []): Promise<{ result: T; sent: string[] }> {
  const sent: string[] = [];
  const Client = pg.Client as unknown as { prototype: { query: (...args: unknown[]) => unknown } };
  const original = Client.prototype.query;
  Client.prototype.query = function (this: unknown, ...args: unknown[]) {
    const q = args[0];
    const text = typeof q === 'string' ? q : ((q as { text?: string }).text ?? '');
    if (text === 'ROLLBACK' || [...ids, ...also].some((s) => text.includes(s))) sent.push(text);
    return original.apply(this, args);
  };
  try {
    return { result: await work(), sent };
  } finally {
    Client.prototype.query = original;
  }
}
