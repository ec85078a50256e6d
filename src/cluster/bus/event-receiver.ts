import type { OrganismEvent } from '../../events/types.js';
import type { Logger } from '../../util/logger.js';

/** Origins whose last seq is remembered at most (processes come and go; each boot is a new origin). */
const MAX_ORIGINS = 1_000;

/** Reads a large event's body (null: pruned already). */
export type BodyReader = (seq: number) => Promise<string | null>;

/**
 * Turns notifications on the events channel (`<origin> <seq> <body | @>`) back into events:
 * each other process's events once each and in its seq order; this process's own (the echo),
 * a repeat or a stale seq are dropped. A body stored apart (`@`) is read before any later
 * notification is handled, so the order holds across it.
 */
export class PgEventReceiver {
  private readonly last = new Map<string, number>();
  private chain: Promise<void> = Promise.resolve();
  /** Notifications handled, and dropped as repeats or out of order. */
  received = 0;
  repeats = 0;

  constructor(
    private readonly origin: string,
    private readonly deliver: (event: OrganismEvent, origin: string) => void,
    private readonly readBody: BodyReader,
    private readonly logger?: Logger,
  ) {}

  /** One notification's payload, as LISTEN handed it over. */
  receive(payload: string): void {
    const a = payload.indexOf(' ');
    const b = payload.indexOf(' ', a + 1);
    if (a <= 0 || b <= a) {
      this.logger?.warn({ payload: payload.slice(0, 80) }, 'an unreadable event notification was ignored');
      return;
    }
    const origin = payload.slice(0, a);
    if (origin === this.origin) return;
    const seq = Number(payload.slice(a + 1, b));
    const body = payload.slice(b + 1);
    if (body === '@') {
      this.enqueue(() => this.readStored(origin, seq));
      return;
    }
    // Handled at once (no microtask per event) unless a large body's read is ahead of it.
    if (this.waiting === 0) this.handle(origin, seq, body);
    else this.enqueue(async () => this.handle(origin, seq, body));
  }

  /** Notifications behind a large body's read, that read included. */
  private waiting = 0;

  private enqueue(work: () => Promise<void>): void {
    this.waiting++;
    this.chain = this.chain.then(work).finally(() => {
      this.waiting--;
    });
  }

  private async readStored(origin: string, seq: number): Promise<void> {
    try {
      const body = await this.readBody(seq);
      if (body === null) {
        this.logger?.warn({ origin, seq }, 'a large event was pruned before it was read; live views miss it');
        this.accept(origin, seq);
        return;
      }
      this.handle(origin, seq, body);
    } catch (err) {
      this.logger?.warn({ err, origin, seq }, 'reading a large event failed; live views miss it');
    }
  }

  private handle(origin: string, seq: number, body: string): void {
    if (!this.accept(origin, seq)) return;
    let event: OrganismEvent;
    try {
      event = JSON.parse(body) as OrganismEvent;
    } catch {
      this.logger?.warn({ origin, seq }, 'an unreadable event was ignored');
      return;
    }
    this.received++;
    this.deliver(event, origin);
  }

  /** True when `seq` comes after everything handled from `origin` (a new origin starts anywhere). */
  private accept(origin: string, seq: number): boolean {
    const last = this.last.get(origin);
    if (last !== undefined && seq <= last) {
      this.repeats++;
      return false;
    }
    this.last.delete(origin); // re-inserted last: the map's order is recency, its first entry the stalest
    this.last.set(origin, seq);
    if (this.last.size > MAX_ORIGINS) this.last.delete(this.last.keys().next().value!);
    return true;
  }
}
