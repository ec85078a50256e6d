import type { OrganismEvent, OrganismEventType } from '../../events/types.js';
import type { UsageEvent } from '../../usage/types.js';
import { iso } from '../time.js';
import { messageView, threadView } from '../views.js';

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

/** `seq` increases across the whole process (both channels share it). */
export function nextSeq(): number {
  return ++lastSeq;
}

export function currentSeq(): number {
  return lastSeq;
}

/** Builds `{event, seq, timestamp, ...body}` as a JSON string. */
export function frameJson(event: string, body: Record<string, unknown>, seq = nextSeq()): { seq: number; json: string } {
  return { seq, json: JSON.stringify({ event, seq, timestamp: new Date().toISOString(), ...body }) };
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

/** Maps a runtime event to its wire frame (dates as ISO strings: always serializable). */
export function toFrame(e: OrganismEvent): Frame {
  const meta = (threadId: string | null, agents: readonly string[], payloadType: string | null = null, isMessage = false): FrameMeta => ({
    event: e.type,
    threadId,
    agents,
    payloadType,
    isMessage,
  });
  let body: Record<string, unknown>;
  let m: FrameMeta;
  switch (e.type) {
    case 'message':
      body = { message: messageView(e.message, e.state) };
      m = meta(e.message.threadId, [e.message.from, e.message.to], e.message.payloadType, true);
      break;
    case 'journal_failed':
      body = { message: messageView(e.message, 'FAILED'), reason: e.reason, error: e.error };
      m = meta(e.message.threadId, [e.message.from, e.message.to], e.message.payloadType);
      break;
    case 'agent_state':
      body = { agent: e.agent, state: e.state, currentThread: e.currentThread };
      m = meta(e.currentThread, [e.agent]);
      break;
    case 'thread_created':
    case 'thread_updated':
      body = { thread: threadView(e.thread) };
      m = meta(e.thread.id, e.thread.participants);
      break;
    case 'usage':
      body = { usage: usageView(e.usage) };
      m = meta(e.usage.threadId, [e.usage.agentId]);
      break;
    case 'budget_warning':
      body = {
        threadId: e.threadId,
        agent: e.agent,
        severity: e.severity,
        threshold: e.threshold,
        percentUsed: e.percentUsed,
        tokensUsed: e.tokensUsed,
        tokensRemaining: e.tokensRemaining,
        maxTokens: e.maxTokens,
      };
      m = meta(e.threadId, [e.agent]);
      break;
    case 'peer_denied':
      body = { from: e.from, to: e.to, threadId: e.threadId, messageId: e.messageId, reason: e.reason };
      m = meta(e.threadId, [e.from, e.to]);
      break;
    case 'reload':
      body = { success: e.result.success, added: e.result.added, removed: e.result.removed, updated: e.result.updated, error: e.result.error };
      m = meta(null, []);
      break;
    case 'organism_status':
      body = { status: e.status };
      m = meta(null, []);
      break;
  }
  const { seq, json } = frameJson(e.type satisfies OrganismEventType, body);
  return { seq, meta: m, json };
}
