import { hostname } from 'node:os';
import type pg from 'pg';
import { Errors } from '../../errors/catalogue.js';
import {
  reservedBudgetInfo,
  thresholdsAbove,
  thresholdsReached,
  type BudgetListQuery,
  type BudgetPage,
  type BudgetThresholdEvent,
  type BudgetView,
  type Reservation,
  type ThreadBudgetInfo,
} from '../../usage/budgets.js';
import type { BudgetLedger } from '../../core/budget.js';
import { newId } from '../../util/ids.js';
import type { Logger } from '../../util/logger.js';
import { pgRuntimeError, pgStorageError } from './pool.js';
import { isConnectionFailure } from './reachability.js';

/**
 * The budgets' tables (appended to PG_MIGRATIONS). One row per thread budget; `reserved`
 * is the sum of the thread's rows in budget_reservations, kept in the same statements, so a
 * reservation is one conditional UPDATE (reserved + used + request <= max). A reservation
 * carries its holder and an expiry the holder renews while its call runs: a process killed
 * mid-call stops renewing, and any process sweeps what expired. Spend of snapshots saved by
 * a single-process organism (the `budgets` table) is carried over.
 */
export const BUDGET_LEDGER_MIGRATION = `
  CREATE TABLE thread_budgets (
    thread_id TEXT COLLATE "C" PRIMARY KEY,
    max_tokens BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    reserved BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    fired INTEGER[] NOT NULL DEFAULT '{}'
  );
  CREATE TABLE budget_reservations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id TEXT COLLATE "C" NOT NULL REFERENCES thread_budgets (thread_id) ON DELETE CASCADE,
    tokens BIGINT NOT NULL CHECK (tokens >= 0),
    holder TEXT NOT NULL,
    expires_at BIGINT NOT NULL
  );
  CREATE INDEX budget_reservations_thread ON budget_reservations (thread_id);
  CREATE INDEX budget_reservations_holder ON budget_reservations (holder);
  CREATE INDEX budget_reservations_expiry ON budget_reservations (expires_at);
  INSERT INTO thread_budgets (thread_id, max_tokens, prompt_tokens, completion_tokens, fired)
    SELECT thread_id,
      (d->>'maxTokens')::numeric::bigint,
      COALESCE((d->>'promptTokens')::numeric::bigint, 0),
      COALESCE((d->>'completionTokens')::numeric::bigint, 0),
      ARRAY(SELECT x::int FROM jsonb_array_elements_text(COALESCE(d->'fired', '[]'::jsonb)) AS x WHERE x IN ('75', '90', '95'))
    FROM (SELECT thread_id, data::jsonb AS d FROM budgets) AS saved
    WHERE jsonb_typeof(d->'maxTokens') = 'number';
`;

/** A budget's share of its ceiling used (the order of every budget list). */
const SHARE_USED = 'CASE WHEN max_tokens > 0 THEN (prompt_tokens + completion_tokens)::float8 / max_tokens ELSE 0 END';

/**
 * A thread's budget is its whole life's (issue 23): a finished thread's row stays, flagged not
 * live, and its next reservation (after another inject) makes it live again and goes on from
 * its spend. Rows of threads that had already finished become not live; the ceilings finished
 * threads had (thread_ceilings) come back as rows with their spend from the usage events, and
 * the thresholds that spend had reached counted as fired.
 */
export const BUDGET_LIFETIME_MIGRATION = `
  ALTER TABLE thread_budgets ADD COLUMN live BOOLEAN NOT NULL DEFAULT true;
  UPDATE thread_budgets b SET live = false FROM threads t WHERE t.id = b.thread_id AND t.status <> 'active';
  INSERT INTO thread_budgets (thread_id, max_tokens, prompt_tokens, completion_tokens, fired, live)
    SELECT c.thread_id, c.max_tokens, COALESCE(u.p, 0), COALESCE(u.c, 0),
      ARRAY(SELECT t FROM unnest(ARRAY[75, 90, 95]) AS t WHERE (COALESCE(u.p, 0) + COALESCE(u.c, 0)) * 100 >= t * c.max_tokens),
      false
    FROM thread_ceilings c
    LEFT JOIN (SELECT thread_id, SUM(prompt_tokens) AS p, SUM(completion_tokens) AS c FROM usage_events GROUP BY thread_id) u ON u.thread_id = c.thread_id
    ON CONFLICT (thread_id) DO NOTHING;
  DROP TABLE thread_ceilings;
  CREATE INDEX thread_budgets_order ON thread_budgets (live, (${SHARE_USED}) DESC, thread_id);
`;

/** The database's clock in ms: every process compares expiries on one clock, whatever its own says. */
const DB_NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** A database write that could not reach the server is tried again after this long, doubling up to the max. */
const RETRY_MS = 250;
const RETRY_MAX_MS = 5_000;

/**
 * Threads whose budget the store finished in the transaction that found the thread finished
 * (a clustered organism's settle, see cluster-threads.ts), told by the journal once that
 * transaction committed: the ledger's finish of such a thread sends nothing (it was one
 * statement and one commit per thread). Each is taken once; bounded (the oldest go first), a
 * thread dropped here is finished by its statement as before, which finds nothing to do.
 */
export class FinishedBudgets {
  private readonly ids = new Set<string>();

  constructor(private readonly max = 10_000) {}

  add(threadId: string): void {
    this.ids.delete(threadId);
    this.ids.add(threadId);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value as string);
  }

  /** Whether the store finished the thread's budget since it was last asked. */
  take(threadId: string): boolean {
    return this.ids.delete(threadId);
  }
}

export interface PgBudgetLedgerOptions {
  readonly defaultMaxTokens: number;
  /** Hears what a throwing listener threw. */
  readonly onListenerError?: (err: unknown) => void;
  /**
   * How long a reservation outlives its holder's last renewal (renewed every third of it).
   * Default: ORGANISM_LEASE_SECONDS, else 30 s (the workers' lease).
   */
  readonly leaseMs?: number;
  /** Who holds this process's reservations (a worker id); default host:pid:random. */
  readonly holder?: string;
  readonly logger?: Logger;
  /** Budgets the store finished with their threads (see FinishedBudgets). */
  readonly finished?: FinishedBudgets;
}

interface BudgetRow {
  live: boolean;
  thread_id: string;
  max_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  reserved: number;
  fired: number[];
}

const COLUMNS = 'thread_id, max_tokens, prompt_tokens, completion_tokens, reserved, fired, live';

/**
 * Thread budgets shared by every process of an organism on PostgreSQL (see BudgetLedger;
 * the rules are BudgetManager's). What differs, and why:
 * - a reservation is one conditional UPDATE … RETURNING, so two processes never both take a
 *   thread's last tokens;
 * - settlement runs in a transaction holding the budget row's lock: the thresholds it crosses
 *   are recorded in the row in the same commit, so each fires once organism-wide, in the
 *   process whose call crossed it;
 * - spend settles right after the call, not with the delivery's ack: the tokens were paid
 *   for even if the ack never commits (a lease lost, a crash), and a redelivery pays again;
 * - a reservation whose holder stops renewing it (killed -9) is released once it expires;
 *   a settle arriving after that still adds the spend.
 */
export class PgBudgetLedger implements BudgetLedger {
  defaultMaxTokens: number;
  readonly holder: string;
  private readonly leaseMs: number;
  private readonly listeners = new Set<(e: BudgetThresholdEvent) => void>();
  /** Reservations of this process not settled nor cancelled yet (each is released once). */
  private readonly open = new Map<number, string>();
  /** Settlements the database did not take yet (it was unreachable), retried every tick in order. */
  private readonly unsettled: Array<() => Promise<unknown>> = [];
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly where: string,
    private readonly opts: PgBudgetLedgerOptions,
  ) {
    this.defaultMaxTokens = opts.defaultMaxTokens;
    this.holder = opts.holder ?? `${hostname()}:${process.pid}:${newId().slice(-8)}`;
    this.leaseMs = opts.leaseMs ?? leaseFromEnv() ?? 30_000;
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.leaseMs / 3))).unref();
  }

  async has(threadId: string): Promise<boolean> {
    return (await this.read('SELECT 1 FROM thread_budgets WHERE thread_id = $1', [threadId])).rowCount === 1;
  }

  async get(threadId: string): Promise<BudgetView | null> {
    const row = (await this.read<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = $1`, [threadId])).rows[0];
    return row ? rowView(row) : null;
  }

  async list(query: BudgetListQuery): Promise<BudgetPage> {
    const where = query.state === 'all' ? '' : `WHERE ${query.state === 'live' ? '' : 'NOT '}live`;
    const rows = (await this.read<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets ${where} ORDER BY ${SHARE_USED} DESC, thread_id LIMIT $1 OFFSET $2`, [query.limit, query.offset])).rows;
    const total = (await this.read<{ n: number }>(`SELECT COUNT(*)::int AS n FROM thread_budgets ${where}`)).rows[0]!.n;
    return { items: rows.map(rowView), total };
  }

  async count(): Promise<number> {
    return (await this.read<{ n: number }>('SELECT COUNT(*)::int AS n FROM thread_budgets WHERE live')).rows[0]!.n;
  }

  async headroom(threadId: string): Promise<number> {
    const row = (await this.read<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = $1`, [threadId])).rows[0];
    if (!row) return Math.max(0, this.defaultMaxTokens);
    return Math.max(0, row.max_tokens - row.prompt_tokens - row.completion_tokens - row.reserved);
  }

  async reserve(threadId: string, tokens: number): Promise<Reservation> {
    if (!Number.isFinite(tokens) || tokens < 0) throw new RangeError(`reservation must be a non-negative number of tokens, not ${tokens}`);
    return this.retrying(async () => {
      for (let round = 0; ; round++) {
        // The common case in one statement: take the tokens if they fit, and record who holds them.
        const taken = await this.query<{ id: number }>(
          `WITH up AS (
             UPDATE thread_budgets SET reserved = reserved + $2, live = true
             WHERE thread_id = $1 AND prompt_tokens + completion_tokens + reserved + $2 <= max_tokens
             RETURNING thread_id
           )
           INSERT INTO budget_reservations (thread_id, tokens, holder, expires_at)
           SELECT thread_id, $2, $3, ${DB_NOW} + $4 FROM up RETURNING id`,
          // Whole tokens in BIGINT columns: a fraction (never sent by the router) is rounded up, never down.
          [threadId, Math.ceil(tokens), this.holder, this.leaseMs],
        );
        const id = taken.rows[0]?.id;
        if (id !== undefined) {
          this.open.set(id, threadId);
          return { id, threadId, tokens };
        }
        if (round > 0) break;
        // No row yet (a thread's first call creates its budget; concurrent first calls create
        // it once), or expired reservations of a dead holder in the way: then once more. A
        // finished thread's budget refused here is live again all the same (its thread runs).
        await this.query('INSERT INTO thread_budgets (thread_id, max_tokens) VALUES ($1, $2) ON CONFLICT (thread_id) DO UPDATE SET live = true WHERE NOT thread_budgets.live', [
          threadId,
          this.defaultMaxTokens,
        ]);
        await this.sweep(threadId);
      }
      const row = (await this.query<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = $1`, [threadId])).rows[0];
      const used = row ? row.prompt_tokens + row.completion_tokens : 0;
      throw Errors.BUDGET_EXHAUSTED(threadId, used, row?.max_tokens ?? this.defaultMaxTokens, tokens);
    });
  }

  async settle(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): Promise<BudgetThresholdEvent[]> {
    if (!this.open.delete(r.id)) return [];
    try {
      return await this.retrying(() => this.settleNow(r, usage, agent));
    } catch (err) {
      // The tokens were spent: the spend is kept until the database takes it (every tick).
      this.opts.logger?.error({ err, threadId: r.threadId }, "settling an LLM call's budget failed; trying again until the database answers");
      this.unsettled.push(() => this.settleNow(r, usage, agent));
      return [];
    }
  }

  private async settleNow(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): Promise<BudgetThresholdEvent[]> {
    const fired = await this.transaction(async (tx) => {
      const gone = await tx.query<{ tokens: number }>('DELETE FROM budget_reservations WHERE id = $1 RETURNING tokens', [r.id]);
      const row = (await tx.query<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = $1 FOR UPDATE`, [r.threadId])).rows[0];
      if (!row) return []; // rows are kept for the thread's life: none means nothing to bill
      const next: BudgetRow = {
        ...row,
        prompt_tokens: row.prompt_tokens + usage.promptTokens,
        completion_tokens: row.completion_tokens + usage.completionTokens,
        reserved: row.reserved - (gone.rows[0]?.tokens ?? 0),
      };
      const events = thresholdsReached(rowInfo(next), new Set(row.fired), agent);
      const firedNow = [...row.fired, ...events.map((e) => e.threshold)];
      await tx.query('UPDATE thread_budgets SET prompt_tokens = $2, completion_tokens = $3, reserved = $4, fired = $5 WHERE thread_id = $1', [
        r.threadId,
        next.prompt_tokens,
        next.completion_tokens,
        next.reserved,
        firedNow,
      ]);
      return events;
    });
    for (const e of fired) this.tell(this.listeners, e);
    return fired;
  }

  /** Never fails: a reservation the database did not hear cancelled expires (nobody renews it). */
  async cancel(r: Reservation): Promise<void> {
    if (!this.open.delete(r.id)) return;
    try {
      await this.retrying(() =>
        this.query(
          `WITH gone AS (DELETE FROM budget_reservations WHERE id = $1 RETURNING thread_id, tokens)
           UPDATE thread_budgets b SET reserved = b.reserved - gone.tokens FROM gone WHERE b.thread_id = gone.thread_id`,
          [r.id],
        ),
      );
    } catch (err) {
      this.opts.logger?.warn({ err, threadId: r.threadId }, 'cancelling a budget reservation failed; it is released when it expires');
    }
  }

  /** One statement for every live row at the previous default (each process of a cluster runs it at its reload: the later ones find none). */
  async changeDefault(maxTokens: number): Promise<number> {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`a ceiling must be a positive integer, not ${maxTokens}`);
    const previous = this.defaultMaxTokens;
    this.defaultMaxTokens = maxTokens;
    if (previous === maxTokens) return 0;
    return this.retrying(async () => {
      // Thresholds the spend is now below are re-armed (setCeiling's rule); spend is not touched.
      const r = await this.query(
        `UPDATE thread_budgets SET max_tokens = $2,
           fired = ARRAY(SELECT t FROM unnest(fired) AS t WHERE (prompt_tokens + completion_tokens) * 100 >= t * $2::bigint)
         WHERE live AND max_tokens = $1`,
        [previous, maxTokens],
      );
      return r.rowCount ?? 0;
    });
  }

  async setCeiling(threadId: string, maxTokens: number, options: { create?: boolean } = {}): Promise<BudgetView> {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`a ceiling must be a positive integer, not ${maxTokens}`);
    return this.mapped(() =>
      this.transaction(async (tx) => {
        if (options.create) await tx.query('INSERT INTO thread_budgets (thread_id, max_tokens) VALUES ($1, $2) ON CONFLICT (thread_id) DO NOTHING', [threadId, maxTokens]);
        const row = (await tx.query<BudgetRow>(`SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = $1 FOR UPDATE`, [threadId])).rows[0];
        if (!row) throw Errors.BUDGET_NOT_FOUND(threadId);
        const used = row.prompt_tokens + row.completion_tokens;
        if (maxTokens < used) throw Errors.BUDGET_BELOW_USAGE(threadId, used, maxTokens, used);
        const rearmed = new Set(thresholdsAbove(used, maxTokens));
        const fired = row.fired.filter((t) => !rearmed.has(t));
        await tx.query('UPDATE thread_budgets SET max_tokens = $2, fired = $3 WHERE thread_id = $1', [threadId, maxTokens, fired]);
        return rowView({ ...row, max_tokens: maxTokens, fired });
      }),
    );
  }

  /**
   * The budget stops being live (the row stays: the thread's next inject goes on from it) once
   * no delivery of the thread is PENDING or DISPATCHED anywhere: with several processes, one
   * finishing its part of a thread must not count the budget finished while another still
   * spends it. While some are, it is tried again with backoff for up to a lease (a killed
   * thread's deliveries end as their handlers abort); after that the process finishing the
   * thread's last delivery finishes it. A call that settles later still bills the row.
   */
  finish(threadId: string): void {
    // Already done in the transaction that finished the thread (its last outcome's).
    if (this.opts.finished?.take(threadId)) return;
    void this.finishWhenDone(threadId);
  }

  private async finishWhenDone(threadId: string): Promise<void> {
    const deadline = Date.now() + this.leaseMs;
    for (let delay = RETRY_MS; !this.closed; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      try {
        // One statement: whether it finished, and whether it was live (read from the
        // statement's snapshot, before the update): neither, and there is nothing to do.
        const r = await this.query<{ finished: boolean; live: boolean }>(
          `WITH done AS (
              UPDATE thread_budgets SET live = false WHERE thread_id = $1 AND live
                AND NOT EXISTS (SELECT 1 FROM journal WHERE thread_id = $1 AND state IN ('PENDING', 'DISPATCHED'))
              RETURNING 1)
            SELECT EXISTS (SELECT 1 FROM done) AS finished, EXISTS (SELECT 1 FROM thread_budgets WHERE thread_id = $1 AND live) AS live`,
          [threadId],
        );
        const { finished, live } = r.rows[0]!;
        if (finished || !live) return;
      } catch (err) {
        if (!isConnectionFailure(err)) {
          this.opts.logger?.error({ err: pgStorageError(this.where, err), threadId }, "finishing a thread's budget failed");
          return;
        }
      }
      if (Date.now() + delay > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
    }
  }

  onThreshold(fn: (e: BudgetThresholdEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    if (this.unsettled.length > 0) {
      this.opts.logger?.warn({ settlements: this.unsettled.length }, "stopping with LLM spend the database has not taken (it was unreachable): those threads' budgets miss it");
    }
  }

  /**
   * Expired reservations (of every holder, or of one thread) go and give their tokens back;
   * returns how many went. Two sweepers never give one back twice: a row is deleted once.
   */
  async sweep(threadId?: string): Promise<number> {
    const r = await this.query(
      `WITH gone AS (
         DELETE FROM budget_reservations WHERE expires_at < ${DB_NOW} ${threadId === undefined ? '' : 'AND thread_id = $1'} RETURNING thread_id, tokens
       ), sums AS (SELECT thread_id, SUM(tokens) AS tokens, COUNT(*) AS n FROM gone GROUP BY thread_id)
       UPDATE thread_budgets b SET reserved = b.reserved - sums.tokens FROM sums WHERE b.thread_id = sums.thread_id RETURNING sums.n`,
      threadId === undefined ? [] : [threadId],
    );
    return r.rows.reduce((n, row) => n + Number((row as { n: number }).n), 0);
  }

  /**
   * Budgets still live whose thread has ended, with nothing of it PENDING or DISPATCHED: the
   * process that finished the thread died before finishing its budget. Any process finishes
   * them (a budget never set for a thread that has no record yet is left live). Returns how many.
   */
  async finishEnded(): Promise<number> {
    const r = await this.query(
      `UPDATE thread_budgets b SET live = false FROM threads t
       WHERE b.live AND t.id = b.thread_id AND t.status <> 'active'
         AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.thread_id = b.thread_id AND j.state IN ('PENDING', 'DISPATCHED'))`,
    );
    return r.rowCount ?? 0;
  }

  /** Renews this process's reservations, sweeps expired ones, finishes budgets of ended threads (a failure waits for the next tick). */
  private async tick(): Promise<void> {
    if (this.closed) return;
    try {
      while (this.unsettled.length > 0) {
        try {
          await this.unsettled[0]!();
        } catch (err) {
          if (isConnectionFailure(err) || isTransient(err)) throw err; // next tick
          this.opts.logger?.error({ err: pgStorageError(this.where, err) }, 'a budget settlement the database refused is dropped');
        }
        this.unsettled.shift();
      }
      // Only what is still open here (a reservation this process settled or cancelled is gone).
      if (this.open.size > 0) await this.query(`UPDATE budget_reservations SET expires_at = ${DB_NOW} + $2 WHERE id = ANY($1::bigint[])`, [[...this.open.keys()], this.leaseMs]);
      const swept = await this.sweep();
      if (swept > 0) this.opts.logger?.info({ reservations: swept }, 'released expired budget reservations (their holder stopped renewing them)');
      await this.finishEnded();
    } catch (err) {
      this.opts.logger?.debug({ err: pgStorageError(this.where, err) }, 'renewing budget reservations failed; trying again next tick');
    }
  }

  /**
   * `work`, tried again while the server cannot be reached, for up to one lease (a reservation
   * outlives that anyway); then its storage error. Other failures are thrown at once.
   */
  private async retrying<T>(work: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.leaseMs;
    for (let delay = RETRY_MS; ; delay = Math.min(delay * 2, RETRY_MAX_MS)) {
      try {
        return await work();
      } catch (err) {
        if (!(isConnectionFailure(err) || isTransient(err)) || this.closed || Date.now() + delay > deadline) throw pgRuntimeError(this.where, err);
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private async mapped<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw pgRuntimeError(this.where, err);
    }
  }

  /** A query whose failure reaches callers outside as the catalogue's storage error (never a bare 500; an outage is STORAGE_UNAVAILABLE). */
  private async read<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: readonly unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.query<R>(text, values);
    } catch (err) {
      throw pgRuntimeError(this.where, err);
    }
  }

  private query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: readonly unknown[] = []): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(text, [...values]);
  }

  private async transaction<T>(work: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
    const tx = await this.pool.connect();
    let broken = false;
    // A connection cut while checked out emits 'error' (unheard, it would end the process).
    const lost = () => {
      broken = true;
    };
    tx.on('error', lost);
    try {
      await tx.query('BEGIN');
      const result = await work(tx);
      await tx.query('COMMIT');
      return result;
    } catch (err) {
      broken = isConnectionFailure(err);
      await tx.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      tx.off('error', lost);
      tx.release(broken);
    }
  }

  private tell<E>(listeners: Set<(e: E) => void>, e: E): void {
    for (const fn of listeners) {
      try {
        fn(e);
      } catch (err) {
        try {
          this.opts.onListenerError?.(err);
        } catch {
          // nothing more to do
        }
      }
    }
  }
}

function rowInfo(row: BudgetRow): ThreadBudgetInfo {
  return reservedBudgetInfo(row.thread_id, row.max_tokens, row.prompt_tokens, row.completion_tokens, row.reserved);
}

function rowView(row: BudgetRow): BudgetView {
  return { ...rowInfo(row), active: row.live };
}

/** A deadlock or serialization failure: PostgreSQL rolled the statement back, trying again is safe. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

function leaseFromEnv(): number | null {
  const s = Number(process.env['ORGANISM_LEASE_SECONDS']);
  return Number.isFinite(s) && s > 0 ? s * 1000 : null;
}
