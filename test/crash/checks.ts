/**
 * The durability checks of the crash-safety workloads, shared by the crash test (on the
 * SQLite store after the run) and the chaos suite (through the HTTP API after every cycle,
 * on the store at the end). Each returns what it found wrong instead of asserting, so one
 * run reports every violation with its details.
 */
import type { FailureReason } from '../../src/core/delivery.js';
import { BUDGET_WARNING_TYPE, SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import type { BillingSummary, UsageHistoryQuery, UsageRangeQuery } from '../../src/core/usage.js';
import type { JournalEntry, JournalQuery, JournalStats } from '../../src/core/journal.js';
import type { Page } from '../../src/core/page.js';
import type { ThreadRecord, ThreadStatus } from '../../src/core/thread.js';
import type { UsageEvent } from '../../src/usage/types.js';
import type { EffectsView } from './effects.js';

/** What the checks read: a subset of the storage interfaces (the store itself, or the API). */
export interface DurabilitySource {
  readonly journal: {
    get(messageId: string): Promise<JournalEntry | null>;
    list(query: JournalQuery): Promise<Page<JournalEntry>>;
    stats(): Promise<JournalStats>;
  };
  readonly threads: { get(id: string): Promise<ThreadRecord | null> };
  readonly usage: {
    history(q: UsageHistoryQuery): Promise<Page<UsageEvent>>;
    billing(q: UsageRangeQuery): Promise<BillingSummary>;
  };
}

/** How one accepted message (a thread's root) must have ended. */
export interface Expectation {
  readonly threadId: string;
  readonly messageId: string;
  /** The root delivery: ACKED, or FAILED with this reason. */
  readonly root: 'ACKED' | { readonly failed: FailureReason };
  readonly threadStatus: ThreadStatus | readonly ThreadStatus[];
  /** Side effects the thread caused: exactly this many, or at most `max`. */
  readonly effects: number | { readonly max: number };
  /** FAILED deliveries the workload causes in this thread (any other failure is a violation). */
  readonly allowedFailures?: readonly FailureReason[];
  /** A FAILED delivery with one of these reasons must be in the thread. */
  readonly requiredFailure?: FailureReason;
}

export interface Violation {
  readonly check: string;
  readonly detail: string;
}

export interface DurabilityInput {
  readonly source: DurabilitySource;
  readonly effects: EffectsView;
  readonly expectations: readonly Expectation[];
  /** LLM agents whose every delivery makes exactly one call (scripted, always-valid replies). */
  readonly oneCallAgents: readonly string[];
  /** Token ceiling of a thread. */
  readonly ceiling: (threadId: string) => number;
  /** Limit usage checks to one orgId (the metadata of these threads), else all usage. */
  readonly orgId?: string;
}

const PAGE = 1000;
const NOTICES = new Set([SYSTEM_ERROR_TYPE, BUDGET_WARNING_TYPE]);

async function allPages<T>(fetch: (offset: number) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  for (;;) {
    const page = await fetch(out.length);
    out.push(...page.items);
    // A source may answer smaller pages than asked for (the API caps them): go on until total.
    if (page.items.length === 0 || out.length >= page.total) return out;
  }
}

/** Every check over the given threads; an empty list means all held. */
export async function checkDurability(input: DurabilityInput): Promise<Violation[]> {
  const { source, effects } = input;
  const out: Violation[] = [];
  const add = (check: string, detail: string) => out.push({ check, detail });

  const stats = await source.journal.stats();
  if (stats.counts.PENDING + stats.counts.DISPATCHED > 0) {
    add('journal-drained', `${stats.counts.PENDING} PENDING and ${stats.counts.DISPATCHED} DISPATCHED entries left with nothing to do`);
  }
  for (const v of effects.violations) add('acked-not-rerun', `${v.listener} ran again for ${v.messageId}, which the journal had ACKED`);

  const deliveries = new Map<string, JournalEntry>();
  for (const e of input.expectations) {
    const root = await source.journal.get(e.messageId);
    const want = e.root === 'ACKED' ? 'ACKED' : `FAILED (${e.root.failed})`;
    const got = root ? (root.state === 'FAILED' ? `FAILED (${root.failureReason})` : root.state) : 'missing';
    if (got !== want) add('accepted-ended', `message ${e.messageId} (thread ${e.threadId}) is ${got}, expected ${want}${root?.error ? `: ${root.error}` : ''}`);
    const thread = await source.threads.get(e.threadId);
    const statuses: readonly ThreadStatus[] = typeof e.threadStatus === 'string' ? [e.threadStatus] : e.threadStatus;
    if (!thread || !statuses.includes(thread.status)) {
      add('accepted-ended', `thread ${e.threadId} is ${thread?.status ?? 'missing'}, expected ${statuses.join(' or ')}${thread?.error ? ` (${thread.error})` : ''}`);
    }
    const entries = await allPages((offset) => source.journal.list({ threadId: e.threadId, limit: PAGE, offset, order: 'oldest' }));
    const allowed = new Set(e.allowedFailures ?? []);
    if (e.root !== 'ACKED') allowed.add(e.root.failed);
    for (const entry of entries) {
      deliveries.set(entry.message.id, entry);
      if (entry.state === 'PENDING' || entry.state === 'DISPATCHED') add('journal-drained', `${entry.message.to} delivery ${entry.message.id} of thread ${e.threadId} still ${entry.state}`);
      if (entry.state === 'FAILED' && !allowed.has(entry.failureReason!)) {
        add('unexpected-failure', `${entry.message.to} delivery ${entry.message.id} of thread ${e.threadId} FAILED (${entry.failureReason}): ${entry.error}`);
      }
    }
    if (e.requiredFailure && !entries.some((x) => x.state === 'FAILED' && x.failureReason === e.requiredFailure)) {
      add('accepted-ended', `thread ${e.threadId} has no delivery FAILED with ${e.requiredFailure} (${entries.length} entries)`);
    }
    const n = effects.effectsByThread.get(e.threadId) ?? 0;
    if (typeof e.effects === 'number' ? n !== e.effects : n > e.effects.max) {
      add('effects-once', `thread ${e.threadId} caused ${n} side effects, expected ${typeof e.effects === 'number' ? e.effects : `at most ${e.effects.max}`}`);
    }
  }

  // Usage: one persisted event per delivery of a one-call agent, none twice, none missing;
  // the billing rollup equals the sum of the events; no thread spent past its ceiling.
  const events = await allPages((offset) => source.usage.history({ orgId: input.orgId, limit: PAGE, offset }));
  const oneCall = new Set(input.oneCallAgents);
  const byMessage = new Map<string, number>();
  const byThread = new Map<string, number>();
  for (const ev of events) {
    byThread.set(ev.threadId, (byThread.get(ev.threadId) ?? 0) + ev.totalTokens);
    if (oneCall.has(ev.agentId)) byMessage.set(ev.messageId ?? '', (byMessage.get(ev.messageId ?? '') ?? 0) + 1);
  }
  for (const d of deliveries.values()) {
    // System notices (errors, budget warnings) are recorded for the agent without a call.
    if (!oneCall.has(d.message.to) || d.state !== 'ACKED' || NOTICES.has(d.message.payloadType)) continue;
    const n = byMessage.get(d.message.id) ?? 0;
    if (n !== 1) add('usage-once', `${d.message.to} delivery ${d.message.id} (thread ${d.message.threadId}) has ${n} usage events, expected 1`);
    byMessage.delete(d.message.id);
  }
  for (const [messageId, n] of byMessage) {
    const d = deliveries.get(messageId);
    // Only deliveries of the checked threads are known here; others belong to other scopes.
    if (d && n > 1) add('usage-once', `delivery ${messageId} (${d.state}) has ${n} usage events`);
  }
  const billing = await source.usage.billing({ orgId: input.orgId });
  const sum = events.reduce((n, ev) => n + ev.totalTokens, 0);
  if (billing.requestCount !== events.length || billing.totalTokens !== sum) {
    add(
      'usage-totals',
      `billing${input.orgId ? ` of ${input.orgId}` : ''} says ${billing.requestCount} requests / ${billing.totalTokens} tokens, the persisted events sum to ${events.length} / ${sum}`,
    );
  }
  const byOrg = new Map<string, { n: number; tokens: number }>();
  for (const ev of events) {
    const org = ev.metadata['orgId'];
    if (org === undefined) continue;
    const o = byOrg.get(org) ?? { n: 0, tokens: 0 };
    o.n++;
    o.tokens += ev.totalTokens;
    byOrg.set(org, o);
  }
  for (const [org, o] of byOrg) {
    const b = billing.byOrg[org];
    if (b?.requestCount !== o.n || b.totalTokens !== o.tokens) {
      add('usage-totals', `billing of org ${org} says ${b?.requestCount ?? 0} requests / ${b?.totalTokens ?? 0} tokens, its events sum to ${o.n} / ${o.tokens}`);
    }
  }
  for (const [threadId, tokens] of byThread) {
    const max = input.ceiling(threadId);
    if (tokens > max) add('thread-budget', `thread ${threadId} spent ${tokens} tokens, over its ceiling of ${max}`);
  }
  return out;
}
