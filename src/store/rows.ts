import type { ApprovalState } from '../core/approval.js';
/** Row shapes shared by the SQL stores (SQLite and PostgreSQL keep the same columns) and their mapping to domain objects. */
import type { FailureReason } from '../core/delivery.js';
import type { Message } from '../core/message.js';
import type { UsageEvent } from '../usage/types.js';
import type { DeliveryState, EarlierAttempt, JournalEntry } from '../core/journal.js';
import { jsonEscaped } from '../core/search.js';

export interface JournalRow {
  id: string;
  thread_id: string;
  sender: string;
  recipient: string;
  payload_type: string;
  payload: string;
  metadata: string;
  hops: number;
  parent_id: string | null;
  msg_timestamp: number;
  attempt: number;
  state: DeliveryState;
  attempts: number;
  created_at: number;
  dispatched_at: number | null;
  acked_at: number | null;
  failed_at: number | null;
  failure_reason: string | null;
  error: string | null;
  trace_context: string | null;
  /** JSON array of EarlierAttempt; null until the entry is first sent again. */
  earlier_attempts: string | null;
  /** A PENDING retry's backoff: not delivered before this time (ms); null otherwise (absent before the column existed). */
  next_attempt_at?: number | null;
  /** Asks (builtin:human): when it expires, who closed it and their note (columns added by a later migration). */
  expires_at?: number | string | null;
  closed_by?: string | null;
  closed_note?: string | null;
  /** A delivery stopped for approval: its ApprovalState as JSON (column added by a later migration). */
  approval?: string | null;
}

export function messageOf(r: JournalRow): Message {
  return {
    id: r.id,
    threadId: r.thread_id,
    from: r.sender,
    to: r.recipient,
    payloadType: r.payload_type,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    timestamp: r.msg_timestamp,
    parentId: r.parent_id,
    hops: r.hops,
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    attempt: r.attempt,
    ...(r.trace_context ? { traceContext: r.trace_context } : {}),
  };
}

/** A PENDING entry as recovery hands it back: with its retry's `notBefore` when it waits out a backoff. */
export function pendingMessageOf(r: JournalRow): Message {
  const m = messageOf(r);
  return r.next_attempt_at != null ? { ...m, notBefore: Number(r.next_attempt_at) } : m;
}

export function entryOf(r: JournalRow): JournalEntry {
  return {
    message: messageOf(r),
    state: r.state,
    attempts: r.attempts,
    createdAt: r.created_at,
    dispatchedAt: r.dispatched_at,
    ackedAt: r.acked_at,
    failedAt: r.failed_at,
    failureReason: r.failure_reason as FailureReason | null,
    error: r.error,
    earlierAttempts: r.earlier_attempts ? (JSON.parse(r.earlier_attempts) as EarlierAttempt[]) : [],
    nextAttemptAt: r.state === 'PENDING' && r.next_attempt_at != null ? Number(r.next_attempt_at) : null,
    // Only on asks: the entries of every other delivery keep their shape.
    ...(r.expires_at != null ? { expiresAt: Number(r.expires_at) } : {}),
    ...(r.closed_by != null ? { closedBy: r.closed_by, closedNote: r.closed_note ?? null } : {}),
    ...(r.approval != null ? { approval: JSON.parse(r.approval) as ApprovalState } : {}),
  };
}

export interface UsageRow {
  id: string;
  ts: number;
  thread_id: string;
  agent_id: string;
  message_id: string | null;
  model: string;
  provider: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  provider_latency_ms: number;
  total_latency_ms: number;
  cost: number | null;
  org_id: string;
  user_id: string | null;
  metadata: string;
}

export function usageOf(r: UsageRow): UsageEvent {
  return {
    id: r.id,
    timestamp: r.ts,
    threadId: r.thread_id,
    agentId: r.agent_id,
    messageId: r.message_id,
    model: r.model,
    provider: r.provider,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    totalTokens: r.total_tokens,
    cacheReadTokens: r.cache_read_tokens,
    cacheWriteTokens: r.cache_write_tokens,
    reasoningTokens: r.reasoning_tokens,
    providerLatencyMs: r.provider_latency_ms,
    totalLatencyMs: r.total_latency_ms,
    cost: r.cost,
    metadata: JSON.parse(r.metadata) as Record<string, string>,
  };
}

/** A LIKE pattern matching values that contain `text` literally (`%`, `_` and the escape `\` escaped; use with ESCAPE '\'). */
export function likeContaining(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The two LIKE patterns of a text search: in the payload's JSON (where quotes and backslashes are escaped), in the error. */
export function textParams(text: string): [string, string] {
  return [likeContaining(jsonEscaped(text)), likeContaining(text)];
}
