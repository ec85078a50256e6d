import { Errors } from '../errors/catalogue.js';
import { PumpBackPressure } from './back-pressure.js';
import type { FailureReason } from '../core/delivery.js';
import { storableText } from '../util/storable-text.js';
import { JournalTrouble } from './journal-trouble.js';
import type { Message } from '../core/message.js';
import type { DeliveryWatch } from './observer.js';
import type { Delivery } from './pump-state.js';
import type { Refused } from './routing.js';
import { isSystemName, systemErrorMessage } from './system-messages.js';
import type { LiveThread } from './thread-tracker.js';
import type { FencedResult } from '../core/work-source.js';

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

  /**
   * Ends a delivery as FAILED and tells `notify` (if any) why with a SystemError. Should the
   * store refuse that write for what it holds (see bookOutcome), the failure is written bare
   * (no notice, no usage) once more; should the thread be killed while it waits to commit, it
   * ends as killed instead.
   */
  protected async fail(d: Delivery, reason: FailureReason, text: string, notify: string | null, bare = false): Promise<void> {
    const { message, runtime, thread } = d;
    // A handler's error text is written as the reason: it must be writable whatever it holds.
    const error = storableText(text);
    runtime.lastFailed = reason !== 'killed';
    if (reason !== 'killed') {
      thread.failed = true;
      thread.error ??= error;
    }
    const target = !bare && notify !== null && !isSystemName(notify) && thread.status !== 'killed' ? notify : null;
    const notice = target ? traced([systemErrorMessage(message, target, reason, error, this.now())], d.watch) : [];
    if (bare) d.usage.length = 0;
    const booked = await this.bookOutcome(d, { reason, error }, notice, reason === 'killed' ? null : error);
    if (typeof booked === 'object') {
      if (booked.reason === 'killed') return this.fail(d, 'killed', booked.error, null);
      if (bare) {
        this.deps.logger.error({ messageId: message.id, threadId: message.threadId, to: message.to, err: booked.error }, 'the store refused even the bare failure of this delivery; it stays DISPATCHED');
        return;
      }
      if (d.usage.length > 0) this.deps.logger.error({ messageId: message.id, threadId: message.threadId, usage: d.usage }, 'the store refused the failure of this delivery with its usage; written without it');
      return this.fail(d, reason, error, null, true);
    }
    if (booked !== 'booked') return;
    d.outcome = { acked: false, reason, error };
    this.deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    this.deps.bus.emit({ type: 'journal_failed', message, reason, error });
    this.deps.logger.warn({ ...d.watch?.logFields, messageId: message.id, threadId: message.threadId, to: message.to, reason }, error);
    for (const m of notice) this.enqueue(m, thread, true);
  }

  /**
   * Books an ack with bookOutcome; when it could not be (the store refused it, or the thread was
   * killed while it waited to commit), the delivery fails once instead. True: the ack is booked.
   */
  protected async bookAck(d: Delivery, outgoing: readonly Message[], threadError: string | null): Promise<boolean> {
    const booked = await this.bookOutcome(d, null, outgoing, threadError);
    if (typeof booked === 'object') {
      await this.fail(d, booked.reason, booked.error, booked.reason === 'killed' ? null : d.message.from);
      return false;
    }
    return booked === 'booked';
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
   * A Redirect: nothing was written and the delivery is to fail as it says instead, because the
   * store refused the write for what it holds (retrying cannot cure that: storage_rejected), or
   * the thread was killed while the write waited to commit (killed).
   */
  protected async bookOutcome(
    d: Delivery,
    failure: { reason: FailureReason; error: string } | null,
    outgoing: readonly Message[],
    threadError: string | null,
  ): Promise<'booked' | 'aborted' | 'lost' | Redirect> {
    const { message } = d;
    const work = this.deps.work;
    const killable = failure?.reason !== 'killed';
    if (!work) {
      const booked = await this.book(
        d,
        () => (failure ? this.deps.journal.failed(message, failure.reason, failure.error, outgoing, d.usage) : this.deps.journal.acked(message, outgoing, d.usage)),
        killable,
      );
      return booked === true ? 'booked' : booked === false ? 'aborted' : booked;
    }
    const written = { outgoing, usage: d.usage, threadError };
    let result: FencedResult | null = null;
    const booked = await this.book(
      d,
      async () => {
        result = failure ? await work.fail(message, failure.reason, failure.error, written) : await work.ack(message, written);
      },
      killable,
    );
    if (typeof booked === 'object') return booked;
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
   * stays in the journal and the next start delivers it again. A Redirect, without retrying:
   * the store refused the write for what it holds (STORAGE_REJECTED), or (`killable`) the
   * delivery's thread was killed while the write kept failing.
   */
  protected async book(d: Delivery | null, write: () => void | Promise<void>, killable = false): Promise<boolean | Redirect> {
    const signal = d?.controller.signal ?? null;
    const givenUp = () => (signal ? signal.aborted && signal.reason === 'shutdown' : this.status === 'stopped');
    const killed = () => killable && signal !== null && signal.aborted && signal.reason === 'killed';
    for (let delay = BOOKING_RETRY_MS; ; delay = Math.min(delay * 2, BOOKING_RETRY_MAX_MS)) {
      try {
        await write();
        this.trouble.succeeded();
        return true;
      } catch (err) {
        if (Errors.STORAGE_REJECTED.is(err)) return { reason: 'storage_rejected', error: err.detail };
        this.trouble.failed(err);
      }
      if (givenUp()) return false;
      if (killed() && d) return { reason: 'killed', error: Errors.THREAD_KILLED(d.thread.id).detail };
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
      if (killed() && d) return { reason: 'killed', error: Errors.THREAD_KILLED(d.thread.id).detail };
    }
  }

  /** A journal write nobody waits for; retried like a delivery's bookkeeping unless `retry` is false. */
  protected journalStep(step: () => void | Promise<void>, retry = true): void {
    if (retry) {
      void this.book(null, step).then((booked) => {
        if (typeof booked === 'object') this.deps.logger.error({ err: booked.error }, 'the store refused a journal write; it is not retried');
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

/** Instead of the outcome a delivery was booking, it fails for this reason (see bookOutcome). */
export interface Redirect {
  readonly reason: Extract<FailureReason, 'storage_rejected' | 'killed'>;
  readonly error: string;
}

/** Messages a delivery sends carry its trace context (when a tracer gave it one); routed messages get it from routeOutgoing. */
export function traced(messages: Message[], watch: DeliveryWatch | null): Message[] {
  if (messages.length === 0) return messages;
  const traceContext = watch?.traceContext ?? null;
  return traceContext === null ? messages : messages.map((m) => ({ ...m, traceContext }));
}
