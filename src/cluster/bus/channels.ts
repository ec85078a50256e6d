import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../../util/logger.js';
import { pgRuntimeError, pgStorageError } from '../../store/postgres/pool.js';
import { isConnectionFailure } from '../../store/postgres/reachability.js';

/**
 * LISTEN/NOTIFY channels of one organism. A channel name carries the schema, so organisms in
 * different schemas of one database never hear each other. NOTIFY is a wake-up hint only:
 * nothing is ever carried by it that is not also in a table (a lost notification delays, it
 * never loses).
 */
export type ChannelKind = 'work' | 'events' | 'control';

/** PostgreSQL truncates identifiers past 63 bytes, and pg_notify refuses longer channel names. */
const MAX_CHANNEL = 63;

/** `organism_<kind>:<schema>`; a schema too long for that is replaced by a hash of it. */
export function channelName(kind: ChannelKind, schema: string): string {
  const prefix = `organism_${kind}:`;
  const name = prefix + schema;
  if (Buffer.byteLength(name) <= MAX_CHANNEL) return name;
  return (
    prefix +
    createHash('sha256')
      .update(schema)
      .digest('hex')
      .slice(0, MAX_CHANNEL - prefix.length)
  );
}

/** The channel names of one schema. */
export interface Channels {
  readonly schema: string;
  readonly work: string;
  readonly events: string;
  readonly control: string;
}

export function channelsFor(schema: string): Channels {
  return { schema, work: channelName('work', schema), events: channelName('events', schema), control: channelName('control', schema) };
}

/** The schema the connection's tables live in (the search_path's first, as the stores use it). */
export async function currentSchema(db: { query(sql: string): Promise<pg.QueryResult> }): Promise<string> {
  return (await db.query('SELECT current_schema() AS schema')).rows[0]!['schema'] as string;
}

/** Sends a notification on `channel` (in `tx`, it is delivered when that transaction commits). */
export async function notify(db: { query(sql: string, values?: unknown[]): Promise<unknown> }, channel: string, payload = ''): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [channel, payload]);
}

export interface ListenerOptions {
  /** The same connection string (and search_path options) as the pool's. */
  readonly connectionString: string;
  /** libpq `options` (e.g. `-c search_path=…`), when the pool was given a schema. */
  readonly options?: string;
  readonly logger?: Logger;
  /** Where, for messages (the URL without its password). */
  readonly where: string;
  /**
   * The store's outage watch: told when the connection breaks. An outage is logged there, once
   * (when it goes, when it is back), so the listener says nothing of its own loss then; a loss
   * the watch found no outage behind (only this connection was ended) is logged here.
   */
  readonly watch?: ConnectionWatch;
  /** First reconnect delay; doubles up to maxBackoffMs. */
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

type Handler = (payload: string) => void;

/** See PgReachability. */
export interface ConnectionWatch {
  suspect(err: unknown): void;
  /** Outages declared so far. */
  readonly outages: number;
}

/**
 * One dedicated connection, held out of the pool, LISTENing on channels. When it breaks it
 * reconnects with backoff and LISTENs again; every `onReconnect` callback runs after each
 * reconnect, because notifications sent while it was away are gone: the caller polls then.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private closed = false;
  private connecting: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private backoff: number;
  /** The watch's outage count when the connection was lost (null: no watch, or not lost). */
  private outagesAtLoss: number | null = null;
  /** A failed reconnect was told (once per loss). */
  private toldRetry = false;

  constructor(private readonly options: ListenerOptions) {
    this.backoff = options.minBackoffMs ?? 250;
  }

  /** Connects and LISTENs on the channels subscribed so far; a failure is thrown (the first time only). */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Calls `handler` with each notification's payload on `channel`; returns the unsubscribe. */
  async subscribe(channel: string, handler: Handler): Promise<() => void> {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      if (this.client) await this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch((err: unknown) => this.broken(err));
    }
    set.add(handler);
    return () => {
      set.delete(handler);
    };
  }

  /** Called after every reconnect (notifications may have been missed meanwhile). */
  onReconnect(fn: () => void): () => void {
    this.reconnectHandlers.add(fn);
    return () => this.reconnectHandlers.delete(fn);
  }

  get connected(): boolean {
    return this.client !== null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private connect(): Promise<void> {
    this.connecting ??= (async () => {
      const client = new pg.Client({
        connectionString: this.options.connectionString,
        application_name: 'organism-listen',
        connectionTimeoutMillis: 10_000,
        ...(this.options.options ? { options: this.options.options } : {}),
      });
      client.on('error', (err) => this.broken(err, client));
      client.on('end', () => this.broken(null, client));
      client.on('notification', (n) => {
        for (const h of this.handlers.get(n.channel) ?? []) {
          try {
            h(n.payload ?? '');
          } catch (err) {
            this.options.logger?.error({ err, channel: n.channel }, 'a notification handler failed');
          }
        }
      });
      try {
        await client.connect();
        for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (err) {
        client.removeAllListeners('end');
        await client.end().catch(() => {});
        throw pgRuntimeError(this.options.where, err);
      }
      if (this.closed) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.backoff = this.options.minBackoffMs ?? 250;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private broken(err: unknown, which: pg.Client | null = this.client): void {
    if (which !== this.client || this.client === null) return; // an old or never-adopted client
    const client = this.client;
    this.client = null;
    client.removeAllListeners('end');
    void client.end().catch(() => {});
    if (this.closed) return;
    const fields = { err: err ? pgStorageError(this.options.where, err) : undefined };
    const watch = this.options.watch;
    this.toldRetry = false;
    if (watch) {
      this.outagesAtLoss = watch.outages;
      watch.suspect(err ?? new Error('Connection terminated unexpectedly'));
      this.options.logger?.debug(fields, 'the PostgreSQL LISTEN connection was lost; reconnecting');
    } else this.options.logger?.warn(fields, 'the PostgreSQL LISTEN connection was lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.options.maxBackoffMs ?? 10_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().then(
        () => {
          if (this.closed) return;
          const watch = this.options.watch;
          // Lost to an outage: the watch tells of it, and of its end.
          if (watch && this.outagesAtLoss !== null && watch.outages > this.outagesAtLoss) this.options.logger?.debug('the PostgreSQL LISTEN connection is back');
          else this.options.logger?.info('the PostgreSQL LISTEN connection is back');
          this.outagesAtLoss = null;
          for (const fn of this.reconnectHandlers) fn();
        },
        (err: unknown) => {
          // The server answers but will not take this connection (too many clients, a login
          // refused): said once. One it could not reach is the watch's to tell (an outage).
          if (this.options.watch && !this.toldRetry && !isConnectionFailure(err)) {
            this.toldRetry = true;
            this.options.logger?.warn({ err }, 'the PostgreSQL LISTEN connection cannot be reopened; retrying with backoff');
          }
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }
}
