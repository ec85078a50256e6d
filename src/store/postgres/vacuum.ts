import type { Logger } from '../../util/logger.js';
import type { Reader } from './pool.js';

/**
 * The journal's vacuum, run by organism only when the server runs none on it (`autovacuum` off
 * server-wide, or `autovacuum_enabled = false` on the table); otherwise this does nothing and
 * the server's own settings apply.
 *
 * Why it matters: each delivery updates its journal row twice (PENDING, DISPATCHED, then ACKED),
 * and every version it leaves behind stays in the claim's partial indexes (journal_claimable,
 * journal_open, journal_claimed) as a dead entry until a vacuum removes it. Rows leave PENDING
 * in seq order and every claim reads its listener's oldest first, so each claim reads past all
 * of them: without any vacuum, a claim on this machine went from 1.4 ms to 11 ms over 80,000
 * messages of the 3-hop chain, and the chain's rate halved; one `VACUUM journal` (0.7 s) brought
 * the claim back to 1.9 ms (docs/scale-out.md, "Vacuum").
 *
 * When: the server's count of dead rows (pg_stat_user_tables.n_dead_tup) reaches `minDead` and
 * `fraction` of the live ones, so that the vacuum's passes over the whole of each index cost
 * the same per dead row however big the journal grows. INDEX_CLEANUP ON: the server otherwise
 * skips the index passes when few heap pages hold dead rows, which is the usual case here, and
 * the dead index entries are the point. SKIP_LOCKED: with several processes sharing the
 * database, one vacuums and the others pass.
 */
export interface JournalVacuumOptions {
  /** Dead rows before a vacuum, at the least. Default 20,000. */
  readonly minDead?: number;
  /** ... and this share of the live rows. Default 0.1. */
  readonly fraction?: number;
  /** How often the dead rows are read. Default 10 s. */
  readonly intervalMs?: number;
}

/** Whether the server vacuums the journal itself, from its settings. */
export function serverVacuums(settings: { readonly autovacuum: string; readonly tableOptions: readonly string[] | null }): boolean {
  if (settings.autovacuum !== 'on') return false;
  return !(settings.tableOptions ?? []).some((o) => /^autovacuum_enabled=(false|off|no|0)$/i.test(o));
}

/** Whether `dead` rows beside `live` ones call for a vacuum. */
export function vacuumDue(dead: number, live: number, minDead: number, fraction: number): boolean {
  return dead >= minDead && dead >= fraction * live;
}

export type VacuumCheck =
  | { readonly vacuumed: false; readonly dead: number; readonly live: number }
  | { readonly vacuumed: true; readonly dead: number; readonly live: number; readonly ms: number };

export class JournalVacuum {
  private readonly minDead: number;
  private readonly fraction: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private closed = false;
  private failing = false;

  constructor(
    private readonly db: Reader,
    private readonly logger: Logger | undefined,
    options: JournalVacuumOptions = {},
  ) {
    this.minDead = options.minDead ?? 20_000;
    this.fraction = options.fraction ?? 0.1;
    this.intervalMs = options.intervalMs ?? 10_000;
  }

  /**
   * Reads the server's settings; when it runs no vacuum on the journal, says so once and checks
   * every interval. Returns whether this process will vacuum. A role that may not vacuum the
   * table (PostgreSQL lets its owner, the database's owner and superusers) is told so once
   * instead: its VACUUM would only be skipped with a warning, every interval.
   */
  async start(): Promise<boolean> {
    const r = await this.db.query<{ autovacuum: string; options: string[] | null; owner: string; may: boolean }>(
      `SELECT current_setting('autovacuum') AS autovacuum, c.reloptions AS options, pg_get_userbyid(c.relowner) AS owner,
         (pg_has_role(current_user, c.relowner, 'USAGE') OR pg_has_role(current_user, d.datdba, 'USAGE')
           OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)) AS may
       FROM pg_class c, pg_database d WHERE c.oid = 'journal'::regclass AND d.datname = current_database()`,
    );
    const row = r.rows[0]!;
    if (serverVacuums({ autovacuum: row.autovacuum, tableOptions: row.options })) return false;
    const settings = { autovacuum: row.autovacuum, tableOptions: row.options ?? [] };
    if (!row.may) {
      this.logger?.warn(
        { ...settings, owner: row.owner },
        `PostgreSQL runs no autovacuum on the journal, and this role may not vacuum it (its owner is ${row.owner}): claims slow down as dead rows pile up. Turn autovacuum on, or vacuum the journal as its owner (docs/scale-out.md, "Vacuum")`,
      );
      return false;
    }
    this.logger?.warn(
      settings,
      `PostgreSQL runs no autovacuum on the journal: organism vacuums it itself once ${this.minDead} rows are dead (and ${this.fraction * 100} % of the live ones); claims slow down as dead rows pile up between vacuums. Turn autovacuum on to leave it to the server (docs/scale-out.md, "Vacuum")`,
    );
    if (!this.closed) this.timer = setInterval(() => void this.tick(), this.intervalMs).unref();
    return true;
  }

  /** Reads the dead rows and vacuums if they are due. */
  async check(): Promise<VacuumCheck> {
    const r = await this.db.query<{ dead: string; live: string }>("SELECT n_dead_tup AS dead, n_live_tup AS live FROM pg_stat_user_tables WHERE relid = 'journal'::regclass");
    const dead = Number(r.rows[0]?.dead ?? 0);
    const live = Number(r.rows[0]?.live ?? 0);
    if (!vacuumDue(dead, live, this.minDead, this.fraction)) return { vacuumed: false, dead, live };
    const started = performance.now();
    await this.db.query('VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON) journal');
    const ms = Math.round(performance.now() - started);
    this.logger?.info({ dead, live, ms }, 'vacuumed the journal');
    return { vacuumed: true, dead, live, ms };
  }

  /** Stops checking; waits for a vacuum under way. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  private async tick(): Promise<void> {
    if (this.running || this.closed) return;
    this.running = this.check().then(
      () => (this.failing = false),
      (err: unknown) => {
        // An unreachable server is the storage watch's to log (once per outage); anything else
        // is said once, until a check succeeds again.
        if ((err as { code?: unknown }).code === 'STORAGE_UNAVAILABLE') return;
        if (!this.failing) this.logger?.warn({ err }, 'could not check or vacuum the journal; trying again at the next interval');
        this.failing = true;
      },
    );
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }
}
