import type { Attributes, Span } from '@opentelemetry/api';

/*
 * The deliveries in progress, as tracing finds them for span events (peer denials, budget
 * warnings) and as the parent of their LLM calls: SDK spans (DeliverySpan, tracing.ts) or
 * records (RecordedDelivery, recorded-deliveries.ts).
 */

/** A delivery in progress, as span events and LLM calls find it. */
export interface LiveDelivery {
  readonly threadId: string;
  readonly listener: string;
  /** The next delivery in progress of the same thread (another listener). */
  nextLive: LiveDelivery | null;
  addEvent(name: string, attributes: Attributes): void;
  /** What an LLM call's span has as its parent. */
  asParent(): Span;
}

/**
 * Deliveries in progress by thread, then listener (at most one each, a thread has few at a
 * time): found by the thread id as it is, no key string built per delivery.
 */
export class LiveDeliveries {
  private readonly byThread = new Map<string, LiveDelivery>();

  add(d: LiveDelivery): void {
    d.nextLive = this.byThread.get(d.threadId) ?? null;
    this.byThread.set(d.threadId, d);
  }

  remove(d: LiveDelivery): void {
    const head = this.byThread.get(d.threadId);
    if (head === d) {
      if (d.nextLive) this.byThread.set(d.threadId, d.nextLive);
      else this.byThread.delete(d.threadId);
    } else {
      for (let p: LiveDelivery | null | undefined = head; p; p = p.nextLive) {
        if (p.nextLive === d) {
          p.nextLive = d.nextLive;
          break;
        }
      }
    }
    d.nextLive = null;
  }

  get(threadId: string, listener: string): LiveDelivery | undefined {
    for (let d: LiveDelivery | null | undefined = this.byThread.get(threadId); d; d = d.nextLive) if (d.listener === listener) return d;
    return undefined;
  }
}
