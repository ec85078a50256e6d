import type Database from 'better-sqlite3';
import type { ScheduleSpec, ScheduleStore, ScheduleTick, StoredSchedule, TickOutcome } from '../../core/schedule.js';
import type { WebhookCounts, WebhookDelivery, WebhookDeliveryState, WebhookStore } from '../../core/webhook.js';
import { DELIVERY_COLUMNS, deliveryOf, scheduleOf, tickOf, type DeliveryRow, type TickRow } from '../interop-rows.js';
import { prepared } from './prepared.js';

/** Schedules and ticks in the data directory's database (one process owns it: a claim is a plain insert). */
export class SqliteScheduleStore implements ScheduleStore {
  constructor(private readonly db: Database.Database) {}

  async list(): Promise<StoredSchedule[]> {
    return (prepared(this.db, 'SELECT spec, created_at FROM schedules ORDER BY created_at, name').all() as Array<{ spec: string; created_at: number }>).map(scheduleOf);
  }

  async add(spec: ScheduleSpec, now: number): Promise<boolean> {
    return prepared(this.db, 'INSERT OR IGNORE INTO schedules (name, spec, created_at) VALUES (?, ?, ?)').run(spec.name, JSON.stringify(spec), now).changes === 1;
  }

  async remove(name: string): Promise<boolean> {
    return this.db.transaction(() => {
      prepared(this.db, 'DELETE FROM schedule_ticks WHERE schedule = ?').run(name);
      prepared(this.db, 'DELETE FROM schedule_cursors WHERE name = ?').run(name);
      return prepared(this.db, 'DELETE FROM schedules WHERE name = ?').run(name).changes === 1;
    })();
  }

  async cursor(name: string, now: number): Promise<number> {
    prepared(this.db, 'INSERT OR IGNORE INTO schedule_cursors (name, since) VALUES (?, ?)').run(name, now);
    const row = prepared(this.db, 'SELECT since, (SELECT MAX(tick_at) FROM schedule_ticks WHERE schedule = ?) AS latest FROM schedule_cursors WHERE name = ?').get(name, name) as {
      since: number;
      latest: number | null;
    };
    return row.latest ?? row.since;
  }

  async claim(tick: { schedule: string; tickAt: number; claimedAt: number; late: boolean; outcome: TickOutcome | null }): Promise<boolean> {
    return (
      prepared(this.db, 'INSERT OR IGNORE INTO schedule_ticks (schedule, tick_at, claimed_at, late, outcome) VALUES (?, ?, ?, ?, ?)').run(
        tick.schedule,
        tick.tickAt,
        tick.claimedAt,
        tick.late ? 1 : 0,
        tick.outcome,
      ).changes === 1
    );
  }

  async settle(schedule: string, tickAt: number, outcome: TickOutcome, threadId: string | null, error: string | null): Promise<void> {
    prepared(this.db, 'UPDATE schedule_ticks SET outcome = ?, thread_id = ?, error = ? WHERE schedule = ? AND tick_at = ?').run(outcome, threadId, error, schedule, tickAt);
  }

  async ticks(name: string, limit: number): Promise<ScheduleTick[]> {
    return (prepared(this.db, 'SELECT * FROM schedule_ticks WHERE schedule = ? ORDER BY tick_at DESC LIMIT ?').all(name, limit) as TickRow[]).map(tickOf);
  }

  async unsettled(before: number): Promise<ScheduleTick[]> {
    return (prepared(this.db, 'SELECT * FROM schedule_ticks WHERE outcome IS NULL AND claimed_at < ? ORDER BY tick_at').all(before) as TickRow[]).map(tickOf);
  }

  async reclaim(schedule: string, tickAt: number, claimedAt: number, now: number): Promise<boolean> {
    return (
      prepared(this.db, 'UPDATE schedule_ticks SET claimed_at = ? WHERE schedule = ? AND tick_at = ? AND claimed_at = ? AND outcome IS NULL').run(now, schedule, tickAt, claimedAt)
        .changes === 1
    );
  }

  async prune(keep: number): Promise<void> {
    prepared(
      this.db,
      'DELETE FROM schedule_ticks WHERE (schedule, tick_at) IN (SELECT schedule, tick_at FROM (SELECT schedule, tick_at, ROW_NUMBER() OVER (PARTITION BY schedule ORDER BY tick_at DESC) AS n FROM schedule_ticks) WHERE n > ?)',
    ).run(keep);
  }
}

/** Webhook deliveries in the data directory's database. */
export class SqliteWebhookStore implements WebhookStore {
  constructor(private readonly db: Database.Database) {}

  async enqueue(d: { id: string; webhook: string; event: string; body: string; createdAt: number }): Promise<boolean> {
    return (
      prepared(this.db, "INSERT OR IGNORE INTO webhook_deliveries (id, webhook, event, body, state, next_attempt_at, created_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)").run(
        d.id,
        d.webhook,
        d.event,
        d.body,
        d.createdAt,
        d.createdAt,
      ).changes === 1
    );
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    return this.db.transaction(() => {
      const rows = prepared(
        this.db,
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_owner IS NULL OR lease_until <= ?) ORDER BY next_attempt_at LIMIT ?`,
      ).all(now, now, limit) as DeliveryRow[];
      const lease = prepared(this.db, 'UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?');
      for (const r of rows) lease.run(owner, now + leaseMs, r.id);
      return rows.map(deliveryOf);
    })();
  }

  async delivered(id: string, owner: string, now: number, status: number): Promise<void> {
    prepared(
      this.db,
      "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, delivered_at = ?, last_status = ?, last_error = NULL, lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ? AND state = 'pending'",
    ).run(now, status, id, owner);
  }

  async attemptFailed(id: string, owner: string, result: { nextAttemptAt: number; status: number | null; error: string; final: boolean }): Promise<void> {
    prepared(
      this.db,
      "UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_attempt_at = ?, last_status = ?, last_error = ?, lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ? AND state = 'pending'",
    ).run(result.final ? 'failed' : 'pending', result.nextAttemptAt, result.status, result.error, id, owner);
  }

  async recent(query: { webhook?: string; state?: WebhookDeliveryState; limit: number }): Promise<WebhookDelivery[]> {
    return (
      prepared(this.db, `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE (? IS NULL OR webhook = ?) AND (? IS NULL OR state = ?) ORDER BY created_at DESC, id DESC LIMIT ?`).all(
        query.webhook ?? null,
        query.webhook ?? null,
        query.state ?? null,
        query.state ?? null,
        query.limit,
      ) as DeliveryRow[]
    ).map(deliveryOf);
  }

  async counts(): Promise<Record<string, WebhookCounts>> {
    const out: Record<string, { pending: number; delivered: number; failed: number }> = {};
    for (const r of prepared(this.db, 'SELECT webhook, state, COUNT(*) AS n FROM webhook_deliveries GROUP BY webhook, state').all() as Array<{
      webhook: string;
      state: WebhookDeliveryState;
      n: number;
    }>) {
      (out[r.webhook] ??= { pending: 0, delivered: 0, failed: 0 })[r.state] = r.n;
    }
    return out;
  }

  async prune(before: number): Promise<void> {
    prepared(this.db, "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ?").run(before);
  }
}

/** Schedules (issue 31): runtime ones, each schedule's first sighting, and claimed ticks; webhook deliveries. */
export const SQLITE_INTEROP_MIGRATION = `
  CREATE TABLE schedules (name TEXT PRIMARY KEY, spec TEXT NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE schedule_cursors (name TEXT PRIMARY KEY, since INTEGER NOT NULL);
  CREATE TABLE schedule_ticks (
    schedule TEXT NOT NULL,
    tick_at INTEGER NOT NULL,
    claimed_at INTEGER NOT NULL,
    late INTEGER NOT NULL,
    outcome TEXT,
    thread_id TEXT,
    error TEXT,
    PRIMARY KEY (schedule, tick_at)
  ) WITHOUT ROWID;
  CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook TEXT NOT NULL,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    delivered_at INTEGER,
    last_status INTEGER,
    last_error TEXT,
    lease_owner TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
  CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
`;
