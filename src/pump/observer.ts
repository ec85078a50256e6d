import type { ListenerConfig } from '../config/types.js';
import type { FailureReason } from '../core/delivery.js';
import type { Message } from '../core/message.js';

export type DeliveryOutcome = { readonly acked: true } | { readonly acked: false; readonly reason: FailureReason; readonly error: string };

/** One delivery as an observer follows it (see DeliveryObserver). */
export interface DeliveryWatch {
  /** Runs the handler (tracing makes the delivery's span current while it runs). */
  run<T>(fn: () => T): T;
  /** What the messages this delivery sends carry as their trace context (null: none); may be computed when first read. */
  readonly traceContext: string | null;
  /**
   * Fields the log lines about this delivery carry (tracing: trace_id and span_id); null: none,
   * or a logger mixin adds them. May be computed when first read.
   */
  readonly logFields: Readonly<Record<string, string>> | null;
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
  /**
   * The trace context a message entering from outside carries, or null. caller: the trace
   * context the entry point passed (the HTTP request's span), null when it has none.
   */
  injected(caller: string | null): string | null;
}

const PLAIN: DeliveryWatch = { run: (fn) => fn(), traceContext: null, logFields: null, end() {} };

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

  injected(caller: string | null = null): string | null {
    for (const o of this.list) {
      try {
        const context = o.injected(caller);
        if (context !== null) return context;
      } catch (err) {
        this.onError(err);
      }
    }
    return null;
  }

  started(message: Message, listener: ListenerConfig): DeliveryWatch {
    const list = this.list;
    if (list.length === 0) return PLAIN;
    // One observer (the usual case) is wrapped without a closure per delivery: this runs for every delivery.
    if (list.length === 1) return new GuardedWatch(this.start(list[0]!, message, listener), this.onError);
    // Several (`serve` with metrics and tracing on): one composite, no closures made per delivery.
    const watches: DeliveryWatch[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) watches[i] = this.start(list[i]!, message, listener);
    return new GuardedWatch(new ComposedWatch(watches), this.onError);
  }

  private start(o: DeliveryObserver, message: Message, listener: ListenerConfig): DeliveryWatch {
    try {
      return o.started(message, listener);
    } catch (err) {
      this.onError(err);
      return PLAIN;
    }
  }
}

/** Several observers' watches of one delivery: runs nest in order, the first trace context and log fields win, every one ends. */
class ComposedWatch implements DeliveryWatch {
  constructor(private readonly watches: readonly DeliveryWatch[]) {}

  run<T>(fn: () => T): T {
    return this.runFrom(0, fn);
  }

  private runFrom<T>(i: number, fn: () => T): T {
    const w = this.watches[i];
    return w === undefined ? fn() : w.run(() => this.runFrom(i + 1, fn));
  }

  get traceContext(): string | null {
    for (const w of this.watches) if (w.traceContext !== null) return w.traceContext;
    return null;
  }

  get logFields(): Readonly<Record<string, string>> | null {
    for (const w of this.watches) if (w.logFields !== null) return w.logFields;
    return null;
  }

  end(outcome: DeliveryOutcome): void {
    for (const w of this.watches) w.end(outcome);
  }
}

/** An observer's failure never touches the delivery: its end is isolated like a bus listener. */
class GuardedWatch implements DeliveryWatch {
  constructor(
    private readonly watch: DeliveryWatch,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Read when a message is sent (a tracer may format it only then). */
  get traceContext(): string | null {
    try {
      return this.watch.traceContext;
    } catch (err) {
      this.onError(err);
      return null;
    }
  }

  get logFields(): Readonly<Record<string, string>> | null {
    try {
      return this.watch.logFields;
    } catch (err) {
      this.onError(err);
      return null;
    }
  }

  run<T>(fn: () => T): T {
    return this.watch.run(fn);
  }

  end(outcome: DeliveryOutcome): void {
    try {
      this.watch.end(outcome);
    } catch (err) {
      this.onError(err);
    }
  }
}
