import { hostname } from 'node:os';
import type { WorkerRecord } from '../core/work-source.js';
import type { Reader } from '../store/postgres/pool.js';

export type { WorkerRecord };

/** What a process says of itself in the `workers` table. */
export interface WorkerIdentity {
  readonly id: string;
  /** `serve` (the control API, with or without handlers) or `worker` (handlers only). */
  readonly kind: 'serve' | 'worker';
  readonly name: string;
  readonly handlers: boolean;
  readonly configHash: string;
  /** `--concurrency`; null: the organism-wide limit. */
  readonly concurrency: number | null;
  readonly leaseMs: number;
}

interface WorkerRow {
  id: string;
  kind: 'serve' | 'worker';
  name: string;
  host: string;
  pid: number;
  handlers: boolean;
  config_hash: string;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
  concurrency: number | null;
  in_flight: number;
  lease_ms: number;
  /** Its DISPATCHED entries in the journal now (the claims it still holds). */
  held: number;
}

/** Stopped processes' rows are kept this long (they show in /workers as not alive), then deleted. */
const STOPPED_KEPT_MS = 24 * 3_600_000;

/** The `workers` table: each process's row, its heartbeats, and the list. */
export class PgWorkers {
  constructor(
    private readonly db: Reader,
    private readonly now: () => number = Date.now,
  ) {}

  async register(me: WorkerIdentity): Promise<void> {
    const now = this.now();
    await this.db.query(
      `INSERT INTO workers (id, kind, name, host, pid, handlers, config_hash, started_at, heartbeat_at, concurrency, in_flight, lease_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, 0, $10)`,
      [me.id, me.kind, me.name, hostname(), process.pid, me.handlers, me.configHash, now, me.concurrency, me.leaseMs],
    );
    await this.db.query('DELETE FROM workers WHERE stopped_at IS NOT NULL AND stopped_at < $1', [now - STOPPED_KEPT_MS]);
  }

  /** Renews this process's lease; false when its row says it stopped (or is gone). */
  async heartbeat(id: string, inFlight: number): Promise<boolean> {
    const r = await this.db.query('UPDATE workers SET heartbeat_at = $2, in_flight = $3 WHERE id = $1 AND stopped_at IS NULL', [id, this.now(), inFlight]);
    return (r.rowCount ?? 0) > 0;
  }

  async setConfigHash(id: string, configHash: string): Promise<void> {
    await this.db.query('UPDATE workers SET config_hash = $2 WHERE id = $1', [id, configHash]);
  }

  async stopped(id: string): Promise<void> {
    await this.db.query('UPDATE workers SET stopped_at = $2, in_flight = 0 WHERE id = $1', [id, this.now()]);
  }

  /**
   * Every process of the organism, live ones first, newest start first. A process that is not
   * alive shows as in flight what it still holds in the journal (from the partial index of
   * DISPATCHED entries by holder): 0 once its claims were taken back.
   */
  async list(): Promise<WorkerRecord[]> {
    const now = this.now();
    const rows = (
      await this.db.query<WorkerRow>(
        `SELECT w.*, (SELECT COUNT(*) FROM journal j WHERE j.state = 'DISPATCHED' AND j.claimed_by = w.id)::int AS held
         FROM workers w ORDER BY (w.stopped_at IS NULL) DESC, w.started_at DESC, w.id`,
      )
    ).rows;
    return rows.map((r) => {
      const alive = r.stopped_at === null && r.heartbeat_at >= now - r.lease_ms;
      return {
        id: r.id,
        kind: r.kind,
        name: r.name,
        host: r.host,
        pid: r.pid,
        handlers: r.handlers,
        configHash: r.config_hash,
        startedAt: r.started_at,
        heartbeatAt: r.heartbeat_at,
        stoppedAt: r.stopped_at,
        alive,
        concurrency: r.concurrency,
        // Its last heartbeat's figure; a process that is not alive runs nothing: what it still holds until it is taken back.
        inFlight: alive ? r.in_flight : r.held,
        leaseMs: r.lease_ms,
      };
    });
  }
}
