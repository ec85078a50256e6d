import type { OrganismEvent } from './types.js';

/** The process an event came from: null for this one, else the other process's id (cluster mode). */
export type EventOrigin = string | null;

export type EventListener = (event: OrganismEvent, origin: EventOrigin) => void;

export interface ListenOptions {
  /**
   * Also hear events relayed from other processes of a clustered organism (live views want them;
   * this process's own figures, such as metrics, must not count them twice).
   */
  readonly relayed?: boolean;
}

/**
 * Synchronous fan-out with isolation: a listener that throws is reported and skipped, so
 * listeners can never break the pump. Listeners must be cheap (the WebSocket layer only
 * appends to bounded per-client buffers).
 */
export class EventBus {
  private readonly listeners = new Map<EventListener, boolean>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  on(listener: EventListener, options: ListenOptions = {}): () => void {
    this.listeners.set(listener, options.relayed === true);
    return () => this.listeners.delete(listener);
  }

  /** An event of this process. */
  emit(event: OrganismEvent): void {
    this.deliver(event, null);
  }

  /** An event another process of the organism emitted, for the listeners that asked for them. */
  relay(event: OrganismEvent, origin: string): void {
    this.deliver(event, origin);
  }

  private deliver(event: OrganismEvent, origin: EventOrigin): void {
    for (const [listener, relayed] of this.listeners) {
      if (origin !== null && !relayed) continue;
      try {
        listener(event, origin);
      } catch (err) {
        try {
          this.onListenerError(err);
        } catch {
          // the error reporter itself failed; nothing more to do
        }
      }
    }
  }

  get size(): number {
    return this.listeners.size;
  }
}
