import type pg from 'pg';
import type { OrganismEvent } from '../../events/types.js';
import { isConnectionFailure } from '../../store/postgres/reachability.js';
import type { Logger } from '../../util/logger.js';

/** NOTIFY payloads must be shorter than 8000 bytes; the origin and seq go in front of the body. */
export const MAX_INLINE_BODY = 7_900;
/** Events in one statement at most. */
const BATCH = 500;
/** Events waiting at most; past it new ones are dropped (a live view misses them, nothing else does). */
const MAX_QUEUED = 50_000;
/** Token deltas alone wait this long for more of the same call to join them. */
export const DELTA_WINDOW_MS = 50;
/** Large bodies are kept this long for the other processes to read. */
export const BODY_RETAIN_MS = 60_000;
const PRUNE_EVERY_MS = 30_000;
const WARN_EVERY_MS = 60_000;

/**
 * One statement per batch, in one transaction: each event takes the next `event_seq` in the
 * batch's order; bodies too large for a notification go to `event_bodies`; the notifications
 * go out in seq order when it commits. Batches are sent one at a time, so one process's seqs
 * reach the others in order.
 */
const PUBLISH_SQL = `
  WITH ev AS MATERIALIZED (
    SELECT u.ord, u.body, nextval('event_seq') AS seq FROM unnest($2::text[]) WITH ORDINALITY AS u(body, ord)
  ), big AS (
    INSERT INTO event_bodies (seq, origin, at, body) SELECT seq, $3, $4, body FROM ev WHERE octet_length(body) > $5
  )
  SELECT pg_notify($1, $3 || ' ' || e.seq || ' ' || CASE WHEN octet_length(e.body) > $5 THEN '@' ELSE e.body END)
  FROM (SELECT * FROM ev ORDER BY ord) e`;

/**
 * Sends this process's bus events to the other processes of a clustered organism over NOTIFY.
 * `publish` never blocks the pump: events queue and go out in batches, one batch in flight at
 * a time (what queues meanwhile forms the next batch, so the rate adapts to the database).
 *
 * Token deltas (`llm_delta`, one per streamed chunk) are coalesced: the deltas of one LLM call
 * in a batch become one event at the place of the first, its text joined; a batch of nothing
 * but deltas waits DELTA_WINDOW_MS for more. So a streaming call costs at most ~20
 * notifications a second, however fast its tokens come.
 */
export class PgEventPublisher {
  private queue: OrganismEvent[] = [];
  private sending: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** When this process last stored a large body (its prune runs until that one is gone). */
  private lastStored: number | null = null;
  private readonly pruneTimer: NodeJS.Timeout;
  private lastWarn = 0;
  /** Events dropped since start (queue full, or the database refused a batch). */
  dropped = 0;
  /** Events sent since start (after coalescing) and statements used. */
  sent = 0;
  batches = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
    private readonly origin: string,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.pruneTimer = setInterval(() => void this.prune(), PRUNE_EVERY_MS).unref();
  }

  publish(event: OrganismEvent): void {
    if (this.closed) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.drop(1, null);
      return;
    }
    this.queue.push(event);
    this.schedule();
  }

  /** Resolves once everything queued so far has been sent (or dropped). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.sending || this.queue.length > 0) {
      if (!this.sending) this.sending = this.sendNext();
      await this.sending;
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    clearInterval(this.pruneTimer);
  }

  private schedule(): void {
    if (this.sending || this.timer) return;
    const onlyDeltas = this.queue.every((e) => e.type === 'llm_delta');
    this.timer = setTimeout(
      () => {
        this.timer = null;
        if (!this.sending) this.sending = this.sendNext();
      },
      onlyDeltas ? DELTA_WINDOW_MS : 0,
    );
  }

  private async sendNext(): Promise<void> {
    try {
      const batch = coalesceDeltas(this.queue.splice(0, BATCH));
      if (batch.length === 0) return;
      const bodies = batch.map((e) => JSON.stringify(e));
      try {
        await this.pool.query(PUBLISH_SQL, [this.channel, bodies, this.origin, this.now(), MAX_INLINE_BODY]);
        this.sent += batch.length;
        this.batches++;
      } catch (err) {
        this.drop(batch.length, err);
      }
      if (bodies.some((b) => Buffer.byteLength(b) > MAX_INLINE_BODY)) this.lastStored = this.now();
    } finally {
      this.sending = null;
      if (this.queue.length > 0 && !this.closed) this.schedule();
    }
  }

  /** Large bodies the other processes had their minute to read. */
  private async prune(): Promise<void> {
    if (this.lastStored === null || this.closed) return;
    if (this.now() - this.lastStored > BODY_RETAIN_MS + 2 * PRUNE_EVERY_MS) this.lastStored = null;
    await this.pool.query('DELETE FROM event_bodies WHERE at < $1', [this.now() - BODY_RETAIN_MS]).catch((err: unknown) => this.logger?.warn({ err }, 'pruning event bodies failed'));
  }

  private drop(n: number, err: unknown): void {
    this.dropped += n;
    const now = this.now();
    if (now - this.lastWarn < WARN_EVERY_MS) return;
    this.lastWarn = now;
    // While the database is unreachable its outage is logged once by the store; the drops then are part of it.
    const level = isConnectionFailure(err) ? 'info' : 'warn';
    this.logger?.[level]({ err, dropped: this.dropped }, 'events for the other processes were dropped (their live views miss them; nothing stored is lost)');
  }
}

/** The deltas of one call joined into the first of them; every other event as it was, in order. */
export function coalesceDeltas(events: readonly OrganismEvent[]): OrganismEvent[] {
  const out: OrganismEvent[] = [];
  const at = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'llm_delta') {
      const i = at.get(e.callId);
      if (i !== undefined) {
        const first = out[i] as Extract<OrganismEvent, { type: 'llm_delta' }>;
        out[i] = { ...first, text: first.text + e.text };
        continue;
      }
      at.set(e.callId, out.length);
    }
    out.push(e);
  }
  return out;
}
