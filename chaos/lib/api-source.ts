/**
 * The durability checks' view of the organism through its control API (test/crash/checks.ts
 * reads the store the same way at the end of a run): journal, threads and usage as served.
 */
import type { DurabilitySource } from '../../test/crash/checks.js';
import type { BillingSummary } from '../../src/core/usage.js';
import type { DeliveryState, JournalEntry, JournalStats } from '../../src/core/journal.js';
import type { Page } from '../../src/core/page.js';
import type { ThreadRecord } from '../../src/core/thread.js';
import type { FailureReason } from '../../src/core/delivery.js';
import type { Message } from '../../src/core/message.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { type Api, ApiError } from './api.js';

interface EntryView extends Omit<Message, 'hops'> {
  readonly deliveryState: DeliveryState;
  readonly attempts: number;
  readonly failureReason: FailureReason | null;
  readonly error: string | null;
}

function entry(v: EntryView): JournalEntry {
  return {
    message: v as unknown as Message,
    state: v.deliveryState,
    attempts: v.attempts,
    createdAt: 0,
    dispatchedAt: null,
    ackedAt: null,
    failedAt: null,
    failureReason: v.failureReason,
    error: v.error,
    earlierAttempts: [],
  };
}

async function orNull<T>(get: () => Promise<T>): Promise<T | null> {
  try {
    return await get();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

const q = (params: Record<string, string | number | undefined>) =>
  Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

export function apiSource(api: Api): DurabilitySource {
  return {
    journal: {
      get: (id) => orNull(async () => entry(await api.json<EntryView>('GET', `/api/v1/journal/${id}`))),
      async list(query) {
        const page = await api.json<{ entries: EntryView[]; total: number }>(
          'GET',
          `/api/v1/journal?${q({ threadId: query.threadId, agent: query.agent, state: query.state, limit: Math.min(query.limit, 100), offset: query.offset })}`,
        );
        return { items: page.entries.map(entry), total: page.total } satisfies Page<JournalEntry>;
      },
      stats: () => api.json<JournalStats>('GET', '/api/v1/journal/stats'),
    },
    threads: { get: (id) => orNull(() => api.json<ThreadRecord>('GET', `/api/v1/threads/${id}`)) },
    usage: {
      async history(query) {
        const page = await api.json<{ events: UsageEvent[]; total: number }>(
          'GET',
          `/api/v1/usage/history?${q({ orgId: query.orgId, agentId: query.agentId, limit: Math.min(query.limit, 1000), offset: query.offset })}`,
        );
        return { items: page.events, total: page.total };
      },
      billing: (query) => api.json<BillingSummary>('GET', `/api/v1/usage/billing?${q({ orgId: query.orgId })}`),
    },
  };
}
