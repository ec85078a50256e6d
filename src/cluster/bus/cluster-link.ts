import type pg from 'pg';
import type { OrganismEvent } from '../../events/types.js';
import type { ClusterCommand, ClusterHandlers, ClusterLink, StoredConfig } from '../link.js';
import type { Logger } from '../../util/logger.js';
import { channelsFor, currentSchema, notify, PgListener, type Channels } from './channels.js';
import { PgEventPublisher } from './event-publisher.js';
import { PgEventReceiver } from './event-receiver.js';
import { createPool, pgRuntimeError, pgStorageError, redactUrl } from '../../store/postgres/pool.js';
import type { OrganismError } from '../../errors/catalogue.js';

export interface PgClusterLinkOptions {
  /** The organism's database (the same URL, and schema, as its store). */
  readonly url: string;
  readonly schema?: string;
  /** This process (its boot id): what it sends carries it, and it never hears itself. */
  readonly origin: string;
  /** Hear the other processes' events (a `serve` does, for its WebSocket clients; a worker has none). */
  readonly hearEvents: boolean;
  /**
   * The process's LISTEN connection when the store holds one already (cluster mode): the link
   * subscribes on it and leaves closing it to its owner. Absent: the link opens its own.
   */
  readonly listener?: PgListener;
  /** Records the configuration this process runs (its workers row), after a reload here or followed from elsewhere. */
  readonly running?: (configHash: string) => Promise<void>;
  /** An idle connection of the link broke (see ClusterStorage.connectionLost): true when the store's watch took it. */
  readonly connectionLost?: (err: unknown) => boolean;
  readonly logger?: Logger;
}

/** Meta rows holding the organism's configuration (the core's boot check reads the same ones). */
const CONFIG_HASH_KEY = 'config_hash';
const CONFIG_TEXT_KEY = 'config_text';

/**
 * The link between the processes of an organism sharing one PostgreSQL database, over
 * LISTEN/NOTIFY on the schema's channels (see channels.ts):
 * - events: each process publishes its bus events on `organism_events:<schema>` (event-publisher.ts)
 *   and, if it serves live views, hears the others' (event-receiver.ts);
 * - control: pause/resume, kill and reload go on `organism_control:<schema>` as
 *   `{"o": origin, "c": command}`, after what they announce is stored; a process that was cut
 *   off (the LISTEN connection dropped) is told to re-read the stored state once it is back.
 *
 * Its own small pool (3 connections: one publishing, the others for commands and reads) and the
 * listener's connection, apart from the store's pool, so live views never wait behind the
 * journal's writes.
 */
export class PgClusterLink implements ClusterLink {
  private publisher: PgEventPublisher | null = null;
  private receiver: PgEventReceiver | null = null;
  /** The LISTEN connection the link opened itself (closed with it). */
  private ownListener: PgListener | null = null;
  private readonly unsubscribe: Array<() => void> = [];
  private channels: Channels | null = null;

  private constructor(
    readonly origin: string,
    private readonly pool: pg.Pool,
    private readonly options: PgClusterLinkOptions,
    private readonly where: string,
  ) {}

  static create(options: PgClusterLinkOptions): PgClusterLink {
    const where = redactUrl(options.url);
    const pool = createPool({ url: options.url, ...(options.schema ? { schema: options.schema } : {}), max: 3 });
    pool.on('error', (err) => {
      if (!options.connectionLost?.(err)) options.logger?.warn({ err: pgStorageError(where, err) }, 'an idle PostgreSQL connection of the cluster link failed');
    });
    return new PgClusterLink(options.origin, pool, options, where);
  }

  async start(handlers: ClusterHandlers): Promise<void> {
    let schema: string;
    try {
      schema = await currentSchema(this.pool);
    } catch (err) {
      throw this.failure(err);
    }
    const channels = channelsFor(schema);
    this.channels = channels;
    this.publisher = new PgEventPublisher(this.pool, channels.events, this.origin, this.options.logger);
    const listener =
      this.options.listener ??
      new PgListener({
        connectionString: this.options.url,
        ...(this.options.schema ? { options: `-c search_path=${this.options.schema}` } : {}),
        where: this.where,
        ...(this.options.logger ? { logger: this.options.logger } : {}),
      });
    if (!this.options.listener) this.ownListener = listener;
    if (this.options.hearEvents) {
      const receiver = new PgEventReceiver(
        this.origin,
        (e, o) => handlers.event(e, o),
        (seq) => this.readBody(seq),
        this.options.logger,
      );
      this.receiver = receiver;
      this.unsubscribe.push(await listener.subscribe(channels.events, (payload) => receiver.receive(payload)));
    }
    this.unsubscribe.push(
      await listener.subscribe(channels.control, (payload) => {
        const message = parseControl(payload);
        if (!message) return this.options.logger?.warn({ payload: payload.slice(0, 120) }, 'an unreadable control notification was ignored');
        if (message.o !== this.origin) handlers.command(message.c, message.o);
      }),
    );
    this.unsubscribe.push(listener.onReconnect(() => handlers.resync()));
    if (this.ownListener) await this.ownListener.start();
  }

  publishEvent(event: OrganismEvent): void {
    this.publisher?.publish(event);
  }

  async publishCommand(command: ClusterCommand): Promise<void> {
    const channel = this.channel();
    try {
      await notify(this.pool, channel, JSON.stringify({ o: this.origin, c: command }));
    } catch (err) {
      throw this.failure(err);
    }
  }

  async storedConfig(): Promise<StoredConfig | null> {
    try {
      const rows = (await this.pool.query<{ key: string; value: string }>('SELECT key, value FROM meta WHERE key = ANY($1::text[])', [[CONFIG_HASH_KEY, CONFIG_TEXT_KEY]])).rows;
      const hash = rows.find((r) => r.key === CONFIG_HASH_KEY)?.value;
      const text = rows.find((r) => r.key === CONFIG_TEXT_KEY)?.value;
      return hash === undefined || text === undefined ? null : { hash, text };
    } catch (err) {
      throw this.failure(err);
    }
  }

  /** One transaction: the stored configuration and the `reload` notification (sent at its commit). */
  async publishConfig(config: StoredConfig): Promise<void> {
    const channel = this.channel();
    let client: pg.PoolClient | null = null;
    let broken = false;
    // A connection cut while checked out emits 'error' on the client: unheard, it ends the process.
    const lost = () => {
      broken = true;
    };
    try {
      client = await this.pool.connect();
      client.on('error', lost);
      await client.query('BEGIN');
      await client.query(`INSERT INTO meta (key, value) VALUES ($1, $2), ($3, $4) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [
        CONFIG_HASH_KEY,
        config.hash,
        CONFIG_TEXT_KEY,
        config.text,
      ]);
      const command: ClusterCommand = { kind: 'reload', configHash: config.hash };
      await notify(client, channel, JSON.stringify({ o: this.origin, c: command }));
      await client.query('COMMIT');
    } catch (err) {
      await client?.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw this.failure(err);
    } finally {
      client?.off('error', lost);
      client?.release(broken);
    }
    await this.running(config);
  }

  async running(config: StoredConfig): Promise<void> {
    try {
      await this.options.running?.(config.hash);
    } catch (err) {
      throw this.failure(err);
    }
  }

  /** Figures for the bench and tests: events sent and heard. */
  stats() {
    return {
      published: this.publisher?.sent ?? 0,
      batches: this.publisher?.batches ?? 0,
      dropped: this.publisher?.dropped ?? 0,
      received: this.receiver?.received ?? 0,
      repeats: this.receiver?.repeats ?? 0,
    };
  }

  /** Resolves once every event published so far has been sent. */
  async flush(): Promise<void> {
    await this.publisher?.flush();
  }

  async close(): Promise<void> {
    await this.publisher?.close().catch(() => {});
    for (const off of this.unsubscribe.splice(0)) off();
    await this.ownListener?.close();
    await this.pool.end().catch(() => {});
  }

  /** A failed query of the link: one that met no server is STORAGE_UNAVAILABLE (see pgRuntimeError). */
  private failure(err: unknown): OrganismError {
    return pgRuntimeError(this.where, err);
  }

  private channel(): string {
    if (!this.channels) throw new Error('the cluster link is not started');
    return this.channels.control;
  }

  private async readBody(seq: number): Promise<string | null> {
    const row = (await this.pool.query<{ body: string }>('SELECT body FROM event_bodies WHERE seq = $1', [seq])).rows[0];
    return row?.body ?? null;
  }
}

function parseControl(payload: string): { o: string; c: ClusterCommand } | null {
  try {
    const m = JSON.parse(payload) as { o?: unknown; c?: { kind?: unknown } };
    if (typeof m.o !== 'string' || typeof m.c !== 'object' || m.c === null) return null;
    const kind = m.c.kind;
    if (kind !== 'paused' && kind !== 'kill' && kind !== 'reload') return null;
    return m as { o: string; c: ClusterCommand };
  } catch {
    return null;
  }
}
