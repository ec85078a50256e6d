import type { HoldRule, ThreadHold } from '../core/thread.js';

/** A thread_holds row as either store reads it (held: 0/1 on SQLite, a boolean on PostgreSQL; times as numbers or strings). */
export interface HoldRow {
  thread_id: string;
  held: number | boolean;
  rule: string;
  reason: string;
  evidence: string | null;
  held_by: string;
  held_at: number | string;
  resumed_at: number | string | null;
  resumed_by: string | null;
  limit_factor: number | string;
}

export function holdFromRow(r: HoldRow): ThreadHold {
  return {
    threadId: r.thread_id,
    held: r.held === true || r.held === 1,
    rule: r.rule as HoldRule,
    reason: r.reason,
    evidence: r.evidence === null ? null : (JSON.parse(r.evidence) as unknown),
    by: r.held_by,
    heldAt: Number(r.held_at),
    resumedAt: r.resumed_at === null ? null : Number(r.resumed_at),
    resumedBy: r.resumed_by,
    limitFactor: Number(r.limit_factor),
  };
}

/** The row's values in column order (thread_id, held, rule, reason, evidence, held_by, held_at, resumed_at, resumed_by, limit_factor). */
export function holdValues(h: ThreadHold, held: number | boolean): unknown[] {
  return [h.threadId, held, h.rule, h.reason, h.evidence === null || h.evidence === undefined ? null : JSON.stringify(h.evidence), h.by, h.heldAt, h.resumedAt, h.resumedBy, h.limitFactor];
}

export const HOLD_COLUMNS = 'thread_id, held, rule, reason, evidence, held_by, held_at, resumed_at, resumed_by, limit_factor';
