import pg from 'pg';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import type { Logger } from '../../util/logger.js';
import type { StorageProblem } from '../../core/storage.js';

/** Node socket errors and pg client messages that mean "the server is not there", not "the query was wrong". */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN']);
const CLIENT_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|server closed the connection/i;

/**
 * True when `err` says the database could not be reached or the connection broke (the server
 * stopped, restarted, or the network cut it): SQLSTATE classes 08 and 57P01-57P03 too.
 * A query the server refused (a constraint, a syntax error) is not one.
 */
export function isConnectionFailure(err: unknown): boolean {
  if (err instanceof OrganismError) return err.code === Errors.STORAGE_UNAVAILABLE.code;
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (SOCKET_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
  return typeof e?.message === 'string' && CLIENT_MESSAGES.test(e.message);
}

/** A connection that did not come in time: the server may be gone, or the pool busy. */
function isTimeout(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === 'ETIMEDOUT' || (typeof e?.message === 'string' && /timeout exceeded when trying to connect/i.test(e.message));
}

export interface ReachabilityOptions {
  /** How often a reachable database is checked (so /health tells before a write fails). Default 5 s. */
  readonly checkMs?: number;
  /** First wait between tries while it is unreachable, doubled up to `maxRetryMs`. Default 250 ms. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** A check that has not answered after this long counts as a failure. Default 5 s. */
  readonly timeoutMs?: number;
}

/**
 * Whether the PostgreSQL server answers. The stores report connection failures here; a light
 * `SELECT 1` on a connection of its own checks now and then while all is well, and with
 * backoff while it is not. While
 * unreachable, `problem()` names it (injects are refused at once with a 503, /health says
 * degraded); one log line when it goes away and one when it is back, never its password.
 * Nothing else changes state: writes that failed are retried by their owners (the pump books
 * a delivery's outcome until it commits), and reads simply fail meanwhile.
 */
export class PgReachability {
  private down: { error: OrganismError; since: number } | null = null;
  private outageCount = 0;
  private timer: NodeJS.Timeout | null = null;
  private delay: number;
  private closed = false;
  private readonly checkMs: number;
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly timeoutMs: number;

  /** The check's own connection: a pool busy with long work must not look like a server gone. */
  private client: pg.Client | null = null;
  private checking = false;
  /** A connection broke while a check ran (see suspect). */
  private again = false;

  constructor(
    private readonly url: string,
    private readonly where: string,
    private readonly logger: Logger | undefined,
    options: ReachabilityOptions = {},
  ) {
    this.checkMs = options.checkMs ?? 5_000;
    this.retryMs = options.retryMs ?? 250;
    this.maxRetryMs = options.maxRetryMs ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.delay = this.retryMs;
    this.schedule(this.checkMs);
  }

  problem(): StorageProblem | null {
    return this.down ? { status: 'degraded', error: this.down.error } : null;
  }

  /**
   * A store's failure. True when it was a connection failure (the outage is logged here, once:
   * the caller need not log it again). A wait for a connection that timed out may only mean
   * a pool busy with long work: that is checked at once rather than believed.
   */
  failed(err: unknown): boolean {
    if (!isConnectionFailure(err)) return false;
    if (isTimeout(err)) {
      if (!this.down) this.schedule(0);
      return this.down !== null;
    }
    this.markDown(err);
    return true;
  }

  /**
   * A connection held open broke (the server stopped or restarted, or only that connection was
   * ended): the server is checked now rather than at the next check, and the outage declared
   * (and logged, once) if it does not answer.
   */
  suspect(err: unknown): void {
    if (this.closed || this.down || !isConnectionFailure(err)) return;
    if (this.checking) this.again = true;
    else this.schedule(0);
  }

  /** How many outages were declared so far: a connection lost before the count moved was lost to one. */
  get outages(): number {
    return this.outageCount;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.dropClient();
  }

  private dropClient(): void {
    const c = this.client;
    this.client = null;
    void c?.end().catch(() => {});
  }

  private markDown(err: unknown): void {
    if (this.down || this.closed) return;
    const reason = err instanceof OrganismError ? err.detail : err instanceof Error ? err.message : String(err);
    this.down = { error: Errors.STORAGE_UNAVAILABLE(this.where, reason), since: Date.now() };
    this.outageCount++;
    this.logger?.error(
      { code: Errors.STORAGE_UNAVAILABLE.code, where: this.where, reason },
      'PostgreSQL cannot be reached: new messages are refused until it answers; retrying with backoff',
    );
    this.delay = this.retryMs;
    this.schedule(this.delay);
  }

  private markUp(): void {
    if (!this.down) return;
    const downMs = Date.now() - this.down.since;
    this.down = null;
    this.logger?.warn({ where: this.where, downMs }, 'PostgreSQL answers again: messages are accepted again');
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), ms).unref();
  }

  private async check(): Promise<void> {
    this.timer = null;
    if (this.checking) return; // one at a time: the running one schedules the next
    this.checking = true;
    try {
      await this.ping();
      this.markUp();
      this.delay = this.retryMs;
      this.schedule(this.checkMs);
    } catch (err) {
      if (this.closed) return;
      if (isConnectionFailure(err)) this.markDown(err);
      if (this.down) {
        this.delay = Math.min(this.delay * 2, this.maxRetryMs);
        this.schedule(this.delay);
      } else this.schedule(this.checkMs);
    } finally {
      this.checking = false;
      // A connection broke while this check ran (which may have been answered just before): check again now.
      if (this.again && !this.closed) {
        this.again = false;
        if (!this.down) this.schedule(0);
      }
    }
  }

  private async ping(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('Connection terminated: no answer to a check'), { code: 'ETIMEDOUT' })), this.timeoutMs);
    });
    try {
      await Promise.race([this.select1(), timeout]);
    } catch (err) {
      this.dropClient();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async select1(): Promise<void> {
    if (!this.client) {
      const client = new pg.Client({ connectionString: this.url, application_name: 'organism-check', connectionTimeoutMillis: this.timeoutMs });
      // Out of any pool: its failures (server gone) must reach a listener, not end the process.
      // Held open between checks, it is the first to hear a server that stops or restarts
      // (even one back before any query of the process met the outage).
      client.on('error', (err) => {
        if (this.client !== client) return;
        this.client = null;
        void client.end().catch(() => {});
        this.suspect(err);
      });
      this.client = client;
      await client.connect();
    }
    await this.client.query('SELECT 1');
  }
}
