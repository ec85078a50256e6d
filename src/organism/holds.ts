import type { OperatorStateStore } from '../core/storage.js';
import type { HoldRule, ThreadHold, ThreadRecord } from '../core/thread.js';
import { Errors } from '../errors/catalogue.js';
import type { EventBus } from '../events/bus.js';
import type { Logger } from '../util/logger.js';

/** What holds need of the organism. */
export interface HoldsHost {
  readonly operator: OperatorStateStore;
  readonly bus: EventBus;
  readonly logger: Logger;
  readonly now: () => number;
  /** The thread's record as it stands (no hold overlay). */
  thread(id: string): Promise<ThreadRecord | null>;
  /** Tells the pump (its queue) that a thread's deliveries are held or may go on. */
  setHeld(threadId: string, held: boolean): void;
}

export interface HoldRequest {
  readonly rule: HoldRule;
  readonly reason: string;
  readonly evidence: unknown;
  readonly by: string;
}

/** Unfinished: a hold applies (and erasure waits). */
const UNFINISHED = new Set(['active', 'waiting']);

/**
 * Held threads (issue 30): an operator's pause or the loop breaker's hold keeps a thread's
 * deliveries PENDING (nothing in flight is interrupted) until it is resumed. The hold is written
 * to the store before the pump holds the thread (a restart, and every process of a cluster,
 * see it: the cluster's claim passes over held threads in SQL); a resume keeps the row, with
 * the time it was resumed (the loop breaker counts from there) and the limits it raised.
 */
export class ThreadHolds {
  constructor(private readonly host: HoldsHost) {}

  /** At start: the held threads' deliveries wait again (embedded; a cluster's claim reads the table). */
  async load(): Promise<number> {
    const held = await this.host.operator.heldThreads();
    for (const h of held) this.host.setHeld(h.threadId, true);
    return held.length;
  }

  /** Holds a thread (idempotent: a held thread keeps its first hold). */
  async hold(threadId: string, request: HoldRequest): Promise<{ thread: ThreadRecord; hold: ThreadHold; changed: boolean }> {
    const { host } = this;
    const thread = await host.thread(threadId);
    if (!thread) throw Errors.THREAD_NOT_FOUND(threadId);
    const existing = await host.operator.threadHold(threadId);
    if (existing?.held) return { thread, hold: existing, changed: false };
    if (!UNFINISHED.has(thread.status)) throw Errors.THREAD_NOT_HOLDABLE(threadId, thread.status);
    const hold: ThreadHold = {
      threadId,
      held: true,
      rule: request.rule,
      reason: request.reason,
      evidence: request.evidence ?? null,
      by: request.by,
      heldAt: host.now(),
      resumedAt: existing?.resumedAt ?? null,
      resumedBy: existing?.resumedBy ?? null,
      limitFactor: existing?.limitFactor ?? 1,
    };
    await host.operator.setThreadHold(hold);
    host.setHeld(threadId, true);
    host.bus.emit({ type: 'thread_held', threadId, hold });
    host.logger.warn({ threadId, rule: hold.rule, by: hold.by }, `thread ${threadId} held: ${hold.reason}`);
    return { thread, hold, changed: true };
  }

  /** Resumes a held thread; `raiseLimits` doubles the loop breaker's limits for it. */
  async resume(threadId: string, by: string, raiseLimits: boolean): Promise<{ thread: ThreadRecord; hold: ThreadHold }> {
    const { host } = this;
    const thread = await host.thread(threadId);
    if (!thread) throw Errors.THREAD_NOT_FOUND(threadId);
    const existing = await host.operator.threadHold(threadId);
    if (!existing?.held) throw Errors.THREAD_NOT_HELD(threadId, thread.status);
    const hold: ThreadHold = {
      ...existing,
      held: false,
      resumedAt: host.now(),
      resumedBy: by,
      limitFactor: raiseLimits ? existing.limitFactor * 2 : existing.limitFactor,
    };
    await host.operator.setThreadHold(hold);
    host.setHeld(threadId, false);
    host.bus.emit({ type: 'thread_resumed', threadId, hold });
    host.logger.info({ threadId, by, limitFactor: hold.limitFactor }, `thread ${threadId} resumed`);
    return { thread, hold };
  }

  /**
   * A killed thread's hold is let go (no thread_resumed: it does not go on). Its PENDING entries
   * were failed by the kill here; a cluster's claimers, which pass over held threads, may now
   * claim the ones left in the store and refuse them as killed.
   */
  async killed(threadId: string, by: string): Promise<void> {
    const { host } = this;
    const existing = await host.operator.threadHold(threadId);
    if (!existing?.held) return;
    await host.operator.setThreadHold({ ...existing, held: false, resumedAt: host.now(), resumedBy: by });
    host.setHeld(threadId, false);
  }

  /** The hold row of a thread, held or resumed (null: never held). */
  of(threadId: string): Promise<ThreadHold | null> {
    return this.host.operator.threadHold(threadId);
  }

  /** `held` takes precedence over `active` and `waiting`: the record as a view shows it, its hold attached. */
  async view(record: ThreadRecord): Promise<ThreadRecord> {
    return overlay(record, await this.host.operator.threadHold(record.id));
  }

  /** Views of many records: the held ones (only those) get their hold. */
  async views(records: readonly ThreadRecord[]): Promise<ThreadRecord[]> {
    if (records.length === 0) return [];
    const held = new Map((await this.host.operator.heldThreads()).map((h) => [h.threadId, h]));
    return records.map((r) => overlay(r, held.get(r.id) ?? null, false));
  }

  /** The threads held now, oldest hold first. */
  held(): Promise<readonly ThreadHold[]> {
    return this.host.operator.heldThreads();
  }
}

/** A record with its hold: status `held` while held and unfinished; `keepResumed`: a resumed hold is shown too. */
export function overlay(record: ThreadRecord, hold: ThreadHold | null, keepResumed = true): ThreadRecord {
  if (!hold) return record;
  if (hold.held && UNFINISHED.has(record.status)) return { ...record, status: 'held', hold };
  return keepResumed || hold.held ? { ...record, hold } : record;
}
