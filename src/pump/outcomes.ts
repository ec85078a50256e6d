import type { FailureReason } from '../core/delivery.js';
import { isSystemName, SYSTEM_ERROR_TYPE, type Message } from '../core/message.js';
import type { FencedResult } from '../core/work-source.js';
import { storableText } from '../util/storable-text.js';
import type { Bookkeeping, Redirect } from './bookkeeping.js';
import type { DeliveryWatch } from './observer.js';
import type { Refused } from './routing.js';
import type { Delivery, PumpState } from './state.js';
import { routedFailureMessage, systemErrorMessage } from './system-messages.js';

/**
 * How deliveries end in the journal, through the queue: a delivery's ack or failure (retried
 * until it commits), messages refused or dropped before they reached a handler. It returns what
 * is to be sent on (notices, outgoing messages): sending is the caller's.
 */
export class Outcomes {
  constructor(
    private readonly state: PumpState,
    private readonly books: Bookkeeping,
  ) {}

  /**
   * Ends a delivery as FAILED and tells `notify` (if any) why with a SystemError, which it
   * returns to be sent. Should the store refuse that write for what it holds (see book), the
   * failure is written bare (no notice, no usage) once more; should the thread be killed while
   * it waits to commit, it ends as killed instead.
   */
  async fail(d: Delivery, reason: FailureReason, text: string, notify: string | null, bare = false): Promise<readonly Message[]> {
    const { message, runtime, thread } = d;
    const { deps } = this.state;
    // A handler's error text is written as the reason: it must be writable whatever it holds.
    const error = storableText(text);
    runtime.lastFailed = reason !== 'killed';
    if (reason !== 'killed') {
      thread.failed = true;
      thread.error ??= error;
    }
    const target = !bare && notify !== null && !isSystemName(notify) && thread.status !== 'killed' ? notify : null;
    const notice = traced([...(target ? [systemErrorMessage(message, target, reason, error, this.state.now())] : []), ...(bare ? [] : this.routedFailure(d, reason, error))], d.watch);
    if (bare) d.usage.length = 0;
    const booked = await this.book(d, { reason, error }, notice, reason === 'killed' ? null : error);
    if (typeof booked === 'object') {
      if (booked.reason === 'killed') return this.fail(d, 'killed', booked.error, null);
      if (bare) {
        deps.logger.error(
          { messageId: message.id, threadId: message.threadId, to: message.to, err: booked.error },
          'the store refused even the bare failure of this delivery; it stays DISPATCHED',
        );
        return [];
      }
      if (d.usage.length > 0)
        deps.logger.error({ messageId: message.id, threadId: message.threadId, usage: d.usage }, 'the store refused the failure of this delivery with its usage; written without it');
      return this.fail(d, reason, error, null, true);
    }
    if (booked !== 'booked') return [];
    d.outcome = { acked: false, reason, error };
    deps.bus.emit({ type: 'message', message, state: 'FAILED' });
    deps.bus.emit({ type: 'journal_failed', message, reason, error });
    deps.logger.warn({ ...d.watch?.logFields, messageId: message.id, threadId: message.threadId, to: message.to, reason }, error);
    return notice;
  }

  /**
   * The final failure routed to the listener's `on_error` handler, if it names one: not for a
   * kill (nothing of the thread is to run), and never for a delivery that was itself a routed
   * failure (any SystemError a handler ran on): a failing error handler's failure goes to
   * nobody's handler, so error routing cannot loop.
   */
  private routedFailure(d: Delivery, reason: FailureReason, error: string): Message[] {
    const { message, runtime, thread } = d;
    const target = d.listener.config.onError;
    if (!target || reason === 'killed' || thread.status === 'killed' || message.payloadType === SYSTEM_ERROR_TYPE) return [];
    return [routedFailureMessage(message, runtime.name, target, reason, error, this.state.now())];
  }

  /**
   * Books a failed try for a retry: the entry back to PENDING at the next attempt, due at
   * `notBefore`, with the usage the try caused. The next attempt's message to place; null
   * when nothing is to be placed (a shutdown came first: the entry stays DISPATCHED and the
   * next start delivers it; or the claim was lost); a Redirect when the store refused the write
   * or the thread was killed meanwhile (the delivery fails as it says instead).
   */
  async retry(d: Delivery, reason: FailureReason, error: string, notBefore: number): Promise<{ next: Message } | { redirect: Redirect } | null> {
    const { message } = d;
    const { deps } = this.state;
    let next: Message | null = null;
    const written = { outgoing: [], usage: d.usage, threadError: null };
    const booked = await this.books.write(
      d,
      async (guard) => {
        next = await deps.queue.retry(message, reason, storableText(error), notBefore, guard ? { ...written, guard } : written);
      },
      true,
    );
    if (typeof booked === 'object') return { redirect: booked };
    if (!booked) return null;
    const placed = next as Message | null;
    if (placed === null) {
      deps.logger.warn(
        { messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt },
        'lease lost: another process took this delivery over; its retry is dropped',
      );
      return null;
    }
    return { next: placed };
  }

  /**
   * Books an ack; when it could not be (the store refused it, or the thread was killed while it
   * waited to commit), the delivery fails once instead. The outcome: `acked` (send `outgoing`
   * on), or the failure's notices to send.
   */
  async ack(d: Delivery, outgoing: readonly Message[], threadError: string | null): Promise<{ acked: boolean; notices: readonly Message[] }> {
    const booked = await this.book(d, null, outgoing, threadError);
    if (typeof booked === 'object') {
      return { acked: false, notices: await this.fail(d, booked.reason, booked.error, booked.reason === 'killed' ? null : d.message.from) };
    }
    return { acked: booked === 'booked', notices: [] };
  }

  /** Audits a message the pump refused to deliver. */
  refuse(r: Refused): void {
    const { message } = r;
    const { deps } = this.state;
    if (r.reason === 'peer_denied') {
      deps.bus.emit({ type: 'peer_denied', from: message.from, to: message.to, threadId: message.threadId, messageId: message.id, reason: r.error });
      deps.logger.warn({ from: message.from, to: message.to, threadId: message.threadId, audit: 'peer_denied' }, r.error);
    }
    this.books.step(() => deps.queue.refuse(message, r.reason, r.error));
    deps.bus.emit({ type: 'journal_failed', message, reason: r.reason, error: r.error });
  }

  /** Fails a message that never reached a handler (dropped from a queue). */
  failQuietly(message: Message, reason: FailureReason, error: string): void {
    const { deps } = this.state;
    this.books.step(() => deps.journal.failed(message, reason, error, [], []));
    this.failed(message, reason, error);
  }

  /** Fails a message the queue handed out that cannot be delivered (no such listener, its thread killed), as its outcome. */
  failTaken(message: Message, reason: FailureReason, error: string): void {
    const threadError = reason === 'killed' ? null : error;
    this.books.step(() => this.state.deps.queue.fail(message, reason, error, { outgoing: [], usage: [], threadError }).then(() => undefined));
    this.failed(message, reason, error);
  }

  private failed(message: Message, reason: FailureReason, error: string): void {
    const { bus } = this.state.deps;
    bus.emit({ type: 'message', message, state: 'FAILED' });
    bus.emit({ type: 'journal_failed', message, reason, error });
  }

  /**
   * Books a delivery's ack (`failure` null) or failure with its outgoing messages and usage, in
   * the queue (a cluster's fences it by the claim, and finishes the thread's record in the same
   * transaction when nothing of it is left). 'aborted': a shutdown came first; 'lost': the claim
   * was no longer this process's (its lease expired and another process took the delivery
   * over), so nothing of it was written. A Redirect: nothing was written and the delivery is to
   * fail as it says instead, because the store refused the write for what it holds (retrying
   * cannot cure that: storage_rejected), or the thread was killed while the write waited to
   * commit (killed).
   */
  private async book(
    d: Delivery,
    failure: { reason: FailureReason; error: string } | null,
    outgoing: readonly Message[],
    threadError: string | null,
  ): Promise<'booked' | 'aborted' | 'lost' | Redirect> {
    const { message } = d;
    const { deps } = this.state;
    const written = { outgoing, usage: d.usage, threadError };
    let result: FencedResult | null = null;
    const booked = await this.books.write(
      d,
      async (guard) => {
        const w = guard ? { ...written, guard } : written;
        result = failure ? await deps.queue.fail(message, failure.reason, failure.error, w) : await deps.queue.ack(message, w);
      },
      failure?.reason !== 'killed',
    );
    if (typeof booked === 'object') return booked;
    const r = result as FencedResult | null;
    if (!booked || !r) return 'aborted';
    if (!r.committed) {
      deps.logger.warn(
        { messageId: message.id, threadId: message.threadId, to: message.to, attempt: message.attempt },
        'lease lost: another process took this delivery over; its outcome is dropped',
      );
      return 'lost';
    }
    if (r.threadFinished) {
      d.thread.status = r.threadFinished;
      deps.budgets.finish(d.thread.id);
    }
    return 'booked';
  }
}

/** Messages a delivery sends carry its trace context (when a tracer gave it one); routed messages get it from routeOutgoing. */
export function traced(messages: Message[], watch: DeliveryWatch | null): Message[] {
  if (messages.length === 0) return messages;
  const traceContext = watch?.traceContext ?? null;
  return traceContext === null ? messages : messages.map((m) => ({ ...m, traceContext }));
}
