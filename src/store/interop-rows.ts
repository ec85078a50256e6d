import type { ScheduleSpec, ScheduleTick, StoredSchedule, TickOutcome } from '../core/schedule.js';
import type { WebhookDelivery, WebhookDeliveryState } from '../core/webhook.js';

/** A `schedule_ticks` row as SQLite and PostgreSQL return it. */
export interface TickRow {
  schedule: string;
  tick_at: number;
  claimed_at: number;
  late: number | boolean;
  outcome: string | null;
  thread_id: string | null;
  error: string | null;
}

export function tickOf(r: TickRow): ScheduleTick {
  return {
    schedule: r.schedule,
    tickAt: Number(r.tick_at),
    claimedAt: Number(r.claimed_at),
    late: r.late === true || r.late === 1,
    outcome: r.outcome as TickOutcome | null,
    threadId: r.thread_id,
    error: r.error,
  };
}

export function scheduleOf(r: { spec: string; created_at: number }): StoredSchedule {
  return { spec: JSON.parse(r.spec) as ScheduleSpec, createdAt: Number(r.created_at) };
}

/** A `webhook_deliveries` row as SQLite and PostgreSQL return it. */
export interface DeliveryRow {
  id: string;
  webhook: string;
  event: string;
  body: string;
  state: string;
  attempts: number;
  next_attempt_at: number;
  created_at: number;
  delivered_at: number | null;
  last_status: number | null;
  last_error: string | null;
}

export function deliveryOf(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    webhook: r.webhook,
    event: r.event,
    body: r.body,
    state: r.state as WebhookDeliveryState,
    attempts: Number(r.attempts),
    nextAttemptAt: Number(r.next_attempt_at),
    createdAt: Number(r.created_at),
    deliveredAt: r.delivered_at === null ? null : Number(r.delivered_at),
    lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error,
  };
}

export const DELIVERY_COLUMNS = 'id, webhook, event, body, state, attempts, next_attempt_at, created_at, delivered_at, last_status, last_error';
