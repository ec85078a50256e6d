import type { Redactor } from '../../util/pii.js';
import type { OrganismEvent, OrganismEventType } from '../../events/types.js';
import type { UsageEvent } from '../../usage/types.js';
import { iso } from '../time.js';
import { erasureView, holdView, inboxClosedView, inboxItemView, messageView, threadView } from '../views.js';
import { workerView } from '../worker-view.js';

/** What filters look at, beside the frame itself. */
export interface FrameMeta {
  readonly event: string;
  readonly threadId: string | null;
  /** Listeners the frame concerns (a message: sender and receiver). */
  readonly agents: readonly string[];
  readonly payloadType: string | null;
  readonly isMessage: boolean;
}

/** A server frame, serialized once and shared by every client that gets it. */
export interface Frame {
  readonly seq: number;
  readonly meta: FrameMeta;
  readonly json: string;
}

let lastSeq = 0;

/** `seq` increases across the whole process (both channels and every plugin instance share it). */
export function nextSeq(): number {
  return ++lastSeq;
}

export function currentSeq(): number {
  return lastSeq;
}

/**
 * JSON that never throws: payloads come from handlers and may hold values JSON.stringify
 * refuses or mangles (BigInt, cycles, invalid dates); the original broke on such dates.
 */
export function safeStringify(value: unknown): string {
  // Plain JSON.stringify gives the same text for everything it accepts (invalid dates become
  // null, functions and symbols are dropped) at a fraction of a replacer's cost; only what it
  // refuses (BigInt, cycles) takes the slow path.
  try {
    return JSON.stringify(value);
  } catch {
    return stringifyRefused(value);
  }
}

function stringifyRefused(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, function (this: unknown, key: string, v: unknown) {
    // Date#toJSON already ran for valid dates; an invalid one arrives as null or as the Date itself.
    const raw = (this as Record<string, unknown> | null)?.[key];
    if (raw instanceof Date) return Number.isNaN(raw.getTime()) ? null : raw.toISOString();
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'function' || typeof v === 'symbol') return undefined;
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[Circular]';
      seen.add(v);
    }
    return v;
  });
}

/** Builds `{event, seq, timestamp, ...body}` as a JSON string. */
export function frameJson(event: string, body: Record<string, unknown>, seq = nextSeq()): { seq: number; json: string } {
  return { seq, json: safeStringify({ event, seq, timestamp: new Date().toISOString(), ...body }) };
}

export function usageView(u: UsageEvent) {
  return {
    id: u.id,
    timestamp: iso(u.timestamp),
    threadId: u.threadId,
    agentId: u.agentId,
    messageId: u.messageId,
    model: u.model,
    provider: u.provider,
    promptTokens: u.promptTokens,
    completionTokens: u.completionTokens,
    totalTokens: u.totalTokens,
    cacheReadTokens: u.cacheReadTokens,
    cacheWriteTokens: u.cacheWriteTokens,
    reasoningTokens: u.reasoningTokens,
    providerLatencyMs: u.providerLatencyMs,
    totalLatencyMs: u.totalLatencyMs,
    cost: u.cost,
    metadata: u.metadata,
  };
}

function metaOf(e: OrganismEvent): FrameMeta {
  const meta = (threadId: string | null, agents: readonly string[], payloadType: string | null = null, isMessage = false): FrameMeta => ({
    event: e.type,
    threadId,
    agents,
    payloadType,
    isMessage,
  });
  switch (e.type) {
    case 'message':
      return meta(e.message.threadId, [e.message.from, e.message.to], e.message.payloadType, true);
    case 'journal_failed':
      return meta(e.message.threadId, [e.message.from, e.message.to], e.message.payloadType);
    case 'agent_state':
      return meta(e.currentThread, [e.agent]);
    case 'thread_created':
    case 'thread_updated':
      return meta(e.thread.id, e.thread.participants);
    case 'usage':
      return meta(e.usage.threadId, [e.usage.agentId]);
    case 'budget_warning':
      return meta(e.threadId, [e.agent]);
    case 'peer_denied':
      return meta(e.threadId, [e.from, e.to]);
    case 'llm_delta':
      return meta(e.threadId, [e.agent]);
    case 'inbox_opened':
      return meta(e.item.threadId, [e.item.listener, e.item.from]);
    case 'inbox_closed':
      return meta(e.closed.threadId, [e.closed.listener]);
    case 'thread_held':
    case 'thread_resumed':
    case 'thread_erased':
      return meta(e.threadId, []);
    case 'loop_detected':
      return meta(e.threadId, [...new Set(e.edges.flatMap((x) => [x.from, x.to]))]);
    case 'reload':
    case 'organism_status':
    case 'worker':
    case 'deliveries_taken_back':
      return meta(null, []);
  }
}

function bodyOf(e: OrganismEvent): Record<string, unknown> {
  switch (e.type) {
    case 'message':
      return { message: messageView(e.message, e.state) };
    case 'journal_failed':
      return { message: messageView(e.message, 'FAILED'), reason: e.reason, error: e.error };
    case 'agent_state':
      return { agent: e.agent, state: e.state, currentThread: e.currentThread };
    case 'thread_created':
    case 'thread_updated':
      return { thread: threadView(e.thread) };
    case 'usage':
      return { usage: usageView(e.usage) };
    case 'budget_warning': {
      // The event holds nothing but the warning (all plain values): the frame is the event.
      const { type: _type, ...warning } = e;
      return warning;
    }
    case 'peer_denied':
      return { from: e.from, to: e.to, threadId: e.threadId, messageId: e.messageId, reason: e.reason };
    case 'llm_delta':
      return { threadId: e.threadId, messageId: e.messageId, agent: e.agent, callId: e.callId, text: e.text };
    case 'reload':
      return {
        success: e.result.success,
        added: e.result.added,
        removed: e.result.removed,
        updated: e.result.updated,
        updatedFields: e.result.updatedFields,
        changed: e.result.changed,
        restartRequired: e.result.restartRequired,
        error: e.result.error,
      };
    case 'organism_status':
      return { status: e.status };
    case 'worker':
      return { change: e.change, worker: workerView(e.worker) };
    case 'deliveries_taken_back':
      return { worker: e.worker, name: e.name, retried: e.retried, failed: e.failed };
    case 'inbox_opened':
      return { item: inboxItemView(e.item) };
    case 'inbox_closed':
      return inboxClosedView(e.closed);
    case 'thread_held':
    case 'thread_resumed':
      return { threadId: e.threadId, hold: holdView(e.hold) };
    case 'loop_detected':
      return { threadId: e.threadId, rule: e.rule, edges: e.edges.map((x) => ({ from: x.from, to: x.to })), evidence: e.evidence, messageId: e.messageId };
    case 'thread_erased':
      return { threadId: e.threadId, erasure: erasureView(e.erasure) };
  }
}

/** Maps a runtime event to its wire frame (times as ISO 8601 UTC strings). */
export function toFrame(e: OrganismEvent, redactor?: Redactor): Frame {
  let body: Record<string, unknown>;
  try {
    body = bodyOf(e);
  } catch {
    // A record the views cannot format (e.g. an invalid time): send it raw rather than lose it.
    const { type: _type, ...raw } = e;
    body = { ...raw, unformatted: true };
  }
  // privacy.redact: every text of the frame (live deltas were redacted as they streamed).
  if (redactor?.active && e.type !== 'llm_delta') body = redactor.value(body);
  const { seq, json } = frameJson(e.type satisfies OrganismEventType, body);
  return { seq, meta: metaOf(e), json };
}
