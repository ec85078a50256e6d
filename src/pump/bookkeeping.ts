import type { FailureReason, OutcomeGuard } from '../core/delivery.js';
import { Errors } from '../errors/catalogue.js';
import { JournalTrouble } from './journal-trouble.js';
import type { Delivery, PumpState } from './state.js';

/** A write that failed is tried again after this long, doubling up to the max. */
const BOOKING_RETRY_MS = 250;
const BOOKING_RETRY_MAX_MS = 5_000;

/** Instead of the outcome a delivery was booking, it fails for this reason (see Outcomes.book). */
export interface Redirect {
  readonly reason: Extract<FailureReason, 'storage_rejected' | 'killed'>;
  readonly error: string;
}

/**
 * Journal writes that must commit: tried again with backoff until they do, a run of failures
 * reported once (JournalTrouble). Knows nothing of what it writes.
 */
export class Bookkeeping {
  private readonly trouble: JournalTrouble;

  constructor(private readonly state: PumpState) {
    this.trouble = new JournalTrouble(state.deps.logger);
  }

  /**
   * Writes a delivery's outcome (its ack or failure), trying again with backoff until it
   * commits: a write refused (a full disk) must not leave the entry DISPATCHED with nobody
   * working on it. The delivery stays in flight meanwhile (its thread's next message waits; its
   * handler's slot is free). False when a shutdown aborted it first: the entry stays in the
   * journal and the next start delivers it again. A Redirect, without retrying: the store
   * refused the write for what it holds (STORAGE_REJECTED), or (`killable`) the delivery's
   * thread was killed while the write kept failing or waited to commit: `write` gets the guard
   * its store checks as the write is about to commit, so that a kill already answered wins
   * over an outcome still queued.
   */
  async write(d: Delivery | null, write: (guard?: OutcomeGuard) => void | Promise<void>, killable = false): Promise<boolean | Redirect> {
    const cancellation = d?.cancellation ?? null;
    const givenUp = () => (cancellation ? cancellation.reason === 'shutdown' : this.state.status === 'stopped');
    const killed = () => killable && cancellation?.reason === 'killed';
    const guard = killable && d ? () => (killed() ? Errors.THREAD_KILLED(d.thread.id) : null) : undefined;
    for (let delay = BOOKING_RETRY_MS; ; delay = Math.min(delay * 2, BOOKING_RETRY_MAX_MS)) {
      try {
        await write(guard);
        this.trouble.succeeded();
        return true;
      } catch (err) {
        if (Errors.STORAGE_REJECTED.is(err)) return { reason: 'storage_rejected', error: err.detail };
        if (killed() && d && Errors.THREAD_KILLED.is(err)) return { reason: 'killed', error: err.detail };
        this.trouble.failed(err);
      }
      if (givenUp()) return false;
      if (killed() && d) return { reason: 'killed', error: Errors.THREAD_KILLED(d.thread.id).detail };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          stop?.();
          resolve();
        }, delay);
        if (!d) timer.unref(); // nobody waits for it: it must not hold a stopping process up
        const stop = cancellation?.onAbort(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (givenUp()) return false;
      if (killed() && d) return { reason: 'killed', error: Errors.THREAD_KILLED(d.thread.id).detail };
    }
  }

  /** A journal write nobody waits for; retried like a delivery's outcome unless `retry` is false. */
  step(step: () => void | Promise<void>, retry = true): void {
    if (retry) {
      void this.write(null, step).then((booked) => {
        if (typeof booked === 'object') this.state.deps.logger.error({ err: booked.error }, 'the store refused a journal write; it is not retried');
      });
      return;
    }
    const failed = (err: unknown) => this.trouble.failed(err);
    try {
      const r = step();
      if (r) r.then(() => this.trouble.succeeded(), failed);
    } catch (err) {
      failed(err);
    }
  }
}
