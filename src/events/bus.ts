import type { OrganismEvent } from './types.js';

export type EventListener = (event: OrganismEvent) => void;

/**
 * Synchronous fan-out with isolation: a listener that throws is reported and skipped, so
 * listeners can never break the pump. Listeners must be cheap (the WebSocket layer only
 * appends to bounded per-client buffers).
 */
export class EventBus {
  private readonly listeners = new Set<EventListener>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  on(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: OrganismEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
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
