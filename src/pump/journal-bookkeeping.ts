import { PumpBackPressure } from './back-pressure.js';
import type { FailureReason } from './hooks.js';
import { JournalTrouble } from './journal-trouble.js';
import type { Message } from './message.js';
import type { DeliveryWatch } from './observer.js';
import type { Delivery } from './pump-state.js';
import type { Refused } from './routing.js';
import { isSystemName, systemErrorMessage } from './system-messages.js';
import type { LiveThread } from './thread-tracker.js';
import type { FencedResult } from './work-source.js';

/** A delivery's bookkeeping that failed is tried again after this long, doubling up to the max. */
const BOOKING_RETRY_MS = 250;
const BOOKING_RETRY_MAX_MS = 5_000;

/**
 * Writes the end of deliveries to the journal: a delivery's ack or failure (retried until it
 * commits), messages refused or dropped before reaching a handler, and the journal writes
 * nobody waits for. Repeated write failures are reported through JournalTrouble.
 */
export abstract class PumpBookkeeping extends PumpBackPressure {
  private readonly trouble = new JournalTrouble(this.deps.logger);

  /** Puts a journaled message on its way (see PumpDispatch). */
  protected abstract enqueue(message: Message, thread: LiveThread, fresh: boolean): void;

  /** Ends a delivery as FAILED and tells `notify` (if any) why with a SystemError. */
  protected async fail(d: Delivery, reason: FailureReason, error: string, notify: string | null): Promise<void> {
    const { message, runtime, thread } = d;
    runtime.lastFailed = reason !== 'killed';
    if (reason !== 'killed') {
      thread.failed = true;
      thread.error ??= error;
    }
    const target = notify !== null && !isSystemName(notify) && thread.status !== 'killed' ? notify : null;
    const notice = target ? traced([systemErrorMessage(message, target, reason, error, this.now())], d.watch) : [];
    if ((await this.bookOutcome(d, { reason, error }, notice, reason === 'killed' ? null : error)) !== 'booked') return;
    d.outcome = { acked: false, reason, error };
    this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    this.deps.bus.emit({ type: 'journal_failed', message, reason, error });
    this.deps.logger.warn({ ...d.watch?.logFields, messageId: message.id, threadId: message.threadId, to: message.to, reason }, error);
    for (const m of notice) this.enqueue(m, thread, true);
  }

  /** Audits a message the pump refused to deliver. */
  protected refuse(r: Refused): void {
    const { message } = r;
    if (r.reason === 'peer_denied') {
      this.deps.bus.emit({
        type: 'peer_denied',
        from: message.from,
        to: message.to,
        threadId: message.threadId,
        messageId: message.id,
        reason: r.error,
      });
      this.deps.logger.warn({ from: message.from, to: message.to, threadId: message.threadId, audit: 'peer_denied' }, r.error);
    }
    this.journalStep(async () => {
      // Shared mode: one transaction journals it FAILED at once (a PENDING entry could be claimed before it fails).
      if (!this.deps.work) await this.deps.journal.pending([message]);
      await this.deps.journal.failed(message, r.reason, r.error, [], []);
    });
    this.deps.bus.emit({ type: 'journal_failed', message, reason: r.reason, error: r.error });
  }

  /** Fails a message that never reached a handler (dropped from a queue). */
  protected failQuietly(message: Message, reason: FailureReason, error: string): void {
    this.journalStep(() => this.deps.journal.failed(message, reason, error, [], []));
    this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    this.deps.bus.emit({ type: 'journal_failed', message, reason, error });
  }

  /**
   * Books a delivery's ack (`failure` null) or failure with its outgoing messages and usage:
   * in the journal (embedded), or fenced by the claim (shared mode, see work-source.ts), where
   * the thread's record is finished in the same transaction when nothing of it is left.
   * 'aborted': a shutdown came first; 'lost': the claim was no longer this process's (its
   * lease expired and another process took the delivery over), so nothing of it was written.
   */
  protected async bookOutcome(
    d: Delivery,
    failure: { reason: FailureReason; error: string } | null,
    outgoing: readonly Message[],
    threadError: string | null,
  ): Promise<'booked' | 'aborted' | 'lost'> {
    const { message } = d;
    const work = this.deps.work;
    if (!work) {
      const booked = await this.book(d, () =>
        failure ? this.deps.journal.failed(message, failure.reason, failure.error, outgoing, d.usage) : this.deps.journal.acked(message, outgoing, d.usage),
      );
      return booked ? 'booked' : 'aborted';
    }
    const written = { outgoing, usage: d.usage, threadError };
    let result: FencedResult | null = null;
    const booked = await this.book(d, async () => {
      result = failure ? await work.fail(message, failure.reason, failure.error, written) : await work.ack(message, written);
    });
    const r = result as FencedResult | null;
    if (!booked || !r) return 'aborted';
    if (!r.committed) {
      this.deps.logger.warn({ messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt }, 'lease lost: another process took this delivery over; its outcome is dropped');
      return 'lost';
    }
    if (r.threadFinished) {
      d.thread.status = r.threadFinished;
      this.deps.budgets.finish(d.thread.id);
    }
    return 'booked';
  }

  /**
   * Writes a delivery's outcome (its ack or failure) to the journal, trying again with backoff
   * until it commits: a write refused (a full disk) must not leave the entry DISPATCHED with
   * nobody working on it. The delivery stays in flight meanwhile (its thread's next message
   * waits; its handler's slot is free). False when a shutdown aborted it first: the entry
   * stays in the journal and the next start delivers it again.
   */
  protected async book(d: Delivery | null, write: () => void | Promise<void>): Promise<boolean> {
    const signal = d?.controller.signal ?? null;
    const givenUp = () => (signal ? signal.aborted && signal.reason === 'shutdown' : this.status === 'stopped');
    for (let delay = BOOKING_RETRY_MS; ; delay = Math.min(delay * 2, BOOKING_RETRY_MAX_MS)) {
      try {
        await write();
        this.trouble.succeeded();
        return true;
      } catch (err) {
        this.trouble.failed(err);
      }
      if (givenUp()) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', wake);
          resolve();
        }, delay);
        if (!d) timer.unref(); // nobody waits for it: it must not hold a stopping process up
        signal?.addEventListener('abort', wake, { once: true });
      });
      if (givenUp()) return false;
    }
  }

  /** A journal write nobody waits for; retried like a delivery's bookkeeping unless `retry` is false. */
  protected journalStep(step: () => void | Promise<void>, retry = true): void {
    if (retry) {
      void this.book(null, step);
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

/** Messages a delivery sends carry its trace context (when a tracer gave it one); routed messages get it from routeOutgoing. */
export function traced(messages: Message[], watch: DeliveryWatch | null): Message[] {
  if (messages.length === 0) return messages;
  const traceContext = watch?.traceContext ?? null;
  return traceContext === null ? messages : messages.map((m) => ({ ...m, traceContext }));
}
