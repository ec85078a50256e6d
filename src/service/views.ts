import type { EarlierAttempt, RecoveryReport, JournalEntry, JournalStats } from '../core/journal.js';
import type { InboxClosed, InboxItem } from '../core/inbox.js';
import type { ThreadErasure, ThreadHold, ThreadRecord } from '../core/thread.js';
import type { ThreadUsageTotals, UsageCountersRow } from '../core/usage.js';
import { zeroCounters } from '../usage/tracker.js';
import type { AgentInfo } from '../organism/views.js';
import type { Message } from '../core/message.js';
import type { DeliveryState } from '../core/journal.js';
import { iso, isoOrNull } from './time.js';
import { forkedFromOf } from '../organism/fork.js';
import { FORK_CONFIG } from '../organism/fork-configs.js';

/** Runtime records -> wire shapes (camelCase, ISO 8601 times). One place, so every route agrees. */

export function listenerView(a: AgentInfo) {
  return {
    name: a.name,
    description: a.description,
    isAgent: a.isAgent,
    peers: [...a.peers],
    payloadClass: a.payloadClass,
    ...payloadClasses(a),
    state: a.state,
    currentThread: a.currentThread,
    queueDepth: a.queueDepth,
    lastActivity: isoOrNull(a.lastActivity),
    messageCount: a.messageCount,
    model: a.model,
  };
}

export function listenerConfigView(a: AgentInfo) {
  return { name: a.name, description: a.description, isAgent: a.isAgent, peers: [...a.peers], payloadClass: a.payloadClass, ...payloadClasses(a) };
}

/** `payloadClasses` for a listener of several types only: a single-type listener's view is as it always was. */
function payloadClasses(a: AgentInfo): { payloadClasses?: string[] } {
  return a.payloadClasses ? { payloadClasses: [...a.payloadClasses] } : {};
}

export function threadView(t: ThreadRecord) {
  return {
    id: t.id,
    status: t.status,
    participants: [...t.participants],
    messageCount: t.messageCount,
    createdAt: iso(t.createdAt),
    lastActivity: iso(t.lastActivity),
    error: t.error,
    ...(t.hold !== undefined ? { hold: t.hold && holdView(t.hold) } : {}),
    forkedFrom: forkedFromOf(t.metadata),
    forkConfig: t.metadata[FORK_CONFIG] ?? null,
  };
}

export function holdView(h: ThreadHold) {
  return {
    held: h.held,
    rule: h.rule,
    reason: h.reason,
    evidence: h.evidence ?? null,
    by: h.by,
    heldAt: iso(h.heldAt),
    resumedAt: isoOrNull(h.resumedAt),
    resumedBy: h.resumedBy,
    limitFactor: h.limitFactor,
  };
}

export function erasureView(e: ThreadErasure) {
  return { threadId: e.threadId, erasedBy: e.by, erasedAt: iso(e.at), messages: e.messages, llmCalls: e.llmCalls, toolCalls: e.toolCalls, events: e.events };
}

export function messageView(m: Message, deliveryState: DeliveryState) {
  return {
    id: m.id,
    threadId: m.threadId,
    from: m.from,
    to: m.to,
    payloadType: m.payloadType,
    payload: m.payload,
    timestamp: iso(m.timestamp),
    parentId: m.parentId,
    deliveryState,
  };
}

export function entryMessageView(e: JournalEntry) {
  return messageView(e.message, e.state);
}

export function journalEntryView(e: JournalEntry) {
  return {
    ...messageView(e.message, e.state),
    metadata: { ...e.message.metadata },
    ...deliveryTimesView(e),
    // Asks only (builtin:human): when it expires, who closed it and their note.
    ...(e.expiresAt !== undefined ? { expiresAt: isoOrNull(e.expiresAt) } : {}),
    ...(e.closedBy !== undefined ? { closedBy: e.closedBy, closedNote: e.closedNote ?? null } : {}),
  };
}

/** A journal entry's attempts, times and failure (the journal's entries and the waterfall's deliveries). */
export function deliveryTimesView(e: JournalEntry) {
  return {
    attempts: e.attempts,
    createdAt: iso(e.createdAt),
    dispatchedAt: isoOrNull(e.dispatchedAt),
    ackedAt: isoOrNull(e.ackedAt),
    failedAt: isoOrNull(e.failedAt),
    failureReason: e.failureReason,
    error: e.error,
    earlierAttempts: e.earlierAttempts.map(earlierAttemptView),
    nextAttemptAt: isoOrNull(e.nextAttemptAt ?? null),
  };
}

export function earlierAttemptView(a: EarlierAttempt) {
  return {
    attempt: a.attempt,
    dispatchedAt: isoOrNull(a.dispatchedAt),
    endedAt: iso(a.endedAt),
    outcome: a.outcome,
    failureReason: a.failureReason,
    error: a.error,
    requeuedAt: iso(a.requeuedAt),
  };
}

export function recoveryView(r: RecoveryReport | null) {
  if (!r) return null;
  return {
    bootId: r.bootId,
    at: iso(r.at),
    durationMs: r.durationMs,
    pending: r.pending,
    redelivered: r.redelivered,
    failedMaxAttempts: r.failedMaxAttempts,
    pausedAgents: [...(r.pausedAgents ?? [])],
  };
}

export function journalStatsView(s: JournalStats) {
  return {
    counts: { ...s.counts },
    oldestPendingAgeMs: s.oldestPendingAgeMs,
    lastRecovery: recoveryView(s.lastRecovery),
  };
}

/** A thread's usage (zeros when it made no LLM call). */
export function threadUsageView(u: ThreadUsageTotals | null) {
  const counts = (c: UsageCountersRow) => ({
    totalTokens: c.totalTokens,
    promptTokens: c.promptTokens,
    completionTokens: c.completionTokens,
    requestCount: c.requestCount,
    totalCost: c.totalCost,
    unpricedRequests: c.unpricedRequests,
  });
  if (!u) return { ...counts(zeroCounters()), byModel: {} };
  return { ...counts(u), byModel: Object.fromEntries(Object.entries(u.byModel).map(([model, c]) => [model, counts(c)])) };
}

/** An open inbox item as the API shows it (times as ISO 8601). */
export function inboxItemView(item: InboxItem) {
  const { proposedCalls, ...rest } = item;
  return {
    ...rest,
    ...(proposedCalls ? { proposedCalls: proposedCalls.map((c) => ({ ...c })) } : {}),
    createdAt: iso(item.createdAt),
    expiresAt: item.expiresAt === null ? null : iso(item.expiresAt),
  };
}

/** A closed inbox item, as the `inbox_closed` frame tells it. */
export function inboxClosedView(c: InboxClosed) {
  return { ...c, at: iso(c.at) };
}
