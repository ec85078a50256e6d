import type { ScheduleSpec, ScheduleStore, ScheduleTick, StoredSchedule, TickOutcome } from '../../core/schedule.js';
import type { WebhookCounts, WebhookDelivery, WebhookDeliveryState, WebhookStore } from '../../core/webhook.js';
import { DELIVERY_COLUMNS, deliveryOf, scheduleOf, tickOf, type DeliveryRow, type TickRow } from '../interop-rows.js';
import type { Reader } from './pool.js';

/**
 * Schedules and ticks on PostgreSQL, shared by every process of the organism: a tick is claimed
 * by inserting its (schedule, tick_at) row, which the primary key lets only one process do.
 * Read and written directly (not through the batching writer): a claim's answer is needed at once.
 */
export class PgScheduleStore implements ScheduleStore {
  constructor(private readonly db: Reader) {}

  async list(): Promise<StoredSchedule[]> {
    return (await this.db.query<{ spec: string; created_at: number }>('SELECT spec, created_at FROM schedules ORDER BY created_at, name')).rows.map(scheduleOf);
  }

  async add(spec: ScheduleSpec, now: number): Promise<boolean> {
    const r = await this.db.query('INSERT INTO schedules (name, spec, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING', [spec.name, JSON.stringify(spec), now]);
    return r.rowCount === 1;
  }

  async remove(name: string): Promise<boolean> {
    const r = await this.db.query('WITH t AS (DELETE FROM schedule_ticks WHERE schedule = $1), c AS (DELETE FROM schedule_cursors WHERE name = $1) DELETE FROM schedules WHERE name = $1', [
      name,
    ]);
    return r.rowCount === 1;
  }

  async cursor(name: string, now: number): Promise<number> {
    await this.db.query('INSERT INTO schedule_cursors (name, since) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, now]);
    const row = (
      await this.db.query<{ since: number; latest: number | null }>(
        'SELECT since, (SELECT MAX(tick_at) FROM schedule_ticks WHERE schedule = $1) AS latest FROM schedule_cursors WHERE name = $1',
        [name],
      )
    ).rows[0]!;
    return row.latest ?? row.since;
  }

  async claim(tick: { schedule: string; tickAt: number; claimedAt: number; late: boolean; outcome: TickOutcome | null }): Promise<boolean> {
    const r = await this.db.query('INSERT INTO schedule_ticks (schedule, tick_at, claimed_at, late, outcome) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING', [
      tick.schedule,
      tick.tickAt,
      tick.claimedAt,
      tick.late,
      tick.outcome,
    ]);
    return r.rowCount === 1;
  }

  async settle(schedule: string, tickAt: number, outcome: TickOutcome, threadId: string | null, error: string | null): Promise<void> {
    await this.db.query('UPDATE schedule_ticks SET outcome = $1, thread_id = $2, error = $3 WHERE schedule = $4 AND tick_at = $5', [outcome, threadId, error, schedule, tickAt]);
  }

  async ticks(name: string, limit: number): Promise<ScheduleTick[]> {
    return (await this.db.query<TickRow>('SELECT * FROM schedule_ticks WHERE schedule = $1 ORDER BY tick_at DESC LIMIT $2', [name, limit])).rows.map(tickOf);
  }

  async unsettled(before: number): Promise<ScheduleTick[]> {
    return (await this.db.query<TickRow>('SELECT * FROM schedule_ticks WHERE outcome IS NULL AND claimed_at < $1 ORDER BY tick_at', [before])).rows.map(tickOf);
  }

  async reclaim(schedule: string, tickAt: number, claimedAt: number, now: number): Promise<boolean> {
    const r = await this.db.query('UPDATE schedule_ticks SET claimed_at = $1 WHERE schedule = $2 AND tick_at = $3 AND claimed_at = $4 AND outcome IS NULL', [
      now,
      schedule,
      tickAt,
      claimedAt,
    ]);
    return r.rowCount === 1;
  }

  async prune(keep: number): Promise<void> {
    await this.db.query(
      'DELETE FROM schedule_ticks t USING (SELECT schedule, tick_at, ROW_NUMBER() OVER (PARTITION BY schedule ORDER BY tick_at DESC) AS n FROM schedule_ticks) o WHERE t.schedule = o.schedule AND t.tick_at = o.tick_at AND o.n > $1',
      [keep],
    );
  }
}

/**
 * Webhook deliveries on PostgreSQL: each process's dispatcher claims due ones with a lease
 * (FOR UPDATE SKIP LOCKED), so each delivery is being sent by one process at a time; a process
 * that dies holding one lets its lease run out, and another sends it.
 */
export class PgWebhookStore implements WebhookStore {
  constructor(private readonly db: Reader) {}

  async enqueue(d: { id: string; webhook: string; event: string; body: string; createdAt: number }): Promise<boolean> {
    const r = await this.db.query(
      "INSERT INTO webhook_deliveries (id, webhook, event, body, state, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, 'pending', $5, $5) ON CONFLICT (id) DO NOTHING",
      [d.id, d.webhook, d.event, d.body, d.createdAt],
    );
    return r.rowCount === 1;
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const r = await this.db.query<DeliveryRow>(
      `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2 WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $3 AND (lease_owner IS NULL OR lease_until <= $3)
         ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED
       ) RETURNING ${DELIVERY_COLUMNS}`,
      [owner, now + leaseMs, now, limit],
    );
    return r.rows.map(deliveryOf).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
  }

  async delivered(id: string, owner: string, now: number, status: number): Promise<void> {
    await this.db.query(
      "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, delivered_at = $1, last_status = $2, last_error = NULL, lease_owner = NULL, lease_until = 0 WHERE id = $3 AND lease_owner = $4 AND state = 'pending'",
      [now, status, id, owner],
    );
  }

  async attemptFailed(id: string, owner: string, result: { nextAttemptAt: number; status: number | null; error: string; final: boolean }): Promise<void> {
    await this.db.query(
      "UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, next_attempt_at = $2, last_status = $3, last_error = $4, lease_owner = NULL, lease_until = 0 WHERE id = $5 AND lease_owner = $6 AND state = 'pending'",
      [result.final ? 'failed' : 'pending', result.nextAttemptAt, result.status, result.error, id, owner],
    );
  }

  async recent(query: { webhook?: string; state?: WebhookDeliveryState; limit: number }): Promise<WebhookDelivery[]> {
    return (
      await this.db.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ($1::text IS NULL OR webhook = $1) AND ($2::text IS NULL OR state = $2) ORDER BY created_at DESC, id DESC LIMIT $3`,
        [query.webhook ?? null, query.state ?? null, query.limit],
      )
    ).rows.map(deliveryOf);
  }

  async counts(): Promise<Record<string, WebhookCounts>> {
    const out: Record<string, { pending: number; delivered: number; failed: number }> = {};
    const rows = (await this.db.query<{ webhook: string; state: WebhookDeliveryState; n: number }>('SELECT webhook, state, COUNT(*) AS n FROM webhook_deliveries GROUP BY webhook, state'))
      .rows;
    for (const r of rows) (out[r.webhook] ??= { pending: 0, delivered: 0, failed: 0 })[r.state] = r.n;
    return out;
  }

  async prune(before: number): Promise<void> {
    await this.db.query("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1", [before]);
  }
}

/** Schedules (issue 31): runtime ones, each schedule's first sighting, and claimed ticks; webhook deliveries. */
export const PG_INTEROP_MIGRATION = `
  CREATE TABLE schedules (name TEXT PRIMARY KEY, spec TEXT NOT NULL, created_at BIGINT NOT NULL);
  CREATE TABLE schedule_cursors (name TEXT PRIMARY KEY, since BIGINT NOT NULL);
  CREATE TABLE schedule_ticks (
    schedule TEXT NOT NULL,
    tick_at BIGINT NOT NULL,
    claimed_at BIGINT NOT NULL,
    late BOOLEAN NOT NULL,
    outcome TEXT,
    thread_id TEXT,
    error TEXT,
    PRIMARY KEY (schedule, tick_at)
  );
  CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook TEXT NOT NULL,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT,
    last_status INTEGER,
    last_error TEXT,
    lease_owner TEXT,
    lease_until BIGINT NOT NULL DEFAULT 0
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
  CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
`;
