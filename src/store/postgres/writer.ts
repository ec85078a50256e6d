import pg from 'pg';
import { wanted } from '../guarded-jobs.js';

/** The transaction under way: every statement of a job goes through it. */
export interface Tx {
  readonly query: pg.PoolClient['query'];
  /**
   * A statement sent with the COMMIT in one simple-protocol query (one round trip for the end of
   * the transaction, not one per statement), in the order given; `onResult` hears its result
   * once the transaction committed. SQL text must have its values written in as literals
   * (`sqlLiteral`): nothing of a caller's data is ever read as SQL. A named statement runs as
   * the EXECUTE of a statement prepared on the connection (see Prepared); false when its
   * values cannot be written in (then nothing was queued: the caller runs it with tx.query).
   */
  atCommit(statement: string | NamedStatement, onResult?: (result: pg.QueryResult) => void): boolean;
}

/** A statement of stable text with its values, run by name (prepared once per connection). */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  /**
   * Run on the generic plan, never planned for its values: for a statement over unnest()ed
   * arrays, whose custom plan knows the arrays' lengths and so always looks cheaper to the
   * server than the generic one (it would plan it again at every call). Sets plan_cache_mode
   * for the rest of the transaction: only for statements sent with the COMMIT (atCommit).
   */
  readonly generic?: boolean;
}

/**
 * A NUL cannot be written in as a literal: the server reads a simple-protocol query as a C
 * string, so the query would end at it (a syntax error, retried as a fault: the wedge a NUL
 * once caused). Sent as a parameter the server refuses it as data (22021, STORAGE_REJECTED);
 * a literal of one is refused the same way here.
 */
const hasNul = (text: string) => text.includes('\u0000');

/**
 * A string as an SQL string literal, as pg's escapeLiteral writes it (quotes doubled; with a
 * backslash, an E'' literal with backslashes doubled), by the engine's own replaceAll:
 * escapeLiteral builds its result a character at a time, and the payloads of a lot of outgoing
 * messages went through it, a fifteenth of the process's CPU on the PostgreSQL chain.
 */
export function quoteLiteral(text: string): string {
  const quoted = text.replaceAll("'", "''");
  return text.includes('\\') ? ` E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** An element of an array literal: double-quoted, with backslashes and double quotes escaped. */
const arrayItem = (text: string): string => `"${/[\\"]/.test(text) ? text.replace(/[\\"]/g, (c) => `\\${c}`) : text}"`;

/** A string, number or null as an SQL literal (strings as quoteLiteral writes them); a NUL in a string is refused as the server refuses it (SQLSTATE 22021). */
export function sqlLiteral(value: string | number | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
    return String(value);
  }
  if (hasNul(value)) throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
  return quoteLiteral(value);
}

/** A parameter's value as an SQL literal, as pg would have sent it (arrays as array literals); null: not one we write in. */
function paramLiteral(value: unknown): string | null {
  if (value === null || value === undefined) return 'NULL';
  // A negative number in parentheses: `x-$1` must not become `x--1`, a comment.
  if (typeof value === 'number') return Number.isFinite(value) ? (value < 0 || Object.is(value, -0) ? `(${value})` : String(value)) : null;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'string') return hasNul(value) ? null : quoteLiteral(value);
  if (Array.isArray(value)) {
    const items: string[] = [];
    for (const v of value) {
      if (v === null || v === undefined) items.push('NULL');
      else if ((typeof v === 'string' && !hasNul(v)) || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) items.push(arrayItem(String(v)));
      else return null;
    }
    return quoteLiteral(`{${items.join(',')}}`);
  }
  return null;
}

/** Quoted literals of a statement (parameters are never inside them). */
const QUOTED = /'(?:[^']|'')*'/g;

/**
 * The statement with its parameters written in as literals, for a simple-protocol query; null
 * when it cannot be done plainly (a comment, a dollar quote, a value of another kind).
 */
export function inlineParams(text: string, values: readonly unknown[]): string | null {
  if (/--|\/\*|\$\$|\\/.test(text.replace(QUOTED, "''"))) return null;
  let failed = false;
  const outside = (part: string) =>
    part.replace(/\$(\d+)/g, (_, n: string) => {
      const literal = paramLiteral(values[Number(n) - 1]);
      if (literal === null || Number(n) > values.length) failed = true;
      return literal ?? '';
    });
  let out = '';
  let at = 0;
  for (const m of text.matchAll(QUOTED)) {
    out += outside(text.slice(at, m.index)) + m[0];
    at = m.index + m[0].length;
  }
  out += outside(text.slice(at));
  return failed ? null : out;
}

/** Joins every transaction of the writer: `begin` as it starts, `commit` just before COMMIT (it may write, with the COMMIT: Tx.atCommit). */
export interface PgTransactionHook {
  begin(): void;
  commit(tx: Tx): void | Promise<void>;
  /** The transaction committed (what `commit` wrote is now visible). */
  committed?(): void;
}

interface Job {
  run: (tx: Tx) => Promise<void>;
  /** Checked as the job's batch is about to begin: an error drops the job (it rejects with it). */
  check: (() => Error | null) | undefined;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Write-behind group commit on PostgreSQL, the counterpart of the SQLite GroupWriter: writes
 * queued while a transaction runs (or within one tick) go in order into the next transaction,
 * and every caller's promise resolves after that COMMIT. A write whose promise is not awaited
 * (a thread record, an LLM call record) still lands in order with the writes after it; reads
 * await `flush()` first, so they see every write queued before them.
 *
 * One transaction at a time, on one pooled connection: the order of the queue is the order of
 * the commits (the journal's seq follows it), and reads use the pool's other connections.
 */
export class PgWriter {
  private queue: Job[] = [];
  /** The batch committing now. */
  private current: Promise<void> | null = null;
  /** Settles when the last write queued so far has settled (writes settle in queue order). */
  private last: Promise<void> = Promise.resolve();
  private scheduled = false;
  private readonly hooks: PgTransactionHook[] = [];

  /**
   * @param onError reports a failed write (once per write)
   * @param mapError what callers get for a failed write (the catalogue's storage errors)
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly onError: (err: unknown) => void,
    private readonly mapError: (err: unknown) => unknown = (err) => err,
  ) {}

  addHook(hook: PgTransactionHook): void {
    this.hooks.push(hook);
  }

  write(run: (tx: Tx) => Promise<void>, check?: () => Error | null): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.queue.push({ run, check, resolve, reject }));
    this.last = done.then(noop, noop);
    if (!this.current && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.next());
    }
    return done;
  }

  /** Resolves once everything queued before the call has committed (or failed). */
  async flush(): Promise<void> {
    const target = this.last;
    this.next();
    await target;
  }

  /**
   * Runs `work` in the transaction of a batch (the hooks join it), after the writes queued
   * before it and before those queued later (recovery, pruning); resolves with its result
   * once committed.
   */
  async transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    let result: T | undefined;
    await this.write(async (tx) => {
      result = await work(tx);
    });
    return result as T;
  }

  /** Starts the next batch unless one is committing (it starts the next when it ends). */
  private next(): void {
    this.scheduled = false;
    if (this.current || this.queue.length === 0) return;
    const jobs = wanted(this.queue);
    this.queue = [];
    if (jobs.length === 0) return;
    this.current = this.commitBatch(jobs).finally(() => {
      this.current = null;
      this.next(); // what queued up meanwhile goes in the next transaction at once
    });
  }

  private async commitBatch(jobs: Job[]): Promise<void> {
    try {
      await this.inTransaction(async (tx) => {
        for (const job of jobs) await job.run(tx);
      });
    } catch (batchErr) {
      // No connection to be had (the database is down): every write of the batch fails now,
      // with one report, rather than each waiting for a connection of its own.
      if (batchErr instanceof NoConnection) return this.failAll(jobs, batchErr.cause);
      // One bad write must not sink the batch: redo each on its own to find it.
      for (let i = 0; i < jobs.length; i++) {
        const job = jobs[i]!;
        try {
          await this.inTransaction(job.run);
          job.resolve();
        } catch (jobErr) {
          if (jobErr instanceof NoConnection) return this.failAll(jobs.slice(i), jobErr.cause);
          const err = this.mapError(jobErr);
          this.onError(err);
          job.reject(err);
        }
      }
      return;
    }
    for (const job of jobs) job.resolve();
  }

  private failAll(jobs: readonly Job[], cause: unknown): void {
    const err = this.mapError(cause);
    this.onError(err);
    for (const job of jobs) job.reject(err);
  }

  private async inTransaction(work: (tx: Tx) => Promise<void>): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw new NoConnection(err);
    }
    let broken = false;
    // A connection cut while checked out also emits 'error' (the query under way fails with it).
    const lost = () => {
      broken = true;
    };
    client.on('error', lost);
    try {
      for (const h of this.hooks) h.begin();
      const statements = new Prepared(client);
      // Each entry is one statement, or a few ending in an EXECUTE (see Prepared): `onResult` hears the last one's result.
      const tail: Array<{ sql: string; results: number; onResult: ((result: pg.QueryResult) => void) | undefined }> = [];
      // BEGIN goes with the transaction's first statement (see opening), or with its end.
      let begun = false;
      const tx: Tx = {
        query: ((config: string | pg.QueryConfig, values?: unknown[]) => {
          if (begun) return client.query(config, values);
          begun = true;
          return opening(client, statements, config, values);
        }) as Tx['query'],
        atCommit: (statement, onResult) => {
          const run = typeof statement === 'string' ? { sql: statement, results: 1 } : statements.execute(statement);
          if (run === null) return false;
          tail.push({ ...run, onResult });
          return true;
        },
      };
      let results: pg.QueryResult[] = [];
      try {
        await work(tx);
        for (const h of this.hooks) await h.commit(tx);
        // The statements sent with the COMMIT: should one fail, the rest and the COMMIT are not
        // run, and the transaction rolls back below.
        if (begun || tail.length > 0) {
          const answer = (await client.query([...(begun ? [] : ['BEGIN']), ...tail.map((t) => t.sql), 'COMMIT'].join('; '))) as unknown as pg.QueryResult | pg.QueryResult[];
          results = Array.isArray(answer) ? answer : [answer];
        }
      } catch (err) {
        // What this transaction prepared may or may not exist now (PREPARE is not undone by a
        // rollback, and a failed query string stops where it failed): the connection goes.
        if (statements.preparing()) broken = true;
        await client.query('ROLLBACK').catch(() => {
          broken = true; // the connection is gone: do not return it to the pool
        });
        throw err;
      }
      statements.committed();
      // Committed: nothing from here on may fail the transaction (its jobs would run again).
      let at = begun ? 0 : 1;
      for (const t of tail) {
        at += t.results;
        try {
          t.onResult?.(results[at - 1]!);
        } catch (err) {
          this.onError(err);
        }
      }
      for (const h of this.hooks) h.committed?.();
    } catch (err) {
      if (isConnectionError(err)) broken = true;
      throw err;
    } finally {
      client.off('error', lost);
      client.release(broken);
    }
  }
}

const noop = () => {};

/**
 * A transaction's first statement, with its BEGIN in one simple-protocol query (one round trip
 * less per transaction): its values written in as literals, as pg would have sent them; a
 * named one as the EXECUTE of its prepared statement (see Prepared). One that cannot be
 * written so plainly (see inlineParams) goes after a BEGIN of its own.
 */
async function opening(client: pg.PoolClient, statements: Prepared, config: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult> {
  const text = typeof config === 'string' ? config : config.text;
  const params = (typeof config === 'string' ? values : (config.values ?? values)) ?? [];
  const sql = typeof config !== 'string' && config.name ? (statements.execute({ name: config.name, text, values: params })?.sql ?? null) : inlineParams(text, params);
  if (sql === null) {
    await client.query('BEGIN');
    return client.query(config, values);
  }
  const results = (await client.query(`BEGIN; ${sql}`)) as unknown as pg.QueryResult[];
  return results[results.length - 1]!;
}

/**
 * The SQL-level prepared statements of each pooled connection, by name (gone with the
 * connection): how often each ran since it was prepared, and at which count it is prepared again.
 */
const preparedOn = new WeakMap<pg.ClientBase, Map<string, { runs: number; replanAt: number }>>();

/**
 * A statement is prepared again, and so planned again, after 10 runs on its connection, then
 * 100, 1,000, 10,000, and every 10,000 after. Its plan is kept per connection, and a plan made
 * while a table was small stays what it was as the table grows: an update of threads by id
 * planned on an empty table read every thread at each run (a hash join over a sequential scan,
 * 47 ms per lot with 200,000 threads). Planned again as the tables grow, it looks rows up by key.
 */
const FIRST_REPLAN = 10;
const nextReplan = (at: number) => (at < 10_000 ? at * 10 : at + 10_000);

/**
 * Named statements of one transaction run from simple-protocol queries as EXECUTE, so that the
 * server plans them once per connection: written out in full with their values, a statement is
 * planned at every call (0.1-0.3 ms of server CPU each for the outcome lot's, on every hop). The
 * PREPARE goes first in the same query string the first time a connection runs the statement.
 * Their SQL names are prefixed so as never to meet the protocol-level statements pg prepares
 * under a query's `name`.
 */
class Prepared {
  private readonly known: Map<string, { runs: number; replanAt: number }>;
  /** Prepared (or prepared again) by this transaction. */
  private readonly fresh = new Set<string>();
  /** Runs of each statement in this transaction. */
  private readonly runs = new Map<string, number>();
  private generic = false;

  constructor(private readonly client: pg.ClientBase) {
    this.known = preparedOn.get(client) ?? new Map();
  }

  /** `[SET LOCAL ...; ][PREPARE ...; ]EXECUTE ...(literals)` and how many statements that is, or null when a value cannot be a literal. */
  execute(statement: NamedStatement): { sql: string; results: number } | null {
    const literals: string[] = [];
    for (const value of statement.values) {
      const literal = paramLiteral(value);
      if (literal === null) return null;
      literals.push(literal);
    }
    const name = pg.escapeIdentifier(`organism:${statement.name}`);
    const parts = [`EXECUTE ${name}${literals.length > 0 ? `(${literals.join(', ')})` : ''}`];
    const kept = this.known.get(statement.name);
    if (!this.fresh.has(statement.name) && (kept === undefined || kept.runs >= kept.replanAt)) {
      this.fresh.add(statement.name);
      parts.unshift(`PREPARE ${name} AS ${statement.text}`);
      if (kept) parts.unshift(`DEALLOCATE ${name}`);
    }
    this.runs.set(statement.name, (this.runs.get(statement.name) ?? 0) + 1);
    if (statement.generic && !this.generic) {
      this.generic = true;
      parts.unshift('SET LOCAL plan_cache_mode = force_generic_plan');
    }
    return { sql: parts.join('; '), results: parts.length };
  }

  /** Whether this transaction sent a PREPARE. */
  preparing(): boolean {
    return this.fresh.size > 0;
  }

  /** The transaction committed: what it prepared exists on the connection. */
  committed(): void {
    if (this.runs.size === 0) return;
    for (const [name, runs] of this.runs) {
      const kept = this.known.get(name);
      if (!this.fresh.has(name)) kept!.runs += runs;
      else this.known.set(name, { runs, replanAt: kept ? nextReplan(kept.replanAt) : FIRST_REPLAN });
    }
    preparedOn.set(this.client, this.known);
  }
}

/** The pool could not hand out a connection (nothing of the transaction ran). */
class NoConnection extends Error {
  constructor(override readonly cause: unknown) {
    super('no connection to PostgreSQL');
  }
}

function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? '';
  return code.startsWith('08') || code.startsWith('57P') || code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE';
}
