import type { ListenerConfig } from '../config/types.js';
import type { FailureReason } from './hooks.js';
import type { Message } from './message.js';

export type DeliveryOutcome =
  | { readonly acked: true }
  | { readonly acked: false; readonly reason: FailureReason; readonly error: string };

/** One delivery as an observer follows it (see DeliveryObserver). */
export interface DeliveryWatch {
  /** Runs the handler (tracing makes the delivery's span current while it runs). */
  run<T>(fn: () => T): T;
  /** What the messages this delivery sends carry as their trace context (null: none). */
  readonly traceContext: string | null;
  /** The delivery ended (its journal step is written or failed). */
  end(outcome: DeliveryOutcome): void;
}

/**
 * Watches deliveries for telemetry (metrics, traces) without the pump knowing what it is for.
 * Calls are synchronous and must be cheap; an observer that throws is ignored (see observe()).
 */
export interface DeliveryObserver {
  /** A delivery's handler is about to run. */
  started(message: Message, listener: ListenerConfig): DeliveryWatch;
  /** The trace context a message entering from outside carries (the caller's span), or null. */
  injected(): string | null;
}

const PLAIN: DeliveryWatch = { run: (fn) => fn(), traceContext: null, end() {} };

/** The observers an organism has; empty costs one length check per delivery. */
export class DeliveryObservers {
  private readonly list: DeliveryObserver[] = [];

  constructor(private readonly onError: (err: unknown) => void) {}

  add(observer: DeliveryObserver): () => void {
    this.list.push(observer);
    return () => {
      const i = this.list.indexOf(observer);
      if (i >= 0) this.list.splice(i, 1);
    };
  }

  get active(): boolean {
    return this.list.length > 0;
  }

  injected(): string | null {
    let context: string | null = null;
    for (const o of this.list) context ??= this.guard(() => o.injected(), null);
    return context;
  }

  started(message: Message, listener: ListenerConfig): DeliveryWatch {
    if (this.list.length === 0) return PLAIN;
    const watches = this.list.map((o) => this.guard(() => o.started(message, listener), PLAIN));
    if (watches.length === 1) return this.safe(watches[0]!);
    return this.safe({
      run: (fn) => watches.reduceRight<() => ReturnType<typeof fn>>((inner, w) => () => w.run(inner), fn)(),
      traceContext: watches.find((w) => w.traceContext !== null)?.traceContext ?? null,
      end: (outcome) => {
        for (const w of watches) w.end(outcome);
      },
    });
  }

  /** An observer's failure never touches the delivery: its end is isolated like a bus listener. */
  private safe(w: DeliveryWatch): DeliveryWatch {
    return {
      run: w.run.bind(w),
      traceContext: w.traceContext,
      end: (outcome) => this.guard(() => w.end(outcome), undefined),
    };
  }

  private guard<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (err) {
      this.onError(err);
      return fallback;
    }
  }
}
